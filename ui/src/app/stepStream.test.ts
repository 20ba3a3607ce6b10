import { describe, expect, it } from "vitest";
import type { LabEvent, StepStats } from "../api/lab";
import { NO_STEP, rolloutLanding, stepReducer, type StepAction, type StepState } from "./stepStream";

const STATS: StepStats = {
  prompt_tokens: 1200,
  prompt_tokens_computed: 40,
  prompt_tokens_reused: 1160,
  completion_tokens: 9,
  prefill_ms: 12,
  decode_ms: 90,
  decode_tokens_per_sec: 100,
  stop_reason: "end_of_turn",
  decode_forwards: 9,
  drafted_tokens: 0,
  accepted_tokens: 0,
};

function run(state: StepState, ...actions: StepAction[]): StepState {
  return actions.reduce(stepReducer, state);
}
function ev(event: LabEvent): StepAction {
  return { type: "event", event, now_ms: 5000 };
}
const delta = (job: string, node: number, reasoning: string, observation: string): LabEvent => ({
  type: "step_delta",
  job_id: job,
  trajectory_id: "t",
  node_id: node,
  reasoning,
  observation,
  tokens: [],
});

describe("the step stream", () => {
  it("gathers a step's deltas, even before its job id is back, and ends with its figures", () => {
    const s = run(
      NO_STEP,
      { type: "step_started", trajectory_id: "t", node_id: 2, now_ms: 1000 },
      ev(delta("j1", 2, "think ", "<obs")),
      { type: "step_job", node_id: 2, job_id: "j1" },
      ev(delta("j1", 2, "more", ">")),
    );
    expect(s.stream).toMatchObject({ job_id: "j1", reasoning: "think more", observation: "<obs>", running: true, started_ms: 1000 });
    // Another job's or another node's deltas are not this step's.
    expect(run(s, ev(delta("j2", 2, "x", "y")), ev(delta("j1", 3, "x", "y")))).toEqual(s);
    const done = run(s, ev({ type: "step_finished", job_id: "j1", trajectory_id: "t", node_id: 2, prediction_id: 7, status: "ok", error: null, stats: STATS }));
    expect(done.stream).toMatchObject({ running: false, status: "ok", stats: STATS, finished_ms: 5000 });
    // A finished stream takes no more deltas.
    expect(run(done, ev(delta("j1", 2, "late", "late")))).toEqual(done);
  });

  it("marks a failed start, and a cancel of the running job only", () => {
    const started = run(NO_STEP, { type: "step_started", trajectory_id: "t", node_id: 2, now_ms: 1000 });
    expect(run(started, { type: "step_failed", error: "no engine" }).stream).toMatchObject({ running: false, status: "error", error: "no engine" });
    const withJob = run(started, { type: "step_job", node_id: 2, job_id: "j1" });
    expect(run(withJob, { type: "step_cancelled", job_id: "j9", now_ms: 2000 })).toEqual(withJob);
    expect(run(withJob, { type: "step_cancelled", job_id: "j1", now_ms: 2000 }).stream).toMatchObject({
      running: false,
      status: "cancelled",
      finished_ms: 2000,
    });
  });

  it("follows a rollout's progress, lands on its last state and reports a failed turn", () => {
    const started = run(NO_STEP, { type: "rollout_started", total: 2 });
    const progress: LabEvent = { type: "rollout_progress", job_id: "r1", trajectory_id: "t", done: 1, total: 2, node_id: 5 };
    const half = run(started, ev(progress));
    expect(half.rollout).toEqual({ job_id: "r1", done: 1, total: 2, running: true, status: null });
    expect(rolloutLanding(half, { ...progress, done: 2, node_id: 6 })).toBe(6);
    expect(rolloutLanding(half, { ...progress, job_id: "other", done: 2 })).toBeNull();
    expect(rolloutLanding(half, progress)).toBeNull();
    expect(run(half, ev({ ...progress, done: 2, node_id: 6 })).rollout).toEqual({ job_id: "r1", done: 2, total: 2, running: false, status: "done" });
    // The rollout's own step events do not reach the step stream.
    const failed = run(
      half,
      ev(delta("r1", 6, "r", "o")),
      ev({ type: "step_finished", job_id: "r1", trajectory_id: "t", node_id: 6, prediction_id: null, status: "error", error: "engine gone", stats: null }),
    );
    expect(failed).toEqual({ stream: null, rollout: { job_id: "r1", done: 1, total: 2, running: false, status: "error: engine gone" } });
    expect(run(half, { type: "rollout_stopped" }).rollout).toMatchObject({ running: false, status: "stopped" });
    expect(run(started, { type: "rollout_failed", total: 2, error: "bad action" }).rollout).toEqual({
      job_id: null,
      done: 0,
      total: 2,
      running: false,
      status: "bad action",
    });
  });
});
