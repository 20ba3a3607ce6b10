//! Prompt preview, streaming steps, cancellation and rollouts.
//!
//! A step predicts a turn through the use-case layer (`worldloom_predict::
//! turn`): the request thread reads the trajectory once and lays the turn
//! out (`Turn::of_trajectory`: the prompt with the turn's control
//! instructions, the current observation by the layer's one rule), answering
//! a bad request at once; the job thread asks the studio's engine
//! (`run_turn`), forwards reasoning, observation text and observation tokens
//! as [`StudioEvent::StepDelta`] events, and on success stores the record
//! (`worldloom_predict::turn::record`; provenance: engine, settings,
//! parameters, seed, context mode, perturbation, token log-probabilities,
//! statistics) as the node's chosen one in one undoable change, scores it
//! against the real observation (the metric result is stored) on the same
//! read of the trajectory, and ends with one event,
//! [`StudioEvent::StepFinished`] (with the prediction id when one was
//! stored: the UI refetches what the change touched on it). `cancel_step`
//! sends `StepFinished` with status `cancelled` at once, stops forwarding,
//! and the job stores nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use worldloom_core as core;
use worldloom_core::{ContextMode, NodeId};
use worldloom_engine::{
    CancelToken, CollectError, EngineEvent, GenerationStats, ObservationTokens, StopReason, Token,
};
use worldloom_predict::rollout::{RolloutTree, rollout as roll_out};
use worldloom_predict::turn::{self, Stop, Turn};
use worldloom_store::{StoredTrajectory, TrajectoryKey};

use crate::branches::{append_locked, live_node};
use crate::engine::{self, LoadedEngine};
use crate::error::ApiError;
use crate::ids::parse_trajectory_id;
use crate::run_jobs::spawn;
use crate::scoring::node_score;
use crate::types::*;
use crate::{Studio, StudioEvent};

pub use crate::views::{SETTINGS_FIELD, TOKENS_FIELD, stored_observation_tokens};
/// The `Prediction::extra` field holding the generation statistics.
pub use worldloom_engine::record::STATS_FIELD;
/// The `Prediction::extra` field holding the turn's control instruction.
pub use worldloom_predict::turn::PERTURBATION_FIELD;

/// A prediction record (`worldloom_engine::record::prediction_record`):
/// the output as the engine split it, parameters, seed, context mode, the
/// real observation's representation, token counts, timings, and the
/// statistics under `extra.stats`.
pub use worldloom_engine::record::prediction_record;

impl From<core::OutputStatus> for StepStatus {
    fn from(status: core::OutputStatus) -> Self {
        match status {
            core::OutputStatus::Ok => StepStatus::Ok,
            core::OutputStatus::Truncated => StepStatus::Truncated,
            core::OutputStatus::NoObservation => StepStatus::NoObservation,
            core::OutputStatus::Empty => StepStatus::Empty,
        }
    }
}

/// The observation tokens of a collected prediction as the studio shows them.
fn token_view(token: &Token) -> TokenView {
    TokenView {
        text: token.text.clone(),
        logprob: token.logprob.map(f64::from),
        entropy: None,
    }
}

// ---------------------------------------------------------------------------
// Jobs.

/// A running step or rollout.
pub(crate) struct Job {
    id: String,
    trajectory_id: String,
    cancelled: AtomicBool,
    /// The running step's cancel token (draining its stream cancels the
    /// engine when it is set).
    step_cancel: Mutex<Option<CancelToken>>,
    /// The current step: its node and whether its `StepFinished` was sent.
    current: Mutex<Option<(u32, Arc<AtomicBool>)>>,
}

impl Job {
    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }
}

fn new_job(studio: &Studio, trajectory_id: &str) -> Result<Arc<Job>, ApiError> {
    let n = studio.inner.next_job.fetch_add(1, Ordering::SeqCst);
    let job = Arc::new(Job {
        id: format!("job-{n}"),
        trajectory_id: trajectory_id.to_string(),
        cancelled: AtomicBool::new(false),
        step_cancel: Mutex::new(None),
        current: Mutex::new(None),
    });
    studio
        .inner
        .jobs
        .lock()
        .map_err(|_| ApiError::internal("the job table lock is poisoned"))?
        .insert(job.id.clone(), Arc::clone(&job));
    Ok(job)
}

fn end_job(studio: &Studio, job: &Job) {
    if let Ok(mut jobs) = studio.inner.jobs.lock() {
        jobs.remove(&job.id);
    }
}

fn finished(
    studio: &Studio,
    job: &Job,
    node_id: u32,
    prediction_id: Option<u32>,
    status: StepStatus,
    error: Option<String>,
    stats: Option<StepStats>,
) {
    studio.emit(StudioEvent::StepFinished {
        job_id: job.id.clone(),
        trajectory_id: job.trajectory_id.clone(),
        node_id,
        prediction_id,
        status,
        error,
        stats,
    });
}

/// Sends the `StepFinished` of a failed step (nothing was stored).
fn failed(studio: &Studio, job: &Job, node_id: u32, error: String, stats: Option<StepStats>) {
    finished(
        studio,
        job,
        node_id,
        None,
        StepStatus::Error,
        Some(error),
        stats,
    );
}

fn step_stats(s: &GenerationStats) -> StepStats {
    let clamp = |n: usize| n.min(u32::MAX as usize) as u32;
    StepStats {
        prompt_tokens: clamp(s.prompt_tokens),
        prompt_tokens_computed: clamp(s.prompt_tokens_computed),
        prompt_tokens_reused: clamp(s.prompt_tokens.saturating_sub(s.prompt_tokens_computed)),
        completion_tokens: clamp(s.completion_tokens),
        prefill_ms: s.prefill_ms,
        decode_ms: s.decode_ms,
        decode_tokens_per_sec: s.decode_tokens_per_sec,
        stop_reason: s.stop_reason,
        decode_forwards: clamp(s.decode_forwards),
        drafted_tokens: clamp(s.drafted_tokens),
        accepted_tokens: clamp(s.accepted_tokens),
    }
}

/// A turn ready to send, with the one read of its trajectory (kept for
/// the record and the score).
pub(crate) struct Prepared {
    stored: StoredTrajectory,
    turn: Turn,
}

/// Reads the trajectory (once) and lays out the turn into `node` with the
/// workspace locked.
fn prepare(
    studio: &Studio,
    ws: &worldloom_store::Workspace,
    key: TrajectoryKey,
    node: NodeId,
    mode: ContextMode,
    perturbation_override: Option<&str>,
) -> Result<Prepared, ApiError> {
    let stored = ws.load_trajectory(key)?;
    studio.inner.step_reads.fetch_add(1, Ordering::SeqCst);
    let n = live_node(&stored, node.0)?;
    let Some(edge) = n.parent_edge.and_then(|e| stored.trajectory.edge(e)) else {
        return Err(ApiError::bad_request(format!(
            "node_id: node {} is the initial state; it has no turn to predict",
            node.0
        )));
    };
    let edge = edge.id;
    let mut perturbations = ws.perturbations(key)?;
    if let Some(p) = perturbation_override {
        if p.trim().is_empty() {
            perturbations.remove(&edge);
        } else {
            perturbations.insert(edge, p.to_string());
        }
    }
    let turn = Turn::of_trajectory(&stored.trajectory, node, mode, perturbations)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok(Prepared { stored, turn })
}

/// Trajectories read by this studio's steps so far (one per step).
#[cfg(test)]
pub(crate) fn trajectory_reads(studio: &Studio) -> u64 {
    studio.inner.step_reads.load(Ordering::SeqCst)
}

/// `preview_prompt`: exactly the messages `step` would send.
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`] for the initial state or a history state with
/// no observation in the mode; [`crate::ErrorCode::NotFound`].
pub fn preview_prompt(
    studio: &Studio,
    req: PreviewPromptRequest,
) -> Result<PreviewPromptResponse, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let ws = studio.lock()?;
    let prepared = prepare(
        studio,
        &ws,
        key,
        NodeId(req.node_id),
        req.context,
        req.perturbation.as_deref(),
    )?;
    Ok(PreviewPromptResponse {
        messages: prepared.turn.messages,
    })
}

/// Runs one step of `job` on the calling (job) thread: predict, store,
/// score, and send `StepFinished` (unless a cancel already did). Returns the
/// stored prediction id, `None` when nothing was stored.
fn run_step(
    studio: &Studio,
    job: &Job,
    key: TrajectoryKey,
    node: NodeId,
    prepared: Prepared,
) -> Option<u32> {
    let done = Arc::new(AtomicBool::new(false));
    if let Ok(mut c) = job.current.lock() {
        *c = Some((node.0, Arc::clone(&done)));
    }
    let fail = |message: String| {
        if !done.swap(true, Ordering::SeqCst) {
            failed(studio, job, node.0, message, None);
        }
        None
    };
    let engine: Arc<LoadedEngine> = match engine::ensure(studio) {
        Ok(e) => e,
        Err(e) => return fail(e.message),
    };
    let params_view = match engine::saved(studio) {
        Ok((_, p)) => p,
        Err(e) => return fail(e.message),
    };
    let params = match engine::engine_params(&params_view) {
        Ok(p) => p,
        Err(e) => return fail(e.message),
    };
    let Prepared { mut stored, turn } = prepared;
    // The step's cancel token: `cancel_step` sets it, and draining the
    // engine's stream then cancels the engine and ends at once.
    let cancel = CancelToken::new();
    if let Ok(mut c) = job.step_cancel.lock() {
        *c = Some(cancel.clone());
    }
    if job.is_cancelled() {
        cancel.cancel();
    }
    let mut pairing = ObservationTokens::new();
    let on_event = |event: &EngineEvent| {
        let tokens: Vec<TokenView> = pairing.on_event(event).iter().map(token_view).collect();
        if job.is_cancelled() {
            return;
        }
        let (reasoning, observation) = match event {
            EngineEvent::Reasoning { text } => (text.clone(), String::new()),
            EngineEvent::Observation { text } => (String::new(), text.clone()),
            _ => return,
        };
        studio.emit(StudioEvent::StepDelta {
            job_id: job.id.clone(),
            trajectory_id: job.trajectory_id.clone(),
            node_id: node.0,
            reasoning,
            observation,
            tokens,
        });
    };
    let outcome = match turn::run_turn(
        engine.model.as_ref(),
        &turn,
        &params,
        Stop::on(&cancel),
        on_event,
    ) {
        Ok(o) => o,
        Err(CollectError::Cancelled | CollectError::DeadlineExceeded) => {
            // `cancel_step` has normally sent `StepFinished` already; a
            // rollout cancelled between turns ends the step here.
            if !done.swap(true, Ordering::SeqCst) {
                finished(studio, job, node.0, None, StepStatus::Cancelled, None, None);
            }
            return None;
        }
        Err(CollectError::Engine(e)) => return fail(e.to_string()),
    };
    if outcome.stats.stop_reason == Some(StopReason::Cancelled) || job.is_cancelled() {
        if !done.swap(true, Ordering::SeqCst) {
            let stats = step_stats(&outcome.stats);
            finished(
                studio,
                job,
                node.0,
                None,
                StepStatus::Cancelled,
                None,
                Some(stats),
            );
        }
        return None;
    }
    // Claim the end of the step before storing, so that a cancel arriving
    // now cannot report "cancelled" for a stored prediction.
    if done.swap(true, Ordering::SeqCst) {
        return None;
    }
    let stats = step_stats(&outcome.stats);
    let mut record = turn::record(
        &engine.name,
        &stored.trajectory,
        node,
        &params,
        &turn,
        &outcome,
    );
    if let Ok(v) = serde_json::to_value(&engine.settings) {
        record.extra.insert(SETTINGS_FIELD.into(), v);
    }
    let tokens: Vec<TokenView> = outcome.observation_tokens.iter().map(token_view).collect();
    if !tokens.is_empty()
        && let Ok(v) = serde_json::to_value(&tokens)
    {
        record.extra.insert(TOKENS_FIELD.into(), v);
    }
    let status = StepStatus::from(record.status);
    let stored_id = (|| -> Result<u32, ApiError> {
        let mut ws = studio.lock()?;
        let id = ws.add_chosen_prediction(key, node, &record)?;
        // Score the new chosen prediction against the real observation
        // (stored as a metric result), on the trajectory read for the
        // prompt with the prediction added as the store added it.
        if let Some(n) = stored.trajectory.nodes.get_mut(node.0 as usize)
            && n.id == node
        {
            record.id = id;
            n.predictions.push(record);
            n.chosen_prediction = Some(id);
        }
        if let Some(n) = stored.trajectory.node(node) {
            node_score(&mut ws, &stored, n)?;
        }
        Ok(id.0)
    })();
    match stored_id {
        Ok(id) => {
            finished(studio, job, node.0, Some(id), status, None, Some(stats));
            Some(id)
        }
        Err(e) => {
            failed(studio, job, node.0, e.message, Some(stats));
            None
        }
    }
}

/// `step`: predicts a node on a job thread and returns at once; progress
/// arrives as `StepDelta` and one `StepFinished` event.
///
/// # Errors
/// Prompt problems ([`crate::ErrorCode::BadRequest`]: the initial state, a history
/// state without an observation) and unknown ids ([`crate::ErrorCode::NotFound`])
/// are answered at once; engine failures arrive as `StepFinished` with
/// status `error`.
pub fn step(studio: &Studio, req: StepRequest) -> Result<StepResponse, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let node = NodeId(req.node_id);
    let prepared = {
        let ws = studio.lock()?;
        prepare(studio, &ws, key, node, req.context, None)?
    };
    let trajectory_id = key.0.to_string();
    let job = new_job(studio, &trajectory_id)?;
    let handle = studio.handle();
    let job_thread = Arc::clone(&job);
    spawn("worldloom-step", move || {
        run_step(&handle, &job_thread, key, node, prepared);
        end_job(&handle, &job_thread);
    })?;
    Ok(StepResponse {
        job_id: job.id.clone(),
        trajectory_id,
        node_id: req.node_id,
    })
}

/// `cancel_step`: stops a step or rollout at once. The running step's
/// `StepFinished` (status `cancelled`) is sent before this returns, no
/// further `StepDelta` follows, and nothing is stored.
///
/// # Errors
/// [`crate::ErrorCode::Internal`] only for a poisoned lock.
pub fn cancel_step(
    studio: &Studio,
    req: CancelStepRequest,
) -> Result<CancelStepResponse, ApiError> {
    let job = studio
        .inner
        .jobs
        .lock()
        .map_err(|_| ApiError::internal("the job table lock is poisoned"))?
        .get(&req.job_id)
        .cloned();
    let Some(job) = job else {
        return Ok(CancelStepResponse { cancelled: false });
    };
    job.cancelled.store(true, Ordering::SeqCst);
    if let Some(c) = job.step_cancel.lock().ok().and_then(|c| c.clone()) {
        c.cancel();
    }
    let current = job.current.lock().ok().and_then(|c| c.clone());
    let cancelled = match current {
        Some((node_id, done)) => {
            if done.swap(true, Ordering::SeqCst) {
                false
            } else {
                finished(
                    studio,
                    &job,
                    node_id,
                    None,
                    StepStatus::Cancelled,
                    None,
                    None,
                );
                true
            }
        }
        // A rollout between steps.
        None => true,
    };
    Ok(CancelStepResponse { cancelled })
}

/// A studio rollout (`worldloom_predict::rollout`): each turn appends the
/// next action to the branch, then steps it as [`step`] does.
struct StudioRollout<'a> {
    studio: &'a Studio,
    job: &'a Job,
    key: TrajectoryKey,
    mode: ContextMode,
    actions: &'a [String],
    /// The appended turn, laid out under the lock that appended it.
    prepared: Option<Prepared>,
}

impl StudioRollout<'_> {
    fn progress(&self, done: usize, node: NodeId) {
        self.studio.emit(StudioEvent::RolloutProgress {
            job_id: self.job.id.clone(),
            trajectory_id: self.job.trajectory_id.clone(),
            done: done as u32,
            total: self.actions.len() as u32,
            node_id: node.0,
        });
    }
}

impl RolloutTree for StudioRollout<'_> {
    /// Reported as the step's `StepFinished` already.
    type Error = ();

    fn next_state(&mut self, index: usize, from: NodeId) -> Result<NodeId, ()> {
        if self.job.is_cancelled() {
            return Err(());
        }
        let appended = (|| -> Result<(NodeId, Prepared), ApiError> {
            let mut ws = self.studio.lock()?;
            let (_, node) = append_locked(&mut ws, self.key, from, &self.actions[index])?;
            let prepared = prepare(self.studio, &ws, self.key, node, self.mode, None)?;
            Ok((node, prepared))
        })();
        match appended {
            Ok((node, prepared)) => {
                self.studio.emit(StudioEvent::WorkspaceChanged {
                    trajectory_id: Some(self.job.trajectory_id.clone()),
                    kind: ChangeKind::AddTurn.into(),
                });
                self.prepared = Some(prepared);
                Ok(node)
            }
            Err(e) => {
                failed(self.studio, self.job, from.0, e.message, None);
                Err(())
            }
        }
    }

    fn predict_and_keep(&mut self, index: usize, node: NodeId) -> Result<bool, ()> {
        let prepared = self.prepared.take().ok_or(())?;
        let stored = run_step(self.studio, self.job, self.key, node, prepared);
        if let Ok(mut c) = self.job.current.lock() {
            *c = None;
        }
        self.progress(index + 1, node);
        Ok(stored.is_some())
    }
}

/// `rollout`: for each action, appends a turn from the current state and
/// steps it, continuing from the new state; `RolloutProgress` after each
/// turn. Stops at the first failure or on `cancel_step`.
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`] for an empty action list or an empty action,
/// or when a state on the path to the start has no observation in the
/// context mode (nothing is appended then); [`crate::ErrorCode::NotFound`] for an
/// unknown state.
pub fn rollout(studio: &Studio, req: RolloutRequest) -> Result<RolloutResponse, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    if req.actions.is_empty() {
        return Err(ApiError::bad_request(
            "actions: at least one action is needed",
        ));
    }
    if let Some(i) = req.actions.iter().position(|a| a.trim().is_empty()) {
        return Err(ApiError::bad_request(format!("actions[{i}]: empty action")));
    }
    let mode = req.context;
    {
        let ws = studio.lock()?;
        let st = ws.load_trajectory(key)?;
        live_node(&st, req.node_id)?;
        // Every state from the first turn to the start goes into the first
        // prompt's history: refuse before appending anything when one has no
        // observation in this context mode.
        let path = st
            .trajectory
            .path_to(NodeId(req.node_id))
            .map_err(|e| ApiError::not_found(e.to_string()))?;
        for (turn, &node) in path.nodes.iter().enumerate().skip(1) {
            if core::prompt::context_observation(&st.trajectory, node, mode).is_none() {
                return Err(ApiError::bad_request(format!(
                    "node_id: the rollout would start after state {} (turn {turn}), which has no observation to show the world model in its history; step it or author its observation first",
                    node.0
                )));
            }
        }
    }
    let trajectory_id = key.0.to_string();
    let job = new_job(studio, &trajectory_id)?;
    let handle = studio.handle();
    let job_thread = Arc::clone(&job);
    let start = NodeId(req.node_id);
    let actions = req.actions;
    spawn("worldloom-rollout", move || {
        let mut tree = StudioRollout {
            studio: &handle,
            job: &job_thread,
            key,
            mode,
            actions: &actions,
            prepared: None,
        };
        tree.progress(0, start);
        // Every failure is reported as the step's `StepFinished` already.
        let _ = roll_out(&mut tree, start, actions.len());
        end_job(&handle, &job_thread);
    })?;
    Ok(RolloutResponse {
        job_id: job.id.clone(),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::mpsc::channel;
    use std::time::Duration;

    use worldloom_core::{Action, Domain, Observation, Representation, Trajectory};

    use super::*;

    /// A step reads its trajectory once: laying out the turn, recording the
    /// prediction and scoring it all use that one read.
    #[test]
    fn a_step_reads_the_trajectory_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let studio = Studio::open(&dir.path().join("ws.worldloom")).expect("open");
        let mut t = Trajectory::new(
            "t",
            Domain::Terminal,
            Some(Observation::new(Representation::Text, "$")),
        );
        let mut at = t.root();
        for (action, out) in [("ls", "a.txt"), ("cat a.txt", "hello")] {
            at = t
                .add_step(
                    at,
                    Action::for_domain(Domain::Terminal, action),
                    Some(Observation::new(Representation::Text, out)),
                )
                .expect("step")
                .1;
        }
        let key = studio
            .lock()
            .expect("lock")
            .import_trajectory(&t, None)
            .expect("import");
        let (tx, rx) = channel();
        let tx = Mutex::new(tx);
        studio.add_event_sink(Box::new(move |e: &StudioEvent| {
            if let Ok(tx) = tx.lock() {
                let _ = tx.send(e.clone());
            }
        }));
        let before = trajectory_reads(&studio);
        step(
            &studio,
            StepRequest {
                trajectory_id: key.0.to_string(),
                node_id: at.0,
                context: ContextMode::TeacherForced,
            },
        )
        .expect("step");
        let mut others = Vec::new();
        let finished = loop {
            match rx.recv_timeout(Duration::from_secs(60)).expect("an event") {
                e @ StudioEvent::StepFinished { .. } => break e,
                StudioEvent::StepDelta { .. } => {}
                e => others.push(e),
            }
        };
        assert!(
            matches!(
                finished,
                StudioEvent::StepFinished {
                    prediction_id: Some(_),
                    status: StepStatus::Ok,
                    ..
                }
            ),
            "{finished:?}"
        );
        assert!(others.is_empty(), "one event per step: {others:?}");
        assert_eq!(trajectory_reads(&studio) - before, 1);
        // The prediction was stored, chosen and scored on that read.
        let ws = studio.lock().expect("lock");
        let st = ws.load_trajectory(key).expect("load");
        let n = st.trajectory.node(at).expect("node");
        let chosen = n
            .chosen_prediction
            .and_then(|p| n.prediction(p))
            .expect("chosen");
        assert_eq!(chosen.observation.as_deref(), Some("a.txt"));
        assert!(
            ws.metric_results(key, at)
                .expect("scores")
                .iter()
                .any(|r| r.subject == format!("prediction:{}", chosen.id.0)),
            "scored"
        );
    }
}
