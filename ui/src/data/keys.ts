/**
 * Query keys of the studio's data: `[command, ...ids]`, one key per API
 * command and the ids that select its reply. A key's prefix names every
 * reply of one command for one trajectory (`["get_branch", trajectory_id]`),
 * which is what a change to that trajectory invalidates (`invalidation.ts`).
 */
import type { QueryKey } from "@tanstack/react-query";
import type { PaneSide } from "../api/types";

/** One side of one view of a turn as `get_turn` showed it: what `get_tree_rows` and `search_tree` name. */
export interface TreeRef {
  trajectory_id: string;
  node_id: number;
  /** `TurnDetail.prediction_id`: the prediction shown. */
  prediction_id: number | null;
  /** Index into `TurnDetail.views`. */
  view_index: number;
  side: PaneSide;
}

/** The request every `list_trajectories` call sends: the whole list (the sidebar filters it locally). */
export const ALL_TRAJECTORIES = { query: null, domain: null, has_branches: null, max_fidelity: null, sort: null };

/** Key builders, one per command the views read. */
export const keys = {
  /** `list_trajectories` (the whole list). */
  trajectories: () => ["list_trajectories"] as const,
  /** `get_trajectory`: summary, branches and the live tree. */
  trajectory: (trajectoryId: string) => ["get_trajectory", trajectoryId] as const,
  /** `get_branch`: one branch's turns. */
  branch: (trajectoryId: string, branchId: string) => ["get_branch", trajectoryId, branchId] as const,
  /** `get_turn`: one state, with the prediction shown (`null`: the chosen one). */
  turn: (trajectoryId: string, nodeId: number, predictionId: number | null) => ["get_turn", trajectoryId, nodeId, predictionId] as const,
  /**
   * `get_tree_rows`: one page of a turn's tree rows (`ref` names the turn as
   * shown, the view and the side; `collapsed` the collapsed ids joined by commas).
   */
  treeRows: (ref: TreeRef, collapsed: string, page: number) =>
    ["get_tree_rows", ref.trajectory_id, ref.node_id, ref.prediction_id, ref.view_index, ref.side, collapsed, page] as const,
  /** `search_tree`: the matches of a query in a turn's tree. */
  treeSearch: (ref: TreeRef, query: string) => ["search_tree", ref.trajectory_id, ref.node_id, ref.prediction_id, ref.view_index, ref.side, query] as const,
  /** `compare_branches`. */
  compare: (trajectoryId: string, left: string, right: string) => ["compare_branches", trajectoryId, left, right] as const,
  /** `list_lessons`: the workspace's lessons. */
  lessons: () => ["list_lessons"] as const,
  /** `get_lesson`: a lesson by name, or one branch shown as a lesson (`lesson` `null`). */
  lesson: (lesson: string | null, trajectoryId: string | null, branchId: string | null) => ["get_lesson", lesson, trajectoryId, branchId] as const,
  /** `workspace_info` (undo / redo availability). */
  workspace: () => ["workspace_info"] as const,
  /** `history` (the undo log). */
  history: () => ["history"] as const,
  /** `engine_status`. */
  engine: () => ["engine_status"] as const,
  /** `list_runs`. */
  runs: () => ["list_runs"] as const,
  /** `get_run_dashboard` of one run. */
  runDashboard: (runId: string) => ["get_run_dashboard", runId] as const,
  /** `list_run_rows` of one run with the table's request. */
  runRows: (runId: string, request: string) => ["list_run_rows", runId, request] as const,
  /** `label_set`: the workspace's labels for run rows. */
  labelSet: () => ["label_set"] as const,
  /** `compare_runs` of two runs with the outcome filter. */
  compareRuns: (runA: string, runB: string, outcome: string) => ["compare_runs", runA, runB, outcome] as const,
  /** `list_run_jobs`: the run and judge jobs, and the runs left unfinished. */
  runJobs: () => ["list_run_jobs"] as const,
  /** `action_space`: a domain's action catalogue (fixed for a build). */
  actionSpace: (domain: string) => ["action_space", domain] as const,
  /** `parse_action` of one text in a domain's language. */
  parseAction: (domain: string, raw: string) => ["parse_action", domain, raw] as const,
  /** `format_action` of a filled form (`form`: its name and fields as JSON). */
  formatAction: (domain: string, form: string) => ["format_action", domain, form] as const,
  /** `run_atlas` of run A (and B; `""`: none) over a selection of rows (their ids joined by commas; `""`: every row). */
  runAtlas: (runA: string, runB: string, rows: string) => ["run_atlas", runA, runB, rows] as const,
  /** `atlas_rows`: the rows of one cell of run A's atlas (with B's rows; `""`: none), of a selection of rows (ids joined by commas; `""`: every row). */
  atlasRows: (runA: string, runB: string, table: string, group: string, kind: string, rows: string) =>
    ["atlas_rows", runA, runB, table, group, kind, rows] as const,
  /** `run_drift` of run A (and B; `""`: none). */
  runDrift: (runA: string, runB: string) => ["run_drift", runA, runB] as const,
} satisfies Record<string, (...ids: never[]) => QueryKey>;
