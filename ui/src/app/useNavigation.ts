/**
 * The place shown and its data: the navigation reducer (`navigation.ts`)
 * reconciled with the query layer's replies — the list, the trajectory's
 * branches and tree, the branch's turns and the turn's detail. Query errors
 * are reported; a branch that no longer exists (undone) falls back to the
 * recorded one.
 */
import { useEffect, useReducer } from "react";
import { useBranch, useTrajectories, useTrajectory, useTurn } from "../data/queries";
import type { Backend } from "../backend/backend";
import { initialNav, navigate, resolveBranch, resolveTrajectory, writeHash } from "./navigation";

/** Navigation state, actions and the data of the place shown. */
export function useNavigation(backend: Backend, report: (e: unknown) => void, clearError: () => void) {
  const [nav, dispatch] = useReducer(navigate, window.location.hash, initialNav);

  const list = useTrajectories(backend);
  const trajectories = list.data?.trajectories;
  const trajectoryId = resolveTrajectory(nav.trajectoryId, trajectories, list.isFetching);
  const tree = useTrajectory(backend, trajectoryId);
  const branches = tree.data?.branches;
  const branchId = resolveBranch(nav.branchId, branches, tree.isFetching);
  const branch = useBranch(backend, trajectoryId, branchId);
  const turns = branch.data?.turns ?? [];
  const branchSettled = !!branch.data && !branch.isPlaceholderData;

  // The branch's turns arrived (or a turn is wanted on turns already here):
  // show the pending turn, or keep the index within them.
  const settledTurns = branchSettled ? branch.data : undefined;
  const pending = nav.pendingTurn;
  useEffect(() => {
    if (settledTurns) dispatch({ type: "turns_loaded", count: settledTurns.turns.length });
  }, [settledTurns, pending]);

  const { current } = nav;
  const nodeId = current < 0 ? 0 : (turns[current]?.node_id ?? 0);
  const turnKnown = nav.pendingTurn === null && (current < 0 || current < turns.length);
  const turn = useTurn(backend, trajectoryId, nodeId, nav.prediction, turnKnown);

  // Errors: the list, the tree and the turn are reported; a lost branch falls back to the recorded one.
  useEffect(() => {
    if (list.error) report(list.error);
  }, [list.error, report]);
  useEffect(() => {
    if (tree.error) report(tree.error);
  }, [tree.error, report]);
  useEffect(() => {
    if (!branch.error) return;
    dispatch({ type: "branch_lost" });
    report(branch.error);
  }, [branch.error, report]);
  useEffect(() => {
    if (turn.error) report(turn.error);
  }, [turn.error, report]);
  // A turn shown clears the last error.
  const turnShown = turn.isSuccess && !turn.isPlaceholderData ? turn.dataUpdatedAt : 0;
  useEffect(() => {
    if (turnShown) clearError();
  }, [turnShown, clearError]);

  useEffect(() => writeHash(trajectoryId, branchId, current), [trajectoryId, branchId, current]);

  return {
    nav,
    dispatch,
    trajectories: trajectories ?? [],
    listLoaded: list.isSuccess,
    trajectoryId,
    trajectory: trajectories?.find((t) => t.id === trajectoryId) ?? null,
    branches: branches ?? [],
    treeNodes: tree.data?.nodes ?? [],
    treeEdges: tree.data?.edges ?? [],
    branchId,
    turns,
    /** The branch's turns are here and no turn asked for (by the URL or an action) is still pending. */
    turnsSettled: branchSettled && nav.pendingTurn === null,
    current,
    nodeId,
    detail: turn.data ?? null,
    loading: turn.isFetching,
  };
}

/** What {@link useNavigation} gives. */
export type Navigation = ReturnType<typeof useNavigation>;
