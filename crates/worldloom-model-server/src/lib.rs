//! An OpenAI-compatible HTTP server for any [`WorldModel`], so the official
//! AgentWorldBench evaluation script and any OpenAI client can drive a
//! Worldloom engine.
//!
//! Endpoints (shapes follow the OpenAI API reference for chat completions and
//! models, and the vLLM/SGLang convention of a separate `reasoning_content`):
//! - `GET /v1/models`: one model, the configured id, with `max_model_len`
//!   (the engine's context, or `null`) and the queueing policy
//!   (`max_concurrent_requests`, `queue`);
//! - `GET /v1/models/{id}`: that model, or a 404 error naming `model`;
//! - `POST /v1/chat/completions`: `stream: false` answers one
//!   `chat.completion` object; `stream: true` answers server-sent events of
//!   `chat.completion.chunk` objects ending with `data: [DONE]`, with
//!   `usage` in a last chunk when `stream_options.include_usage` is set.
//!   Reasoning is sent as `reasoning_content`, the answer as `content`;
//! - `GET /health`: `200 ok`.
//!
//! Unknown routes answer 404 and wrong methods 405, both as OpenAI error
//! objects (`{"error": {"message", "type", "param", "code"}}`); every request
//! writes one line on stderr (`serve-model: METHOD PATH STATUS MSms`).
//!
//! **Queueing.** Requests beyond [`ServerOptions::max_concurrent`] wait in a
//! first-come queue (a fair semaphore) until an earlier prediction ends, so
//! an engine with one thread is never handed two predictions at once: with
//! the default of 1, concurrent requests run one after another. A streaming
//! response starts at once and sends an SSE comment (`: queued`, then
//! `: keep-alive`) every [`ServerOptions::keepalive_ms`] while it waits or
//! the engine is silent, so clients' read timeouts measure the server's
//! liveness, not the queue. (It waits up to one interval for the first
//! event before it starts, so a request refused at once still gets its
//! HTTP status; a refusal after that arrives as an error event in the
//! stream.) A streaming client that disconnects cancels its
//! prediction (or leaves the queue).
//!
//! **Request fields.** Honoured: `model`, `messages` (`system`, `developer`,
//! `user`, `assistant`; `content` as a string or a list of `text` parts),
//! `max_tokens` / `max_completion_tokens`, `temperature`, `top_p`, `top_k`,
//! `min_p`, `presence_penalty`, `frequency_penalty`, `repetition_penalty`
//! (vLLM semantics, over the generated tokens), `seed`, `n` (sequential
//! samples with seeds `seed`, `seed + 1`, …), `stop`, `stop_token_ids`,
//! `skip_special_tokens` (default `true`), `logprobs`, `top_logprobs` (0–20;
//! `choices[].logprobs.content[]` with `token`, `logprob`, `bytes`,
//! `top_logprobs`; engines that cannot score tokens, such as the copy
//! baseline, answer an empty list), `stream`, `stream_options.include_usage`,
//! `chat_template_kwargs.enable_thinking`, `user` (ignored metadata), and
//! Worldloom's `stop_after_observation`. Fields not given keep
//! [`ServerOptions::default_params`]. Any other field is refused with a 400
//! whose `param` names it (`response_format`, `tools`, `tool_choice`,
//! `functions`, …); a `null` value counts as absent, and
//! `response_format: {"type": "text"}` and `tool_choice: "none"` (the
//! defaults) are accepted.
//!
//! **Seeds.** A request without `seed` gets a fresh random seed, so unseeded
//! sampling differs between requests; the seed used is reported in the
//! response's top-level `seed` field (and in every stream chunk).
//!
//! **Context.** When the engine knows its context length and can count
//! prompt tokens ([`WorldModel::context_tokens`],
//! [`WorldModel::count_prompt_tokens`]), a request whose prompt plus
//! `max_tokens` exceeds the context is refused with a 400 worded as vLLM's
//! (`code: "context_length_exceeded"`, `param: "messages"`); without
//! `max_tokens`, generation is bounded by what the context leaves.
//!
//! **The door.** `worldloom-door`'s `check_door`, the same protection as
//! `worldloom serve`: on a loopback
//! address the `Host` header must name that address and port (DNS
//! rebinding pages get 403), a request whose `Origin` is not this server is
//! refused (403), a `POST` must be `Content-Type: application/json` (415;
//! this also stops form-like cross-origin posts), and when
//! [`ServerOptions::api_key`] is set every `/v1/` route needs
//! `Authorization: Bearer KEY` (401, `code: "invalid_api_key"`). Binding a
//! non-loopback address without an API key is refused. Request bodies are
//! bounded by [`body_limit`] (what the context can hold; 413 as an OpenAI
//! error beyond it).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value, json};
use tokio::sync::{Semaphore, mpsc};
use worldloom_core::{ChatMessage, ChatRole};
use worldloom_engine::local::context_length_error;
use worldloom_engine::{
    CancelToken, EngineError, EngineEvent, GenerationParams, GenerationStats, PredictRequest,
    StopReason, Token, WorldModel, collect_to_end,
};

/// Bytes of request body allowed per context token (JSON escaping and
/// message structure included).
pub const BODY_BYTES_PER_TOKEN: usize = 16;
/// Bytes of request body allowed on top of the per-token budget.
pub const BODY_SLACK_BYTES: usize = 1024 * 1024;
/// The smallest body limit, whatever the context.
pub const BODY_FLOOR_BYTES: usize = 4 * 1024 * 1024;
/// The body limit when the engine does not know its context.
pub const BODY_UNKNOWN_CONTEXT_BYTES: usize = 32 * 1024 * 1024;
/// Most choices one request may ask for (`n`).
pub const MAX_CHOICES: usize = 16;
/// Most alternatives per token (`top_logprobs`), as OpenAI allows.
pub const MAX_TOP_LOGPROBS: usize = 20;

/// The largest request body accepted for an engine with `context_tokens` of
/// context, in bytes: `context × 16 + 1 MiB`, at least 4 MiB; 32 MiB when
/// the context is unknown.
pub fn body_limit(context_tokens: Option<usize>) -> usize {
    context_tokens
        .map(|c| {
            c.saturating_mul(BODY_BYTES_PER_TOKEN)
                .saturating_add(BODY_SLACK_BYTES)
        })
        .unwrap_or(BODY_UNKNOWN_CONTEXT_BYTES)
        .max(BODY_FLOOR_BYTES)
}

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
    /// The key clients must send as `Authorization: Bearer KEY` on `/v1/`
    /// routes; `None` asks for none (allowed on loopback addresses only).
    pub api_key: Option<String>,
    /// Largest request body in bytes; `None` uses [`body_limit`] of the
    /// engine's context.
    pub max_body_bytes: Option<usize>,
    /// Interval of the SSE comments a streaming response sends while it
    /// waits in the queue or the engine is silent, in milliseconds.
    pub keepalive_ms: u64,
    /// Write one line per request on stderr.
    pub log_requests: bool,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            model_id: "worldloom".to_owned(),
            max_concurrent: 1,
            default_params: GenerationParams::default(),
            api_key: None,
            max_body_bytes: None,
            keepalive_ms: 10_000,
            log_requests: true,
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
    /// A non-loopback address was asked for without an API key.
    #[error(
        "{0} is reachable from other machines: an API key is required (--api-key or WORLDLOOM_API_KEY)"
    )]
    NeedsApiKey(SocketAddr),
    /// The server's runtime could not start or stopped with an error.
    #[error("server runtime: {0}")]
    Runtime(#[from] std::io::Error),
}

/// Refuses a non-loopback address without a (non-empty) API key.
///
/// # Errors
/// [`ServerError::NeedsApiKey`].
pub fn check_exposure(addr: SocketAddr, options: &ServerOptions) -> Result<(), ServerError> {
    let has_key = options.api_key.as_deref().is_some_and(|k| !k.is_empty());
    if !addr.ip().is_loopback() && !has_key {
        return Err(ServerError::NeedsApiKey(addr));
    }
    Ok(())
}

struct AppState {
    engine: Arc<dyn WorldModel>,
    model_id: String,
    default_params: GenerationParams,
    max_concurrent: usize,
    queue: Semaphore,
    next_id: AtomicU64,
    /// Set when the server shuts down: predictions in flight are cancelled.
    stopping: CancelToken,
    api_key: Option<String>,
    body_limit: usize,
    keepalive: Duration,
    log_requests: bool,
    /// The bound address: its port (and, on loopback, its host) must be
    /// the `Host` header's.
    addr: SocketAddr,
}

/// The routes, ready to serve on `addr` (the address the `Host` and
/// `Origin` checks expect).
pub fn router(engine: Arc<dyn WorldModel>, options: ServerOptions, addr: SocketAddr) -> Router {
    build(engine, options, addr).0
}

fn build(
    engine: Arc<dyn WorldModel>,
    options: ServerOptions,
    addr: SocketAddr,
) -> (Router, Arc<AppState>) {
    let body_limit = options
        .max_body_bytes
        .unwrap_or_else(|| body_limit(engine.context_tokens()));
    let state = Arc::new(AppState {
        engine,
        model_id: options.model_id,
        default_params: options.default_params,
        max_concurrent: options.max_concurrent.max(1),
        queue: Semaphore::new(options.max_concurrent.max(1)),
        next_id: AtomicU64::new(1),
        stopping: CancelToken::new(),
        api_key: options.api_key.filter(|k| !k.is_empty()),
        body_limit,
        keepalive: Duration::from_millis(options.keepalive_ms.max(1)),
        log_requests: options.log_requests,
        addr,
    });
    let router = Router::new()
        .route("/v1/models", get(models))
        .route("/v1/models/{id}", get(model))
        .route("/v1/chat/completions", post(chat_completions))
        .route("/health", get(|| async { "ok" }))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state.clone());
    (router, state)
}

/// Serves on `listener` until `shutdown` completes; then cancels the
/// predictions in flight (their streams end with `finish_reason: "stop"`)
/// and returns once their responses are sent.
///
/// Errors: the listener's I/O errors; `InvalidInput` when the listener is
/// not on a loopback address and no API key is set.
pub async fn serve(
    listener: tokio::net::TcpListener,
    engine: Arc<dyn WorldModel>,
    options: ServerOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let addr = listener.local_addr()?;
    check_exposure(addr, &options)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
    let (router, state) = build(engine, options, addr);
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown.await;
            state.stopping.cancel();
        })
        .await
}

/// A server future running on its own thread and Tokio runtime, stopped
/// (shutdown signalled, thread joined) by [`BackgroundServer::stop`] or on
/// drop. Shared by `serve-model` and `serve-env` for tests and embedding.
pub struct BackgroundServer {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl BackgroundServer {
    /// Runs `serve(listener, shutdown)` on `runtime` in a new thread named
    /// `thread_name`; `shutdown` completes when the server is stopped.
    ///
    /// # Errors
    /// The thread cannot be spawned.
    pub fn run<F, Fut>(
        runtime: tokio::runtime::Runtime,
        listener: tokio::net::TcpListener,
        thread_name: &str,
        serve: F,
    ) -> std::io::Result<Self>
    where
        F: FnOnce(
                tokio::net::TcpListener,
                std::pin::Pin<Box<dyn Future<Output = ()> + Send>>,
            ) -> Fut
            + Send
            + 'static,
        Fut: Future,
    {
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(thread_name.to_owned())
            .spawn(move || {
                let shutdown = Box::pin(async move {
                    let _ = stop_rx.await;
                });
                let _ = runtime.block_on(serve(listener, shutdown));
            })?;
        Ok(Self {
            stop: Some(stop_tx),
            thread: Some(thread),
        })
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

impl Drop for BackgroundServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// `serve-model` running on its own thread and runtime (for tests and
/// embedding). Dropping it stops the server.
pub struct RunningServer {
    /// The bound address (port resolved when 0 was asked for).
    pub addr: SocketAddr,
    server: BackgroundServer,
}

impl RunningServer {
    /// Base URL of the API, e.g. `http://127.0.0.1:8000/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Stops the server and waits for its thread.
    pub fn stop(self) {
        self.server.stop();
    }
}

/// Binds `addr` and serves on a new thread with its own runtime.
///
/// Errors: [`ServerError::NeedsApiKey`] for a non-loopback address without
/// an API key; [`ServerError::Bind`] when the address is taken or not
/// allowed; [`ServerError::Runtime`] when the runtime cannot start.
pub fn spawn(
    engine: Arc<dyn WorldModel>,
    options: ServerOptions,
    addr: SocketAddr,
) -> Result<RunningServer, ServerError> {
    check_exposure(addr, &options)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(addr))
        .map_err(|source| ServerError::Bind { addr, source })?;
    let bound = listener.local_addr()?;
    let server = BackgroundServer::run(
        runtime,
        listener,
        "worldloom-model-server",
        move |listener, shutdown| serve(listener, engine, options, shutdown),
    )?;
    Ok(RunningServer {
        addr: bound,
        server,
    })
}

/// Why a request is refused before it reaches a route, if it is.
fn door(state: &AppState, method: &Method, path: &str, headers: &HeaderMap) -> Option<ApiError> {
    worldloom_door::check_door(
        state.addr,
        state.api_key.as_deref(),
        path.starts_with("/v1/"),
        method,
        headers,
    )
    .map(|refusal| ApiError {
        status: refusal.status,
        kind: "invalid_request_error",
        message: refusal.message,
        param: None,
        code: refusal.code,
    })
}

/// Host / Origin / API key / content-type checks for every request, and
/// one stderr line per request.
async fn guard(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = match door(&state, &method, &path, request.headers()) {
        Some(refusal) => refusal.into_response(),
        None => next.run(request).await,
    };
    if state.log_requests {
        eprintln!(
            "serve-model: {method} {path} {} {}ms",
            response.status().as_u16(),
            started.elapsed().as_millis()
        );
    }
    response
}

async fn not_found(method: Method, uri: axum::http::Uri) -> Response {
    ApiError {
        status: StatusCode::NOT_FOUND,
        kind: "invalid_request_error",
        message: format!(
            "unknown route {method} {}: this server answers GET /v1/models, GET /v1/models/{{id}}, POST /v1/chat/completions and GET /health",
            uri.path()
        ),
        param: None,
        code: Some("not_found"),
    }
    .into_response()
}

async fn method_not_allowed(method: Method, uri: axum::http::Uri) -> Response {
    ApiError {
        status: StatusCode::METHOD_NOT_ALLOWED,
        kind: "invalid_request_error",
        message: format!("{} does not accept {method}", uri.path()),
        param: None,
        code: Some("method_not_allowed"),
    }
    .into_response()
}

fn model_object(state: &AppState) -> Value {
    json!({
        "id": state.model_id,
        "object": "model",
        "created": 0,
        "owned_by": "worldloom",
        "max_model_len": state.engine.context_tokens(),
        "max_concurrent_requests": state.max_concurrent,
        "queue": "requests beyond max_concurrent_requests wait first-come and run one after another",
    })
}

async fn models(State(state): State<Arc<AppState>>) -> Response {
    axum::Json(json!({"object": "list", "data": [model_object(&state)]})).into_response()
}

async fn model(State(state): State<Arc<AppState>>, UrlPath(id): UrlPath<String>) -> Response {
    if id == state.model_id {
        axum::Json(model_object(&state)).into_response()
    } else {
        ApiError {
            status: StatusCode::NOT_FOUND,
            kind: "invalid_request_error",
            message: format!(
                "The model `{id}` does not exist; this server serves `{}`.",
                state.model_id
            ),
            param: Some("model".to_owned()),
            code: Some("model_not_found"),
        }
        .into_response()
    }
}

/// An error answered in the OpenAI error shape.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    kind: &'static str,
    message: String,
    param: Option<String>,
    code: Option<&'static str>,
}

impl ApiError {
    fn invalid(param: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error",
            message: message.into(),
            param: Some(param.into()),
            code: None,
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
            code: None,
        }
    }

    fn body(&self) -> Value {
        json!({"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}})
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
    /// Whether `max_tokens` / `max_completion_tokens` was given.
    max_tokens_given: bool,
    /// The request's seed, if it gave one.
    seed: Option<u64>,
    /// Choices asked for (`n`).
    n: usize,
    stream: bool,
    include_usage: bool,
}

/// Request fields this server honours (or accepts as metadata).
const KNOWN_FIELDS: &[&str] = &[
    "model",
    "messages",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "presence_penalty",
    "frequency_penalty",
    "repetition_penalty",
    "seed",
    "n",
    "stop",
    "stop_token_ids",
    "skip_special_tokens",
    "logprobs",
    "top_logprobs",
    "stream",
    "stream_options",
    "chat_template_kwargs",
    "stop_after_observation",
    "user",
];

/// Refuses fields this server would otherwise ignore (unknown ones, and
/// OpenAI features it does not have), naming the field.
fn refuse_unsupported(object: &Map<String, Value>) -> Result<(), ApiError> {
    for (key, value) in object {
        if KNOWN_FIELDS.contains(&key.as_str()) || value.is_null() {
            continue;
        }
        let default_value = match key.as_str() {
            "response_format" => {
                value.get("type").and_then(Value::as_str) == Some("text")
                    && value.as_object().is_some_and(|o| o.len() == 1)
            }
            "tool_choice" => value.as_str() == Some("none"),
            _ => false,
        };
        if default_value {
            continue;
        }
        return Err(ApiError::invalid(
            key.clone(),
            format!(
                "`{key}` is not supported by this server (see docs/eval.md for the fields it honours)"
            ),
        ));
    }
    for (outer, allowed) in [
        ("stream_options", "include_usage"),
        ("chat_template_kwargs", "enable_thinking"),
    ] {
        match object.get(outer) {
            None | Some(Value::Null) => {}
            Some(Value::Object(inner)) => {
                if let Some(key) = inner.keys().find(|k| k.as_str() != allowed) {
                    return Err(ApiError::invalid(
                        format!("{outer}.{key}"),
                        format!(
                            "`{outer}.{key}` is not supported by this server (only `{outer}.{allowed}`)"
                        ),
                    ));
                }
            }
            Some(_) => {
                return Err(ApiError::invalid(
                    outer,
                    format!("`{outer}` must be an object"),
                ));
            }
        }
    }
    Ok(())
}

fn parse_request(
    body: &[u8],
    model_id: &str,
    defaults: &GenerationParams,
) -> Result<ChatRequest, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid("body", format!("the request body is not JSON: {e}")))?;
    let object = value
        .as_object()
        .ok_or_else(|| ApiError::invalid("body", "the request body must be a JSON object"))?;
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
            param: Some("model".to_owned()),
            code: Some("model_not_found"),
        });
    }
    refuse_unsupported(object)?;
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
    let boolean = |field: &'static str| -> Result<Option<bool>, ApiError> {
        match value.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_bool().map(Some).ok_or_else(|| {
                ApiError::invalid(field, format!("`{field}` must be true or false"))
            }),
        }
    };
    let in_range = |field: &'static str, x: f64, lo: f64, hi: f64| -> Result<f64, ApiError> {
        if x.is_finite() && x >= lo && x <= hi {
            Ok(x)
        } else {
            Err(ApiError::invalid(
                field,
                format!("`{field}` must be in [{lo}, {hi}], got {x}"),
            ))
        }
    };
    let mut max_tokens_given = false;
    if let Some(n) = number("max_completion_tokens")?.or(number("max_tokens")?) {
        let n = in_range("max_tokens", n, 0.0, f64::MAX)?;
        if n < 1.0 {
            return Err(ApiError::invalid(
                "max_tokens",
                "`max_tokens` must be at least 1",
            ));
        }
        params.max_new_tokens = n as usize;
        max_tokens_given = true;
    }
    if let Some(t) = number("temperature")? {
        params.temperature = in_range("temperature", t, 0.0, f64::MAX)? as f32;
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
    if let Some(p) = number("min_p")? {
        params.min_p = in_range("min_p", p, 0.0, 1.0)? as f32;
    }
    if let Some(p) = number("presence_penalty")? {
        params.presence_penalty = in_range("presence_penalty", p, -2.0, 2.0)? as f32;
    }
    if let Some(p) = number("frequency_penalty")? {
        params.frequency_penalty = in_range("frequency_penalty", p, -2.0, 2.0)? as f32;
    }
    if let Some(p) = number("repetition_penalty")? {
        if !(p.is_finite() && p > 0.0) {
            return Err(ApiError::invalid(
                "repetition_penalty",
                format!("`repetition_penalty` must be > 0, got {p}"),
            ));
        }
        params.repetition_penalty = p as f32;
    }
    let seed = match value.get("seed") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .or_else(|| v.as_i64().map(|x| x as u64))
                .ok_or_else(|| ApiError::invalid("seed", "`seed` must be an integer"))?,
        ),
    };
    let n = match number("n")? {
        None => 1,
        Some(n) if n.fract() == 0.0 && (1.0..=MAX_CHOICES as f64).contains(&n) => n as usize,
        Some(n) => {
            return Err(ApiError::invalid(
                "n",
                format!("`n` must be an integer from 1 to {MAX_CHOICES}, got {n}"),
            ));
        }
    };
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
    match value.get("stop_token_ids") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            params.stop_token_ids = items
                .iter()
                .map(|v| v.as_u64().and_then(|x| u32::try_from(x).ok()))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    ApiError::invalid(
                        "stop_token_ids",
                        "`stop_token_ids` must be a list of token ids",
                    )
                })?;
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "stop_token_ids",
                "`stop_token_ids` must be a list of token ids",
            ));
        }
    }
    if let Some(b) = boolean("skip_special_tokens")? {
        params.skip_special_tokens = b;
    }
    if let Some(b) = value
        .get("chat_template_kwargs")
        .and_then(|k| k.get("enable_thinking"))
    {
        params.enable_thinking = b.as_bool().ok_or_else(|| {
            ApiError::invalid(
                "chat_template_kwargs.enable_thinking",
                "`chat_template_kwargs.enable_thinking` must be true or false",
            )
        })?;
    }
    if let Some(b) = boolean("stop_after_observation")? {
        params.stop_after_observation = b;
    }
    params.logprobs = boolean("logprobs")?.unwrap_or(false);
    params.top_logprobs = match number("top_logprobs")? {
        None => 0,
        Some(k) if k.fract() == 0.0 && (0.0..=MAX_TOP_LOGPROBS as f64).contains(&k) => {
            if !params.logprobs && k > 0.0 {
                return Err(ApiError::invalid(
                    "top_logprobs",
                    "`top_logprobs` needs `logprobs: true`",
                ));
            }
            k as usize
        }
        Some(k) => {
            return Err(ApiError::invalid(
                "top_logprobs",
                format!("`top_logprobs` must be an integer from 0 to {MAX_TOP_LOGPROBS}, got {k}"),
            ));
        }
    };
    let stream = boolean("stream")?.unwrap_or(false);
    let include_usage = value
        .get("stream_options")
        .and_then(|o| o.get("include_usage"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok(ChatRequest {
        messages,
        params,
        max_tokens_given,
        seed,
        n,
        stream,
        include_usage,
    })
}

/// A fresh seed for a request without one (per-process random hashing keys,
/// the clock and a counter; not for cryptography).
fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.finish()
}

fn finish_reason(stop: Option<StopReason>) -> &'static str {
    match stop {
        Some(StopReason::MaxTokens) => "length",
        _ => "stop",
    }
}

/// Usage of all choices: the prompt once, the completions summed.
fn usage(stats: &[GenerationStats]) -> Value {
    let prompt = stats.first().map(|s| s.prompt_tokens).unwrap_or(0);
    let computed = stats.first().map(|s| s.prompt_tokens_computed).unwrap_or(0);
    let completion: usize = stats.iter().map(|s| s.completion_tokens).sum();
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": prompt.saturating_sub(computed)},
    })
}

fn unix_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The OpenAI `logprobs.content[]` entry of a token, or `None` when the
/// engine did not score it.
fn logprob_entry(token: &Token) -> Option<Value> {
    let logprob = token.logprob?;
    let top: Vec<Value> = token
        .top
        .iter()
        .map(|t| json!({"token": t.text, "logprob": t.logprob, "bytes": t.text.as_bytes()}))
        .collect();
    Some(json!({
        "token": token.text,
        "logprob": logprob,
        "bytes": token.text.as_bytes(),
        "top_logprobs": top,
    }))
}

/// Refuses a request longer than the engine's context (vLLM's rule and
/// wording); without `max_tokens`, bounds generation by what the context
/// leaves.
fn check_context(state: &AppState, request: &mut ChatRequest) -> Result<(), ApiError> {
    let Some(context) = state.engine.context_tokens() else {
        return Ok(());
    };
    let Some(counted) = state
        .engine
        .count_prompt_tokens(&request.messages, request.params.enable_thinking)
    else {
        return Ok(());
    };
    let prompt = counted.map_err(|e| ApiError::from_engine(&e))?;
    let asked = request.params.max_new_tokens;
    let refuse = if request.max_tokens_given {
        prompt + asked > context
    } else {
        prompt >= context
    };
    if refuse {
        let EngineError::InvalidRequest(message) = context_length_error(context, prompt, asked)
        else {
            unreachable!("context_length_error is an InvalidRequest");
        };
        return Err(ApiError {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error",
            message,
            param: Some("messages".to_owned()),
            code: Some("context_length_exceeded"),
        });
    }
    if !request.max_tokens_given {
        request.params.max_new_tokens = asked.min(context - prompt);
    }
    Ok(())
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
        code: None,
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

/// What the choices' driver reports: an event of choice `index`, or a
/// refusal before a choice started.
enum ChoiceEvent {
    Event(usize, EngineEvent),
    Refused(ApiError),
}

/// Runs the `n` choices one after another (seeds `seed`, `seed + 1`, …),
/// each queued like any request; stops when the receiver is dropped or a
/// choice fails.
fn drive(state: Arc<AppState>, request: ChatRequest, seed: u64) -> mpsc::Receiver<ChoiceEvent> {
    let (tx, rx) = mpsc::channel(256);
    tokio::spawn(async move {
        for index in 0..request.n {
            let mut params = request.params.clone();
            params.seed = seed.wrapping_add(index as u64);
            let predict = PredictRequest::new(request.messages.clone(), params);
            let started = tokio::select! {
                started = start(&state, predict) => started,
                () = tx.closed() => return,
            };
            let mut events = match started {
                Ok(events) => events,
                Err(e) => {
                    let _ = tx.send(ChoiceEvent::Refused(e)).await;
                    return;
                }
            };
            while let Some(event) = events.recv().await {
                let failed = matches!(event, EngineEvent::Error { .. });
                if tx.send(ChoiceEvent::Event(index, event)).await.is_err() || failed {
                    return;
                }
            }
        }
    });
    rx
}

async fn chat_completions(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let too_large = || ApiError {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        kind: "invalid_request_error",
        message: format!(
            "the request body exceeds {} bytes (what this model's context can hold)",
            state.body_limit
        ),
        param: None,
        code: Some("request_too_large"),
    };
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > state.body_limit as u64) {
        return too_large().into_response();
    }
    let body = match axum::body::to_bytes(request.into_body(), state.body_limit).await {
        Ok(body) => body,
        Err(_) => return too_large().into_response(),
    };
    let mut request = match parse_request(&body, &state.model_id, &state.default_params) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    // Rendering and tokenizing a long chat takes a while: off the runtime.
    let checking = state.clone();
    let checked = tokio::task::spawn_blocking(move || {
        let result = check_context(&checking, &mut request);
        (request, result)
    })
    .await;
    let request = match checked {
        Ok((request, Ok(()))) => request,
        Ok((_, Err(e))) => return e.into_response(),
        Err(e) => {
            return ApiError::from_engine(&EngineError::Model(format!(
                "counting the prompt's tokens failed: {e}"
            )))
            .into_response();
        }
    };
    let id = format!("chatcmpl-{}", state.next_id.fetch_add(1, Ordering::Relaxed));
    let seed = request.seed.unwrap_or_else(fresh_seed);
    let head = Head {
        id,
        model: state.model_id.clone(),
        created: unix_secs(),
        seed,
        n: request.n,
        logprobs: request.params.logprobs,
    };
    let stream = request.stream;
    let include_usage = request.include_usage;
    let mut events = drive(state.clone(), request, seed);
    if stream {
        // Wait up to one keep-alive interval for the first event, so a
        // request refused at once (by the engine, on an idle server) gets
        // its HTTP status; a request that waits longer (queued, or a long
        // prefill) starts its stream and reports a later refusal in it.
        let first = match tokio::time::timeout(state.keepalive, events.recv()).await {
            Ok(Some(ChoiceEvent::Refused(e))) => return e.into_response(),
            Ok(Some(ChoiceEvent::Event(_, EngineEvent::Error { error }))) => {
                return ApiError::from_engine(&error).into_response();
            }
            Ok(first) => Some(first),
            Err(_) => None,
        };
        stream_response(events, first, head, include_usage, state.keepalive)
    } else {
        complete_response(events, head).await
    }
}

/// What every response object of a request repeats.
struct Head {
    id: String,
    model: String,
    created: u64,
    seed: u64,
    n: usize,
    logprobs: bool,
}

/// One choice of a non-streaming answer, as it accumulates.
#[derive(Default)]
struct Choice {
    reasoning: String,
    content: String,
    logprobs: Vec<Value>,
    stats: Option<GenerationStats>,
}

async fn complete_response(mut events: mpsc::Receiver<ChoiceEvent>, head: Head) -> Response {
    let mut choices: Vec<Choice> = (0..head.n).map(|_| Choice::default()).collect();
    while let Some(event) = events.recv().await {
        let (index, event) = match event {
            ChoiceEvent::Refused(e) => return e.into_response(),
            ChoiceEvent::Event(index, event) => (index, event),
        };
        let choice = &mut choices[index];
        match event {
            EngineEvent::Reasoning { text } => choice.reasoning.push_str(&text),
            EngineEvent::Answer { text } => choice.content.push_str(&text),
            EngineEvent::Token(token) => choice.logprobs.extend(logprob_entry(&token)),
            EngineEvent::Observation { .. } => {}
            EngineEvent::Done { stats, .. } => choice.stats = Some(stats),
            EngineEvent::Error { error } => {
                return ApiError::from_engine(&error).into_response();
            }
        }
    }
    if choices.iter().any(|c| c.stats.is_none()) {
        return ApiError::from_engine(&EngineError::Stopped(
            "the engine ended the prediction without a result".into(),
        ))
        .into_response();
    }
    let stats: Vec<GenerationStats> = choices.iter().filter_map(|c| c.stats.clone()).collect();
    let choices: Vec<Value> = choices
        .into_iter()
        .enumerate()
        .map(|(index, c)| {
            let mut message = json!({"role": "assistant", "content": c.content});
            if !c.reasoning.is_empty() {
                message["reasoning_content"] = json!(c.reasoning);
            }
            let logprobs = if head.logprobs {
                json!({"content": c.logprobs})
            } else {
                Value::Null
            };
            json!({
                "index": index,
                "message": message,
                "logprobs": logprobs,
                "finish_reason": finish_reason(c.stats.and_then(|s| s.stop_reason)),
            })
        })
        .collect();
    axum::Json(json!({
        "id": head.id,
        "object": "chat.completion",
        "created": head.created,
        "model": head.model,
        "seed": head.seed,
        "choices": choices,
        "usage": usage(&stats),
    }))
    .into_response()
}

/// State of one server-sent-event response.
struct SseState {
    events: mpsc::Receiver<ChoiceEvent>,
    queue: std::collections::VecDeque<String>,
    finished: bool,
    head: Head,
    include_usage: bool,
    keepalive: Duration,
    /// Whether any event arrived yet (the first comment says `queued`).
    started: bool,
    /// Scored tokens not yet sent, per choice.
    pending_logprobs: Vec<Vec<Value>>,
    stats: Vec<GenerationStats>,
}

impl SseState {
    fn chunk(&mut self, index: usize, delta: Value, finish: Option<&str>) -> String {
        let logprobs = if self.head.logprobs {
            json!({"content": std::mem::take(&mut self.pending_logprobs[index])})
        } else {
            Value::Null
        };
        let value = json!({
            "id": self.head.id,
            "object": "chat.completion.chunk",
            "created": self.head.created,
            "model": self.head.model,
            "seed": self.head.seed,
            "choices": [{"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": finish}],
        });
        format!("data: {value}\n\n")
    }

    fn error(&mut self, error: &ApiError) {
        self.queue.push_back(format!("data: {}\n\n", error.body()));
        self.queue.push_back("data: [DONE]\n\n".to_owned());
        self.finished = true;
    }

    fn handle(&mut self, event: Option<ChoiceEvent>) {
        self.started = true;
        let (index, event) = match event {
            Some(ChoiceEvent::Event(index, event)) => (index, event),
            Some(ChoiceEvent::Refused(e)) => return self.error(&e),
            None => {
                if self.stats.len() == self.head.n {
                    if self.include_usage {
                        let value = json!({
                            "id": self.head.id, "object": "chat.completion.chunk",
                            "created": self.head.created, "model": self.head.model,
                            "seed": self.head.seed, "choices": [], "usage": usage(&self.stats),
                        });
                        self.queue.push_back(format!("data: {value}\n\n"));
                    }
                    self.queue.push_back("data: [DONE]\n\n".to_owned());
                    self.finished = true;
                } else {
                    let error = EngineError::Stopped(
                        "the engine ended the prediction without a result".into(),
                    );
                    self.queue.push_back(format!(
                        "data: {}\n\n",
                        ApiError::from_engine(&error).body()
                    ));
                    self.finished = true;
                }
                return;
            }
        };
        match event {
            EngineEvent::Reasoning { text } => {
                let c = self.chunk(index, json!({"reasoning_content": text}), None);
                self.queue.push_back(c);
            }
            EngineEvent::Answer { text } => {
                let c = self.chunk(index, json!({"content": text}), None);
                self.queue.push_back(c);
            }
            EngineEvent::Token(token) => {
                self.pending_logprobs[index].extend(logprob_entry(&token));
            }
            EngineEvent::Observation { .. } => {}
            EngineEvent::Done { stats, .. } => {
                let c = self.chunk(index, json!({}), Some(finish_reason(stats.stop_reason)));
                self.queue.push_back(c);
                self.stats.push(stats);
                if index + 1 < self.head.n {
                    let c =
                        self.chunk(index + 1, json!({"role": "assistant", "content": ""}), None);
                    self.queue.push_back(c);
                }
            }
            EngineEvent::Error { error } => self.error(&ApiError::from_engine(&error)),
        }
    }
}

/// The SSE response; `first` is an event already received (`Some(None)`:
/// the channel already closed).
fn stream_response(
    events: mpsc::Receiver<ChoiceEvent>,
    first: Option<Option<ChoiceEvent>>,
    head: Head,
    include_usage: bool,
    keepalive: Duration,
) -> Response {
    let n = head.n;
    let mut state = SseState {
        events,
        queue: std::collections::VecDeque::new(),
        finished: false,
        head,
        include_usage,
        keepalive,
        started: false,
        pending_logprobs: vec![Vec::new(); n],
        stats: Vec::new(),
    };
    let role = state.chunk(0, json!({"role": "assistant", "content": ""}), None);
    state.queue.push_back(role);
    if let Some(first) = first {
        state.handle(first);
    }
    let body = futures_util::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(text) = state.queue.pop_front() {
                return Some((Ok::<Bytes, Infallible>(Bytes::from(text)), state));
            }
            if state.finished {
                return None;
            }
            match tokio::time::timeout(state.keepalive, state.events.recv()).await {
                Ok(event) => state.handle(event),
                Err(_) => {
                    let comment = if state.started {
                        ": keep-alive\n\n"
                    } else {
                        ": queued\n\n"
                    };
                    state.queue.push_back(comment.to_owned());
                }
            }
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
        assert_eq!(
            (e.status, e.param.as_deref()),
            (StatusCode::BAD_REQUEST, Some("body"))
        );
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
        assert_eq!(e.param.as_deref(), Some("top_p"));
        let e = parse_request(
            br#"{"model": "m", "messages": []}"#,
            "m",
            &GenerationParams::default(),
        )
        .unwrap_err();
        assert_eq!(e.param.as_deref(), Some("messages"));
    }

    fn refusal(body: &str) -> ApiError {
        parse_request(body.as_bytes(), "m", &GenerationParams::default()).unwrap_err()
    }

    #[test]
    fn unsupported_fields_are_refused_by_name() {
        let chat = r#""model": "m", "messages": [{"role": "user", "content": "x"}]"#;
        for (extra, param) in [
            (
                r#""response_format": {"type": "json_object"}"#,
                "response_format",
            ),
            (r#""tools": [{"type": "function"}]"#, "tools"),
            (r#""tool_choice": "auto""#, "tool_choice"),
            (r#""functions": []"#, "functions"),
            (r#""frobnicate": 1"#, "frobnicate"),
            (
                r#""stream_options": {"continuous_usage_stats": true}"#,
                "stream_options.continuous_usage_stats",
            ),
            (
                r#""chat_template_kwargs": {"foo": 1}"#,
                "chat_template_kwargs.foo",
            ),
            (r#""top_logprobs": 3"#, "top_logprobs"),
            (r#""logprobs": true, "top_logprobs": 21"#, "top_logprobs"),
            (r#""n": 0"#, "n"),
            (r#""min_p": 1.5"#, "min_p"),
            (r#""presence_penalty": 3"#, "presence_penalty"),
            (r#""repetition_penalty": 0"#, "repetition_penalty"),
            (r#""stop_token_ids": ["a"]"#, "stop_token_ids"),
        ] {
            let e = refusal(&format!("{{{chat}, {extra}}}"));
            assert_eq!(
                (e.status, e.param.as_deref()),
                (StatusCode::BAD_REQUEST, Some(param)),
                "{extra}: {}",
                e.message
            );
        }
        // Nulls and the defaults of unsupported features pass.
        let ok = format!(
            r#"{{{chat}, "tools": null, "response_format": {{"type": "text"}}, "tool_choice": "none", "user": "u"}}"#
        );
        assert!(parse_request(ok.as_bytes(), "m", &GenerationParams::default()).is_ok());
    }

    #[test]
    fn sampling_fields_map_to_params() {
        let body = br#"{"model": "m", "messages": [{"role": "user", "content": "x"}], "n": 3, "seed": 9,
            "logprobs": true, "top_logprobs": 5, "min_p": 0.1, "presence_penalty": 0.5, "frequency_penalty": -0.5,
            "repetition_penalty": 1.2, "stop_token_ids": [7, 8], "skip_special_tokens": false}"#;
        let r = parse_request(body, "m", &GenerationParams::default()).unwrap();
        assert_eq!((r.n, r.seed, r.max_tokens_given), (3, Some(9), false));
        let p = &r.params;
        assert!(p.logprobs);
        assert_eq!(p.top_logprobs, 5);
        assert_eq!(
            (
                p.min_p,
                p.presence_penalty,
                p.frequency_penalty,
                p.repetition_penalty
            ),
            (0.1, 0.5, -0.5, 1.2)
        );
        assert_eq!(p.stop_token_ids, vec![7, 8]);
        assert!(!p.skip_special_tokens);
        let d = parse_request(
            br#"{"model": "m", "messages": [{"role": "user", "content": "x"}]}"#,
            "m",
            &GenerationParams::default(),
        )
        .unwrap();
        assert!(d.params.skip_special_tokens, "on by default, as in vLLM");
        assert_eq!((d.n, d.seed), (1, None));
        assert_ne!(fresh_seed(), fresh_seed());
    }

    #[test]
    fn body_limit_follows_the_context() {
        assert_eq!(body_limit(Some(262_144)), 262_144 * 16 + (1 << 20));
        assert_eq!(body_limit(Some(10)), BODY_FLOOR_BYTES);
        assert_eq!(body_limit(None), BODY_UNKNOWN_CONTEXT_BYTES);
    }
}
