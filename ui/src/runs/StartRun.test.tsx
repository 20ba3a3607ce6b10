import { QueryClientProvider } from "@tanstack/react-query";
import { act, cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import type { RunJobView, StudioEvent } from "../api/types";
import { useStudioEvents } from "../app/useStudioEvents";
import type { Backend } from "../backend/backend";
import { createQueryClient } from "../data/queries";
import { startEndpoint, type TestEndpoint } from "../testing/endpoint";
import { startServer, type TestServer } from "../testing/server";
import { RunJobsPanel } from "./StartRun";
import { allRowsRequest } from "./runsModel";

let server: TestServer | null = null;
let endpoint: TestEndpoint | null = null;
const scratch: string[] = [];
afterEach(async () => {
  cleanup();
  await server?.stop();
  await endpoint?.close();
  server = null;
  endpoint = null;
  for (const d of scratch.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** The window's event stream, as the app mounts it: it keeps the job list current. */
function Events({ backend }: { backend: Backend }) {
  useStudioEvents(backend, () => {});
  return null;
}

/** The panel on a server holding `paths` (default: the dev fixtures), with every job event it sent. */
async function setup(paths?: string[]) {
  server = await startServer(paths);
  const backend = server.backend;
  const events: RunJobView[] = [];
  backend.subscribe((e: StudioEvent) => {
    if (e.type === "run_job_progress") events.push(e.job);
  });
  const { runs } = await backend.call("list_runs", {});
  render(
    <QueryClientProvider client={createQueryClient()}>
      <Events backend={backend} />
      <RunJobsPanel backend={backend} runs={runs} defaultRunId={runs[0]?.run_id ?? null} />
    </QueryClientProvider>,
  );
  return { backend, events, runs };
}

/** The AgentWorldBench sample and a run of the copy baseline over it (`worldloom eval`). */
function sampleWithRun(): string[] {
  const dataset = join(inject("repoDir"), "samples", "agentworldbench", "agentworldbench_sample.jsonl");
  const dir = mkdtempSync(join(tmpdir(), "worldloom-vitest-run-"));
  scratch.push(dir);
  const run = join(dir, "copy.jsonl");
  execFileSync(inject("worldloomBin"), ["eval", "--data", dataset, "--engine", "copy", "-o", run], { stdio: "ignore" });
  return [dataset, run];
}

describe("starting a run from the studio", () => {
  it("starts the copy baseline over chosen trajectories and shows its progress to the end", async () => {
    const { events } = await setup();
    fireEvent.click(screen.getByRole("button", { name: "Start a run…" }));
    const form = screen.getByRole("form", { name: "Start a run" });
    const start = within(form).getByRole("button", { name: "Start run" });
    expect(start).toHaveProperty("disabled", true);
    expect(within(form).getByText("Choose at least one trajectory")).toBeTruthy();
    fireEvent.click(within(form).getByRole("radio", { name: "copy baseline" }));
    fireEvent.click(within(form).getByRole("radio", { name: "Free-running" }));
    const web = await within(form).findByRole("checkbox", { name: /harbor-books/ });
    fireEvent.click(web);
    fireEvent.click(within(form).getByRole("checkbox", { name: /calculator/ }));
    expect(within(form).getByText("2 of 5 chosen")).toBeTruthy();
    fireEvent.click(start);
    const jobs = await screen.findByRole("list", { name: "Jobs" });
    await waitFor(() => expect(within(jobs).getByText(/predicted · done in/)).toBeTruthy());
    const last = events[events.length - 1]!;
    expect(last).toMatchObject({ kind: "run", state: "finished", engine: "copy", run_name: "copy · free-running · 2 trajectories" });
    expect(last.done).toBe(last.total);
    expect(last.total).toBeGreaterThan(0);
    const bar = within(jobs).getByRole("progressbar");
    expect(bar.getAttribute("aria-valuenow")).toBe("100");
    expect(screen.queryByRole("form", { name: "Start a run" })).toBeNull();
  }, 20000);

  it("cancels a running job, offers to resume it, and resumes only the rest", async () => {
    // An endpoint that takes 300 ms a prediction, one at a time: slow enough to cancel in the middle.
    endpoint = await startEndpoint(() => "<predicted_observation>\nslow page\n</predicted_observation>", 300);
    const { events } = await setup();
    fireEvent.click(screen.getByRole("button", { name: "Start a run…" }));
    const form = screen.getByRole("form", { name: "Start a run" });
    fireEvent.click(within(form).getByRole("radio", { name: "OpenAI-compatible endpoint" }));
    fireEvent.change(within(form).getByLabelText("Endpoint base URL"), { target: { value: endpoint.baseUrl } });
    fireEvent.change(within(form).getByLabelText("Model"), { target: { value: "test-model" } });
    fireEvent.change(within(form).getByLabelText("API key variable"), { target: { value: "" } });
    fireEvent.change(within(form).getByLabelText("Concurrency"), { target: { value: "1" } });
    expect(await within(form).findAllByRole("checkbox")).toHaveLength(5);
    fireEvent.click(within(form).getByRole("button", { name: "Choose all" }));
    expect(within(form).getByText("5 of 5 chosen")).toBeTruthy();
    fireEvent.click(within(form).getByRole("button", { name: "Start run" }));
    const jobs = await screen.findByRole("list", { name: "Jobs" });
    await waitFor(() => expect(events.some((e) => e.done >= 2)).toBe(true));
    fireEvent.click(within(jobs).getByRole("button", { name: "Cancel" }));
    await waitFor(() => expect(within(jobs).getByText(/predicted · cancelled/)).toBeTruthy());
    const cancelled = events.filter((e) => e.state === "cancelled")[0]!;
    expect(cancelled.done).toBeLessThan(cancelled.total);
    const resume = await within(jobs).findByRole("button", { name: "Resume" });
    await act(async () => {
      fireEvent.click(resume);
    });
    await waitFor(() => expect(events.some((e) => e.job_id !== cancelled.job_id && e.state === "running")).toBe(true));
    const resumed = events.find((e) => e.job_id !== cancelled.job_id)!;
    expect(resumed.already_done).toBe(cancelled.done);
    expect(resumed.run_id).toBe(cancelled.run_id);
    await waitFor(() => expect(events.some((e) => e.job_id === resumed.job_id && e.state === "finished")).toBe(true), { timeout: 5000 });
    expect(screen.queryByRole("button", { name: "Resume" })).toBeNull();
  }, 20000);

  it("judges a run with an endpoint checked before it is sent", async () => {
    const verdict = { format: 5, factuality: 4, consistency: 4, realism: 3, quality: 4 };
    endpoint = await startEndpoint(() => `<final_evaluation>${JSON.stringify({ scores: verdict })}</final_evaluation>`);
    const { backend, events, runs } = await setup(sampleWithRun());
    expect(runs.length).toBe(1);
    fireEvent.click(screen.getByRole("button", { name: "Judge a run…" }));
    const form = screen.getByRole("form", { name: "Judge a run" });
    fireEvent.change(within(form).getByLabelText("Judge base URL"), { target: { value: "127.0.0.1:8001" } });
    expect(within(form).getByText("Base URL: an http:// or https:// address")).toBeTruthy();
    fireEvent.change(within(form).getByLabelText("Judge base URL"), { target: { value: endpoint.baseUrl } });
    fireEvent.change(within(form).getByLabelText("Model"), { target: { value: "qwen-judge" } });
    fireEvent.change(within(form).getByLabelText("API key variable"), { target: { value: "" } });
    fireEvent.click(within(form).getByRole("button", { name: "Start judging" }));
    const jobs = await screen.findByRole("list", { name: "Jobs" });
    await waitFor(() => expect(events.some((e) => e.kind === "judge" && e.state === "finished")).toBe(true));
    await waitFor(() => expect(within(jobs).getByText(/judged · (\d+ failed · )?done in/)).toBeTruthy());
    const end = events.find((e) => e.kind === "judge" && e.state === "finished")!;

    // Rows the copy baseline could not predict (no observation to copy) have no generation: they fail without a judge call.
    const rows = (await backend.call("list_run_rows", allRowsRequest(runs[0]!.run_id))).rows;
    const predicted = rows.filter((r) => r.status === "ok");
    expect(predicted.length).toBeGreaterThan(0);
    expect(end).toMatchObject({
      run_id: runs[0]!.run_id,
      engine: "openai:qwen-judge",
      total: runs[0]!.row_count,
      done: runs[0]!.row_count,
      failed: rows.length - predicted.length,
    });
    expect(endpoint.requests).toBe(predicted.length);
    // The verdict's mean of 4 on the 1–5 scale is 75 on the 0–100 score.
    expect(predicted.map((r) => r.score)).toEqual(predicted.map(() => 75));
    expect(rows.filter((r) => r.status !== "ok").every((r) => r.judge_failed)).toBe(true);
  }, 20000);
});
