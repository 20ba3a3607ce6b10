//! Runs started in the studio, and judging a run, as background jobs.
//!
//! `start_run` predicts every turn of a selection of trajectories (or of a
//! dataset file, imported first) with an engine: the studio's own or one
//! given with the request (`engine::create`, the engine settings dialog's
//! kinds). Each turn is predicted by the use-case layer `step` uses
//! (`worldloom_predict::turn::predict_turn`: the same prompt, teacher-forced
//! from the real observations or free-running from this run's own earlier
//! predictions of the trajectory, whose turns then go in order; the same
//! current observation; the same record), so a row's prediction carries the
//! same provenance as a stepped one. Rows are worked on by the layer's
//! worker pool (`worldloom_predict::workers`). The run
//! exists in the workspace from the start (`Workspace::create_run`, one
//! undoable change) and grows by one row per finished turn
//! (`Workspace::append_run_rows`), so the Runs view shows it while it runs
//! and a cancelled or interrupted run keeps its rows.
//!
//! The plan (trajectories, mode, engine settings, concurrency, rows in all)
//! is saved in the workspace's meta table under [`PLAN_META_PREFIX`]`<run>`;
//! `resume_run` reads it and predicts only the planned turns the run has no
//! row for. `start_judge` grades a run's rows that have no verdict with an
//! OpenAI-compatible judge (`worldloom_eval::judge::judge_row` on each row's
//! AgentWorldBench fields, `worldloom_core::formats::awb::export`, plus its
//! prediction as `gen`) and writes each verdict on its row
//! (`Workspace::set_run_row_judge`); starting it again resumes.
//!
//! Progress arrives as [`StudioEvent::RunJobProgress`] (rows done of all,
//! failures, rows per second, seconds left), throttled to about five a
//! second plus one when the job ends, followed by a `workspace_changed`
//! (`import_run`). `cancel_run_job` stops a job: no new row starts and the
//! predictions or judge calls in flight are cancelled and not stored, so a
//! resume does them again.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use worldloom_core as core;
use worldloom_core::formats::run::RunRow;
use worldloom_core::{ContextMode, NodeId, Prediction, PredictionId, Trajectory};
use worldloom_engine::{CancelToken, CollectError, GenerationParams, StopReason};
use worldloom_predict::rollout::keep_chosen;
use worldloom_predict::turn::{PredictError, Stop};
use worldloom_predict::workers;
use worldloom_store::{NewRun, RunId, TrajectoryKey};

use crate::engine::{self, LoadedEngine};
use crate::error::{ApiError, ErrorCode};
use crate::ids::parse_trajectory_id;
use crate::types::*;
use crate::views::SETTINGS_FIELD;
use crate::{Studio, StudioEvent};

/// The meta key prefix of a studio run's plan (`studio.run_plan.<run id>`).
pub const PLAN_META_PREFIX: &str = "studio.run_plan.";

/// The most predictions or judge calls a job keeps in flight.
pub const MAX_CONCURRENCY: u32 = 64;

/// How many ended jobs `list_run_jobs` keeps showing.
const KEPT_JOBS: usize = 20;

/// The shortest time between two progress events of a job.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

/// What `resume_run` needs to continue a run, saved in the workspace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct RunPlan {
    /// Workspace keys of the trajectories, in order.
    trajectories: Vec<i64>,
    /// Teacher-forced or free-running.
    mode: ContextMode,
    /// The engine the run was started with.
    engine: EngineSettings,
    /// Predictions in flight at once.
    concurrency: u32,
    /// Rows planned in all.
    total: u32,
}

/// A running or ended job.
pub(crate) struct RunJob {
    id: String,
    kind: RunJobKind,
    run: RunId,
    run_name: String,
    engine: String,
    started: Instant,
    stop: Arc<AtomicBool>,
    total: u32,
    already_done: u32,
    done_now: AtomicU32,
    failed: AtomicU32,
    /// State, error, and the seconds it ran when it ended.
    end: Mutex<(RunJobState, Option<String>, Option<f64>)>,
    last_progress: Mutex<Option<Instant>>,
}

impl RunJob {
    fn state(&self) -> RunJobState {
        self.end.lock().map_or(RunJobState::Failed, |e| e.0)
    }

    fn view(&self) -> RunJobView {
        let (state, error, ended) =
            self.end
                .lock()
                .map(|e| e.clone())
                .unwrap_or((RunJobState::Failed, None, None));
        let elapsed_s = ended.unwrap_or_else(|| self.started.elapsed().as_secs_f64());
        let done_now = self.done_now.load(Ordering::SeqCst);
        let done = (self.already_done + done_now).min(self.total);
        let rows_per_sec =
            (done_now > 0 && elapsed_s > 0.0).then(|| f64::from(done_now) / elapsed_s);
        let eta_s = match (state, rows_per_sec) {
            (RunJobState::Running, Some(rate)) => Some(f64::from(self.total - done) / rate),
            _ => None,
        };
        RunJobView {
            job_id: self.id.clone(),
            kind: self.kind,
            run_id: self.run.0.to_string(),
            run_name: self.run_name.clone(),
            engine: self.engine.clone(),
            state,
            done,
            total: self.total,
            failed: self.failed.load(Ordering::SeqCst),
            already_done: self.already_done,
            elapsed_s,
            rows_per_sec,
            eta_s,
            error,
        }
    }

    /// Counts one finished row and sends progress when the last was long
    /// enough ago.
    fn row_done(&self, studio: &Studio, failed: bool) {
        self.done_now.fetch_add(1, Ordering::SeqCst);
        if failed {
            self.failed.fetch_add(1, Ordering::SeqCst);
        }
        let due = self.last_progress.lock().is_ok_and(|mut last| {
            let due = last.is_none_or(|t| t.elapsed() >= PROGRESS_EVERY);
            if due {
                *last = Some(Instant::now());
            }
            due
        });
        if due {
            studio.emit(StudioEvent::RunJobProgress { job: self.view() });
        }
    }

    /// Ends the job: `Failed` with `error`, else `Cancelled` when stopped
    /// before every row was done, else `Finished`; sends the last progress
    /// and a `workspace_changed`.
    fn end(&self, studio: &Studio, error: Option<String>) {
        let done = self.already_done + self.done_now.load(Ordering::SeqCst);
        let state = if error.is_some() {
            RunJobState::Failed
        } else if done < self.total && self.stop.load(Ordering::SeqCst) {
            RunJobState::Cancelled
        } else {
            RunJobState::Finished
        };
        if let Ok(mut end) = self.end.lock() {
            *end = (state, error, Some(self.started.elapsed().as_secs_f64()));
        }
        studio.emit(StudioEvent::RunJobProgress { job: self.view() });
        studio.emit(StudioEvent::WorkspaceChanged {
            trajectory_id: None,
            kind: ChangeKind::ImportRun.into(),
        });
    }
}

/// The studio's run jobs, oldest first.
#[derive(Default)]
pub(crate) struct JobTable {
    jobs: Vec<Arc<RunJob>>,
}

fn table(studio: &Studio) -> Result<std::sync::MutexGuard<'_, JobTable>, ApiError> {
    studio
        .inner
        .run_jobs
        .lock()
        .map_err(|_| ApiError::internal("the run job table lock is poisoned"))
}

/// Registers a new job; refuses a second running job on the same run.
fn new_job(
    studio: &Studio,
    kind: RunJobKind,
    run: RunId,
    run_name: String,
    engine: String,
    total: u32,
    already_done: u32,
) -> Result<Arc<RunJob>, ApiError> {
    let mut t = table(studio)?;
    if let Some(j) = t
        .jobs
        .iter()
        .find(|j| j.run == run && j.state() == RunJobState::Running)
    {
        return Err(ApiError::bad_request(format!(
            "run_id: run {} already has a running job ({}); cancel it first",
            run.0, j.id
        )));
    }
    let n = studio.inner.next_job.fetch_add(1, Ordering::SeqCst);
    let job = Arc::new(RunJob {
        id: format!("run-job-{n}"),
        kind,
        run,
        run_name,
        engine,
        started: Instant::now(),
        stop: Arc::new(AtomicBool::new(false)),
        total,
        already_done,
        done_now: AtomicU32::new(0),
        failed: AtomicU32::new(0),
        end: Mutex::new((RunJobState::Running, None, None)),
        last_progress: Mutex::new(None),
    });
    t.jobs.push(Arc::clone(&job));
    // Forget the oldest ended jobs.
    while t.jobs.len() > KEPT_JOBS {
        match t
            .jobs
            .iter()
            .position(|j| j.state() != RunJobState::Running)
        {
            Some(i) => {
                t.jobs.remove(i);
            }
            None => break,
        }
    }
    Ok(job)
}

fn check_concurrency(n: u32, field: &str) -> Result<u32, ApiError> {
    if (1..=MAX_CONCURRENCY).contains(&n) {
        Ok(n)
    } else {
        Err(ApiError::bad_request(format!(
            "{field}: {n} is not between 1 and {MAX_CONCURRENCY}"
        )))
    }
}

fn parse_run_id(id: &str) -> Result<RunId, ApiError> {
    id.trim().parse::<i64>().map(RunId).map_err(|_| {
        ApiError::bad_request(format!("run_id `{id}` is not a run id (a decimal number)"))
    })
}

/// Runs `work` on every item with up to `concurrency` threads (the
/// layer's worker pool); no new item starts once `stop` is set.
fn parallel<T: Sync>(items: &[T], concurrency: u32, stop: &AtomicBool, work: impl Fn(&T) + Sync) {
    workers::for_each(
        items,
        concurrency as usize,
        stop,
        |item| {
            work(item);
            None::<()>
        },
        |()| {},
    );
}

/// Starts `f` on a new thread named `name`.
///
/// Errors: [`ApiError`] (internal) when the thread cannot be started.
pub(crate) fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<(), ApiError> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map(|_| ())
        .map_err(|e| ApiError::internal(format!("cannot start a job thread: {e}")))
}

/// Runs a job's thread body; a panic in it (a bug, an engine's) ends the job
/// as `failed` instead of leaving it `running`, which would block a resume.
fn guarded(studio: &Studio, job: &RunJob, body: impl FnOnce()) {
    if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown".into());
        job.stop.store(true, Ordering::SeqCst);
        job.end(
            studio,
            Some(format!("the job stopped on an internal error: {what}")),
        );
    }
}

/// The engine for `settings`: the studio's own instance when they are its
/// saved settings, else a new one.
fn engine_for(studio: &Studio, settings: &EngineSettings) -> Result<Arc<LoadedEngine>, ApiError> {
    if engine::saved(studio)?.0 == *settings {
        return engine::ensure(studio);
    }
    engine::create(settings, studio.key_store().as_ref())
        .map(Arc::new)
        .map_err(|m| ApiError::new(ErrorCode::Unsupported, m))
}

// ---------------------------------------------------------------- runs

/// One trajectory of a run: its stored tree and the turns (state, 1-based
/// turn) still to predict, in order.
struct TrajectoryWork {
    key: TrajectoryKey,
    trajectory: Trajectory,
    todo: Vec<(NodeId, u32)>,
    /// The run's earlier prediction of each state already done (the
    /// free-running history).
    done: BTreeMap<NodeId, PredictionId>,
}

/// The turns of a stored trajectory a run predicts: every live state along
/// its main path that has a real observation.
fn planned_turns(st: &worldloom_store::StoredTrajectory) -> Vec<(NodeId, u32)> {
    let path = st.trajectory.main_path();
    path.nodes
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, n)| {
            st.live_nodes.contains(n) && st.trajectory.node(**n).is_some_and(|n| n.real.is_some())
        })
        .map(|(turn, n)| (*n, turn as u32))
        .collect()
}

/// Reads the plan's trajectories and what the run already has.
fn plan_work(
    studio: &Studio,
    run: Option<RunId>,
    keys: &[TrajectoryKey],
) -> Result<(Vec<TrajectoryWork>, u32, u32), ApiError> {
    let ws = studio.lock()?;
    let rows = match run {
        Some(r) => ws.run_rows(r)?,
        None => Vec::new(),
    };
    let mut have: BTreeMap<(i64, u32), PredictionId> = BTreeMap::new();
    for r in &rows {
        have.insert((r.trajectory.0, r.node.0), r.prediction);
    }
    let (mut total, mut already) = (0u32, 0u32);
    let mut work = Vec::with_capacity(keys.len());
    for &key in keys {
        let st = ws.load_trajectory(key)?;
        let turns = planned_turns(&st);
        let mut w = TrajectoryWork {
            key,
            trajectory: st.trajectory,
            todo: Vec::new(),
            done: BTreeMap::new(),
        };
        for (node, turn) in turns {
            total += 1;
            match have.get(&(key.0, node.0)) {
                Some(p) => {
                    already += 1;
                    w.done.insert(node, *p);
                }
                None => w.todo.push((node, turn)),
            }
        }
        work.push(w);
    }
    Ok((work, total, already))
}

/// What one turn's prediction came to; `None` when it was cancelled.
fn predict_row(
    engine: &LoadedEngine,
    params: &GenerationParams,
    t: &Trajectory,
    node: NodeId,
    turn: u32,
    mode: ContextMode,
    cancel: &CancelToken,
) -> Option<RunRow> {
    let started = Instant::now();
    let error_row = |message: String| RunRow {
        node,
        turn,
        row_index: None,
        prediction: Prediction::from_output(engine.name.clone(), ""),
        status: "error".into(),
        error: Some(message),
        metrics: Default::default(),
        judge: None,
        latency_ms: Some(started.elapsed().as_secs_f64() * 1000.0),
    };
    let predicted = match worldloom_predict::predict_turn(
        engine.model.as_ref(),
        t,
        node,
        mode,
        BTreeMap::new(),
        params,
        Stop::on(cancel),
        |_| {},
    ) {
        Ok(p) if p.collected.stats.stop_reason == Some(StopReason::Cancelled) => return None,
        Ok(p) => p,
        Err(PredictError::Collect(CollectError::Cancelled | CollectError::DeadlineExceeded)) => {
            return None;
        }
        Err(PredictError::Collect(CollectError::Engine(e))) => {
            return Some(error_row(e.to_string()));
        }
        Err(e @ PredictError::Prompt(_)) => return Some(error_row(e.to_string())),
    };
    let mut record = predicted.record;
    if let Ok(v) = serde_json::to_value(&engine.settings) {
        record.extra.insert(SETTINGS_FIELD.into(), v);
    }
    let mut row = RunRow {
        node,
        turn,
        row_index: None,
        status: record.status.as_str().to_owned(),
        prediction: record,
        error: None,
        metrics: Default::default(),
        judge: None,
        latency_ms: Some(started.elapsed().as_secs_f64() * 1000.0),
    };
    row.metrics = crate::import::row_metrics(t, &row);
    Some(row)
}

/// Stores one row; a failure (the run undone meanwhile) stops the job.
fn store_row(
    studio: &Studio,
    job: &RunJob,
    w: &TrajectoryWork,
    row: &RunRow,
    first_error: &Mutex<Option<String>>,
) -> Option<PredictionId> {
    let stored = studio.lock().and_then(|mut ws| {
        ws.append_run_rows(job.run, w.key, &w.trajectory, std::slice::from_ref(row))
            .map_err(ApiError::from)
    });
    match stored {
        Ok(ids) => {
            job.row_done(studio, row.status == "error");
            ids.first().map(|(_, p)| *p)
        }
        Err(e) => {
            if let Ok(mut slot) = first_error.lock() {
                slot.get_or_insert(e.message);
            }
            job.stop.store(true, Ordering::SeqCst);
            None
        }
    }
}

/// The job thread of a run: every turn still to do, then the end.
fn run_thread(
    studio: Studio,
    job: Arc<RunJob>,
    work: Vec<TrajectoryWork>,
    engine: Arc<LoadedEngine>,
    params: GenerationParams,
    mode: ContextMode,
    concurrency: u32,
) {
    let cancel = CancelToken::from(Arc::clone(&job.stop));
    let first_error = Mutex::new(None);
    match mode {
        ContextMode::TeacherForced => {
            let items: Vec<(usize, NodeId, u32)> = work
                .iter()
                .enumerate()
                .flat_map(|(i, w)| w.todo.iter().map(move |(n, t)| (i, *n, *t)))
                .collect();
            parallel(&items, concurrency, &job.stop, |&(i, node, turn)| {
                let w = &work[i];
                if let Some(row) =
                    predict_row(&engine, &params, &w.trajectory, node, turn, mode, &cancel)
                {
                    store_row(&studio, &job, w, &row, &first_error);
                }
            });
        }
        ContextMode::FreeRunning => {
            parallel(&work, concurrency, &job.stop, |w| {
                // The history: this run's predictions of the earlier turns,
                // chosen on a private copy of the tree.
                let mut t = w.trajectory.clone();
                for (node, p) in &w.done {
                    if let Some(n) = t.nodes.get_mut(node.0 as usize) {
                        n.chosen_prediction = Some(*p);
                    }
                }
                for &(node, turn) in &w.todo {
                    if job.stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Some(row) = predict_row(&engine, &params, &t, node, turn, mode, &cancel)
                    else {
                        break;
                    };
                    let Some(_) = store_row(&studio, &job, w, &row, &first_error) else {
                        break;
                    };
                    if keep_chosen(&mut t, node, row.prediction.clone()).is_err() {
                        break;
                    }
                }
            });
        }
    }
    let error = first_error.into_inner().ok().flatten();
    job.end(&studio, error);
}

fn mode_label(mode: ContextMode) -> &'static str {
    match mode {
        ContextMode::TeacherForced => "teacher-forced",
        ContextMode::FreeRunning => "free-running",
    }
}

/// Starts the job thread of a run over `keys`.
#[allow(clippy::too_many_arguments)]
fn launch_run(
    studio: &Studio,
    run: RunId,
    run_name: String,
    keys: &[TrajectoryKey],
    engine: Arc<LoadedEngine>,
    params: GenerationParams,
    mode: ContextMode,
    concurrency: u32,
) -> Result<RunJobView, ApiError> {
    let (work, total, already) = plan_work(studio, Some(run), keys)?;
    let job = new_job(
        studio,
        RunJobKind::Run,
        run,
        run_name,
        engine.name.clone(),
        total,
        already,
    )?;
    let view = job.view();
    let handle = studio.handle();
    studio.emit(StudioEvent::RunJobProgress { job: view.clone() });
    spawn("worldloom-run", move || {
        let (studio, ended) = (handle.handle(), Arc::clone(&job));
        guarded(&studio, &ended, move || {
            run_thread(handle, job, work, engine, params, mode, concurrency);
        });
    })?;
    Ok(view)
}

/// `start_run`: creates a run and predicts its turns on a job thread;
/// returns at once with the job.
///
/// # Errors
/// [`ErrorCode::BadRequest`] for no trajectory, an id that is not one, a
/// dataset that does not import or has no turn, or a concurrency out of
/// 1–64; [`ErrorCode::NotFound`] for an unknown trajectory;
/// [`ErrorCode::Unsupported`] when the engine cannot be created.
pub fn start_run(studio: &Studio, req: StartRunRequest) -> Result<RunJobView, ApiError> {
    let concurrency = check_concurrency(req.concurrency, "concurrency")?;
    let keys: Vec<TrajectoryKey> = match &req.input {
        RunInput::Trajectories { trajectory_ids } => {
            if trajectory_ids.is_empty() {
                return Err(ApiError::bad_request(
                    "input.trajectory_ids: choose at least one trajectory",
                ));
            }
            trajectory_ids
                .iter()
                .map(|id| parse_trajectory_id(id))
                .collect::<Result<_, _>>()?
        }
        RunInput::Dataset { path } => {
            if path.trim().is_empty() {
                return Err(ApiError::bad_request("input.path: no dataset file given"));
            }
            let imported = crate::import::import_paths(studio, std::slice::from_ref(path), None)?;
            if let Some(f) = imported.failed.first() {
                return Err(ApiError::bad_request(format!(
                    "input.path: {}: {}",
                    f.path, f.message
                )));
            }
            let mut seen = BTreeSet::new();
            imported
                .imported
                .iter()
                .filter(|i| seen.insert(i.trajectory_id.clone()))
                .map(|i| parse_trajectory_id(&i.trajectory_id))
                .collect::<Result<_, _>>()?
        }
    };
    let mut unique = BTreeSet::new();
    let keys: Vec<TrajectoryKey> = keys.into_iter().filter(|k| unique.insert(k.0)).collect();
    let (_, params_view) = engine::saved(studio)?;
    let params = engine::engine_params(&params_view)?;
    let settings = match &req.engine {
        Some(s) => s.clone(),
        None => engine::saved(studio)?.0,
    };
    // Check the trajectories and count the turns before creating anything.
    let (_, total, _) = plan_work(studio, None, &keys)?;
    if total == 0 {
        return Err(ApiError::bad_request(
            "input: the chosen trajectories have no turn with a real observation to predict",
        ));
    }
    let engine = engine_for(studio, &settings)?;
    let name = match req.name.as_deref().map(str::trim) {
        Some(n) if !n.is_empty() => n.to_owned(),
        _ => format!(
            "{} · {} · {} {}",
            engine.name,
            mode_label(req.context),
            keys.len(),
            if keys.len() == 1 {
                "trajectory"
            } else {
                "trajectories"
            }
        ),
    };
    let plan = RunPlan {
        trajectories: keys.iter().map(|k| k.0).collect(),
        mode: req.context,
        engine: settings,
        concurrency,
        total,
    };
    let run = {
        let mut ws = studio.lock()?;
        let run = ws.create_run(&NewRun {
            name: name.clone(),
            engine: engine.name.clone(),
            source_path: None,
            source_sha256: None,
            mode: req.context,
        })?;
        let plan_json = serde_json::to_string(&plan)
            .map_err(|e| ApiError::internal(format!("cannot save the run's plan: {e}")))?;
        ws.set_meta(&format!("{PLAN_META_PREFIX}{}", run.0), &plan_json)?;
        run
    };
    studio.emit(StudioEvent::WorkspaceChanged {
        trajectory_id: None,
        kind: ChangeKind::ImportRun.into(),
    });
    launch_run(
        studio,
        run,
        name,
        &keys,
        engine,
        params,
        req.context,
        concurrency,
    )
}

fn read_plan(ws: &worldloom_store::Workspace, run: RunId) -> Result<Option<RunPlan>, ApiError> {
    let Some(text) = ws.meta(&format!("{PLAN_META_PREFIX}{}", run.0))? else {
        return Ok(None);
    };
    serde_json::from_str(&text).map(Some).map_err(|e| {
        ApiError::new(
            ErrorCode::Storage,
            format!(
                "workspace meta `{PLAN_META_PREFIX}{}`: not a run plan: {e}",
                run.0
            ),
        )
    })
}

/// `resume_run`: predicts the turns a studio run was started for and has
/// no row of yet (a cancelled or interrupted run), on a job thread.
///
/// # Errors
/// [`ErrorCode::NotFound`] for an unknown or undone run;
/// [`ErrorCode::BadRequest`] for a run not started in the studio;
/// [`ErrorCode::BadRequest`] when it has a running job;
/// [`ErrorCode::Unsupported`] when the engine cannot be created.
pub fn resume_run(studio: &Studio, req: ResumeRunRequest) -> Result<RunJobView, ApiError> {
    let run = parse_run_id(&req.run_id)?;
    let (record, plan) = {
        let ws = studio.lock()?;
        let record = ws.run(run)?;
        let plan = read_plan(&ws, run)?.ok_or_else(|| {
            ApiError::bad_request(format!(
                "run_id: run {} was imported, not started in the studio; there is nothing to resume",
                run.0
            ))
        })?;
        (record, plan)
    };
    let concurrency =
        check_concurrency(req.concurrency.unwrap_or(plan.concurrency), "concurrency")?;
    let (_, params_view) = engine::saved(studio)?;
    let params = engine::engine_params(&params_view)?;
    let engine = engine_for(studio, &plan.engine)?;
    let keys: Vec<TrajectoryKey> = plan
        .trajectories
        .iter()
        .map(|k| TrajectoryKey(*k))
        .collect();
    launch_run(
        studio,
        run,
        record.name,
        &keys,
        engine,
        params,
        plan.mode,
        concurrency,
    )
}

// ---------------------------------------------------------------- judge

/// Each turn's AgentWorldBench row of a stored trajectory, by `turn_idx`.
fn dataset_rows(t: &Trajectory) -> BTreeMap<u64, Map<String, Value>> {
    core::formats::awb::export(std::slice::from_ref(t))
        .lines()
        .filter_map(|l| match serde_json::from_str::<Value>(l) {
            Ok(Value::Object(m)) => Some(m),
            _ => None,
        })
        .map(|m| {
            let turn = m.get("turn_idx").and_then(Value::as_u64).unwrap_or(1);
            (turn, m)
        })
        .collect()
}

/// A row to judge: its id and its fields with `gen`, or why it cannot be
/// judged.
type JudgeItem = (i64, Result<Map<String, Value>, String>);

/// `start_judge`: grades a run's rows without a verdict with an
/// OpenAI-compatible judge on a job thread; returns at once with the job.
///
/// # Errors
/// [`ErrorCode::BadRequest`] for a judge that is not an endpoint or a
/// concurrency out of 1–64; [`ErrorCode::NotFound`] for an unknown run;
/// [`ErrorCode::BadRequest`] when the run has a running job;
/// [`ErrorCode::Unsupported`] when the judge cannot be created.
pub fn start_judge(studio: &Studio, req: StartJudgeRequest) -> Result<RunJobView, ApiError> {
    let concurrency = check_concurrency(req.concurrency, "concurrency")?;
    if !matches!(req.judge, EngineSettings::Openai { .. }) {
        return Err(ApiError::bad_request(
            "judge: the judge must be an OpenAI-compatible endpoint (kind `openai`)",
        ));
    }
    let run = parse_run_id(&req.run_id)?;
    let (record, items, total) = {
        let ws = studio.lock()?;
        let record = ws.run(run)?;
        let rows = ws.run_rows(run)?;
        let total = rows.len() as u32;
        let mut by_trajectory: BTreeMap<i64, Vec<&worldloom_store::StoredRunRow>> = BTreeMap::new();
        for r in rows.iter().filter(|r| r.judge.is_none()) {
            by_trajectory.entry(r.trajectory.0).or_default().push(r);
        }
        let mut items: Vec<JudgeItem> = Vec::new();
        for (key, rows) in by_trajectory {
            let st = ws.load_trajectory(TrajectoryKey(key))?;
            let dataset = dataset_rows(&st.trajectory);
            for r in rows {
                let generation = st
                    .trajectory
                    .node(r.node)
                    .and_then(|n| n.predictions.iter().find(|p| p.id == r.prediction))
                    .map(|p| p.raw_output.clone());
                let fields = match (dataset.get(&u64::from(r.turn)), generation) {
                    (Some(f), Some(g)) => {
                        let mut f = f.clone();
                        f.insert("gen".into(), Value::String(g));
                        Ok(f)
                    }
                    (None, _) => Err(format!(
                        "turn {} of trajectory `{}` has no dataset row to judge against",
                        r.turn, r.ext_id
                    )),
                    (_, None) => Err(format!("the row's prediction {} is gone", r.prediction.0)),
                };
                items.push((r.id, fields));
            }
        }
        (record, items, total)
    };
    let judge = engine::create(&req.judge, studio.key_store().as_ref())
        .map(Arc::new)
        .map_err(|m| ApiError::new(ErrorCode::Unsupported, m))?;
    let already = total - items.len() as u32;
    let job = new_job(
        studio,
        RunJobKind::Judge,
        run,
        record.name,
        judge.name.clone(),
        total,
        already,
    )?;
    let view = job.view();
    studio.emit(StudioEvent::RunJobProgress { job: view.clone() });
    let handle = studio.handle();
    spawn("worldloom-judge", move || {
        let (studio, ended) = (handle.handle(), Arc::clone(&job));
        guarded(&studio, &ended, move || {
            judge_thread(handle, job, items, judge, concurrency);
        });
    })?;
    Ok(view)
}

fn judge_thread(
    studio: Studio,
    job: Arc<RunJob>,
    items: Vec<JudgeItem>,
    judge: Arc<LoadedEngine>,
    concurrency: u32,
) {
    let cancel = CancelToken::from(Arc::clone(&job.stop));
    let prompts = worldloom_eval::judge::JudgePrompts::builtin();
    let options = worldloom_eval::judge::JudgeOptions {
        concurrency: concurrency as usize,
        progress: false,
        ..Default::default()
    };
    let first_error = Mutex::new(None::<String>);
    parallel(&items, concurrency, &job.stop, |(row, fields)| {
        let verdict = match fields {
            Ok(fields) => match worldloom_eval::judge::judge_row(
                fields,
                judge.model.as_ref(),
                &prompts,
                &options,
                &cancel,
            ) {
                Ok((out, failed)) => {
                    if failed && job.stop.load(Ordering::SeqCst) {
                        // Cut short by a cancel: not stored, judged again
                        // on the next start.
                        return;
                    }
                    core::formats::run::judge_verdict(&out)
                }
                Err(e) => Some(core::formats::run::JudgeVerdict {
                    failed: true,
                    error: Some(e.to_string()),
                    ..Default::default()
                }),
            },
            Err(message) => Some(core::formats::run::JudgeVerdict {
                failed: true,
                error: Some(message.clone()),
                ..Default::default()
            }),
        };
        let verdict = verdict.unwrap_or_else(|| core::formats::run::JudgeVerdict {
            failed: true,
            error: Some("the judge left no verdict".into()),
            ..Default::default()
        });
        match studio
            .lock()
            .and_then(|mut ws| ws.set_run_row_judge(*row, &verdict).map_err(ApiError::from))
        {
            Ok(()) => job.row_done(&studio, verdict.failed),
            Err(e) => {
                if let Ok(mut slot) = first_error.lock() {
                    slot.get_or_insert(e.message);
                }
                job.stop.store(true, Ordering::SeqCst);
            }
        }
    });
    let error = first_error.into_inner().ok().flatten();
    job.end(&studio, error);
}

// ---------------------------------------------------------------- control

/// `cancel_run_job`: stops a run or judge job. No new row starts; the
/// predictions or judge calls in flight are cancelled and not stored. The
/// job ends (state `cancelled`) on its thread; the answer is the job as it
/// stands.
///
/// # Errors
/// [`ErrorCode::NotFound`] for an unknown job.
pub fn cancel_run_job(studio: &Studio, req: CancelRunJobRequest) -> Result<RunJobView, ApiError> {
    let job = table(studio)?
        .jobs
        .iter()
        .find(|j| j.id == req.job_id)
        .cloned()
        .ok_or_else(|| ApiError::not_found(format!("job_id: no run job `{}`", req.job_id)))?;
    job.stop.store(true, Ordering::SeqCst);
    Ok(job.view())
}

/// `list_run_jobs`: this session's run and judge jobs (newest first) and
/// the studio runs with turns still to predict.
///
/// # Errors
/// [`ErrorCode::Storage`].
pub fn list_run_jobs(studio: &Studio, _req: EmptyRequest) -> Result<ListRunJobsResponse, ApiError> {
    let (jobs, running): (Vec<RunJobView>, BTreeSet<i64>) = {
        let t = table(studio)?;
        (
            t.jobs.iter().rev().map(|j| j.view()).collect(),
            t.jobs
                .iter()
                .filter(|j| j.kind == RunJobKind::Run && j.state() == RunJobState::Running)
                .map(|j| j.run.0)
                .collect(),
        )
    };
    let ws = studio.lock()?;
    let mut resumable = Vec::new();
    for r in ws.list_runs()? {
        if running.contains(&r.id.0) {
            continue;
        }
        if let Some(plan) = read_plan(&ws, r.id)?
            && (r.row_count as u32) < plan.total
        {
            resumable.push(ResumableRun {
                run_id: r.id.0.to_string(),
                name: r.name,
                done: r.row_count as u32,
                total: plan.total,
            });
        }
    }
    Ok(ListRunJobsResponse { jobs, resumable })
}
