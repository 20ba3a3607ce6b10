/**
 * The logic of starting runs and judging them from the studio
 * (`StartRun.tsx`): the requests of `start_run` / `start_judge` built from
 * the form, the jobs list kept up to date by `run_job_progress` events, and
 * how progress, rate and time left are written. No React here.
 */
import type { ContextMode, EngineSettings, RunJobView, StartJudgeRequest, StartRunRequest } from "../api/types";

/** Which engine the run form uses. */
export type EngineChoice = "studio" | "copy" | "openai";

/** An OpenAI-compatible endpoint as the form holds it. */
export interface EndpointForm {
  baseUrl: string;
  model: string;
  /** The back end's environment variable holding the key (blank: none). */
  keyEnv: string;
}

/** The run form. */
export interface RunForm {
  engine: EngineChoice;
  endpoint: EndpointForm;
  input: "trajectories" | "dataset";
  trajectoryIds: string[];
  datasetPath: string;
  concurrency: number;
  context: ContextMode;
  name: string;
}

/** The form as it first shows. */
export const INITIAL_RUN_FORM: RunForm = {
  engine: "studio",
  endpoint: { baseUrl: "http://127.0.0.1:8000/v1", model: "Qwen-AgentWorld-35B-A3B", keyEnv: "" },
  input: "trajectories",
  trajectoryIds: [],
  datasetPath: "",
  concurrency: 4,
  context: "teacher-forced",
  name: "",
};

/** The largest concurrency the back end accepts. */
export const MAX_CONCURRENCY = 64;

/** The endpoint settings of a form (`kind: "openai"`). */
export function endpointSettings(e: EndpointForm): EngineSettings {
  return { kind: "openai", base_url: e.baseUrl.trim(), model: e.model.trim(), api_key_env: e.keyEnv.trim() || null };
}

/** What is wrong with an endpoint form, or `null`. */
export function endpointProblem(e: EndpointForm): string | null {
  if (!/^https?:\/\/\S+$/.test(e.baseUrl.trim())) return "Base URL: an http:// or https:// address";
  if (e.model.trim() === "") return "Model: the served model's name";
  return null;
}

/** What is wrong with a concurrency, or `null`. */
export function concurrencyProblem(n: number): string | null {
  return Number.isInteger(n) && n >= 1 && n <= MAX_CONCURRENCY ? null : `Concurrency: a whole number from 1 to ${MAX_CONCURRENCY}`;
}

/** Why the run form cannot be sent, or `null` when it can. */
export function runFormProblem(f: RunForm): string | null {
  if (f.input === "trajectories" && f.trajectoryIds.length === 0) return "Choose at least one trajectory";
  if (f.input === "dataset" && f.datasetPath.trim() === "") return "Give the dataset file's path on the back end's machine";
  if (f.engine === "openai") {
    const p = endpointProblem(f.endpoint);
    if (p) return p;
  }
  return concurrencyProblem(f.concurrency);
}

/** The `start_run` request of a valid form. */
export function startRunRequest(f: RunForm): StartRunRequest {
  const engine: EngineSettings | null = f.engine === "studio" ? null : f.engine === "copy" ? { kind: "baseline", name: "copy" } : endpointSettings(f.endpoint);
  return {
    ...(f.name.trim() ? { name: f.name.trim() } : {}),
    ...(engine ? { engine } : {}),
    input: f.input === "trajectories" ? { kind: "trajectories", trajectory_ids: f.trajectoryIds } : { kind: "dataset", path: f.datasetPath.trim() },
    concurrency: f.concurrency,
    context: f.context,
  };
}

/** The `start_judge` request for a run. */
export function startJudgeRequest(runId: string, e: EndpointForm, concurrency: number): StartJudgeRequest {
  return { run_id: runId, judge: endpointSettings(e), concurrency };
}

/**
 * The jobs with `view` in its place: a job already listed is replaced (a
 * late event never takes a job back from an end to `running`), a new one goes
 * first.
 */
export function mergeJob(jobs: readonly RunJobView[], view: RunJobView): RunJobView[] {
  const i = jobs.findIndex((j) => j.job_id === view.job_id);
  if (i < 0) return [view, ...jobs];
  const old = jobs[i]!;
  if (old.state !== "running" && view.state === "running") return [...jobs];
  const out = [...jobs];
  out[i] = view;
  return out;
}

/** Seconds as `h:mm:ss` or `m:ss`; `—` when unknown. */
export function formatDuration(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds) || seconds < 0) return "—";
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${sec}` : `${m}:${sec}`;
}

/** Rows per second, or per minute when slower than one a second. */
export function formatRate(rowsPerSec: number | null): string {
  if (rowsPerSec === null || !(rowsPerSec > 0)) return "—";
  if (rowsPerSec >= 1) return `${rowsPerSec >= 10 ? rowsPerSec.toFixed(0) : rowsPerSec.toFixed(1)} rows/s`;
  const perMin = rowsPerSec * 60;
  return `${perMin >= 10 ? perMin.toFixed(0) : perMin.toFixed(1)} rows/min`;
}

/** The share done, in [0, 1]. */
export function fractionDone(j: RunJobView): number {
  return j.total === 0 ? 1 : Math.min(1, j.done / j.total);
}

/** One line saying where a job stands. */
export function jobSummary(j: RunJobView): string {
  const what = j.kind === "run" ? "predicted" : "judged";
  const base = `${j.done} / ${j.total} ${what}`;
  const failed = j.failed > 0 ? ` · ${j.failed} failed` : "";
  switch (j.state) {
    case "running":
      return `${base}${failed} · ${formatRate(j.rows_per_sec)} · ETA ${formatDuration(j.eta_s)}`;
    case "finished":
      return `${base}${failed} · done in ${formatDuration(j.elapsed_s)}`;
    case "cancelled":
      return `${base}${failed} · cancelled`;
    case "failed":
      return `${base}${failed} · failed: ${j.error ?? "unknown error"}`;
  }
}
