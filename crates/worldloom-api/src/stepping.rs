//! Prompt preview, streaming steps, cancellation and rollouts.
//!
//! A step runs on its own thread: it builds the prompt
//! (`worldloom_core::prompt::build_messages`, with the turn's control
//! instructions), asks the studio's engine, drains its stream
//! (`worldloom_engine::collect`), forwards reasoning, observation text and
//! observation tokens as [`StudioEvent::StepDelta`] events, and on success
//! stores the prediction (provenance: engine, settings, parameters, seed,
//! context mode, perturbation, token log-probabilities, statistics) as the
//! node's chosen one in one undoable change, scores it against the real
//! observation (the metric result is stored) and sends
//! [`StudioEvent::StepFinished`]. `cancel_step` sends `StepFinished` with
//! status `cancelled` at once, stops forwarding, and the job stores nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use worldloom_core as core;
use worldloom_core::{ChatMessage, ContextMode, NodeId};
use worldloom_engine::{
    CancelToken, CollectError, EngineEvent, GenerationStats, ObservationTokens, PredictRequest,
    StopReason, Token, collect,
};
use worldloom_store::TrajectoryKey;

use crate::branches::{append_locked, live_node};
use crate::engine::{self, LoadedEngine};
use crate::error::ApiError;
use crate::ids::parse_trajectory_id;
use crate::scoring::node_score;
use crate::types::*;
use crate::{Studio, StudioEvent};

pub use crate::views::{TOKENS_FIELD, stored_observation_tokens};
/// The `Prediction::extra` field holding the engine settings (no secrets).
pub const SETTINGS_FIELD: &str = "engine_settings";
/// The `Prediction::extra` field holding the turn's control instruction.
pub const PERTURBATION_FIELD: &str = "perturbation";
/// The `Prediction::extra` field holding the generation statistics.
pub use worldloom_engine::record::STATS_FIELD;

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
    }
}

/// A prompt ready to send.
pub(crate) struct Prepared {
    messages: Vec<ChatMessage>,
    current_observation: Option<String>,
    perturbation: Option<String>,
    mode: ContextMode,
}

/// Builds the messages for `node` with the workspace locked.
fn prepare(
    ws: &worldloom_store::Workspace,
    key: TrajectoryKey,
    node: NodeId,
    mode: ContextMode,
    perturbation_override: Option<&str>,
) -> Result<Prepared, ApiError> {
    let st = ws.load_trajectory(key)?;
    let n = live_node(&st, node.0)?;
    let Some(edge) = n.parent_edge.and_then(|e| st.trajectory.edge(e)) else {
        return Err(ApiError::bad_request(format!(
            "node_id: node {} is the initial state; it has no turn to predict",
            node.0
        )));
    };
    let mut perturbations = ws.perturbations(key)?;
    if let Some(p) = perturbation_override {
        if p.trim().is_empty() {
            perturbations.remove(&edge.id);
        } else {
            perturbations.insert(edge.id, p.to_string());
        }
    }
    let perturbation = perturbations.get(&edge.id).cloned();
    let options = core::PromptOptions {
        mode,
        perturbations,
        ..core::PromptOptions::default()
    };
    let messages = core::build_messages(&st.trajectory, node, &options)
        .map_err(|e| ApiError::bad_request(format!("cannot build the prompt: {e}")))?;
    let current_observation =
        core::prompt::context_observation(&st.trajectory, edge.from, mode).map(|o| o.text);
    Ok(Prepared {
        messages,
        current_observation,
        perturbation,
        mode,
    })
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
        &ws,
        key,
        NodeId(req.node_id),
        req.context,
        req.perturbation.as_deref(),
    )?;
    Ok(PreviewPromptResponse {
        messages: prepared.messages,
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
    let mut request = PredictRequest::new(prepared.messages, params.clone());
    request.current_observation = prepared.current_observation;
    // The step's cancel token: `cancel_step` sets it, and draining the
    // engine's stream then cancels the engine and ends at once.
    let cancel = CancelToken::new();
    if let Ok(mut c) = job.step_cancel.lock() {
        *c = Some(cancel.clone());
    }
    if job.is_cancelled() {
        cancel.cancel();
    }
    let stream = match engine.model.predict(request) {
        Ok(s) => s,
        Err(e) => return fail(e.to_string()),
    };
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
    let outcome = match collect(stream, &cancel, None, on_event) {
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
    let stored = (|| -> Result<(u32, StepStatus), ApiError> {
        let mut ws = studio.lock()?;
        let st = ws.load_trajectory(key)?;
        let mut record = prediction_record(
            &engine.name,
            &st.trajectory,
            node,
            &params,
            prepared.mode,
            &outcome,
        );
        if let Ok(v) = serde_json::to_value(&engine.settings) {
            record.extra.insert(SETTINGS_FIELD.into(), v);
        }
        if let Some(p) = &prepared.perturbation {
            record.extra.insert(
                PERTURBATION_FIELD.into(),
                serde_json::Value::String(p.clone()),
            );
        }
        let tokens: Vec<TokenView> = outcome.observation_tokens.iter().map(token_view).collect();
        if !tokens.is_empty()
            && let Ok(v) = serde_json::to_value(&tokens)
        {
            record.extra.insert(TOKENS_FIELD.into(), v);
        }
        let status = StepStatus::from(record.status);
        let id = ws.add_chosen_prediction(key, node, &record)?;
        // Score the new chosen prediction against the real observation
        // (stored as a metric result).
        let st = ws.load_trajectory(key)?;
        if let Some(n) = st.trajectory.node(node) {
            node_score(&mut ws, &st, n)?;
        }
        Ok((id.0, status))
    })();
    match stored {
        Ok((id, status)) => {
            studio.emit(StudioEvent::PredictionAdded {
                trajectory_id: job.trajectory_id.clone(),
                node_id: node.0,
                prediction_id: id,
            });
            studio.emit(StudioEvent::WorkspaceChanged {
                trajectory_id: Some(job.trajectory_id.clone()),
                kind: ChangeKind::AddPrediction.into(),
            });
            finished(studio, job, node.0, Some(id), status, None, Some(stats));
            Some(id)
        }
        Err(e) => {
            failed(studio, job, node.0, e.message, Some(stats));
            None
        }
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<(), ApiError> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map(|_| ())
        .map_err(|e| ApiError::internal(format!("cannot start a job thread: {e}")))
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
        prepare(&ws, key, node, req.context, None)?
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
    let total = req.actions.len() as u32;
    let start = NodeId(req.node_id);
    let actions = req.actions;
    spawn("worldloom-rollout", move || {
        let studio = handle;
        let job = job_thread;
        let progress = |done: u32, node: NodeId| {
            studio.emit(StudioEvent::RolloutProgress {
                job_id: job.id.clone(),
                trajectory_id: job.trajectory_id.clone(),
                done,
                total,
                node_id: node.0,
            });
        };
        progress(0, start);
        let mut at = start;
        for (i, raw) in actions.iter().enumerate() {
            if job.is_cancelled() {
                break;
            }
            let appended = (|| -> Result<(NodeId, Prepared), ApiError> {
                let mut ws = studio.lock()?;
                let (_, node) = append_locked(&mut ws, key, at, raw)?;
                let prepared = prepare(&ws, key, node, mode, None)?;
                Ok((node, prepared))
            })();
            let (node, prepared) = match appended {
                Ok(x) => x,
                Err(e) => {
                    failed(&studio, &job, at.0, e.message, None);
                    break;
                }
            };
            studio.emit(StudioEvent::WorkspaceChanged {
                trajectory_id: Some(job.trajectory_id.clone()),
                kind: ChangeKind::AddTurn.into(),
            });
            let stored = run_step(&studio, &job, key, node, prepared);
            if let Ok(mut c) = job.current.lock() {
                *c = None;
            }
            at = node;
            progress(i as u32 + 1, node);
            if stored.is_none() {
                break;
            }
        }
        end_job(&studio, &job);
    })?;
    Ok(RolloutResponse {
        job_id: job.id.clone(),
    })
}
