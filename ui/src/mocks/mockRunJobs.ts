/**
 * The mock back end's run jobs (`start_run`, `resume_run`, `start_judge`,
 * `cancel_run_job`, `list_run_jobs`): jobs count their rows on a timer and
 * send `run_job_progress` events as the real back end does (rows done of
 * all, rate, seconds left; `cancelled` keeps the rows done and makes the run
 * resumable). The mock makes no run of its own: the runs it lists are the
 * recorded ones; a started run is named after its request.
 */
import type { ListRunJobsResponse, ResumableRun, RunJobKind, RunJobView, StudioEvent } from "../api/types";
import { BackendError } from "../backend/error";

interface MockJob {
  view: RunJobView;
  started: number;
  timer: number | null;
}

/** The jobs of one mock back end. */
export class MockRunJobs {
  private readonly jobs: MockJob[] = [];
  private readonly resumable = new Map<string, ResumableRun>();
  private next = 1;
  private nextRun = 100;

  /**
   * @param emit sends an event to the back end's listeners.
   * @param rowDelayMs milliseconds per row of a job.
   * @param rowsOf the rows of a trajectory (unknown ids throw `not_found`).
   */
  constructor(
    private readonly emit: (event: StudioEvent) => void,
    private readonly rowDelayMs: () => number,
    private readonly rowsOf: (trajectoryId: string) => number,
    private readonly runRows: (runId: string) => { name: string; rows: number; judged: number } | null,
  ) {}

  /** Answers one of the run job commands. */
  call(command: string, req: Record<string, unknown>): unknown {
    switch (command) {
      case "start_run": {
        const concurrency = Number(req.concurrency);
        if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) {
          throw new BackendError("bad_request", `concurrency: ${String(req.concurrency)} is not between 1 and 64`);
        }
        const input = req.input as { kind: string; trajectory_ids?: string[]; path?: string };
        let total: number;
        let count: number;
        if (input.kind === "trajectories") {
          const ids = input.trajectory_ids ?? [];
          if (ids.length === 0) throw new BackendError("bad_request", "input.trajectory_ids: choose at least one trajectory");
          total = ids.reduce((n, id) => n + this.rowsOf(id), 0);
          count = ids.length;
        } else {
          throw new BackendError("unsupported", "the mock back end does not import dataset files");
        }
        const engine = req.engine as { kind: string; name?: string; model?: string } | undefined;
        const engineName = !engine ? "copy" : engine.kind === "baseline" ? (engine.name ?? "copy") : `openai:${engine.model ?? ""}`;
        const name =
          typeof req.name === "string" && req.name.trim()
            ? req.name.trim()
            : `${engineName} · ${String(req.context)} · ${count} ${count === 1 ? "trajectory" : "trajectories"}`;
        return this.start("run", String(this.nextRun++), name, engineName, total, 0);
      }
      case "resume_run": {
        const r = this.resumable.get(String(req.run_id));
        if (!r) throw new BackendError("bad_request", `run_id: run ${String(req.run_id)} has nothing to resume`);
        this.resumable.delete(r.run_id);
        return this.start("run", r.run_id, r.name, "copy", r.total, r.done);
      }
      case "start_judge": {
        const judge = req.judge as { kind: string; model?: string };
        if (judge.kind !== "openai") throw new BackendError("bad_request", "judge: the judge must be an OpenAI-compatible endpoint (kind `openai`)");
        const run = this.runRows(String(req.run_id));
        if (!run) throw new BackendError("not_found", `no run ${String(req.run_id)} in this workspace`);
        return this.start("judge", String(req.run_id), run.name, `openai:${judge.model ?? ""}`, run.rows, run.judged);
      }
      case "cancel_run_job": {
        const job = this.jobs.find((j) => j.view.job_id === String(req.job_id));
        if (!job) throw new BackendError("not_found", `job_id: no run job \`${String(req.job_id)}\``);
        if (job.view.state === "running") this.end(job, "cancelled");
        return job.view;
      }
      case "list_run_jobs":
        return { jobs: [...this.jobs].reverse().map((j) => j.view), resumable: [...this.resumable.values()] } satisfies ListRunJobsResponse;
      default:
        throw new BackendError("unknown_command", `unknown command \`${command}\``);
    }
  }

  private start(kind: RunJobKind, runId: string, runName: string, engine: string, total: number, already: number): RunJobView {
    const job: MockJob = {
      view: {
        job_id: `run-job-${this.next++}`,
        kind,
        run_id: runId,
        run_name: runName,
        engine,
        state: "running",
        done: already,
        total,
        failed: 0,
        already_done: already,
        elapsed_s: 0,
        rows_per_sec: null,
        eta_s: null,
        error: null,
      },
      started: Date.now(),
      timer: null,
    };
    this.jobs.push(job);
    const tick = () => {
      if (job.view.state !== "running") return;
      if (job.view.done >= job.view.total) {
        this.end(job, "finished");
        return;
      }
      const elapsed = Math.max(0.001, (Date.now() - job.started) / 1000);
      const doneNow = job.view.done + 1 - already;
      const rate = doneNow / elapsed;
      job.view = { ...job.view, done: job.view.done + 1, elapsed_s: elapsed, rows_per_sec: rate, eta_s: (job.view.total - job.view.done - 1) / rate };
      this.emit({ type: "run_job_progress", job: job.view });
      job.timer = window.setTimeout(tick, this.rowDelayMs());
    };
    job.timer = window.setTimeout(tick, this.rowDelayMs());
    return job.view;
  }

  private end(job: MockJob, state: "finished" | "cancelled"): void {
    if (job.timer !== null) window.clearTimeout(job.timer);
    job.timer = null;
    const elapsed = (Date.now() - job.started) / 1000;
    job.view = { ...job.view, state, elapsed_s: elapsed, eta_s: null };
    if (state === "cancelled" && job.view.kind === "run") {
      this.resumable.set(job.view.run_id, { run_id: job.view.run_id, name: job.view.run_name, done: job.view.done, total: job.view.total });
    }
    this.emit({ type: "run_job_progress", job: job.view });
    this.emit({ type: "workspace_changed", trajectory_id: null, kind: "import_run" });
  }
}
