/**
 * Which cached replies a change touches. A studio event (or a command this
 * window ran) names the trajectory it changed; only that trajectory's keys,
 * the list (its counts and fidelity) and the undo state are refetched.
 */
import type { QueryClient, QueryKey } from "@tanstack/react-query";
import type { RunJobView, StudioEvent } from "../api/types";
import { keys } from "./keys";

/**
 * The key prefixes a stored change touches: one trajectory's tree, branches,
 * turns (with their tree rows and searches) and comparisons, or every trajectory's when `trajectoryId` is `null`
 * (a workspace-wide change such as an import); always the list, the undo
 * state and the history, and the lessons (a lesson spans trajectories; its
 * captions are notes, its branches tags).
 */
export function keysTouchedByChange(trajectoryId: string | null): QueryKey[] {
  const ids = trajectoryId === null ? [] : [trajectoryId];
  return [
    keys.trajectories(),
    ["get_trajectory", ...ids],
    ["get_branch", ...ids],
    ["get_turn", ...ids],
    ["get_tree_rows", ...ids],
    ["search_tree", ...ids],
    ["compare_branches", ...ids],
    keys.workspace(),
    keys.history(),
    keys.lessons(),
    ["get_lesson"],
    ...(trajectoryId === null ? RUN_KEYS : []),
  ];
}

/** The runs' replies: a workspace-wide change (an import, an undo) may add or remove a run. */
const RUN_KEYS: QueryKey[] = [keys.runs(), ["get_run_dashboard"], ["list_run_rows"], ["compare_runs"], ["run_drift"], ["run_atlas"], ["atlas_rows"]];

/** Milliseconds between two refreshes of a growing run's dashboard and rows while its job runs. */
export const RUN_REFRESH_MS = 2000;

/**
 * The key prefixes a run job's progress touches: the runs' list (a growing
 * run's row count) at each event; its dashboard and rows when `due` (at most
 * every {@link RUN_REFRESH_MS}); when the job ended, the job list and every
 * reply about the run.
 */
export function keysTouchedByJob(job: RunJobView, due: boolean): QueryKey[] {
  const run: QueryKey[] = [
    ["get_run_dashboard", job.run_id],
    ["list_run_rows", job.run_id],
  ];
  if (job.state !== "running") return [keys.runJobs(), keys.runs(), ...run, ["compare_runs"], ["run_drift"], ["run_atlas"], ["atlas_rows"]];
  return due ? [keys.runs(), ...run] : [keys.runs()];
}

/**
 * The key prefixes a studio event touches; none for events that change
 * nothing stored (`hello`, `step_delta`, a step that stored nothing) or
 * that say more than a key (`run_job_progress`: see `events.ts`).
 */
export function keysTouchedBy(event: StudioEvent): QueryKey[] {
  switch (event.type) {
    case "workspace_changed":
      // The engine is a workspace setting, not a trajectory change.
      return event.kind === "set_engine" ? [keys.engine()] : keysTouchedByChange(event.trajectory_id);
    case "prediction_added":
    case "rollout_progress":
      return keysTouchedByChange(event.trajectory_id);
    case "step_finished":
      return event.prediction_id === null ? [] : keysTouchedByChange(event.trajectory_id);
    default:
      return [];
  }
}

/** Marks the replies under each prefix stale; those on screen refetch. */
export function invalidate(client: QueryClient, prefixes: QueryKey[]): Promise<void> {
  return Promise.all(prefixes.map((queryKey) => client.invalidateQueries({ queryKey }))).then(() => undefined);
}
