/**
 * The studio's reads as queries: one hook per API command, keyed by
 * `keys.ts`. Each hook is a thin `useQuery` over `Backend.call`; what a
 * change refetches is decided in `invalidation.ts`, never by the views.
 */
import { QueryClient, keepPreviousData, useQuery, type QueryKey } from "@tanstack/react-query";
import type { CommandName, ListRunRowsRequest, PairOutcome, RequestOf, ResponseOf } from "../api/types";
import type { Backend } from "../backend/backend";
import { ALL_TRAJECTORIES, keys } from "./keys";

/**
 * The query client of one studio window. Replies change only through
 * commands and events, which invalidate what they touch, so a query does not
 * refetch on window focus; errors are shown at once (no retries: the back
 * end is local and its errors are answers, not outages).
 */
export function createQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: { retry: false, refetchOnWindowFocus: false, refetchOnReconnect: false },
      mutations: { retry: false },
    },
  });
}

/** The query options of one command: its key and the call that answers it. */
export function commandQuery<C extends CommandName>(backend: Backend, queryKey: QueryKey, command: C, request: RequestOf<C>) {
  return { queryKey, queryFn: () => backend.call(command, request) };
}

/** Keeps the previous reply while the next loads, within one trajectory (`key[1]`); another trajectory starts empty. */
function sameTrajectory<T>(trajectoryId: string | null) {
  return (previous: T | undefined, query: { queryKey: QueryKey } | undefined): T | undefined =>
    query && query.queryKey[1] === trajectoryId ? previous : undefined;
}

/** `list_trajectories`: the whole list. */
export function useTrajectories(backend: Backend) {
  return useQuery(commandQuery(backend, keys.trajectories(), "list_trajectories", ALL_TRAJECTORIES));
}

/** `get_trajectory` of the selected trajectory, if any. */
export function useTrajectory(backend: Backend, trajectoryId: string | null) {
  return useQuery({
    ...commandQuery(backend, keys.trajectory(trajectoryId ?? ""), "get_trajectory", { trajectory_id: trajectoryId ?? "" }),
    enabled: trajectoryId !== null,
  });
}

/** `get_branch`: the selected branch's turns (the previous branch's stay shown while it loads). */
export function useBranch(backend: Backend, trajectoryId: string | null, branchId: string | null) {
  return useQuery({
    ...commandQuery(backend, keys.branch(trajectoryId ?? "", branchId ?? ""), "get_branch", { trajectory_id: trajectoryId ?? "", branch_id: branchId ?? "" }),
    enabled: trajectoryId !== null && branchId !== null,
    placeholderData: sameTrajectory<ResponseOf<"get_branch">>(trajectoryId),
  });
}

/** How long a turn no longer shown stays cached: a turn's reply can be tens of megabytes (a 20,000-node tree). */
const TURN_CACHE_MS = 30_000;

/** `get_turn`: one state (the previous turn's stays shown while it loads); `enabled: false` until the turn is known. */
export function useTurn(backend: Backend, trajectoryId: string | null, nodeId: number, predictionId: number | null, enabled: boolean) {
  return useQuery({
    ...commandQuery(backend, keys.turn(trajectoryId ?? "", nodeId, predictionId), "get_turn", {
      trajectory_id: trajectoryId ?? "",
      node_id: nodeId,
      prediction_id: predictionId,
    }),
    enabled: enabled && trajectoryId !== null,
    placeholderData: sameTrajectory<ResponseOf<"get_turn">>(trajectoryId),
    gcTime: TURN_CACHE_MS,
  });
}

/** `compare_branches` of two branches. */
export function useCompare(backend: Backend, trajectoryId: string, left: string, right: string) {
  return useQuery(commandQuery(backend, keys.compare(trajectoryId, left, right), "compare_branches", { trajectory_id: trajectoryId, left, right }));
}

/** `workspace_info`: whether undo / redo can run. */
export function useWorkspaceInfo(backend: Backend) {
  return useQuery(commandQuery(backend, keys.workspace(), "workspace_info", {}));
}

/** `history`: the undo log. */
export function useHistory(backend: Backend) {
  return useQuery(commandQuery(backend, keys.history(), "history", {}));
}

/** `engine_status`. */
export function useEngineStatus(backend: Backend) {
  return useQuery(commandQuery(backend, keys.engine(), "engine_status", {}));
}

/** `list_runs`: every run. */
export function useRuns(backend: Backend) {
  return useQuery(commandQuery(backend, keys.runs(), "list_runs", {}));
}

/** `get_run_dashboard` of one run. */
export function useRunDashboard(backend: Backend, runId: string | null) {
  return useQuery({ ...commandQuery(backend, keys.runDashboard(runId ?? ""), "get_run_dashboard", { run_id: runId ?? "" }), enabled: runId !== null });
}

/** `list_run_rows`: the row table (the previous rows stay shown while the next filter loads). */
export function useRunRows(backend: Backend, request: ListRunRowsRequest | null) {
  const req = request ?? ({ run_id: "" } as ListRunRowsRequest);
  return useQuery({
    ...commandQuery(backend, keys.runRows(req.run_id, JSON.stringify(req)), "list_run_rows", req),
    enabled: request !== null,
    placeholderData: keepPreviousData,
  });
}

/** `compare_runs` of A and B with the outcome filter (every pair: the table is virtualised). */
export function useCompareRuns(backend: Backend, runA: string | null, runB: string | null, outcome: PairOutcome | null) {
  return useQuery({
    ...commandQuery(backend, keys.compareRuns(runA ?? "", runB ?? "", outcome ?? "all"), "compare_runs", {
      run_a: runA ?? "",
      run_b: runB ?? "",
      metric: null,
      outcome,
      tie_margin: null,
      domain: null,
      offset: 0,
      limit: null,
    }),
    enabled: runA !== null && runB !== null,
    placeholderData: keepPreviousData,
  });
}

/** `label_set`: the workspace's labels for run rows. */
export function useLabelSet(backend: Backend) {
  return useQuery(commandQuery(backend, keys.labelSet(), "label_set", {}));
}
