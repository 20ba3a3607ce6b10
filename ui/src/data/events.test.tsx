import { QueryClient, QueryClientProvider, useQuery, type InvalidateQueryFilters } from "@tanstack/react-query";
import { cleanup, render, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import type { ListRunJobsResponse, RunJobView } from "../api/types";
import type { Backend } from "../backend/backend";
import { eventApplier } from "./events";
import { keys } from "./keys";
import { commandQuery } from "./queries";

afterEach(cleanup);

const job = (over: Partial<RunJobView>): RunJobView => ({
  job_id: "j1",
  kind: "run",
  run_id: "7",
  run_name: "copy · 2 trajectories",
  engine: "copy",
  state: "running",
  done: 1,
  total: 4,
  failed: 0,
  already_done: 0,
  elapsed_s: 1,
  rows_per_sec: 1,
  eta_s: 3,
  error: null,
  ...over,
});

/** The query keys invalidated so far, as strings. */
function watch(client: QueryClient): string[] {
  const seen: string[] = [];
  const invalidate = client.invalidateQueries.bind(client);
  client.invalidateQueries = ((filters?: InvalidateQueryFilters) => {
    seen.push(JSON.stringify(filters?.queryKey));
    return invalidate(filters);
  }) as typeof client.invalidateQueries;
  return seen;
}

describe("the event applier", () => {
  it("puts a job's progress into the job list and refreshes its run at most every two seconds, everything at its end", () => {
    const client = new QueryClient();
    const listed: ListRunJobsResponse = { jobs: [job({ job_id: "j0", run_id: "6", state: "finished", done: 2, total: 2 })], resumable: [] };
    client.setQueryData(keys.runJobs(), listed);
    const seen = watch(client);
    let now = 10_000;
    const apply = eventApplier(client, () => now);

    apply({ type: "run_job_progress", job: job({ done: 1 }) });
    expect(client.getQueryData<ListRunJobsResponse>(keys.runJobs())!.jobs.map((j) => [j.job_id, j.done])).toEqual([
      ["j1", 1],
      ["j0", 2],
    ]);
    expect(seen.splice(0)).toEqual(['["list_runs"]', '["get_run_dashboard","7"]', '["list_run_rows","7"]']);
    now += 500;
    apply({ type: "run_job_progress", job: job({ done: 2 }) });
    expect(seen.splice(0)).toEqual(['["list_runs"]']);
    expect(client.getQueryData<ListRunJobsResponse>(keys.runJobs())!.jobs[0]!.done).toBe(2);
    now += 2000;
    apply({ type: "run_job_progress", job: job({ done: 3 }) });
    expect(seen.splice(0)).toEqual(['["list_runs"]', '["get_run_dashboard","7"]', '["list_run_rows","7"]']);
    apply({ type: "run_job_progress", job: job({ done: 4, state: "finished" }) });
    expect(seen.splice(0)).toEqual([
      '["list_run_jobs"]',
      '["list_runs"]',
      '["get_run_dashboard","7"]',
      '["list_run_rows","7"]',
      '["compare_runs"]',
      '["run_drift"]',
      '["run_atlas"]',
      '["atlas_rows"]',
    ]);
    // A late event never takes a finished job back to running.
    apply({ type: "run_job_progress", job: job({ done: 3 }) });
    expect(client.getQueryData<ListRunJobsResponse>(keys.runJobs())!.jobs[0]!.state).toBe("finished");
  });

  it("invalidates what other events touch", () => {
    const client = new QueryClient();
    const seen = watch(client);
    eventApplier(client)({ type: "workspace_changed", trajectory_id: null, kind: "set_engine" });
    expect(seen).toEqual(['["engine_status"]']);
  });
});

describe("a superseded fetch", () => {
  it("is cancelled: the query layer aborts the signal of the call whose key the view left", async () => {
    const signals = new Map<string, AbortSignal>();
    // A back end that never answers, so that only an abort ends a call.
    const backend: Backend = {
      kind: "test",
      subscribe: () => () => {},
      call: ((_command: string, request: { run_id: string }, options?: { signal?: AbortSignal }) => {
        signals.set(request.run_id, options!.signal!);
        return new Promise(() => {});
      }) as Backend["call"],
    };
    function Dashboard({ runId }: { runId: string }) {
      useQuery(commandQuery(backend, keys.runDashboard(runId), "get_run_dashboard", { run_id: runId }));
      return null;
    }
    const client = new QueryClient();
    const view = render(
      <QueryClientProvider client={client}>
        <Dashboard runId="1" />
      </QueryClientProvider>,
    );
    await waitFor(() => expect(signals.has("1")).toBe(true));
    view.rerender(
      <QueryClientProvider client={client}>
        <Dashboard runId="2" />
      </QueryClientProvider>,
    );
    await waitFor(() => expect(signals.has("2")).toBe(true));
    await waitFor(() => expect(signals.get("1")!.aborted).toBe(true));
    expect(signals.get("2")!.aborted).toBe(false);
  });
});
