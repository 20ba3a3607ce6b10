//! An OpenAI-compatible HTTP server for any [`WorldModel`], so the official
//! AgentWorldBench evaluation script and any OpenAI client can drive a
//! Worldloom engine.
//!
//! Endpoints (shapes follow the OpenAI API reference for chat completions and
//! models, and the vLLM/SGLang convention of a separate `reasoning_content`):
//! - `GET /v1/models`: one model, the configured id;
//! - `POST /v1/chat/completions`: `stream: false` answers one
//!   `chat.completion` object; `stream: true` answers server-sent events of
//!   `chat.completion.chunk` objects ending with `data: [DONE]`, with
//!   `usage` in a last chunk when `stream_options.include_usage` is set.
//!   Reasoning is sent as `reasoning_content`, the answer as `content`;
//! - `GET /health`: `200 ok`.
//!
//! Requests beyond [`ServerOptions::max_concurrent`] wait in a first-come
//! queue (a fair semaphore) until an earlier prediction ends, so an engine
//! with one thread is never handed two predictions at once. A streaming
//! client that disconnects cancels its prediction.
//!
//! Accepted request fields: `model`, `messages` (`system`, `developer`,
//! `user`, `assistant`; `content` as a string or a list of `text` parts),
//! `max_tokens` / `max_completion_tokens`, `temperature`, `top_p`, `top_k`,
//! `seed`, `stop`, `stream`, `stream_options.include_usage`,
//! `chat_template_kwargs.enable_thinking`, and Worldloom's
//! `stop_after_observation`. Fields not given keep
//! [`ServerOptions::default_params`]. `logprobs` is accepted and answered with
//! `null` (the engines' `Token` events are not passed on).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};
use worldloom_core::{ChatMessage, ChatRole};
use worldloom_engine::{
    CancelToken, EngineError, EngineEvent, GenerationParams, GenerationStats, PredictRequest,
    StopReason, WorldModel, collect_to_end,
};

/// Largest accepted request body, in bytes (long GUI histories are large).
pub const MAX_BODY_BYTES: usize = 256 * 1024 * 1024;

/// Settings of the server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerOptions {
    /// The model id listed at `/v1/models` and required in requests.
    pub model_id: String,
    /// Predictions run at once; further requests queue. `1` suits engines
    /// with one engine thread (the local model).
    pub max_concurrent: usize,
    /// Parameters for the fields a request leaves out (e.g. the model
    /// directory's `generation_config.json` values).
    pub default_params: GenerationParams,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            model_id: "worldloom".to_owned(),
            max_concurrent: 1,
            default_params: GenerationParams::default(),
        }
    }
}

/// Errors starting the server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// The server's runtime could not start or stopped with an error.
    #[error("server runtime: {0}")]
    Runtime(#[from] std::io::Error),
}

struct AppState {
    engine: Arc<dyn WorldModel>,
    model_id: String,
    default_params: GenerationParams,
    queue: Semaphore,
    next_id: AtomicU64,
    /// Set when the server shuts down: predictions in flight are cancelled.
    stopping: CancelToken,
}

/// The routes, ready to serve.
pub fn router(engine: Arc<dyn WorldModel>, options: ServerOptions) -> Router {
    build(engine, options).0
}

fn build(engine: Arc<dyn WorldModel>, options: ServerOptions) -> (Router, Arc<AppState>) {
    let state = Arc::new(AppState {
        engine,
        model_id: options.model_id,
        default_params: options.default_params,
        queue: Semaphore::new(options.max_concurrent.max(1)),
        next_id: AtomicU64::new(1),
        stopping: CancelToken::new(),
    });
    let router = Router::new()
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat_completions))
        .route("/health", get(|| async { "ok" }))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state.clone());
    (router, state)
}

/// Serves on `listener` until `shutdown` completes; then cancels the
/// predictions in flight (their streams end with `finish_reason: "stop"`)
/// and returns once their responses are sent.
///
/// Errors: the listener's I/O errors.
pub async fn serve(
    listener: tokio::net::TcpListener,
    engine: Arc<dyn WorldModel>,
    options: ServerOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (router, state) = build(engine, options);
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown.await;
            state.stopping.cancel();
        })
        .await
}

/// A server running on its own thread and runtime (for tests and embedding).
/// Dropping it stops the server.
pub struct RunningServer {
    /// The bound address (port resolved when 0 was asked for).
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RunningServer {
    /// Base URL of the API, e.g. `http://127.0.0.1:8000/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Stops the server and waits for its thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Binds `addr` and serves on a new thread with its own runtime.
///
/// Errors: [`ServerError::Bind`] when the address is taken or not allowed;
/// [`ServerError::Runtime`] when the runtime cannot start.
pub fn spawn(
    engine: Arc<dyn WorldModel>,
    options: ServerOptions,
    addr: SocketAddr,
) -> Result<RunningServer, ServerError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(addr))
        .map_err(|source| ServerError::Bind { addr, source })?;
    let bound = listener.local_addr()?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("worldloom-model-server".to_owned())
        .spawn(move || {
            let _ = runtime.block_on(serve(listener, engine, options, async move {
                let _ = stop_rx.await;
            }));
        })?;
    Ok(RunningServer {
        addr: bound,
        stop: Some(stop_tx),
        thread: Some(thread),
    })
}

async fn models(State(state): State<Arc<AppState>>) -> Response {
    axum::Json(json!({
        "object": "list",
        "data": [{"id": state.model_id, "object": "model", "created": 0, "owned_by": "worldloom"}],
    }))
    .into_response()
}

/// An error answered in the OpenAI error shape.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    kind: &'static str,
    message: String,
    param: Option<&'static str>,
}

impl ApiError {
    fn invalid(param: &'static str, message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error",
            message: message.into(),
            param: Some(param),
        }
    }

    fn from_engine(error: &EngineError) -> Self {
        let (status, kind) = match error {
            EngineError::InvalidRequest(_) => (StatusCode::BAD_REQUEST, "invalid_request_error"),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "server_error"),
        };
        Self {
            status,
            kind,
            message: error.to_string(),
            param: None,
        }
    }

    fn body(&self) -> Value {
        json!({"error": {"message": self.message, "type": self.kind, "param": self.param, "code": null}})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(self.body())).into_response()
    }
}

/// A parsed chat-completions request.
#[derive(Debug)]
struct ChatRequest {
    messages: Vec<ChatMessage>,
    params: GenerationParams,
    stream: bool,
    include_usage: bool,
}

fn parse_request(
    body: &[u8],
    model_id: &str,
    defaults: &GenerationParams,
) -> Result<ChatRequest, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid("body", format!("the request body is not JSON: {e}")))?;
    let model = value
        .get("model")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::invalid("model", "`model` (a string) is required"))?;
    if model != model_id {
        return Err(ApiError {
            status: StatusCode::NOT_FOUND,
            kind: "invalid_request_error",
            message: format!(
                "The model `{model}` does not exist; this server serves `{model_id}` (see GET /v1/models)."
            ),
            param: Some("model"),
        });
    }
    let raw_messages = value
        .get("messages")
        .and_then(Value::as_array)
        .filter(|m| !m.is_empty())
        .ok_or_else(|| ApiError::invalid("messages", "`messages` must be a non-empty array"))?;
    let mut messages = Vec::with_capacity(raw_messages.len());
    for (i, m) in raw_messages.iter().enumerate() {
        let role = match m.get("role").and_then(Value::as_str) {
            Some("system" | "developer") => ChatRole::System,
            Some("user") => ChatRole::User,
            Some("assistant") => ChatRole::Assistant,
            other => {
                return Err(ApiError::invalid(
                    "messages",
                    format!(
                        "messages[{i}].role {other:?} is not supported (system, developer, user, assistant)"
                    ),
                ));
            }
        };
        let content = match m.get("content") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => {
                let mut text = String::new();
                for (j, part) in parts.iter().enumerate() {
                    match (
                        part.get("type").and_then(Value::as_str),
                        part.get("text").and_then(Value::as_str),
                    ) {
                        (Some("text"), Some(t)) => text.push_str(t),
                        _ => {
                            return Err(ApiError::invalid(
                                "messages",
                                format!("messages[{i}].content[{j}] is not a text part"),
                            ));
                        }
                    }
                }
                text
            }
            Some(_) => {
                return Err(ApiError::invalid(
                    "messages",
                    format!("messages[{i}].content must be a string or a list of text parts"),
                ));
            }
        };
        messages.push(ChatMessage::new(role, content));
    }

    let mut params = defaults.clone();
    let number = |field: &'static str| -> Result<Option<f64>, ApiError> {
        match value.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| ApiError::invalid(field, format!("`{field}` must be a number"))),
        }
    };
    let non_negative = |field: &'static str, x: f64| -> Result<f64, ApiError> {
        if x.is_finite() && x >= 0.0 {
            Ok(x)
        } else {
            Err(ApiError::invalid(
                field,
                format!("`{field}` must be ≥ 0, got {x}"),
            ))
        }
    };
    if let Some(n) = number("max_completion_tokens")?.or(number("max_tokens")?) {
        let n = non_negative("max_tokens", n)?;
        if n < 1.0 {
            return Err(ApiError::invalid(
                "max_tokens",
                "`max_tokens` must be at least 1",
            ));
        }
        params.max_new_tokens = n as usize;
    }
    if let Some(t) = number("temperature")? {
        params.temperature = non_negative("temperature", t)? as f32;
    }
    if let Some(p) = number("top_p")? {
        if !(p > 0.0 && p <= 1.0) {
            return Err(ApiError::invalid(
                "top_p",
                format!("`top_p` must be in (0, 1], got {p}"),
            ));
        }
        params.top_p = p as f32;
    }
    if let Some(k) = number("top_k")? {
        // vLLM uses -1 for "disabled"; Worldloom uses 0.
        params.top_k = if k < 0.0 { 0 } else { k as usize };
    }
    if let Some(s) = number("seed")? {
        params.seed = s as u64;
    }
    match value.get("stop") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => params.stop = vec![s.clone()],
        Some(Value::Array(items)) => {
            params.stop = items
                .iter()
                .map(|s| s.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    ApiError::invalid("stop", "`stop` must be a string or a list of strings")
                })?;
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "stop",
                "`stop` must be a string or a list of strings",
            ));
        }
    }
    if let Some(b) = value
        .get("chat_template_kwargs")
        .and_then(|k| k.get("enable_thinking"))
        .and_then(Value::as_bool)
    {
        params.enable_thinking = b;
    }
    if let Some(b) = value.get("stop_after_observation").and_then(Value::as_bool) {
        params.stop_after_observation = b;
    }
    params.logprobs = value
        .get("logprobs")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let stream = value
        .get("stream")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let include_usage = value
        .get("stream_options")
        .and_then(|o| o.get("include_usage"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok(ChatRequest {
        messages,
        params,
        stream,
        include_usage,
    })
}

fn finish_reason(stop: Option<StopReason>) -> &'static str {
    match stop {
        Some(StopReason::MaxTokens) => "length",
        _ => "stop",
    }
}

fn usage(stats: &GenerationStats) -> Value {
    json!({
        "prompt_tokens": stats.prompt_tokens,
        "completion_tokens": stats.completion_tokens,
        "total_tokens": stats.prompt_tokens + stats.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": stats.prompt_tokens.saturating_sub(stats.prompt_tokens_computed)},
    })
}

fn unix_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Starts the prediction once a queue slot is free; events arrive on the
/// returned channel. The slot is held until the engine's stream ends. When
/// the receiver is dropped (client gone) the prediction is cancelled.
async fn start(
    state: &Arc<AppState>,
    request: PredictRequest,
) -> Result<mpsc::Receiver<EngineEvent>, ApiError> {
    let permit = state.queue.acquire().await.map_err(|_| ApiError {
        status: StatusCode::SERVICE_UNAVAILABLE,
        kind: "server_error",
        message: "the server is shutting down".to_owned(),
        param: None,
    })?;
    // Queue slots are released by the pump thread, which outlives this future.
    permit.forget();
    let prediction = match state.engine.predict(request) {
        Ok(p) => p,
        Err(e) => {
            state.queue.add_permits(1);
            return Err(ApiError::from_engine(&e));
        }
    };
    let (tx, rx) = mpsc::channel(256);
    let pump_state = state.clone();
    tokio::task::spawn_blocking(move || {
        // Forward every event; server shutdown and a client gone cancel the
        // engine, whose `Done` still ends the stream.
        let engine_cancel = prediction.cancel.clone();
        let mut client_gone = false;
        let _ = collect_to_end(prediction, &pump_state.stopping, None, |event| {
            if !client_gone && tx.blocking_send(event.clone()).is_err() {
                client_gone = true;
                engine_cancel.cancel();
            }
        });
        pump_state.queue.add_permits(1);
    });
    Ok(rx)
}

async fn chat_completions(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    let request = match parse_request(&body, &state.model_id, &state.default_params) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let id = format!("chatcmpl-{}", state.next_id.fetch_add(1, Ordering::Relaxed));
    let stream = request.stream;
    let include_usage = request.include_usage;
    let events = match start(
        &state,
        PredictRequest::new(request.messages, request.params),
    )
    .await
    {
        Ok(rx) => rx,
        Err(e) => return e.into_response(),
    };
    if stream {
        stream_response(events, id, state.model_id.clone(), include_usage)
    } else {
        complete_response(events, id, &state.model_id).await
    }
}

async fn complete_response(
    mut events: mpsc::Receiver<EngineEvent>,
    id: String,
    model: &str,
) -> Response {
    let mut reasoning = String::new();
    let mut content = String::new();
    let stats = loop {
        match events.recv().await {
            Some(EngineEvent::Reasoning { text }) => reasoning.push_str(&text),
            Some(EngineEvent::Answer { text }) => content.push_str(&text),
            Some(EngineEvent::Token(_) | EngineEvent::Observation { .. }) => {}
            Some(EngineEvent::Done { stats, .. }) => break stats,
            Some(EngineEvent::Error { error }) => {
                return ApiError::from_engine(&error).into_response();
            }
            None => {
                return ApiError::from_engine(&EngineError::Stopped(
                    "the engine ended the prediction without a result".into(),
                ))
                .into_response();
            }
        }
    };
    let mut message = json!({"role": "assistant", "content": content});
    if !reasoning.is_empty() {
        message["reasoning_content"] = json!(reasoning);
    }
    axum::Json(json!({
        "id": id,
        "object": "chat.completion",
        "created": unix_secs(),
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason(stats.stop_reason)}],
        "usage": usage(&stats),
    }))
    .into_response()
}

/// State of one server-sent-event response.
struct SseState {
    events: mpsc::Receiver<EngineEvent>,
    queue: std::collections::VecDeque<String>,
    finished: bool,
    id: String,
    model: String,
    created: u64,
    include_usage: bool,
}

impl SseState {
    fn chunk(&self, delta: Value, finish: Option<&str>) -> String {
        let value = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        format!("data: {value}\n\n")
    }

    fn handle(&mut self, event: Option<EngineEvent>) {
        match event {
            Some(EngineEvent::Reasoning { text }) => {
                let c = self.chunk(json!({"reasoning_content": text}), None);
                self.queue.push_back(c);
            }
            Some(EngineEvent::Answer { text }) => {
                let c = self.chunk(json!({"content": text}), None);
                self.queue.push_back(c);
            }
            Some(EngineEvent::Token(_) | EngineEvent::Observation { .. }) => {}
            Some(EngineEvent::Done { stats, .. }) => {
                let c = self.chunk(json!({}), Some(finish_reason(stats.stop_reason)));
                self.queue.push_back(c);
                if self.include_usage {
                    let value = json!({
                        "id": self.id, "object": "chat.completion.chunk", "created": self.created,
                        "model": self.model, "choices": [], "usage": usage(&stats),
                    });
                    self.queue.push_back(format!("data: {value}\n\n"));
                }
                self.queue.push_back("data: [DONE]\n\n".to_owned());
                self.finished = true;
            }
            Some(EngineEvent::Error { error }) => {
                self.queue.push_back(format!(
                    "data: {}\n\n",
                    ApiError::from_engine(&error).body()
                ));
                self.queue.push_back("data: [DONE]\n\n".to_owned());
                self.finished = true;
            }
            None => {
                let error =
                    EngineError::Stopped("the engine ended the prediction without a result".into());
                self.queue.push_back(format!(
                    "data: {}\n\n",
                    ApiError::from_engine(&error).body()
                ));
                self.finished = true;
            }
        }
    }
}

fn stream_response(
    events: mpsc::Receiver<EngineEvent>,
    id: String,
    model: String,
    include_usage: bool,
) -> Response {
    let mut state = SseState {
        events,
        queue: std::collections::VecDeque::new(),
        finished: false,
        id,
        model,
        created: unix_secs(),
        include_usage,
    };
    let first = state.chunk(json!({"role": "assistant", "content": ""}), None);
    state.queue.push_back(first);
    let body = futures_util::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(text) = state.queue.pop_front() {
                return Some((Ok::<Bytes, Infallible>(Bytes::from(text)), state));
            }
            if state.finished {
                return None;
            }
            let event = state.events.recv().await;
            state.handle(event);
        }
    });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_fields_map_to_params() {
        let body = br#"{"model": "m", "messages": [{"role": "developer", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}, {"role": "user", "content": "x"}],
            "max_tokens": 7, "temperature": 0, "top_k": -1, "stop": "END", "stream": true, "stream_options": {"include_usage": true},
            "chat_template_kwargs": {"enable_thinking": false}}"#;
        let r = parse_request(body, "m", &GenerationParams::default()).unwrap();
        assert_eq!(
            r.messages,
            vec![
                ChatMessage::new(ChatRole::System, "ab"),
                ChatMessage::new(ChatRole::User, "x")
            ]
        );
        assert_eq!(r.params.max_new_tokens, 7);
        assert_eq!(r.params.temperature, 0.0);
        assert_eq!(r.params.top_k, 0);
        assert_eq!(r.params.top_p, GenerationParams::default().top_p);
        assert_eq!(r.params.stop, vec!["END".to_owned()]);
        assert!(!r.params.enable_thinking);
        assert!(r.stream && r.include_usage);
    }

    #[test]
    fn bad_requests_name_the_field() {
        let e = parse_request(b"{oops", "m", &GenerationParams::default()).unwrap_err();
        assert_eq!((e.status, e.param), (StatusCode::BAD_REQUEST, Some("body")));
        let e = parse_request(
            br#"{"model": "other", "messages": [{"role": "user", "content": "x"}]}"#,
            "m",
            &GenerationParams::default(),
        )
        .unwrap_err();
        assert_eq!(e.status, StatusCode::NOT_FOUND);
        assert!(
            e.message.contains("`other` does not exist"),
            "{}",
            e.message
        );
        let e = parse_request(
            br#"{"model": "m", "messages": [{"role": "tool", "content": "x"}]}"#,
            "m",
            &GenerationParams::default(),
        )
        .unwrap_err();
        assert!(e.message.contains("messages[0].role"), "{}", e.message);
        let e = parse_request(
            br#"{"model": "m", "messages": [{"role": "user", "content": "x"}], "top_p": 2}"#,
            "m",
            &GenerationParams::default(),
        )
        .unwrap_err();
        assert_eq!(e.param, Some("top_p"));
        let e = parse_request(
            br#"{"model": "m", "messages": []}"#,
            "m",
            &GenerationParams::default(),
        )
        .unwrap_err();
        assert_eq!(e.param, Some("messages"));
    }
}
