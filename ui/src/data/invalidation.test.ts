import { describe, expect, it } from "vitest";
import { QueryClient } from "@tanstack/react-query";
import { invalidate, keysTouchedBy, keysTouchedByChange } from "./invalidation";
import { keys } from "./keys";

describe("invalidation", () => {
  it("names each event's keys: one trajectory's, the list and the undo state", () => {
    const one = keysTouchedByChange("t1");
    expect(one).toEqual([
      ["list_trajectories"],
      ["get_trajectory", "t1"],
      ["get_branch", "t1"],
      ["get_turn", "t1"],
      ["get_tree_rows", "t1"],
      ["search_tree", "t1"],
      ["compare_branches", "t1"],
      ["workspace_info"],
      ["history"],
      ["list_lessons"],
      ["get_lesson"],
    ]);
    expect(keysTouchedBy({ type: "workspace_changed", trajectory_id: "t1", kind: "set_perturbation" })).toEqual(one);
    expect(keysTouchedBy({ type: "prediction_added", trajectory_id: "t1", node_id: 2, prediction_id: 4 })).toEqual(one);
    expect(keysTouchedBy({ type: "rollout_progress", job_id: "r", trajectory_id: "t1", done: 1, total: 2, node_id: 3 })).toEqual(one);
    expect(keysTouchedBy({ type: "workspace_changed", trajectory_id: null, kind: "set_engine" })).toEqual([["engine_status"]]);
    expect(
      keysTouchedBy({
        type: "step_finished",
        job_id: "j",
        trajectory_id: "t1",
        node_id: 2,
        prediction_id: null,
        status: "cancelled",
        error: null,
        stats: null,
      }),
    ).toEqual([]);
    expect(keysTouchedBy({ type: "step_delta", job_id: "j", trajectory_id: "t1", node_id: 2, reasoning: "", observation: "x", tokens: [] })).toEqual([]);
    expect(keysTouchedBy({ type: "hello", version: "0.1.0" })).toEqual([]);
  });

  it("refetches the runs after a workspace-wide change (a run imported, an undo)", () => {
    const all = keysTouchedByChange(null);
    for (const k of [["list_runs"], ["get_run_dashboard"], ["list_run_rows"], ["compare_runs"], ["run_drift"]]) expect(all).toContainEqual(k);
    expect(keysTouchedByChange("t1")).not.toContainEqual(["list_runs"]);
    expect(keysTouchedBy({ type: "workspace_changed", trajectory_id: null, kind: "import_run" })).toEqual(all);
  });

  it("marks only the touched replies stale", async () => {
    const client = new QueryClient();
    const all = [
      keys.trajectories(),
      keys.trajectory("t1"),
      keys.trajectory("t2"),
      keys.branch("t1", "4"),
      keys.branch("t2", "4"),
      keys.turn("t1", 2, null),
      keys.turn("t2", 2, null),
      keys.treeRows({ trajectory_id: "t1", node_id: 2, prediction_id: null, view_index: 0, side: "real" }, "", 0),
      keys.treeSearch({ trajectory_id: "t2", node_id: 2, prediction_id: 1, view_index: 0, side: "predicted" }, "ok"),
      keys.engine(),
      keys.workspace(),
    ];
    for (const k of all) client.setQueryData(k, { at: 1 });
    await invalidate(client, keysTouchedByChange("t1"));
    const stale = all.filter((k) => client.getQueryState(k)?.isInvalidated).map((k) => k.join("/"));
    expect(stale).toEqual(["list_trajectories", "get_trajectory/t1", "get_branch/t1/4", "get_turn/t1/2/", "get_tree_rows/t1/2//0/real//0", "workspace_info"]);
    await invalidate(client, keysTouchedByChange(null));
    expect(all.filter((k) => client.getQueryState(k)?.isInvalidated).length).toBe(all.length - 1);
  });
});
