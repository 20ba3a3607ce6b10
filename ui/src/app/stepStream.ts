/**
 * The step stream: a reducer over the laboratory's step and rollout events
 * (`step_delta`, `step_finished`, `rollout_progress`) and the commands that
 * start and stop them. It holds the step streaming on screen (reasoning,
 * observation and tokens as they arrive, then the figures) and the rollout's
 * progress. Pure: time comes in the actions.
 */
import type { LabEvent } from "../api/lab";
import type { StepStream } from "../lab/StepBar";

/** A rollout's progress, as the Roll out dialog shows it. */
export interface RolloutState {
  /** `null` until the `rollout` call returns (its events may come first). */
  job_id: string | null;
  done: number;
  total: number;
  running: boolean;
  /** `done`, `stopped`, or what went wrong. */
  status: string | null;
}

/** The step stream's state. */
export interface StepState {
  stream: StepStream | null;
  rollout: RolloutState | null;
}

/** What can happen to a step or a rollout. */
export type StepAction =
  | { type: "event"; event: LabEvent; now_ms: number }
  | { type: "step_started"; trajectory_id: string; node_id: number; now_ms: number }
  | { type: "step_job"; node_id: number; job_id: string }
  | { type: "step_failed"; error: string }
  | { type: "step_cancelled"; job_id: string; now_ms: number }
  | { type: "rollout_started"; total: number }
  | { type: "rollout_job"; job_id: string }
  | { type: "rollout_failed"; total: number; error: string }
  | { type: "rollout_stopped" };

/** Nothing streaming, no rollout. */
export const NO_STEP: StepState = { stream: null, rollout: null };

function isRolloutEvent(rollout: RolloutState | null, event: LabEvent): rollout is RolloutState {
  return !!rollout && (rollout.job_id === null || rollout.job_id === event.job_id);
}

/**
 * The node a finished rollout lands on (its last state, shown on its branch),
 * when `event` finishes the rollout of `state`; else `null`.
 */
export function rolloutLanding(state: StepState, event: LabEvent): number | null {
  return event.type === "rollout_progress" && isRolloutEvent(state.rollout, event) && event.done >= event.total ? event.node_id : null;
}

function onEvent(state: StepState, event: LabEvent, now_ms: number): StepState {
  const ro = state.rollout;
  if (event.type === "rollout_progress") {
    if (!isRolloutEvent(ro, event)) return state;
    const finished = event.done >= event.total;
    return { ...state, rollout: { job_id: event.job_id, done: event.done, total: event.total, running: !finished, status: finished ? "done" : null } };
  }
  // A rollout's events can arrive before its `rollout` call has returned the job id.
  if (ro?.running && isRolloutEvent(ro, event)) {
    if (event.type === "step_finished" && event.status !== "ok" && event.status !== "truncated") {
      return {
        ...state,
        rollout: { ...ro, running: false, status: event.status === "cancelled" ? "stopped" : `${event.status}${event.error ? `: ${event.error}` : ""}` },
      };
    }
    return state;
  }
  const s = state.stream;
  if (!s || s.trajectory_id !== event.trajectory_id || s.node_id !== event.node_id) return state;
  if (s.job_id !== null && s.job_id !== event.job_id) return state;
  if (!s.running) return state;
  if (event.type === "step_delta") {
    return {
      ...state,
      stream: {
        ...s,
        job_id: event.job_id,
        reasoning: s.reasoning + event.reasoning,
        observation: s.observation + event.observation,
        tokens: event.tokens.length ? [...s.tokens, ...event.tokens] : s.tokens,
      },
    };
  }
  return {
    ...state,
    stream: { ...s, job_id: event.job_id, running: false, status: event.status, error: event.error, stats: event.stats, finished_ms: now_ms },
  };
}

/** The step stream reducer (pure). */
export function stepReducer(state: StepState, action: StepAction): StepState {
  const s = state.stream;
  const ro = state.rollout;
  switch (action.type) {
    case "event":
      return onEvent(state, action.event, action.now_ms);
    case "step_started":
      return {
        ...state,
        stream: {
          job_id: null,
          trajectory_id: action.trajectory_id,
          node_id: action.node_id,
          reasoning: "",
          observation: "",
          tokens: [],
          running: true,
          status: null,
          error: null,
          stats: null,
          started_ms: action.now_ms,
          finished_ms: null,
        },
      };
    case "step_job":
      return s && s.node_id === action.node_id && s.job_id === null ? { ...state, stream: { ...s, job_id: action.job_id } } : state;
    case "step_failed":
      return s ? { ...state, stream: { ...s, running: false, status: "error", error: action.error } } : state;
    case "step_cancelled":
      return s && s.job_id === action.job_id && s.running
        ? { ...state, stream: { ...s, running: false, status: "cancelled", finished_ms: action.now_ms } }
        : state;
    case "rollout_started":
      return { ...state, rollout: { job_id: null, done: 0, total: action.total, running: true, status: null } };
    case "rollout_job":
      return ro ? { ...state, rollout: { ...ro, job_id: action.job_id } } : state;
    case "rollout_failed":
      return { ...state, rollout: { job_id: null, done: 0, total: action.total, running: false, status: action.error } };
    case "rollout_stopped":
      return ro ? { ...state, rollout: { ...ro, running: false, status: "stopped" } } : state;
  }
}
