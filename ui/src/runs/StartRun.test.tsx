import { QueryClientProvider } from "@tanstack/react-query";
import { act, cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import type { RunJobView, StudioEvent } from "../api/types";
import { createQueryClient } from "../data/queries";
import { FIXTURES, MockBackend } from "../mocks/mockBackend";
import { RUNS } from "../mocks/golden";
import { RunJobsPanel } from "./StartRun";

afterEach(cleanup);

function setup(rowDelayMs = 30) {
  const backend = new MockBackend(FIXTURES);
  backend.chunkDelayMs = rowDelayMs;
  const events: RunJobView[] = [];
  backend.subscribe((e: StudioEvent) => {
    if (e.type === "run_job_progress") events.push(e.job);
  });
  const runs = RUNS?.runs ?? [];
  render(
    <QueryClientProvider client={createQueryClient()}>
      <RunJobsPanel backend={backend} runs={runs} defaultRunId={runs[0]?.run_id ?? null} />
    </QueryClientProvider>,
  );
  return { backend, events, runs };
}

describe("starting a run from the studio", () => {
  it("starts the copy baseline over chosen trajectories and shows its progress to the end", async () => {
    const { events } = setup(5);
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
    const { events } = setup(60);
    fireEvent.click(screen.getByRole("button", { name: "Start a run…" }));
    const form = screen.getByRole("form", { name: "Start a run" });
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
    const { events, runs } = setup(5);
    fireEvent.click(screen.getByRole("button", { name: "Judge a run…" }));
    const form = screen.getByRole("form", { name: "Judge a run" });
    fireEvent.change(within(form).getByLabelText("Judge base URL"), { target: { value: "127.0.0.1:8001" } });
    expect(within(form).getByText("Base URL: an http:// or https:// address")).toBeTruthy();
    fireEvent.change(within(form).getByLabelText("Judge base URL"), { target: { value: "http://127.0.0.1:8001/v1" } });
    fireEvent.change(within(form).getByLabelText("Model"), { target: { value: "qwen-judge" } });
    fireEvent.click(within(form).getByRole("button", { name: "Start judging" }));
    const jobs = await screen.findByRole("list", { name: "Jobs" });
    await waitFor(() => expect(events.some((e) => e.kind === "judge" && e.state === "finished")).toBe(true));
    await waitFor(() => expect(within(jobs).getByText(/judged · done in/)).toBeTruthy());
    const end = events.find((e) => e.kind === "judge" && e.state === "finished")!;
    expect(end).toMatchObject({ run_id: runs[0]!.run_id, engine: "openai:qwen-judge", total: runs[0]!.row_count });
  }, 20000);
});
