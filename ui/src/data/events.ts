/**
 * What a studio event does to the cached replies: a job's progress is put
 * into the job list as it came (the bars move without a refetch) and its
 * run's replies are refreshed (`keysTouchedByJob`); every other event
 * invalidates the keys it touches (`keysTouchedBy`). One applier per window.
 */
import type { QueryClient } from "@tanstack/react-query";
import type { StudioEvent } from "../api/types";
import { invalidate, keysTouchedBy, keysTouchedByJob, RUN_REFRESH_MS } from "./invalidation";
import { putRunJob } from "./queries";

/** An applier of events to `client`, remembering when each run was last refreshed; `nowMs` is the clock. */
export function eventApplier(client: QueryClient, nowMs: () => number = Date.now): (event: StudioEvent) => void {
  const refreshed = new Map<string, number>();
  return (event) => {
    if (event.type === "run_job_progress") {
      const { job } = event;
      putRunJob(client, job);
      const now = nowMs();
      const due = now - (refreshed.get(job.run_id) ?? -Infinity) >= RUN_REFRESH_MS;
      if (due) refreshed.set(job.run_id, now);
      void invalidate(client, keysTouchedByJob(job, due));
      return;
    }
    void invalidate(client, keysTouchedBy(event));
  };
}
