//! The OpenEnv transports: HTTP (`POST /reset`, `POST /step`, `GET /state`,
//! `GET /schema`, `GET /metadata`, `GET /health`) and the WebSocket session
//! (`/ws`), with the message and error shapes of `openenv-core` 0.3
//! (`openenv.core.env_server.http_server` and `types`), plus
//! `GET /metrics`, a minimal `GET /openapi.json` and a `POST /mcp` without
//! tools (what `openenv validate` checks).
//!
//! **Sessions.** A WebSocket connection is one session holding one episode
//! at a time (a `reset` ends the one before). Over HTTP, which
//! `openenv-core` treats as stateless, `POST /reset` opens a session whose
//! id is the observation's `episode_id`, and `POST /step` names it in its
//! body (`{"action": {…}, "episode_id": "…"}`). Both kinds count against
//! `max_sessions`; one more is refused (`CAPACITY_REACHED` on the socket,
//! then it closes; 503 over HTTP). An HTTP session frees its slot when its
//! episode ends. Sessions idle for `idle_timeout` are closed (the socket
//! gets a `SESSION_ERROR` saying so). Each session runs one step at a time,
//! so the work waiting for the engine is bounded by `max_sessions`.
//!
//! **Errors.** On the socket every problem is an
//! `{"type": "error", "data": {"message", "code"}}` answer and the session
//! goes on: `INVALID_JSON`, `UNKNOWN_TYPE`, `VALIDATION_ERROR` (bad
//! message shape, bad reset field, malformed action), `SESSION_ERROR` (no
//! episode, episode ended, idle), `EXECUTION_ERROR` (the world model or the
//! workspace failed; the episode stays at the same state). A message the
//! socket cannot read closes it with the RFC 6455 code: 1009 for one over
//! `max_message_bytes`, 1007 for a text frame that is not UTF-8, 1002 for
//! another protocol violation. A socket that
//! closes during a step cancels its prediction; the episode is recorded as
//! `closed`. An HTTP client that disconnects during `POST /step` cancels
//! the prediction too (the episode stays where it was). Over HTTP the same errors are `{"detail": message, "code":
//! code}` with the statuses of [`EnvError::http_status`].
//!
//! **The door.** `worldloom-door`'s [`check_door`], the one every
//! Worldloom server keeps: Host and
//! Origin checks on loopback, `Content-Type: application/json` on POST, and
//! with a token (required off loopback) `Authorization: Bearer TOKEN` on
//! every route but `/health`.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use worldloom_door::check_door;
use worldloom_engine::CancelToken;
use worldloom_model_server::{BackgroundServer, ServerError};

use crate::episode::{Environment, ResetParams, StepAnswer};
use crate::error::{EnvError, json_kind};
use crate::state::Episode;

/// Settings of the server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeEnvOptions {
    /// Sessions (WebSocket connections and open HTTP episodes) at once.
    pub max_sessions: usize,
    /// A session without a message for this long is closed.
    pub idle_timeout: Duration,
    /// Token clients send as `Authorization: Bearer TOKEN`; required when
    /// listening off loopback.
    pub token: Option<String>,
    /// Largest WebSocket message or HTTP body, in bytes.
    pub max_message_bytes: usize,
    /// Print a progress line on stderr this often when something changed.
    pub progress_every: Option<Duration>,
}

impl Default for ServeEnvOptions {
    fn default() -> Self {
        Self {
            max_sessions: 8,
            idle_timeout: Duration::from_secs(600),
            token: None,
            max_message_bytes: 16 * 1024 * 1024,
            progress_every: None,
        }
    }
}

/// Refuses a non-loopback address without a token.
///
/// # Errors
/// A message saying a token is needed.
pub fn check_exposure(addr: SocketAddr, options: &ServeEnvOptions) -> Result<(), String> {
    if !addr.ip().is_loopback() && options.token.as_deref().is_none_or(str::is_empty) {
        return Err(format!(
            "{addr} is reachable from other machines: a token is required (--token or WORLDLOOM_ENV_TOKEN)"
        ));
    }
    Ok(())
}

struct HttpSession {
    episode: Arc<Mutex<Episode>>,
    last_used: Instant,
    holds_slot: bool,
}

struct AppState {
    env: Arc<Environment>,
    options: ServeEnvOptions,
    addr: SocketAddr,
    active: AtomicUsize,
    http: Mutex<HashMap<String, HttpSession>>,
}

impl AppState {
    fn reserve(&self) -> Result<(), EnvError> {
        let max = self.options.max_sessions.max(1);
        self.active
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < max).then_some(n + 1)
            })
            .map(|_| ())
            .map_err(|active| {
                self.env
                    .metrics
                    .capacity_refusals
                    .fetch_add(1, Ordering::Relaxed);
                EnvError::Capacity { active, max }
            })
    }

    fn release(&self) {
        let _ = self
            .active
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }

    fn active(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }
}

/// The message types a socket reads.
const WS_TYPES: &str = "reset, step, state, close";

/// The answer to a message whose `type` is not one of [`WS_TYPES`]: for a
/// string, `openenv-core`'s own text (`Unknown message type: NAME`); for
/// anything else, what was given and what is expected.
fn unknown_type(kind: Option<&Value>) -> Value {
    let message = match kind {
        Some(Value::String(name)) if name.is_empty() => {
            format!("Unknown message type: an empty string (known: {WS_TYPES})")
        }
        Some(Value::String(name)) => format!("Unknown message type: {name}"),
        None => format!("Unknown message type: the message has no `type` (known: {WS_TYPES})"),
        Some(other) => format!(
            "Unknown message type: `type` must be a string ({WS_TYPES}), got {}",
            json_kind(other)
        ),
    };
    ws_error(message, "UNKNOWN_TYPE")
}

/// The close frame for a socket that failed to read a message, when the
/// failure is the client's (RFC 6455 section 7.4.1): 1009 for a message
/// over `limit` bytes, 1007 for a text frame that is not UTF-8, 1002 for
/// another protocol violation. `None` for a connection that went away.
/// axum gives the WebSocket library's error only as text, so its messages
/// are what is matched (`tungstenite::Error`'s `Display`).
fn close_for_read_error(error: &axum::Error, limit: usize) -> Option<(u16, String)> {
    let text = error.to_string();
    if text.starts_with("Space limit exceeded") {
        Some((1009, format!("message too big: the limit is {limit} bytes")))
    } else if text.starts_with("UTF-8 encoding error") {
        Some((1007, "a text frame is not valid UTF-8".into()))
    } else if text.starts_with("WebSocket protocol error") {
        let reason: String = text.chars().take(100).collect();
        Some((1002, reason))
    } else {
        None
    }
}

fn ws_error(message: impl Into<String>, code: &str) -> Value {
    json!({"type": "error", "data": {"message": message.into(), "code": code}})
}

fn env_ws_error(error: &EnvError) -> Value {
    let mut value = ws_error(error.to_string(), error.ws_code());
    if let EnvError::Capacity { active, max } = error {
        value["data"]["active_sessions"] = json!(active);
        value["data"]["max_sessions"] = json!(max);
    }
    value
}

fn http_error(error: &EnvError) -> Response {
    let status =
        StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        axum::Json(json!({"detail": error.to_string(), "code": error.ws_code()})),
    )
        .into_response()
}

/// Runs blocking environment work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, EnvError> + Send + 'static,
) -> Result<T, EnvError> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(EnvError::Record(format!("the step's thread failed: {e}"))))
}

fn lock(episode: &Mutex<Episode>) -> Result<std::sync::MutexGuard<'_, Episode>, EnvError> {
    episode
        .lock()
        .map_err(|_| EnvError::Session("the episode's lock is poisoned".into()))
}

/// The routes, ready to serve on `addr`.
pub fn router(env: Arc<Environment>, options: ServeEnvOptions, addr: SocketAddr) -> Router {
    build(env, options, addr).0
}

fn build(
    env: Arc<Environment>,
    options: ServeEnvOptions,
    addr: SocketAddr,
) -> (Router, Arc<AppState>) {
    let limit = options.max_message_bytes;
    let state = Arc::new(AppState {
        env,
        options,
        addr,
        active: AtomicUsize::new(0),
        http: Mutex::new(HashMap::new()),
    });
    let router = Router::new()
        .route("/reset", post(http_reset))
        .route("/step", post(http_step))
        .route("/state", get(http_state))
        .route("/schema", get(schema))
        .route("/metadata", get(metadata))
        .route(
            "/health",
            get(|| async { axum::Json(json!({"status": "healthy"})) }),
        )
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(openapi))
        .route("/mcp", post(mcp))
        .route("/ws", get(ws_upgrade))
        .fallback(|| async {
            (
                StatusCode::NOT_FOUND,
                axum::Json(json!({"detail": "Not Found"})),
            )
        })
        .layer(axum::extract::DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state.clone());
    (router, state)
}

async fn guard(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let needs_token = request.uri().path() != "/health";
    match check_door(
        state.addr,
        state.options.token.as_deref(),
        needs_token,
        request.method(),
        request.headers(),
    ) {
        Some(refusal) => (
            refusal.status,
            axum::Json(json!({"detail": refusal.message, "code": refusal.code})),
        )
            .into_response(),
        None => next.run(request).await,
    }
}

fn parse_body(body: &Bytes, empty_ok: bool) -> Result<Value, EnvError> {
    if body.iter().all(u8::is_ascii_whitespace) && empty_ok {
        return Ok(json!({}));
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| EnvError::Invalid(format!("the body is not JSON: {e}")))?;
    if !value.is_object() {
        return Err(EnvError::Invalid("the body must be a JSON object".into()));
    }
    Ok(value)
}

async fn http_reset(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    http_answer(&state, reset_http(&state, &body).await)
}

/// The HTTP reply to a reset or step: the answer as JSON, or the error (a
/// malformed request also counts as a bad message in the metrics).
fn http_answer(state: &AppState, result: Result<StepAnswer, EnvError>) -> Response {
    match result {
        Ok(answer) => axum::Json(answer.to_json()).into_response(),
        Err(e) => {
            if matches!(e, EnvError::Invalid(_)) {
                state
                    .env
                    .metrics
                    .bad_messages
                    .fetch_add(1, Ordering::Relaxed);
            }
            http_error(&e)
        }
    }
}

async fn reset_http(state: &Arc<AppState>, body: &Bytes) -> Result<StepAnswer, EnvError> {
    let params = ResetParams::from_json(&parse_body(body, true)?)?;
    // Resetting an open HTTP session reuses its slot.
    let previous = params
        .episode_id
        .as_ref()
        .and_then(|id| state.http.lock().ok().and_then(|mut m| m.remove(id)));
    let had_slot = previous.as_ref().is_some_and(|p| p.holds_slot);
    if !had_slot {
        state.reserve()?;
    }
    let env = state.env.clone();
    let result = blocking(move || {
        if let Some(p) = previous {
            let mut old = lock(&p.episode)?;
            if !old.done {
                old.done_reason = Some("reset".into());
                env.end(&mut old, None)?;
            }
        }
        env.reset(&params)
    })
    .await;
    match result {
        Ok((episode, answer)) => {
            let id = episode.id.clone();
            let session = HttpSession {
                episode: Arc::new(Mutex::new(episode)),
                last_used: Instant::now(),
                holds_slot: true,
            };
            if let Ok(mut map) = state.http.lock()
                && let Some(old) = map.insert(id, session)
                && old.holds_slot
            {
                state.release();
            }
            Ok(answer)
        }
        Err(e) => {
            state.release();
            Err(e)
        }
    }
}

async fn http_step(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    http_answer(&state, step_http(&state, &body).await)
}

async fn step_http(state: &Arc<AppState>, body: &Bytes) -> Result<StepAnswer, EnvError> {
    let body = parse_body(body, false)?;
    for key in body.as_object().map(|o| o.keys()).into_iter().flatten() {
        if !["action", "episode_id", "timeout_s", "request_id"].contains(&key.as_str()) {
            return Err(EnvError::Invalid(format!(
                "unknown step field `{key}` (known: action, episode_id, timeout_s, request_id)"
            )));
        }
    }
    let Some(action) = body.get("action").cloned() else {
        return Err(EnvError::Invalid("action: missing".into()));
    };
    let id = match body.get("episode_id") {
        Some(Value::String(id)) => id.as_str(),
        None | Some(Value::Null) => {
            return Err(EnvError::Invalid(
                "episode_id: required over HTTP (the `episode_id` of the observation POST /reset returned); /ws keeps one session per connection".into(),
            ));
        }
        Some(other) => {
            return Err(EnvError::Invalid(format!(
                "episode_id: expected a string (the `episode_id` of the observation POST /reset returned), got {}",
                json_kind(other)
            )));
        }
    };
    let episode = {
        let mut map = state
            .http
            .lock()
            .map_err(|_| EnvError::Session("the session table's lock is poisoned".into()))?;
        let session = map.get_mut(id).ok_or_else(|| {
            EnvError::Session(format!(
                "no episode `{id}` is open over HTTP (ended and reaped, never started, or started on /ws)"
            ))
        })?;
        session.last_used = Instant::now();
        session.episode.clone()
    };
    let env = state.env.clone();
    let cancel = CancelToken::new();
    let token = cancel.clone();
    // A client that goes away mid-step drops this request's future: the
    // guard then cancels the prediction, as a closed socket does.
    let guard = CancelOnDrop(Some(cancel));
    let answer = blocking(move || {
        let mut ep = lock(&episode)?;
        env.step(&mut ep, &action, &token)
    })
    .await;
    guard.disarm();
    let answer = answer?;
    if answer.done
        && let Ok(mut map) = state.http.lock()
        && let Some(session) = map.get_mut(id)
        && session.holds_slot
    {
        session.holds_slot = false;
        state.release();
    }
    Ok(answer)
}

/// Cancels its token when dropped before [`CancelOnDrop::disarm`].
struct CancelOnDrop(Option<CancelToken>);

impl CancelOnDrop {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(token) = self.0.take() {
            token.cancel();
        }
    }
}

async fn http_state(
    State(state): State<Arc<AppState>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let Some(id) = query.get("episode_id") else {
        return axum::Json(json!({"episode_id": null, "step_count": 0})).into_response();
    };
    let episode = state
        .http
        .lock()
        .ok()
        .and_then(|m| m.get(id).map(|s| s.episode.clone()));
    let Some(episode) = episode else {
        return http_error(&EnvError::Session(format!(
            "no episode `{id}` is open over HTTP"
        )));
    };
    let env = state.env.clone();
    match blocking(move || Ok(env.state(&*lock(&episode)?))).await {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => http_error(&e),
    }
}

async fn schema() -> Response {
    axum::Json(json!({
        "action": {
            "title": "WorldloomAction",
            "type": "object",
            "properties": {
                "action": {"description": "The action as the episode's domain writes it (see the observation's action_space); Android and tool-call actions may be given as JSON objects.", "anyOf": [{"type": "string"}, {"type": "object"}, {"type": "array"}]},
                "metadata": {"type": "object", "description": "Accepted and ignored."}
            },
            "required": ["action"],
            "additionalProperties": false
        },
        "observation": {
            "title": "WorldloomObservation",
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "The current state: the task's first state after reset, the world model's predicted observation after a step."},
                "domain": {"type": "string"},
                "representation": {"type": "string"},
                "goal": {"type": ["string", "null"]},
                "episode_id": {"type": "string"},
                "task_id": {"type": "string"},
                "turn": {"type": "integer"},
                "action_space": {"type": "string", "description": "After reset only."},
                "system_prompt": {"type": ["string", "null"], "description": "After reset only."},
                "start_turn": {"type": "integer", "description": "After reset only: turns before the start state (a tagged branch's fork point; 0 from the root)."},
                "reward_rationale": {"type": "string"},
                "status": {"type": "string", "description": "The output parser's status of the prediction (ok, truncated, no_observation, empty)."},
                "perturbation": {"type": ["string", "null"]},
                "prediction_ms": {"type": "number"},
                "done_reason": {"type": ["string", "null"], "description": "terminal_action, turn_limit, unparseable_prediction, target_reached."},
                "error": {"type": "string"}
            }
        },
        "state": {
            "title": "WorldloomState",
            "type": "object",
            "properties": {
                "episode_id": {"type": ["string", "null"]},
                "step_count": {"type": "integer", "minimum": 0},
                "start_turn": {"type": "integer", "minimum": 0},
                "task_id": {"type": "string"},
                "domain": {"type": "string"},
                "seed": {"type": "integer"},
                "done": {"type": "boolean"},
                "done_reason": {"type": ["string", "null"]},
                "total_reward": {"type": "number"},
                "trajectory_key": {"type": ["integer", "null"]},
                "engine": {"type": "string"}
            }
        }
    }))
    .into_response()
}

async fn metadata(State(state): State<Arc<AppState>>) -> Response {
    let domains: Vec<&str> = state
        .env
        .tasks()
        .domains()
        .into_iter()
        .map(|d| d.as_str())
        .collect();
    axum::Json(json!({
        "name": "worldloom",
        "description": format!(
            "A language world model ({}) simulating {} task(s) in {}: the agent acts, the model predicts the next observation.",
            state.env.engine_name(),
            state.env.tasks().tasks().len(),
            domains.join(", ")
        ),
        "version": env!("CARGO_PKG_VERSION"),
        "readme_content": null,
        "author": null,
        "documentation_url": null
    }))
    .into_response()
}

async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    axum::Json(
        state
            .env
            .metrics
            .to_json(state.active(), state.options.max_sessions),
    )
    .into_response()
}

async fn openapi() -> Response {
    let op = |summary: &str| json!({"summary": summary});
    axum::Json(json!({
        "openapi": "3.1.0",
        "info": {"title": "worldloom serve-env", "version": env!("CARGO_PKG_VERSION")},
        "paths": {
            "/reset": {"post": op("Reset the environment")},
            "/step": {"post": op("Execute an action in the environment")},
            "/state": {"get": op("Get current environment state")},
            "/schema": {"get": op("Get all JSON schemas")},
            "/metadata": {"get": op("Get environment metadata")},
            "/health": {"get": op("Health check")},
            "/metrics": {"get": op("Counters")},
            "/mcp": {"post": op("MCP JSON-RPC (no tools)")},
        }
    }))
    .into_response()
}

/// `POST /mcp`: the JSON-RPC endpoint `openenv-core` servers have (its
/// `validate` command requires one). This environment offers no MCP tools:
/// `tools/list` answers an empty list, any other method
/// `-32601 Method not found`, a body that is not JSON `-32700`, and one that
/// is not a JSON-RPC 2.0 request `-32600`; always status 200, as
/// `openenv-core` answers.
async fn mcp(body: Bytes) -> Response {
    let reply = |id: Value, result: Option<Value>, error: Option<(i64, String)>| {
        axum::Json(json!({
            "jsonrpc": "2.0",
            "result": result,
            "error": error.map(|(code, message)| json!({"code": code, "message": message})),
            "id": id,
        }))
        .into_response()
    };
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return reply(Value::Null, None, Some((-32700, "Parse error".into())));
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let method = request.get("method").and_then(Value::as_str);
    match (request.get("jsonrpc").and_then(Value::as_str), method) {
        (Some("2.0"), Some("tools/list")) => reply(id, Some(json!({"tools": []})), None),
        (Some("2.0"), Some(other)) => reply(
            id,
            None,
            Some((
                -32601,
                format!(
                    "Method not found: {other} (this environment has no MCP tools; use reset and step)"
                ),
            )),
        ),
        _ => reply(
            id,
            None,
            Some((
                -32600,
                "Invalid Request: expected a JSON-RPC 2.0 request with a method".into(),
            )),
        ),
    }
}

async fn ws_upgrade(State(state): State<Arc<AppState>>, ws: WebSocketUpgrade) -> Response {
    let limit = state.options.max_message_bytes;
    // The frame limit too: a single frame over it would otherwise meet
    // the library's default frame limit first.
    ws.max_message_size(limit)
        .max_frame_size(limit)
        .on_upgrade(move |socket| ws_session(state, socket))
}

async fn send(socket: &mut WebSocket, value: &Value) -> bool {
    socket
        .send(Message::Text(value.to_string().into()))
        .await
        .is_ok()
}

/// Checks a message has only the fields its type allows (`type`, and
/// `data` for reset and step), as `openenv-core`'s message models forbid
/// others.
fn check_fields(message: &Value, allowed: &[&str]) -> Result<(), EnvError> {
    for key in message.as_object().map(|o| o.keys()).into_iter().flatten() {
        if !allowed.contains(&key.as_str()) {
            return Err(EnvError::Invalid(format!(
                "Invalid message: unknown field `{key}` (allowed: {})",
                allowed.join(", ")
            )));
        }
    }
    Ok(())
}

/// Ends `episode` as `closed` (unless it has ended) on a blocking thread.
async fn close_episode(env: &Arc<Environment>, episode: Arc<Mutex<Episode>>, reason: &str) {
    let env = env.clone();
    let reason = reason.to_owned();
    let _ = blocking(move || {
        let mut ep = lock(&episode)?;
        if !ep.done {
            ep.done_reason = Some(reason);
            env.end(&mut ep, None)?;
        }
        Ok(())
    })
    .await;
}

async fn ws_session(state: Arc<AppState>, mut socket: WebSocket) {
    if let Err(e) = state.reserve() {
        let _ = send(&mut socket, &env_ws_error(&e)).await;
        // 1013 "try again later", with the reason, for a client that reads
        // the close before the error answer.
        let frame = axum::extract::ws::CloseFrame {
            code: 1013,
            reason: format!(
                "server at capacity ({} sessions)",
                state.options.max_sessions.max(1)
            )
            .into(),
        };
        let _ = socket.send(Message::Close(Some(frame))).await;
        return;
    }
    state
        .env
        .metrics
        .ws_sessions_opened
        .fetch_add(1, Ordering::Relaxed);
    let env = state.env.clone();
    let mut episode: Option<Arc<Mutex<Episode>>> = None;
    let mut pending: VecDeque<Message> = VecDeque::new();
    // The close frame sent when the client broke the protocol (its code
    // and reason), else `None`.
    let mut refused: Option<(u16, String)> = None;
    let limit = state.options.max_message_bytes;
    'session: loop {
        let incoming = match pending.pop_front() {
            Some(m) => Some(Ok(m)),
            None => match tokio::time::timeout(state.options.idle_timeout, socket.recv()).await {
                Ok(m) => m,
                Err(_) => {
                    env.metrics.idle_closed.fetch_add(1, Ordering::Relaxed);
                    let message = format!(
                        "session closed: no message for {} s (idle timeout)",
                        state.options.idle_timeout.as_secs_f64()
                    );
                    let _ = send(&mut socket, &ws_error(message, "SESSION_ERROR")).await;
                    break;
                }
            },
        };
        let text = match incoming {
            Some(Err(e)) => {
                refused = close_for_read_error(&e, limit);
                break;
            }
            None | Some(Ok(Message::Close(_))) => break,
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            Some(Ok(Message::Binary(_))) => {
                env.metrics.bad_messages.fetch_add(1, Ordering::Relaxed);
                let e = ws_error(
                    "Invalid JSON: binary frames are not read; send JSON text",
                    "INVALID_JSON",
                );
                if !send(&mut socket, &e).await {
                    break;
                }
                continue;
            }
            Some(Ok(Message::Text(t))) => t,
        };
        let message: Value = match serde_json::from_str(text.as_str()) {
            Ok(v) => v,
            Err(e) => {
                env.metrics.bad_messages.fetch_add(1, Ordering::Relaxed);
                if !send(
                    &mut socket,
                    &ws_error(format!("Invalid JSON: {e}"), "INVALID_JSON"),
                )
                .await
                {
                    break;
                }
                continue;
            }
        };
        let kind = match message.get("type") {
            Some(Value::String(name)) => name.clone(),
            // Not a name at all: answered as unknown below.
            _ => String::new(),
        };
        let answer: Result<Value, EnvError> = match kind.as_str() {
            "reset" => {
                async {
                    check_fields(&message, &["type", "data"])?;
                    let params =
                        ResetParams::from_json(message.get("data").unwrap_or(&Value::Null))?;
                    if let Some(old) = episode.take() {
                        close_episode(&env, old, "reset").await;
                    }
                    let env2 = env.clone();
                    let (ep, answer) = blocking(move || env2.reset(&params)).await?;
                    episode = Some(Arc::new(Mutex::new(ep)));
                    Ok(json!({"type": "observation", "data": answer.to_json()}))
                }
                .await
            }
            "step" => {
                let prepared = check_fields(&message, &["type", "data"]).and_then(|()| {
                    let data = message.get("data").cloned().ok_or_else(|| {
                        EnvError::Invalid("Invalid message: step needs `data` (the action)".into())
                    })?;
                    let ep = episode.clone().ok_or_else(|| {
                        EnvError::Session("no episode in this session: send a reset first".into())
                    })?;
                    Ok((data, ep))
                });
                match prepared {
                    Err(e) => Err(e),
                    Ok((data, ep)) => {
                        let cancel = CancelToken::new();
                        let token = cancel.clone();
                        let env2 = env.clone();
                        let task = blocking(move || {
                            let mut guard = lock(&ep)?;
                            env2.step(&mut guard, &data, &token)
                        });
                        tokio::pin!(task);
                        let result = loop {
                            tokio::select! {
                                result = &mut task => break Some(result),
                                incoming = socket.recv() => match incoming {
                                    Some(Ok(m @ (Message::Text(_) | Message::Binary(_)))) => pending.push_back(m),
                                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                                    other => {
                                        if let Some(Err(e)) = &other {
                                            refused = close_for_read_error(e, limit);
                                        }
                                        // The client went away mid-step: stop the prediction.
                                        cancel.cancel();
                                        let _ = (&mut task).await;
                                        break None;
                                    }
                                }
                            }
                        };
                        match result {
                            None => break 'session,
                            Some(r) => {
                                r.map(|a| json!({"type": "observation", "data": a.to_json()}))
                            }
                        }
                    }
                }
            }
            "state" => check_fields(&message, &["type"]).map(|()| match &episode {
                Some(ep) => match lock(ep) {
                    Ok(guard) => json!({"type": "state", "data": env.state(&guard)}),
                    Err(e) => env_ws_error(&e),
                },
                None => json!({"type": "state", "data": {"episode_id": null, "step_count": 0}}),
            }),
            "close" => break,
            _ => {
                env.metrics.bad_messages.fetch_add(1, Ordering::Relaxed);
                Ok(unknown_type(message.get("type")))
            }
        };
        let out = match answer {
            Ok(v) => v,
            Err(e) => {
                if matches!(e, EnvError::Invalid(_)) {
                    env.metrics.bad_messages.fetch_add(1, Ordering::Relaxed);
                }
                env_ws_error(&e)
            }
        };
        if !send(&mut socket, &out).await {
            break;
        }
    }
    match refused {
        Some((code, reason)) => {
            env.metrics.bad_messages.fetch_add(1, Ordering::Relaxed);
            let frame = axum::extract::ws::CloseFrame {
                code,
                reason: reason.into(),
            };
            // Sent before the episode is closed and the socket dropped, so
            // a client reading while it writes gets the code first.
            let _ = socket.send(Message::Close(Some(frame))).await;
            if let Some(ep) = episode.take() {
                close_episode(&env, ep, "closed").await;
            }
            state.release();
        }
        None => {
            if let Some(ep) = episode.take() {
                close_episode(&env, ep, "closed").await;
            }
            state.release();
            let _ = socket.send(Message::Close(None)).await;
        }
    }
}

/// Closes HTTP sessions idle beyond the timeout (their episodes are
/// recorded as `idle`).
async fn reap(state: Arc<AppState>) {
    let every =
        (state.options.idle_timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
    loop {
        tokio::time::sleep(every).await;
        let stale: Vec<HttpSession> = match state.http.lock() {
            Ok(mut map) => {
                let ids: Vec<String> = map
                    .iter()
                    .filter(|(_, s)| s.last_used.elapsed() > state.options.idle_timeout)
                    .map(|(id, _)| id.clone())
                    .collect();
                ids.iter().filter_map(|id| map.remove(id)).collect()
            }
            Err(_) => Vec::new(),
        };
        for session in stale {
            state
                .env
                .metrics
                .idle_closed
                .fetch_add(1, Ordering::Relaxed);
            if session.holds_slot {
                state.release();
            }
            close_episode(&state.env, session.episode, "idle").await;
        }
    }
}

async fn progress(state: Arc<AppState>, every: Duration) {
    let mut last = String::new();
    loop {
        tokio::time::sleep(every).await;
        let m = state
            .env
            .metrics
            .to_json(state.active(), state.options.max_sessions);
        let line = format!(
            "serve-env: {} session(s), {} episode(s) started, {} step(s) ({:.2}/s, {:.0} tokens/s), errors: {}",
            m["active_sessions"],
            m["episodes_started"],
            m["steps"],
            m["steps_per_sec"].as_f64().unwrap_or(0.0),
            m["tokens_per_sec"].as_f64().unwrap_or(0.0),
            m["errors"]
        );
        let key = format!("{} {} {}", m["active_sessions"], m["steps"], m["errors"]);
        if key != last {
            eprintln!("{line}");
            last = key;
        }
    }
}

/// Serves on `listener` until `shutdown` completes, after printing the
/// tasks' warnings ([`crate::TaskSet::warnings`]) on stderr.
///
/// # Errors
/// The listener's I/O errors; `InvalidInput` off loopback without a token.
pub async fn serve(
    listener: tokio::net::TcpListener,
    env: Arc<Environment>,
    options: ServeEnvOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let addr = listener.local_addr()?;
    check_exposure(addr, &options)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    for warning in env.tasks().warnings() {
        eprintln!("warning: {warning}");
    }
    let progress_every = options.progress_every;
    let (router, state) = build(env, options, addr);
    let reaper = tokio::spawn(reap(state.clone()));
    let progress = progress_every.map(|every| tokio::spawn(progress(state.clone(), every)));
    let result = axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await;
    reaper.abort();
    if let Some(p) = progress {
        p.abort();
    }
    result
}

/// A server on its own thread and runtime (tests, benchmarks); dropping it
/// stops the server.
pub struct RunningEnvServer {
    /// The bound address.
    pub addr: SocketAddr,
    server: BackgroundServer,
}

impl RunningEnvServer {
    /// `http://ADDR`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops the server and waits for its thread.
    pub fn stop(self) {
        self.server.stop();
    }
}

/// Binds `addr` and serves on a new thread with its own runtime.
///
/// # Errors
/// Off loopback without a token; the address cannot be bound; the runtime
/// cannot start.
pub fn spawn(
    env: Arc<Environment>,
    options: ServeEnvOptions,
    addr: SocketAddr,
) -> std::io::Result<RunningEnvServer> {
    check_exposure(addr, &options)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let (addr, server) =
        BackgroundServer::bind(addr, "worldloom-env-server", move |listener, shutdown| {
            serve(listener, env, options, shutdown)
        })
        .map_err(|e| match e {
            ServerError::Bind { source, .. } | ServerError::Runtime(source) => source,
            other => std::io::Error::other(other.to_string()),
        })?;
    Ok(RunningEnvServer { addr, server })
}
