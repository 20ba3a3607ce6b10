/**
 * Runs made in the studio (`run_jobs` in the API): a form that starts a run
 * (an engine — the studio's own, changed with the Engine dialog, the `copy`
 * baseline or an OpenAI-compatible endpoint — over chosen trajectories or a
 * dataset file, with a concurrency and teacher-forced or free-running
 * history), a form that starts judging a run with an OpenAI-compatible
 * judge, and the jobs: a progress bar with rows done of all, rate and time
 * left, Cancel while running, and Resume for a studio run with turns still
 * to predict. Progress arrives as `run_job_progress` events; each one also
 * refreshes the runs list, so a growing run shows in the Runs view.
 */
import { useQueryClient } from "@tanstack/react-query";
import { useMemo, useState, type ReactNode } from "react";
import type { RunJobView, RunSummary } from "../api/types";
import type { Backend } from "../backend/backend";
import { invalidate, keysTouchedByJob } from "../data/invalidation";
import { keys } from "../data/keys";
import { putRunJob, useEngineStatus, useRunJobs, useTrajectories } from "../data/queries";
import { ErrorLine, Field, RadioSeg, errorMessage } from "../lab/DialogParts";
import { EngineDialog } from "../lab/EngineDialog";
import {
  INITIAL_RUN_FORM,
  MAX_CONCURRENCY,
  concurrencyProblem,
  endpointProblem,
  fractionDone,
  jobSummary,
  runFormProblem,
  startJudgeRequest,
  startRunRequest,
  type EndpointForm,
  type EngineChoice,
  type RunForm,
} from "./runJobsModel";
import "./startRun.css";

/** Props of {@link RunJobsPanel}. */
export interface RunJobsPanelProps {
  backend: Backend;
  /** The workspace's runs (the judge form chooses one). */
  runs: RunSummary[];
  /** The run to judge at first (run A). */
  defaultRunId?: string | null;
}

/**
 * The run and judge forms behind two buttons, and the jobs with their
 * progress: `list_run_jobs` through the query layer, kept current by the
 * window's events (`data/events.ts`) and by the replies of this panel's
 * commands.
 */
export function RunJobsPanel({ backend, runs, defaultRunId = null }: RunJobsPanelProps) {
  const client = useQueryClient();
  const [open, setOpen] = useState<"run" | "judge" | null>(null);
  const listed = useRunJobs(backend);
  const jobs = listed.data?.jobs ?? [];
  const changed = (job: RunJobView) => {
    putRunJob(client, job);
    void invalidate(client, keysTouchedByJob(job, true));
  };
  const started = (job: RunJobView) => {
    putRunJob(client, job);
    setOpen(null);
    void invalidate(client, [keys.runJobs(), keys.runs()]);
  };
  /** Each run's newest job (jobs are newest first): a resumable run's Resume sits on it. */
  const newest = new Map<string, string>();
  for (const j of jobs) if (!newest.has(j.run_id)) newest.set(j.run_id, j.job_id);
  const resumable = listed.data?.resumable ?? [];
  const resumableIds = new Set(resumable.map((r) => r.run_id));
  const canResume = (j: RunJobView) => j.kind === "run" && j.state !== "running" && resumableIds.has(j.run_id) && newest.get(j.run_id) === j.job_id;
  /** Runs left unfinished before this window's jobs (another session, a crash). */
  const leftOver = resumable.filter((r) => !newest.has(r.run_id));
  return (
    <div className="run-jobs" aria-label="Run jobs">
      <div className="run-jobs-bar">
        <button type="button" aria-expanded={open === "run"} onClick={() => setOpen(open === "run" ? null : "run")}>
          Start a run…
        </button>
        <button type="button" aria-expanded={open === "judge"} disabled={runs.length === 0} onClick={() => setOpen(open === "judge" ? null : "judge")}>
          Judge a run…
        </button>
      </div>
      {open === "run" ? <StartRunForm backend={backend} onStarted={started} onClose={() => setOpen(null)} /> : null}
      {open === "judge" ? <JudgeForm backend={backend} runs={runs} defaultRunId={defaultRunId} onStarted={started} onClose={() => setOpen(null)} /> : null}
      {jobs.length > 0 || leftOver.length > 0 ? (
        <ul className="run-job-list" aria-label="Jobs">
          {jobs.map((j) => (
            <JobRow
              key={j.job_id}
              backend={backend}
              job={j}
              onChanged={changed}
              resume={canResume(j) ? <ResumeButton backend={backend} runId={j.run_id} onStarted={started} /> : null}
            />
          ))}
          {leftOver.map((r) => (
            <li key={`resume-${r.run_id}`} className="run-job is-resumable">
              <div className="run-job-head">
                <span className="run-job-name">{r.name}</span>
                <span className="run-job-state">
                  {r.done} / {r.total} predicted · interrupted
                </span>
                <ResumeButton backend={backend} runId={r.run_id} onStarted={started} />
              </div>
              <ProgressBar fraction={r.total === 0 ? 1 : r.done / r.total} label={`${r.name}: ${r.done} of ${r.total}`} />
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

function ProgressBar({ fraction, label, state = "running" }: { fraction: number; label: string; state?: RunJobView["state"] }) {
  const pct = Math.round(fraction * 1000) / 10;
  return (
    <div className={`run-progress is-${state}`} role="progressbar" aria-label={label} aria-valuemin={0} aria-valuemax={100} aria-valuenow={pct}>
      <div className="run-progress-fill" style={{ width: `${pct}%` }} />
    </div>
  );
}

function JobRow({ backend, job, onChanged, resume }: { backend: Backend; job: RunJobView; onChanged: (v: RunJobView) => void; resume: ReactNode }) {
  const [error, setError] = useState<string | null>(null);
  const cancel = () => {
    setError(null);
    backend.call("cancel_run_job", { job_id: job.job_id }).then(onChanged, (e: unknown) => setError(errorMessage(e)));
  };
  return (
    <li className={`run-job is-${job.state}`}>
      <div className="run-job-head">
        <span className="run-job-kind">{job.kind === "run" ? "Run" : "Judge"}</span>
        <span className="run-job-name" title={`job ${job.job_id}`}>
          {job.run_name}
        </span>
        <span className="run-job-engine">{job.engine}</span>
        <span className="run-job-state" aria-live="polite">
          {jobSummary(job)}
        </span>
        {job.state === "running" ? (
          <button type="button" onClick={cancel}>
            Cancel
          </button>
        ) : null}
        {resume}
      </div>
      <ProgressBar fraction={fractionDone(job)} state={job.state} label={`${job.run_name}: ${job.done} of ${job.total}`} />
      <ErrorLine error={error} />
    </li>
  );
}

function ResumeButton({ backend, runId, onStarted }: { backend: Backend; runId: string; onStarted: (j: RunJobView) => void }) {
  const [error, setError] = useState<string | null>(null);
  return (
    <>
      <button
        type="button"
        onClick={() => {
          setError(null);
          backend.call("resume_run", { run_id: runId }).then(onStarted, (e: unknown) => setError(errorMessage(e)));
        }}
      >
        Resume
      </button>
      <ErrorLine error={error} />
    </>
  );
}

function EndpointFields({ value, onChange, what }: { value: EndpointForm; onChange: (v: EndpointForm) => void; what: string }) {
  return (
    <div className="run-form-row">
      <Field label={`${what} base URL`} grow>
        <input value={value.baseUrl} onChange={(e) => onChange({ ...value, baseUrl: e.target.value })} spellCheck={false} />
      </Field>
      <Field label="Model">
        <input value={value.model} onChange={(e) => onChange({ ...value, model: e.target.value })} spellCheck={false} />
      </Field>
      <Field label="API key variable">
        <input value={value.keyEnv} placeholder="(none)" onChange={(e) => onChange({ ...value, keyEnv: e.target.value })} spellCheck={false} />
      </Field>
    </div>
  );
}

function ConcurrencyField({ value, onChange }: { value: number; onChange: (n: number) => void }) {
  return (
    <Field label="Concurrency">
      <input type="number" min={1} max={MAX_CONCURRENCY} step={1} value={Number.isNaN(value) ? "" : value} onChange={(e) => onChange(e.target.valueAsNumber)} />
    </Field>
  );
}

/** A start form's submit: `busy` while the call runs, its failure as `error`. */
interface StartJob {
  busy: boolean;
  error: string | null;
  submit: () => void;
}

/** The {@link StartJob} of a form whose submit calls `start`; the job it starts goes to `onStarted`. */
function useStartJob(start: () => Promise<RunJobView>, onStarted: (j: RunJobView) => void): StartJob {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = () => {
    setBusy(true);
    setError(null);
    start()
      .then(onStarted, (e: unknown) => setError(errorMessage(e)))
      .finally(() => setBusy(false));
  };
  return { busy, error, submit };
}

/**
 * The frame of a start form: its title (also its name), the fields, the
 * error of `start`, then what blocks it (`problem`), Close and the submit
 * button (`startLabel`); `after` follows inside the form.
 */
function StartForm({
  title,
  startLabel,
  problem,
  start: { busy, error, submit },
  onClose,
  children,
  after,
}: {
  title: string;
  startLabel: string;
  problem: string | null;
  start: StartJob;
  onClose: () => void;
  children: ReactNode;
  after?: ReactNode;
}) {
  return (
    <form
      className="run-form"
      aria-label={title}
      onSubmit={(e) => {
        e.preventDefault();
        if (!problem && !busy) submit();
      }}
    >
      <h3>{title}</h3>
      {children}
      <ErrorLine error={error} />
      <div className="run-form-actions">
        {problem ? <span className="muted">{problem}</span> : null}
        <button type="button" onClick={onClose}>
          Close
        </button>
        <button type="submit" className="primary" disabled={problem !== null || busy}>
          {busy ? "Starting…" : startLabel}
        </button>
      </div>
      {after}
    </form>
  );
}

function StartRunForm({ backend, onStarted, onClose }: { backend: Backend; onStarted: (j: RunJobView) => void; onClose: () => void }) {
  const client = useQueryClient();
  const [form, setForm] = useState<RunForm>(INITIAL_RUN_FORM);
  const [engineDialog, setEngineDialog] = useState(false);
  const [filter, setFilter] = useState("");
  const engine = useEngineStatus(backend);
  const trajectories = useTrajectories(backend);
  const all = useMemo(() => trajectories.data?.trajectories ?? [], [trajectories.data]);
  const shown = useMemo(() => {
    const q = filter.trim().toLowerCase();
    return q ? all.filter((t) => `${t.name} ${t.domain} ${t.goal ?? ""}`.toLowerCase().includes(q)) : all;
  }, [all, filter]);
  const chosen = new Set(form.trajectoryIds);
  const set = (patch: Partial<RunForm>) => setForm((f) => ({ ...f, ...patch }));
  const toggle = (id: string) => set({ trajectoryIds: chosen.has(id) ? form.trajectoryIds.filter((x) => x !== id) : [...form.trajectoryIds, id] });
  const problem = runFormProblem(form);
  const studioEngine = engine.data?.name ?? engine.data?.settings?.kind ?? "…";
  const start = useStartJob(() => backend.call("start_run", startRunRequest(form)), onStarted);
  return (
    <StartForm
      title="Start a run"
      startLabel="Start run"
      problem={problem}
      start={start}
      onClose={onClose}
      after={
        engineDialog ? (
          <EngineDialog
            backend={backend}
            status={engine.data ?? null}
            onClose={() => setEngineDialog(false)}
            onSaved={() => {
              setEngineDialog(false);
              void invalidate(client, [keys.engine()]);
            }}
          />
        ) : null
      }
    >
      <div className="run-form-row">
        <Field label="Engine">
          <RadioSeg<EngineChoice>
            label="Engine"
            options={[
              ["studio", `Studio engine (${studioEngine})`],
              ["copy", "copy baseline"],
              ["openai", "OpenAI-compatible endpoint"],
            ]}
            value={form.engine}
            onChange={(v) => set({ engine: v })}
          />
        </Field>
        {form.engine === "studio" ? (
          <button type="button" className="run-form-aside" onClick={() => setEngineDialog(true)}>
            Engine settings…
          </button>
        ) : null}
      </div>
      {form.engine === "openai" ? <EndpointFields what="Endpoint" value={form.endpoint} onChange={(endpoint) => set({ endpoint })} /> : null}
      <div className="run-form-row">
        <Field label="Turns">
          <RadioSeg
            label="Turns"
            options={[
              ["trajectories", "Trajectories of the workspace"],
              ["dataset", "Dataset file"],
            ]}
            value={form.input}
            onChange={(v) => set({ input: v })}
          />
        </Field>
        <Field label="History">
          <RadioSeg
            label="History"
            options={[
              ["teacher-forced", "Teacher-forced"],
              ["free-running", "Free-running"],
            ]}
            value={form.context}
            onChange={(v) => set({ context: v })}
            title={(v) =>
              v === "teacher-forced" ? "Each turn's history is the recorded observations" : "Each turn's history is this run's own earlier predictions"
            }
          />
        </Field>
        <ConcurrencyField value={form.concurrency} onChange={(concurrency) => set({ concurrency })} />
      </div>
      {form.input === "dataset" ? (
        <div className="run-form-row">
          <Field label="Dataset file (a path on the back end's machine; imported first)" grow>
            <input
              value={form.datasetPath}
              placeholder="/data/AgentWorldBench/web_test.jsonl"
              onChange={(e) => set({ datasetPath: e.target.value })}
              spellCheck={false}
            />
          </Field>
        </div>
      ) : (
        <div className="run-trajectories">
          <div className="run-form-row">
            <input aria-label="Filter trajectories" placeholder="Filter trajectories" value={filter} onChange={(e) => setFilter(e.target.value)} />
            <button type="button" onClick={() => set({ trajectoryIds: [...new Set([...form.trajectoryIds, ...shown.map((t) => t.id)])] })}>
              Choose {shown.length === all.length ? "all" : "shown"}
            </button>
            <button type="button" onClick={() => set({ trajectoryIds: [] })} disabled={form.trajectoryIds.length === 0}>
              Clear
            </button>
            <span className="muted">
              {form.trajectoryIds.length} of {all.length} chosen
            </span>
          </div>
          <ul className="run-trajectory-list" aria-label="Trajectories to run">
            {shown.map((t) => (
              <li key={t.id}>
                <label>
                  <input type="checkbox" checked={chosen.has(t.id)} onChange={() => toggle(t.id)} />
                  <span className="run-trajectory-name">{t.name}</span>
                  <span className="muted">
                    {t.domain} · {t.turn_count} {t.turn_count === 1 ? "turn" : "turns"}
                  </span>
                </label>
              </li>
            ))}
          </ul>
        </div>
      )}
      <div className="run-form-row">
        <Field label="Name (optional)" grow>
          <input value={form.name} placeholder="engine · history · trajectories" onChange={(e) => set({ name: e.target.value })} />
        </Field>
      </div>
    </StartForm>
  );
}

function JudgeForm({
  backend,
  runs,
  defaultRunId,
  onStarted,
  onClose,
}: {
  backend: Backend;
  runs: RunSummary[];
  defaultRunId: string | null;
  onStarted: (j: RunJobView) => void;
  onClose: () => void;
}) {
  const [runId, setRunId] = useState(defaultRunId ?? runs[0]?.run_id ?? "");
  const [endpoint, setEndpoint] = useState<EndpointForm>({ baseUrl: "http://127.0.0.1:8001/v1", model: "judge", keyEnv: "OPENAI_API_KEY" });
  const [concurrency, setConcurrency] = useState(4);
  const run = runs.find((r) => r.run_id === runId);
  const problem = run ? (endpointProblem(endpoint) ?? concurrencyProblem(concurrency)) : "Choose a run";
  const start = useStartJob(() => backend.call("start_judge", startJudgeRequest(runId, endpoint, concurrency)), onStarted);
  return (
    <StartForm title="Judge a run" startLabel="Start judging" problem={problem} start={start} onClose={onClose}>
      <div className="run-form-row">
        <Field label="Run" grow>
          <select aria-label="Run to judge" value={runId} onChange={(e) => setRunId(e.target.value)}>
            {runs.map((r) => (
              <option key={r.run_id} value={r.run_id}>
                {r.name} · {r.engine} ({r.judged_count}/{r.row_count} judged)
              </option>
            ))}
          </select>
        </Field>
        <ConcurrencyField value={concurrency} onChange={setConcurrency} />
      </div>
      <EndpointFields what="Judge" value={endpoint} onChange={setEndpoint} />
      <p className="muted">
        Rows already judged are skipped, so judging again after a cancel goes on where it stopped. The judge grades format, factuality, consistency, realism and
        quality from 1 to 5.
      </p>
    </StartForm>
  );
}
