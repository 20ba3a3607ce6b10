import { describe, expect, it } from "vitest";
import type { RunJobView } from "../api/types";
import {
  INITIAL_RUN_FORM,
  formatDuration,
  formatRate,
  fractionDone,
  jobSummary,
  mergeJob,
  runFormProblem,
  startJudgeRequest,
  startRunRequest,
} from "./runJobsModel";

const job = (patch: Partial<RunJobView> = {}): RunJobView => ({
  job_id: "run-job-1",
  kind: "run",
  run_id: "7",
  run_name: "copy · teacher-forced · 2 trajectories",
  engine: "copy",
  state: "running",
  done: 3,
  total: 12,
  failed: 0,
  already_done: 0,
  elapsed_s: 6,
  rows_per_sec: 0.5,
  eta_s: 18,
  error: null,
  ...patch,
});

describe("the run form", () => {
  it("says what is missing before it can start", () => {
    expect(runFormProblem(INITIAL_RUN_FORM)).toBe("Choose at least one trajectory");
    const chosen = { ...INITIAL_RUN_FORM, trajectoryIds: ["3"] };
    expect(runFormProblem(chosen)).toBeNull();
    expect(runFormProblem({ ...chosen, concurrency: 0 })).toBe("Concurrency: a whole number from 1 to 64");
    expect(runFormProblem({ ...chosen, concurrency: 65 })).toBe("Concurrency: a whole number from 1 to 64");
    expect(runFormProblem({ ...chosen, concurrency: Number.NaN })).toBe("Concurrency: a whole number from 1 to 64");
    expect(runFormProblem({ ...chosen, engine: "openai", endpoint: { baseUrl: "localhost:8000", model: "m", keyEnv: "" } })).toBe(
      "Base URL: an http:// or https:// address",
    );
    expect(runFormProblem({ ...chosen, engine: "openai", endpoint: { baseUrl: "http://h/v1", model: " ", keyEnv: "" } })).toBe(
      "Model: the served model's name",
    );
    expect(runFormProblem({ ...INITIAL_RUN_FORM, input: "dataset", datasetPath: "  " })).toBe("Give the dataset file's path on the back end's machine");
  });

  it("builds the start_run request of each engine and input", () => {
    const base = { ...INITIAL_RUN_FORM, trajectoryIds: ["3", "5"], concurrency: 8 };
    expect(startRunRequest(base)).toEqual({
      input: { kind: "trajectories", trajectory_ids: ["3", "5"] },
      concurrency: 8,
      context: "teacher-forced",
    });
    expect(startRunRequest({ ...base, engine: "copy", context: "free-running", name: "  drift check " })).toEqual({
      name: "drift check",
      engine: { kind: "baseline", name: "copy" },
      input: { kind: "trajectories", trajectory_ids: ["3", "5"] },
      concurrency: 8,
      context: "free-running",
    });
    expect(
      startRunRequest({
        ...base,
        engine: "openai",
        endpoint: { baseUrl: " http://127.0.0.1:9000/v1 ", model: "qwen ", keyEnv: "" },
        input: "dataset",
        datasetPath: " /data/web.jsonl ",
      }),
    ).toEqual({
      engine: { kind: "openai", base_url: "http://127.0.0.1:9000/v1", model: "qwen", api_key_env: null },
      input: { kind: "dataset", path: "/data/web.jsonl" },
      concurrency: 8,
      context: "teacher-forced",
    });
    expect(startJudgeRequest("7", { baseUrl: "http://j/v1", model: "judge", keyEnv: "KEY" }, 2)).toEqual({
      run_id: "7",
      judge: { kind: "openai", base_url: "http://j/v1", model: "judge", api_key_env: "KEY" },
      concurrency: 2,
    });
  });
});

describe("the jobs", () => {
  it("put a new job first, replace a known one, and never run an ended job again", () => {
    const a = job();
    const b = job({ job_id: "run-job-2", kind: "judge" });
    let jobs = mergeJob([], a);
    jobs = mergeJob(jobs, b);
    expect(jobs.map((j) => j.job_id)).toEqual(["run-job-2", "run-job-1"]);
    jobs = mergeJob(jobs, job({ done: 4 }));
    expect(jobs[1]!.done).toBe(4);
    jobs = mergeJob(jobs, job({ state: "cancelled", done: 5 }));
    // A progress event sent before the end but read after it.
    jobs = mergeJob(jobs, job({ done: 4 }));
    expect(jobs[1]).toMatchObject({ state: "cancelled", done: 5 });
  });

  it("write progress, rate and time left", () => {
    expect(formatDuration(18)).toBe("0:18");
    expect(formatDuration(75.4)).toBe("1:15");
    expect(formatDuration(3725)).toBe("1:02:05");
    expect(formatDuration(null)).toBe("—");
    expect(formatRate(0.5)).toBe("30 rows/min");
    expect(formatRate(0.05)).toBe("3.0 rows/min");
    expect(formatRate(2.25)).toBe("2.3 rows/s");
    expect(formatRate(120)).toBe("120 rows/s");
    expect(formatRate(null)).toBe("—");
    expect(fractionDone(job())).toBe(0.25);
    expect(fractionDone(job({ total: 0, done: 0 }))).toBe(1);
    expect(jobSummary(job())).toBe("3 / 12 predicted · 30 rows/min · ETA 0:18");
    expect(jobSummary(job({ kind: "judge", state: "finished", done: 12, failed: 2, elapsed_s: 61 }))).toBe("12 / 12 judged · 2 failed · done in 1:01");
    expect(jobSummary(job({ state: "cancelled" }))).toBe("3 / 12 predicted · cancelled");
    expect(jobSummary(job({ state: "failed", error: "no run 7 in this workspace (undone?)" }))).toBe(
      "3 / 12 predicted · failed: no run 7 in this workspace (undone?)",
    );
  });
});
