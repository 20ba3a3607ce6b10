/**
 * Steps and rollouts started from this window: the step stream reducer
 * (`stepStream.ts`) and the commands that start and stop them (`step`,
 * `rollout`, `cancel_step`). Events reach the reducer through `onLabEvent`.
 */
import { useCallback, useLayoutEffect, useReducer, useRef } from "react";
import type { LabEvent } from "../api/lab";
import type { ContextMode } from "../api/types";
import type { Backend } from "../backend/backend";
import { NO_STEP, rolloutLanding, stepReducer } from "./stepStream";

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The step stream and its commands. `onChanged` is told when a stop may have stored something. */
export function useStepRunner(backend: Backend, report: (e: unknown) => void, onChanged: (trajectoryId: string) => void) {
  const [state, dispatch] = useReducer(stepReducer, NO_STEP);
  // The state last rendered, for event handlers and commands that run between renders.
  const latest = useRef(state);
  useLayoutEffect(() => {
    latest.current = state;
  }, [state]);

  /** Feeds an event to the stream; returns the node a finished rollout landed on, if this event finished it. */
  const onLabEvent = useCallback((event: LabEvent): number | null => {
    const landing = rolloutLanding(latest.current, event);
    dispatch({ type: "event", event, now_ms: Date.now() });
    return landing;
  }, []);

  const step = useCallback(
    async (trajectoryId: string, nodeId: number, context: ContextMode) => {
      dispatch({ type: "step_started", trajectory_id: trajectoryId, node_id: nodeId, now_ms: Date.now() });
      try {
        const r = await backend.call("step", { trajectory_id: trajectoryId, node_id: nodeId, context });
        dispatch({ type: "step_job", node_id: nodeId, job_id: r.job_id });
      } catch (e) {
        dispatch({ type: "step_failed", error: message(e) });
      }
    },
    [backend],
  );

  const stop = useCallback(async () => {
    if (!latest.current.stream?.running) return;
    if (!latest.current.stream.job_id) {
      // The job id is not back yet: wait for it briefly.
      await new Promise((r) => window.setTimeout(r, 150));
    }
    const job = latest.current.stream?.job_id;
    if (!job) return;
    try {
      await backend.call("cancel_step", { job_id: job });
      dispatch({ type: "step_cancelled", job_id: job, now_ms: Date.now() });
    } catch (e) {
      report(e);
    }
  }, [backend, report]);

  const startRollout = useCallback(
    async (trajectoryId: string, nodeId: number, actions: string[], context: ContextMode) => {
      dispatch({ type: "rollout_started", total: actions.length });
      try {
        const r = await backend.call("rollout", { trajectory_id: trajectoryId, node_id: nodeId, actions, context });
        dispatch({ type: "rollout_job", job_id: r.job_id });
      } catch (e) {
        dispatch({ type: "rollout_failed", total: actions.length, error: message(e) });
        throw e;
      }
    },
    [backend],
  );

  const stopRollout = useCallback(
    async (trajectoryId: string | null) => {
      const job = latest.current.rollout?.job_id;
      if (!job) return;
      try {
        await backend.call("cancel_step", { job_id: job });
        dispatch({ type: "rollout_stopped" });
        if (trajectoryId) onChanged(trajectoryId);
      } catch (e) {
        report(e);
      }
    },
    [backend, report, onChanged],
  );

  return { stream: state.stream, rollout: state.rollout, onLabEvent, step, stop, startRollout, stopRollout };
}
