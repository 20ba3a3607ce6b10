/**
 * The studio's reads as queries: one hook per API command, keyed by
 * `keys.ts`. Each hook is a thin `useQuery` over `Backend.call`; what a
 * change refetches is decided in `invalidation.ts`, never by the views.
 */
import { QueryClient, keepPreviousData, useQueries, useQuery, type QueryKey } from "@tanstack/react-query";
import { useMemo } from "react";
import type {
  ActionFields,
  AtlasTable,
  CommandName,
  Domain,
  ErrorKind,
  ListRunRowsRequest,
  PairOutcome,
  RequestOf,
  ResponseOf,
  RunJobView,
  TreeRow,
  TreeWindow,
} from "../api/types";
import type { Backend } from "../backend/backend";
import { mergeJob } from "../runs/runJobsModel";
import { ALL_TRAJECTORIES, keys, type TreeRef } from "./keys";

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

/**
 * The query options of one command: its key and the call that answers it,
 * with the query's abort signal: a fetch the view no longer wants (its key
 * changed, its view went away, an invalidation refetches it) is cancelled.
 */
export function commandQuery<C extends CommandName>(backend: Backend, queryKey: QueryKey, command: C, request: RequestOf<C>) {
  return { queryKey, queryFn: ({ signal }: { signal: AbortSignal }) => backend.call(command, request, { signal }) };
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

/** The query of `get_turn` of one state with the prediction shown (`null`: the chosen one). */
export function turnQuery(backend: Backend, trajectoryId: string, nodeId: number, predictionId: number | null) {
  return commandQuery(backend, keys.turn(trajectoryId, nodeId, predictionId), "get_turn", {
    trajectory_id: trajectoryId,
    node_id: nodeId,
    prediction_id: predictionId,
  });
}

/** `get_turn`: one state (the previous turn's stays shown while it loads); `enabled: false` until the turn is known. */
export function useTurn(backend: Backend, trajectoryId: string | null, nodeId: number, predictionId: number | null, enabled: boolean) {
  return useQuery({
    ...turnQuery(backend, trajectoryId ?? "", nodeId, predictionId),
    enabled: enabled && trajectoryId !== null,
    placeholderData: sameTrajectory<ResponseOf<"get_turn">>(trajectoryId),
    gcTime: TURN_CACHE_MS,
  });
}

/** Rows per `get_tree_rows` page; the first window `get_turn` sends is page 0 (the API's `FIRST_WINDOW_ROWS`). */
export const TREE_PAGE_ROWS = 200;

/** Most matches a tree search lists (the total is always counted). */
export const TREE_SEARCH_LIMIT = 1000;

/** The pages holding rows `[first, last)`. */
export function pagesFor(first: number, last: number, pageRows = TREE_PAGE_ROWS): number[] {
  const out: number[] = [];
  const from = Math.floor(Math.max(0, first) / pageRows);
  const to = Math.floor(Math.max(first, last - 1) / pageRows);
  for (let p = from; p <= to; p++) out.push(p);
  return out;
}

/** The rows of a turn's tree a list shows, as loaded so far. */
export interface TreeRows {
  /** Loaded rows by row index. */
  byRow: Map<number, TreeRow>;
  /** Row index of each loaded node id. */
  rowOf: Map<number, number>;
  /** Visible rows under the collapsed set (the previous count while a new set loads). */
  visibleCount: number;
}

/**
 * `get_tree_rows`: the pages of a turn's tree covering rows `[first, last)`
 * with `collapsed` applied. Page 0 with nothing collapsed is `get_turn`'s
 * first window, so a small tree needs no further call; a page keeps the
 * previous reply's count while the next loads. Replies change only when the
 * trajectory does (`invalidation.ts`), so they never go stale by age.
 */
export function useTreeRows(backend: Backend, ref: TreeRef, firstWindow: TreeWindow, collapsed: readonly number[], range: readonly [number, number]): TreeRows {
  const collapsedKey = collapsed.join(",");
  // Page 0 with nothing collapsed is the turn's own first window: it is never
  // fetched, and refreshes with the turn.
  const fromTurn = collapsed.length === 0 && firstWindow.offset === 0;
  const pages = pagesFor(range[0], range[1]).filter((p) => !(p === 0 && fromTurn));
  const results = useQueries({
    queries: pages.map((page) => ({
      queryKey: keys.treeRows(ref, collapsedKey, page),
      queryFn: ({ signal }: { signal: AbortSignal }) =>
        backend.call("get_tree_rows", { ...ref, offset: page * TREE_PAGE_ROWS, limit: TREE_PAGE_ROWS, collapsed: [...collapsed], reveal: null }, { signal }),
      placeholderData: keepPreviousData,
      staleTime: Infinity,
      gcTime: TURN_CACHE_MS,
    })),
  });
  const datas = [fromTurn ? firstWindow : undefined, ...results.map((r) => r.data)];
  const fresh = results.find((r) => r.data && !r.isPlaceholderData)?.data;
  const visibleCount = fromTurn ? firstWindow.visible_count : (fresh?.visible_count ?? datas.find(Boolean)?.visible_count ?? 0);
  const stamp = datas.map((d) => (d ? `${d.offset}:${d.rows.length}:${d.collapsed.join(",")}` : "-")).join("|");
  return useMemo(() => {
    const byRow = new Map<number, TreeRow>();
    const rowOf = new Map<number, number>();
    for (const d of datas) {
      if (!d || d.collapsed.join(",") !== collapsedKey) continue;
      for (const r of d.rows) {
        byRow.set(r.row, r);
        rowOf.set(r.node.id, r.row);
      }
    }
    return { byRow, rowOf, visibleCount };
    // `stamp` stands for the replies' contents.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [stamp, collapsedKey, visibleCount]);
}

/**
 * One node of a turn's tree as its row (diff marks included), for views that
 * show a node of a tree too large to come whole (the node inspector). With
 * nothing collapsed a node's row is its id, so this reads the page the tree
 * view reads for it; `null` until loaded, or without a reference.
 */
export function useTreeRow(backend: Backend, ref: TreeRef | null, id: number | null): TreeRow | null {
  const page = id === null ? 0 : Math.floor(id / TREE_PAGE_ROWS);
  const q = useQuery({
    queryKey: ref ? keys.treeRows(ref, "", page) : ["get_tree_rows", null],
    queryFn: ({ signal }) =>
      backend.call("get_tree_rows", { ...ref!, offset: page * TREE_PAGE_ROWS, limit: TREE_PAGE_ROWS, collapsed: [], reveal: null }, { signal }),
    enabled: ref !== null && id !== null,
    staleTime: Infinity,
    gcTime: TURN_CACHE_MS,
  });
  return (id !== null && q.data?.rows.find((r) => r.row === id)) || null;
}

/** `search_tree`: matches of `query` in a turn's tree (none for a blank query). */
export function useTreeSearch(backend: Backend, ref: TreeRef, query: string) {
  return useQuery({
    queryKey: keys.treeSearch(ref, query),
    queryFn: ({ signal }) => backend.call("search_tree", { ...ref, query, limit: TREE_SEARCH_LIMIT }, { signal }),
    enabled: query.trim() !== "",
    staleTime: Infinity,
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

/** The query of `get_run_dashboard` of one run. */
export function runDashboardQuery(backend: Backend, runId: string) {
  return commandQuery(backend, keys.runDashboard(runId), "get_run_dashboard", { run_id: runId });
}

/** `get_run_dashboard` of one run. */
export function useRunDashboard(backend: Backend, runId: string | null) {
  return useQuery({ ...runDashboardQuery(backend, runId ?? ""), enabled: runId !== null });
}

/** The query of `list_run_rows` with the table's request. */
export function runRowsQuery(backend: Backend, request: ListRunRowsRequest) {
  return commandQuery(backend, keys.runRows(request.run_id, JSON.stringify(request)), "list_run_rows", request);
}

/** `list_run_rows`: the row table (the previous rows stay shown while the next filter loads). */
export function useRunRows(backend: Backend, request: ListRunRowsRequest | null) {
  return useQuery({
    ...runRowsQuery(backend, request ?? ({ run_id: "" } as ListRunRowsRequest)),
    enabled: request !== null,
    placeholderData: keepPreviousData,
  });
}

/** The query of `compare_runs` of A and B with the outcome filter (`null`: every pair), on the default metric. */
export function compareRunsQuery(backend: Backend, runA: string, runB: string, outcome: PairOutcome | null) {
  return commandQuery(backend, keys.compareRuns(runA, runB, outcome ?? "all"), "compare_runs", {
    run_a: runA,
    run_b: runB,
    metric: null,
    outcome,
    tie_margin: null,
    domain: null,
    offset: 0,
    limit: null,
  });
}

/** `compare_runs` of A and B with the outcome filter (every pair: the table is virtualised). */
export function useCompareRuns(backend: Backend, runA: string | null, runB: string | null, outcome: PairOutcome | null) {
  return useQuery({
    ...compareRunsQuery(backend, runA ?? "", runB ?? "", outcome),
    enabled: runA !== null && runB !== null,
    placeholderData: keepPreviousData,
  });
}

/** The query of `run_drift` of run A (and B when given), on the default metric. */
export function runDriftQuery(backend: Backend, runA: string, runB: string | null) {
  return commandQuery(backend, keys.runDrift(runA, runB ?? ""), "run_drift", { run_a: runA, run_b: runB, metric: null });
}

/** `run_drift`: fidelity by turn index of run A (and B when given). */
export function useRunDrift(backend: Backend, runA: string | null, runB: string | null) {
  return useQuery({
    ...runDriftQuery(backend, runA ?? "", runB),
    enabled: runA !== null,
    placeholderData: keepPreviousData,
  });
}

/**
 * The query of `run_atlas` of run A (and B when given) over every row of A,
 * or over the rows `rowIds` (a selection; `null`: every row).
 */
export function runAtlasQuery(backend: Backend, runA: string, runB: string | null, rowIds: readonly string[] | null = null) {
  return commandQuery(backend, keys.runAtlas(runA, runB ?? "", rowIds === null ? "" : rowIds.join(",")), "run_atlas", {
    run_id: runA,
    run_b: runB,
    row_ids: rowIds === null ? [] : [...rowIds],
  });
}

/** `run_atlas`: what run A's predictions get wrong (beside B's when given), over every row or the selection `rowIds`. */
export function useRunAtlas(backend: Backend, runA: string | null, runB: string | null, rowIds: readonly string[] | null = null) {
  return useQuery({ ...runAtlasQuery(backend, runA ?? "", runB, rowIds), enabled: runA !== null, placeholderData: keepPreviousData });
}

/** One cell of an atlas: its table, group and error kind. */
export interface AtlasCellRef {
  table: AtlasTable;
  group: string;
  kind: ErrorKind;
}

/** The query of `atlas_rows`: every row of one cell of run A's atlas (of the selection `rowIds` when given; with B's rows when given). */
export function atlasRowsQuery(backend: Backend, runA: string, runB: string | null, cell: AtlasCellRef, rowIds: readonly string[] | null = null) {
  return commandQuery(backend, keys.atlasRows(runA, runB ?? "", cell.table, cell.group, cell.kind, rowIds === null ? "" : rowIds.join(",")), "atlas_rows", {
    run_id: runA,
    run_b: runB,
    table: cell.table,
    group: cell.group,
    kind: cell.kind,
    row_ids: rowIds === null ? [] : [...rowIds],
    offset: 0,
    limit: 0,
  });
}

/** `atlas_rows` of the chosen cell, if any. */
export function useAtlasRows(backend: Backend, runA: string, runB: string | null, cell: AtlasCellRef | null, rowIds: readonly string[] | null = null) {
  return useQuery({
    ...atlasRowsQuery(backend, runA, runB, cell ?? { table: "overall", group: "all", kind: "invented" }, rowIds),
    enabled: cell !== null,
  });
}

/** `list_run_jobs`: the jobs (newest first) and the runs left unfinished; events keep it current (`events.ts`). */
export function useRunJobs(backend: Backend) {
  return useQuery(commandQuery(backend, keys.runJobs(), "list_run_jobs", {}));
}

/** Puts a job as a command or an event last showed it into the cached job list (`mergeJob`), when the list is loaded. */
export function putRunJob(client: QueryClient, job: RunJobView): void {
  client.setQueryData<ResponseOf<"list_run_jobs">>(keys.runJobs(), (old) => (old ? { ...old, jobs: mergeJob(old.jobs, job) } : old));
}

/** `label_set`: the workspace's labels for run rows. */
export function useLabelSet(backend: Backend) {
  return useQuery(commandQuery(backend, keys.labelSet(), "label_set", {}));
}

/** `action_space`: the action catalogue of a domain's language; it never changes while the studio runs. */
export function useActionSpace(backend: Backend, domain: Domain) {
  return useQuery({ ...commandQuery(backend, keys.actionSpace(domain), "action_space", { domain }), staleTime: Infinity });
}

/** The query of `parse_action` of one text; a reply depends on the text alone, so it never goes stale. */
export function parseActionQuery(backend: Backend, domain: Domain, raw: string) {
  return { ...commandQuery(backend, keys.parseAction(domain, raw), "parse_action", { domain, raw }), staleTime: Infinity };
}

/** `parse_action`: the back end's check of an action text and its form fields; off for an empty text. */
export function useParsedAction(backend: Backend, domain: Domain, raw: string) {
  return useQuery({ ...parseActionQuery(backend, domain, raw), enabled: raw.trim() !== "" });
}

/**
 * `format_action`: a filled form as the action text, or the problem naming the
 * bad parameter; off without a form. The previous reply stays while the next
 * loads (`isPlaceholderData`), so the preview does not flicker as one types.
 */
export function useFormattedAction(backend: Backend, domain: Domain, form: ActionFields | null) {
  const action = form ?? { name: "", fields: {} };
  return useQuery({
    ...commandQuery(backend, keys.formatAction(domain, JSON.stringify(action)), "format_action", { domain, action }),
    enabled: form !== null,
    staleTime: Infinity,
    placeholderData: keepPreviousData,
  });
}
