/**
 * The commands this window runs on the place shown — choose the prediction
 * shown, set a control instruction, undo / redo, land on an import, jump to
 * a state of the tree — each followed by a refetch of what it touched
 * (`changed`) and, where there is something to say, a notice.
 */
import { useCallback } from "react";
import type { ImportFilesResponse } from "../api/types";
import type { Backend } from "../backend/backend";
import { branchForNode } from "../model/treeLayout";
import type { Navigation } from "./useNavigation";

/** What the edits need from the window. */
export interface EditContext {
  backend: Backend;
  place: Navigation;
  report: (e: unknown) => void;
  setNotice: (notice: string) => void;
  /** Refetches what a change to a trajectory (`null`: the workspace) touched. */
  changed: (trajectoryId: string | null) => void;
}

/** The window's edit commands. */
export function useEdits({ backend, place, report, setNotice, changed }: EditContext) {
  const { trajectoryId, trajectories, nodeId, detail, dispatch, branches, treeNodes, treeEdges, branchId, turns } = place;

  const undoRedo = useCallback(
    async (which: "undo" | "redo") => {
      try {
        const r = await backend.call(which, {});
        // The undo log is the workspace's: say so when the change was in another trajectory.
        const other =
          r.change?.trajectory_id != null && r.change.trajectory_id !== trajectoryId ? trajectories.find((t) => t.id === r.change?.trajectory_id) : undefined;
        const where = other ? ` (in ${other.name})` : "";
        setNotice(r.change ? `${which === "undo" ? "Undid" : "Redid"}: ${r.change.summary}${where}` : `Nothing to ${which}.`);
        changed(r.change?.trajectory_id ?? null);
      } catch (e) {
        report(e);
      }
    },
    [backend, changed, report, setNotice, trajectoryId, trajectories],
  );

  const onImported = useCallback(
    (r: ImportFilesResponse) => {
      setNotice(`Imported ${r.imported.filter((i) => i.added).length} trajectories${r.failed.length ? `, ${r.failed.length} failed` : ""}.`);
      changed(null);
      const first = r.imported[0];
      if (first) dispatch({ type: "open_trajectory", trajectoryId: first.trajectory_id });
    },
    [changed, dispatch, setNotice],
  );

  const chooseShown = async (id: number | null) => {
    if (!trajectoryId) return;
    try {
      await backend.call("choose_prediction", { trajectory_id: trajectoryId, node_id: nodeId, prediction_id: id });
      changed(trajectoryId);
    } catch (e) {
      report(e);
    }
  };

  /** Resolves `true` when saved. */
  const savePerturbation = async (instruction: string | null): Promise<boolean> => {
    if (!trajectoryId || detail?.edge_id == null) return false;
    try {
      await backend.call("set_perturbation", { trajectory_id: trajectoryId, edge_id: detail.edge_id, instruction });
      changed(trajectoryId);
      return true;
    } catch (e) {
      report(e);
      return false;
    }
  };

  const jumpToNode = (node: number) => {
    const hit = branchForNode(node, branches, treeNodes, treeEdges, branchId);
    if (hit) dispatch({ type: "jump", branchId: hit.branch_id, turnIndex: hit.turn_index, count: turns.length, sameBranch: hit.branch_id === branchId });
  };

  return { undoRedo, onImported, chooseShown, savePerturbation, jumpToNode };
}
