//! A [`WorldModel`] backed by an OpenAI-compatible chat-completions endpoint
//! (vLLM, SGLang, llama.cpp server, Ollama, hosted APIs).
//!
//! Protocol: `POST {base}/chat/completions` as in the OpenAI API reference,
//! with `stream: true` answered as server-sent events (one `data: {chunk}`
//! per event, `data: [DONE]` at the end; WHATWG HTML "Server-sent events"
//! for the line format), or `stream: false` answered with one JSON body.
//! `GET {base}/models` lists the served model names.
//!
//! Reasoning arrives in one of three ways and all become
//! [`EngineEvent::Reasoning`]:
//! - a `reasoning_content` field in the delta/message (vLLM and SGLang with a
//!   reasoning parser, DeepSeek API);
//! - a `reasoning` field (newer vLLM, Ollama, OpenRouter);
//! - inline `<think>` … `</think>` in `content` (servers without a reasoning
//!   parser). Qwen3 chat templates put the opening `<think>` in the prompt,
//!   so the answer may hold only the closing tag; see [`ThinkSplitter`].
//!
//! Networking runs on a small tokio runtime owned by the engine; events reach
//! the caller over the [`PredictionStream`] channel. Cancelling drops the
//! HTTP response at once, which closes the connection (the server sees the
//! client go away and can stop generating).

use std::fmt;
use std::sync::mpsc::{Sender, channel};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};
use worldloom_core::ChatRole;

use crate::world_model::{
    CancelToken, EngineError, EngineEvent, GenerationParams, GenerationStats, PredictRequest,
    PredictionStream, StopReason, WorldModel,
};

/// The tag that closes a predicted observation (AgentWorldBench output format).
const OBSERVATION_CLOSE: &str = "</predicted_observation>";
/// The tag that opens a predicted observation.
const OBSERVATION_OPEN: &str = "<predicted_observation>";
const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";
/// The longest `Retry-After` wait honoured, in milliseconds.
const MAX_RETRY_AFTER_MS: u64 = 120_000;
/// How often the cancellation flag is polled, in milliseconds.
const CANCEL_POLL_MS: u64 = 5;
/// Characters of a malformed line or error body quoted in error messages.
const QUOTE_CHARS: usize = 200;

/// Settings of an [`OpenAiEngine`].
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiConfig {
    /// Base URL of the API, e.g. `http://127.0.0.1:8000/v1`. A URL without a
    /// path gets `/v1` appended; any other path is used as given.
    pub base_url: String,
    /// The model name sent in requests (must be listed by `/v1/models` for
    /// [`OpenAiEngine::check_model`] to pass).
    pub model: String,
    /// Name of the environment variable that holds the API key, sent as
    /// `Authorization: Bearer …`. `None` sends no key. The key itself is
    /// never stored in this struct, written to disk or logged.
    pub api_key_env: Option<String>,
    /// Use server-sent-event streaming (`stream: true`).
    pub stream: bool,
    /// Limit on establishing the TCP (and TLS) connection, in milliseconds.
    pub connect_timeout_ms: u64,
    /// Limit on waiting for the response headers and then for each further
    /// piece of the body, in milliseconds (an idle timeout, not a total one).
    pub read_timeout_ms: u64,
    /// Retries after a 429 or 5xx answer (so at most `max_retries + 1`
    /// attempts). Connection failures and timeouts are not retried.
    pub max_retries: u32,
    /// Wait before the first retry, in milliseconds; doubled each retry.
    /// A `Retry-After` header (seconds) replaces it.
    pub initial_backoff_ms: u64,
    /// Cap on the exponential backoff, in milliseconds.
    pub max_backoff_ms: u64,
    /// Send the non-standard sampling fields vLLM and SGLang accept
    /// (`top_k`, `chat_template_kwargs.enable_thinking`). Turn off for
    /// endpoints that reject unknown fields.
    pub send_extensions: bool,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        Self {
            base_url: "http://127.0.0.1:8000/v1".to_owned(),
            model: String::new(),
            api_key_env: None,
            stream: true,
            connect_timeout_ms: 10_000,
            read_timeout_ms: 600_000,
            max_retries: 4,
            initial_backoff_ms: 500,
            max_backoff_ms: 30_000,
            send_extensions: true,
        }
    }
}

/// An API key read from the environment; its `Debug` never shows it.
#[derive(Clone)]
struct ApiKey(String);

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// An OpenAI-compatible chat-completions endpoint as a [`WorldModel`].
///
/// `predict` returns at once; the request runs on the engine's own tokio
/// runtime (two worker threads), so any number of predictions may run
/// concurrently. Dropping the engine stops its runtime.
pub struct OpenAiEngine {
    config: OpenAiConfig,
    api_key: Option<ApiKey>,
    api_base: String,
    http: reqwest::Client,
    runtime: Option<tokio::runtime::Runtime>,
}

impl fmt::Debug for OpenAiEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiEngine")
            .field("config", &self.config)
            .field("api_key", &self.api_key)
            .field("api_base", &self.api_base)
            .finish_non_exhaustive()
    }
}

impl Drop for OpenAiEngine {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            // Never blocks, so dropping the engine inside async code is safe.
            runtime.shutdown_background();
        }
    }
}

/// Normalises a base URL: trailing `/` removed, `/v1` added when the URL has
/// no path.
///
/// Errors: [`EngineError::Setup`] when the URL does not parse or is not
/// `http`/`https`.
pub fn normalize_base_url(base_url: &str) -> Result<String, EngineError> {
    let parsed = reqwest::Url::parse(base_url.trim())
        .map_err(|e| EngineError::Setup(format!("invalid base URL `{base_url}`: {e}")))?;
    if parsed.scheme() != "http" && parsed.scheme() != "https" {
        return Err(EngineError::Setup(format!(
            "invalid base URL `{base_url}`: scheme must be http or https"
        )));
    }
    let trimmed = base_url.trim().trim_end_matches('/').to_owned();
    if parsed.path() == "/" || parsed.path().is_empty() {
        Ok(format!("{trimmed}/v1"))
    } else {
        Ok(trimmed)
    }
}

impl OpenAiEngine {
    /// Builds the engine: reads the API key from `config.api_key_env`, makes
    /// the HTTP client and the runtime. Contacts no server (see
    /// [`OpenAiEngine::check_model`]).
    ///
    /// Errors: [`EngineError::Setup`] for an invalid base URL, an empty model
    /// name, a named but unset key variable, or a client that cannot be built.
    pub fn new(config: OpenAiConfig) -> Result<Self, EngineError> {
        let api_base = normalize_base_url(&config.base_url)?;
        if config.model.trim().is_empty() {
            return Err(EngineError::Setup("no model name given".to_owned()));
        }
        let api_key = match &config.api_key_env {
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(key) if !key.is_empty() => Some(ApiKey(key)),
                _ => {
                    return Err(EngineError::Setup(format!(
                        "environment variable `{var}` (API key) is not set"
                    )));
                }
            },
        };
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_millis(config.connect_timeout_ms))
            .build()
            .map_err(|e| {
                EngineError::Setup(format!("cannot build HTTP client: {}", error_chain(&e)))
            })?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("worldloom-openai")
            .enable_all()
            .build()
            .map_err(|e| EngineError::Setup(format!("cannot start the network runtime: {e}")))?;
        Ok(Self {
            config,
            api_key,
            api_base,
            http,
            runtime: Some(runtime),
        })
    }

    /// The settings this engine was built with.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The normalised API base URL (ends in `/v1` for URLs without a path).
    pub fn api_base(&self) -> &str {
        &self.api_base
    }

    fn runtime(&self) -> Result<&tokio::runtime::Runtime, EngineError> {
        self.runtime
            .as_ref()
            .ok_or_else(|| EngineError::Stopped("network runtime stopped".to_owned()))
    }

    /// Runs a future on the engine's runtime and waits for it from any thread
    /// (also from inside another async runtime, where `block_on` would panic).
    fn wait_on<T: Send + 'static>(
        &self,
        fut: impl std::future::Future<Output = Result<T, EngineError>> + Send + 'static,
    ) -> Result<T, EngineError> {
        let (tx, rx) = channel();
        self.runtime()?.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv()
            .map_err(|_| EngineError::Stopped("network runtime stopped".to_owned()))?
    }

    /// The model names the server lists at `GET {base}/models` (`data[].id`).
    ///
    /// Errors: [`EngineError::Remote`] when the server cannot be reached,
    /// answers with an error status or with a body that is not a model list.
    pub fn list_models(&self) -> Result<Vec<String>, EngineError> {
        let url = format!("{}/models", self.api_base);
        let mut request = self.http.get(&url);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(&key.0);
        }
        let read_timeout = Duration::from_millis(self.config.read_timeout_ms);
        self.wait_on(async move {
            let response = tokio::time::timeout(read_timeout, request.send())
                .await
                .map_err(|_| {
                    EngineError::Remote(format!(
                        "no answer from {url} within {} ms",
                        read_timeout.as_millis()
                    ))
                })?
                .map_err(|e| request_error(&url, &e))?;
            let status = response.status();
            let body = response.text().await.map_err(|e| request_error(&url, &e))?;
            if !status.is_success() {
                return Err(EngineError::Remote(format!(
                    "{url} answered {status}: {}",
                    quote(&body)
                )));
            }
            let value: Value = serde_json::from_str(&body).map_err(|e| {
                EngineError::Remote(format!(
                    "{url} did not answer a model list ({e}): {}",
                    quote(&body)
                ))
            })?;
            let data = value.get("data").and_then(Value::as_array).ok_or_else(|| {
                EngineError::Remote(format!(
                    "{url} answered without a `data` array: {}",
                    quote(&body)
                ))
            })?;
            Ok(data
                .iter()
                .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_owned))
                .collect())
        })
    }

    /// Checks that the server serves [`OpenAiConfig::model`].
    ///
    /// Errors: [`EngineError::Setup`] naming the served models when it does
    /// not; the errors of [`OpenAiEngine::list_models`] otherwise.
    pub fn check_model(&self) -> Result<(), EngineError> {
        let models = self.list_models()?;
        if models.iter().any(|m| m == &self.config.model) {
            Ok(())
        } else {
            Err(EngineError::Setup(format!(
                "model `{}` is not served by {} (it serves: {})",
                self.config.model,
                self.api_base,
                if models.is_empty() {
                    "nothing".to_owned()
                } else {
                    models.join(", ")
                }
            )))
        }
    }

    /// The JSON body of a chat-completions request.
    fn request_body(&self, request: &PredictRequest) -> Value {
        let params = &request.params;
        let messages: Vec<Value> = request
            .messages
            .iter()
            .map(|m| {
                let role = match m.role {
                    ChatRole::System => "system",
                    ChatRole::User => "user",
                    ChatRole::Assistant => "assistant",
                };
                json!({ "role": role, "content": m.content })
            })
            .collect();
        let mut body = json!({
            "model": self.config.model,
            "messages": messages,
            "max_tokens": params.max_new_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "seed": params.seed,
            "stream": self.config.stream,
        });
        let Some(obj) = body.as_object_mut() else {
            return body;
        };
        if self.config.stream {
            obj.insert("stream_options".into(), json!({ "include_usage": true }));
        }
        if !params.stop.is_empty() {
            obj.insert("stop".into(), json!(params.stop));
        }
        if params.logprobs {
            obj.insert("logprobs".into(), json!(true));
        }
        if self.config.send_extensions {
            if params.top_k > 0 {
                obj.insert("top_k".into(), json!(params.top_k));
            }
            obj.insert(
                "chat_template_kwargs".into(),
                json!({ "enable_thinking": params.enable_thinking }),
            );
        }
        body
    }
}

impl WorldModel for OpenAiEngine {
    fn name(&self) -> String {
        format!("openai:{}", self.config.model)
    }

    fn predict(&self, request: PredictRequest) -> Result<PredictionStream, EngineError> {
        if request.messages.is_empty() {
            return Err(EngineError::InvalidRequest(
                "the chat has no messages".to_owned(),
            ));
        }
        let (tx, rx) = channel();
        let cancel = CancelToken::new();
        let job = Job {
            http: self.http.clone(),
            url: format!("{}/chat/completions", self.api_base),
            api_key: self.api_key.clone(),
            body: self.request_body(&request),
            stream: self.config.stream,
            params: request.params,
            read_timeout: Duration::from_millis(self.config.read_timeout_ms),
            max_retries: self.config.max_retries,
            initial_backoff_ms: self.config.initial_backoff_ms,
            max_backoff_ms: self.config.max_backoff_ms,
            model: self.config.model.clone(),
        };
        let token = cancel.clone();
        self.runtime()?
            .spawn(async move { job.run(tx, token).await });
        Ok(PredictionStream { events: rx, cancel })
    }
}

/// Everything one prediction needs, moved onto the runtime.
struct Job {
    http: reqwest::Client,
    url: String,
    api_key: Option<ApiKey>,
    body: Value,
    stream: bool,
    params: GenerationParams,
    read_timeout: Duration,
    max_retries: u32,
    initial_backoff_ms: u64,
    max_backoff_ms: u64,
    model: String,
}

/// Why the event pump stopped early without an error.
enum Halt {
    /// The caller dropped the receiver.
    ReceiverGone,
}

/// What happened to one prediction while it ran.
struct Progress {
    tx: Sender<EngineEvent>,
    started: Instant,
    first_output: Option<Instant>,
    chunks: usize,
    prompt_tokens: Option<usize>,
    cached_tokens: usize,
    completion_tokens: Option<usize>,
    stop_reason: Option<StopReason>,
    splitter: ThinkSplitter,
    content: String,
    stop_after_observation: bool,
    observation_closed: bool,
    /// Whether the final `Done`/`Error` was sent.
    ended: bool,
}

impl Drop for Progress {
    /// A prediction dropped before its end (the engine and its runtime were
    /// dropped) still ends with an event, as the stream contract requires.
    fn drop(&mut self) {
        if !self.ended {
            let _ = self.tx.send(EngineEvent::Error {
                error: EngineError::Stopped("the OpenAI-compatible engine was dropped".to_owned()),
            });
        }
    }
}

impl Progress {
    fn send(&self, event: EngineEvent) -> Result<(), Halt> {
        self.tx.send(event).map_err(|_| Halt::ReceiverGone)
    }

    fn mark_output(&mut self) {
        if self.first_output.is_none() {
            self.first_output = Some(Instant::now());
        }
    }

    fn reasoning(&mut self, text: &str) -> Result<(), Halt> {
        if text.is_empty() {
            return Ok(());
        }
        self.mark_output();
        self.send(EngineEvent::Reasoning {
            text: text.to_owned(),
        })
    }

    /// Feeds raw `content` text through the `<think>` splitter.
    fn content_delta(&mut self, text: &str) -> Result<(), Halt> {
        if text.is_empty() {
            return Ok(());
        }
        self.mark_output();
        let pieces = self.splitter.push(text);
        self.emit(pieces)
    }

    fn emit(&mut self, pieces: Vec<Piece>) -> Result<(), Halt> {
        for piece in pieces {
            match piece {
                Piece::Reasoning(t) => self.reasoning(&t)?,
                Piece::Content(t) => self.answer(&t)?,
            }
        }
        Ok(())
    }

    /// Answer text; stops at `</predicted_observation>` when asked to.
    fn answer(&mut self, text: &str) -> Result<(), Halt> {
        if text.is_empty() || self.observation_closed {
            return Ok(());
        }
        let before = self.content.len();
        self.content.push_str(text);
        let mut piece = text;
        if self.stop_after_observation {
            let search_from = floor_char_boundary(
                &self.content,
                before.saturating_sub(OBSERVATION_CLOSE.len()),
            );
            if let Some(i) = self.content[search_from..].find(OBSERVATION_CLOSE) {
                let end = search_from + i + OBSERVATION_CLOSE.len();
                self.content.truncate(end);
                piece = &text[..end - before];
                self.observation_closed = true;
            }
        }
        if piece.is_empty() {
            return Ok(());
        }
        self.send(EngineEvent::Content {
            text: piece.to_owned(),
        })
    }

    fn finish_text(&mut self) -> Result<(), Halt> {
        let pieces = self.splitter.finish();
        self.emit(pieces)
    }

    fn stats(&self, stop_reason: Option<StopReason>) -> GenerationStats {
        let now = Instant::now();
        let (prefill_ms, decode_ms) = match self.first_output {
            Some(first) => (ms(first - self.started), ms(now - first)),
            None => (ms(now - self.started), 0.0),
        };
        let completion_tokens = self.completion_tokens.unwrap_or(self.chunks);
        let prompt_tokens = self.prompt_tokens.unwrap_or(0);
        GenerationStats {
            prompt_tokens,
            prompt_tokens_computed: prompt_tokens.saturating_sub(self.cached_tokens),
            completion_tokens,
            prefill_ms,
            decode_ms,
            decode_tokens_per_sec: if decode_ms > 0.0 {
                completion_tokens as f64 / (decode_ms / 1000.0)
            } else {
                0.0
            },
            stop_reason,
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Result of driving the HTTP exchange.
type Drive = Result<Result<(), EngineError>, Halt>;

impl Job {
    async fn run(self, tx: Sender<EngineEvent>, cancel: CancelToken) {
        let mut progress = Progress {
            tx,
            started: Instant::now(),
            first_output: None,
            chunks: 0,
            prompt_tokens: None,
            cached_tokens: 0,
            completion_tokens: None,
            stop_reason: None,
            splitter: ThinkSplitter::default(),
            content: String::new(),
            stop_after_observation: self.params.stop_after_observation,
            observation_closed: false,
            ended: false,
        };
        let outcome = tokio::select! {
            outcome = self.drive(&mut progress) => Some(outcome),
            () = wait_cancelled(&cancel) => None,
        };
        // Here the HTTP response (if any) has been dropped: the connection is closed.
        let last = match outcome {
            None => EngineEvent::Done {
                stats: progress.stats(Some(StopReason::Cancelled)),
            },
            Some(Err(Halt::ReceiverGone)) => {
                progress.ended = true;
                return;
            }
            Some(Ok(Err(error))) => EngineEvent::Error { error },
            Some(Ok(Ok(()))) => {
                if progress.finish_text().is_err() {
                    progress.ended = true;
                    return;
                }
                let reason = if progress.observation_closed {
                    Some(StopReason::ObservationClosed)
                } else {
                    progress.stop_reason
                };
                EngineEvent::Done {
                    stats: progress.stats(reason),
                }
            }
        };
        progress.ended = true;
        let _ = progress.send(last);
    }

    fn request(&self) -> reqwest::RequestBuilder {
        let mut request = self.http.post(&self.url).json(&self.body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(&key.0);
        }
        request
    }

    async fn drive(&self, progress: &mut Progress) -> Drive {
        let mut attempt: u32 = 0;
        let response = loop {
            let sent = tokio::time::timeout(self.read_timeout, self.request().send()).await;
            let response = match sent {
                Err(_) => {
                    return Ok(Err(EngineError::Remote(format!(
                        "no response from {} within {} ms (read timeout)",
                        self.url,
                        self.read_timeout.as_millis()
                    ))));
                }
                Ok(Err(e)) => return Ok(Err(request_error(&self.url, &e))),
                Ok(Ok(r)) => r,
            };
            let status = response.status();
            if status.is_success() {
                break response;
            }
            let retryable = status.as_u16() == 429 || status.is_server_error();
            if retryable && attempt < self.max_retries {
                let wait_ms = retry_after_ms(response.headers()).unwrap_or_else(|| {
                    self.initial_backoff_ms
                        .saturating_mul(1u64 << attempt.min(30))
                        .min(self.max_backoff_ms)
                });
                drop(response);
                tokio::time::sleep(Duration::from_millis(wait_ms)).await;
                attempt += 1;
                continue;
            }
            let body = tokio::time::timeout(self.read_timeout, response.text())
                .await
                .ok()
                .and_then(Result::ok);
            let body = body.unwrap_or_default();
            let attempts = if retryable {
                format!(" after {} attempts", attempt + 1)
            } else {
                String::new()
            };
            let hint = if status.as_u16() == 404
                || body.contains("does not exist")
                || body.contains("not found")
            {
                format!(" (is model `{}` served? see GET /v1/models)", self.model)
            } else {
                String::new()
            };
            return Ok(Err(EngineError::Remote(format!(
                "{} answered {status}{attempts}{hint}: {}",
                self.url,
                quote(&body)
            ))));
        };
        if self.stream {
            self.read_events(response, progress).await
        } else {
            self.read_json(response, progress).await
        }
    }

    async fn read_json(&self, response: reqwest::Response, progress: &mut Progress) -> Drive {
        let body = match tokio::time::timeout(self.read_timeout, response.text()).await {
            Err(_) => {
                return Ok(Err(EngineError::Remote(format!(
                    "{} stopped sending its response for {} ms (read timeout)",
                    self.url,
                    self.read_timeout.as_millis()
                ))));
            }
            Ok(Err(e)) => return Ok(Err(body_error(&self.url, &e))),
            Ok(Ok(body)) => body,
        };
        let value: Value = match serde_json::from_str(&body) {
            Ok(v) => v,
            Err(e) => {
                return Ok(Err(EngineError::Remote(format!(
                    "{} answered with invalid JSON ({e}): {}",
                    self.url,
                    quote(&body)
                ))));
            }
        };
        if let Some(error) = value.get("error") {
            return Ok(Err(EngineError::Remote(format!(
                "{} reported an error: {}",
                self.url,
                error_text(error)
            ))));
        }
        let Some(choice) = value.get("choices").and_then(|c| c.get(0)) else {
            return Ok(Err(EngineError::Remote(format!(
                "{} answered without `choices`: {}",
                self.url,
                quote(&body)
            ))));
        };
        let message = choice.get("message").unwrap_or(&Value::Null);
        progress.chunks = 1;
        for field in ["reasoning_content", "reasoning"] {
            if let Some(text) = message.get(field).and_then(Value::as_str) {
                progress.reasoning(text)?;
                break;
            }
        }
        if let Some(text) = message.get("content").and_then(Value::as_str) {
            progress.content_delta(text)?;
        }
        take_logprobs(choice, progress)?;
        take_usage(&value, progress);
        progress.stop_reason = finish_reason(choice).or(progress.stop_reason);
        Ok(Ok(()))
    }

    async fn read_events(&self, response: reqwest::Response, progress: &mut Progress) -> Drive {
        let mut bytes = response.bytes_stream();
        let mut buffer: Vec<u8> = Vec::new();
        let mut line_no: usize = 0;
        let mut event = SseEvent::default();
        let mut received_bytes: usize = 0;
        loop {
            let next = match tokio::time::timeout(self.read_timeout, bytes.next()).await {
                Err(_) => {
                    return Ok(Err(EngineError::Remote(format!(
                        "{} sent nothing for {} ms in the middle of the stream (read timeout)",
                        self.url,
                        self.read_timeout.as_millis()
                    ))));
                }
                Ok(next) => next,
            };
            let chunk = match next {
                None => {
                    // The connection ended. A final event without its blank
                    // line still counts.
                    if !buffer.is_empty() {
                        line_no += 1;
                        let line = String::from_utf8_lossy(&buffer).into_owned();
                        buffer.clear();
                        if let Err(e) = event.feed_line(&line, line_no) {
                            return Ok(Err(e));
                        }
                    }
                    if !event.data.is_empty() {
                        match self.dispatch(&mut event, progress)? {
                            Flow::Continue => {}
                            Flow::Finished => return Ok(Ok(())),
                            Flow::Failed(e) => return Ok(Err(e)),
                        }
                    }
                    if progress.stop_reason.is_some() {
                        // Some servers close after the final chunk without `[DONE]`.
                        return Ok(Ok(()));
                    }
                    return Ok(Err(EngineError::Remote(format!(
                        "{} closed the stream after {received_bytes} bytes, before its end (`data: [DONE]` or a finish_reason)",
                        self.url
                    ))));
                }
                Some(Err(e)) => {
                    return Ok(Err(EngineError::Remote(format!(
                        "connection to {} dropped mid-stream after {received_bytes} bytes: {}",
                        self.url,
                        error_chain(&e)
                    ))));
                }
                Some(Ok(chunk)) => chunk,
            };
            received_bytes += chunk.len();
            buffer.extend_from_slice(&chunk);
            while let Some(pos) = buffer.iter().position(|&b| b == b'\n') {
                let raw: Vec<u8> = buffer.drain(..=pos).collect();
                line_no += 1;
                let mut line = match String::from_utf8(raw) {
                    Ok(l) => l,
                    Err(e) => {
                        return Ok(Err(EngineError::Remote(format!(
                            "malformed SSE line {line_no} from {}: not UTF-8: `{}`",
                            self.url,
                            quote(&String::from_utf8_lossy(e.as_bytes()))
                        ))));
                    }
                };
                while line.ends_with('\n') || line.ends_with('\r') {
                    line.pop();
                }
                if line.is_empty() {
                    if event.data.is_empty() {
                        continue;
                    }
                    match self.dispatch(&mut event, progress)? {
                        Flow::Continue => {}
                        Flow::Finished => return Ok(Ok(())),
                        Flow::Failed(e) => return Ok(Err(e)),
                    }
                    if progress.observation_closed {
                        return Ok(Ok(()));
                    }
                } else if let Err(e) = event.feed_line(&line, line_no) {
                    return Ok(Err(EngineError::Remote(format!("{e} (from {})", self.url))));
                }
            }
        }
    }

    /// Handles one complete SSE event (its `data` lines joined by `\n`).
    fn dispatch(&self, event: &mut SseEvent, progress: &mut Progress) -> Result<Flow, Halt> {
        let data = std::mem::take(&mut event.data);
        let first_line = event.first_line.take().unwrap_or(0);
        if data.trim() == "[DONE]" {
            return Ok(Flow::Finished);
        }
        let value: Value = match serde_json::from_str(&data) {
            Ok(v) => v,
            Err(e) => {
                return Ok(Flow::Failed(EngineError::Remote(format!(
                    "malformed SSE line {first_line} from {}: `data: {}` is not JSON ({e})",
                    self.url,
                    quote(&data)
                ))));
            }
        };
        if let Some(error) = value.get("error") {
            return Ok(Flow::Failed(EngineError::Remote(format!(
                "{} reported an error mid-stream: {}",
                self.url,
                error_text(error)
            ))));
        }
        take_usage(&value, progress);
        if let Some(choice) = value.get("choices").and_then(|c| c.get(0)) {
            let delta = choice.get("delta").unwrap_or(&Value::Null);
            let mut had_text = false;
            for field in ["reasoning_content", "reasoning"] {
                if let Some(text) = delta.get(field).and_then(Value::as_str) {
                    had_text |= !text.is_empty();
                    progress.reasoning(text)?;
                    break;
                }
            }
            if let Some(text) = delta.get("content").and_then(Value::as_str) {
                had_text |= !text.is_empty();
                progress.content_delta(text)?;
            }
            if had_text {
                progress.chunks += 1;
            }
            take_logprobs(choice, progress)?;
            if let Some(reason) = finish_reason(choice) {
                progress.stop_reason = Some(reason);
            }
        }
        Ok(Flow::Continue)
    }
}

enum Flow {
    Continue,
    Finished,
    Failed(EngineError),
}

/// The `data` lines of the SSE event being read.
#[derive(Default)]
struct SseEvent {
    data: String,
    first_line: Option<usize>,
}

impl SseEvent {
    /// Reads one non-empty line (WHATWG SSE: `field: value` or `: comment`).
    /// Lines with a field other than `data`, `event`, `id` or `retry` are
    /// rejected: OpenAI-compatible servers never send them, so they signal a
    /// broken proxy or a non-SSE body.
    fn feed_line(&mut self, line: &str, line_no: usize) -> Result<(), EngineError> {
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.first_line.is_none() {
                    self.first_line = Some(line_no);
                } else {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                Ok(())
            }
            "event" | "id" | "retry" => Ok(()),
            _ => Err(EngineError::Remote(format!(
                "malformed SSE line {line_no}: `{}`",
                quote(line)
            ))),
        }
    }
}

fn finish_reason(choice: &Value) -> Option<StopReason> {
    match choice.get("finish_reason").and_then(Value::as_str)? {
        "length" => Some(StopReason::MaxTokens),
        "stop" => {
            // vLLM names the matched stop string in `stop_reason`.
            if choice.get("stop_reason").is_some_and(Value::is_string) {
                Some(StopReason::StopString)
            } else {
                Some(StopReason::EndOfTurn)
            }
        }
        _ => Some(StopReason::EndOfTurn),
    }
}

fn take_usage(value: &Value, progress: &mut Progress) {
    let Some(usage) = value.get("usage").filter(|u| u.is_object()) else {
        return;
    };
    let count = |v: Option<&Value>| v.and_then(Value::as_u64).map(|n| n as usize);
    if let Some(n) = count(usage.get("prompt_tokens")) {
        progress.prompt_tokens = Some(n);
    }
    if let Some(n) = count(usage.get("completion_tokens")) {
        progress.completion_tokens = Some(n);
    }
    if let Some(n) = count(
        usage
            .get("prompt_tokens_details")
            .and_then(|d| d.get("cached_tokens")),
    ) {
        progress.cached_tokens = n;
    }
}

fn take_logprobs(choice: &Value, progress: &mut Progress) -> Result<(), Halt> {
    let Some(items) = choice
        .get("logprobs")
        .and_then(|l| l.get("content"))
        .and_then(Value::as_array)
    else {
        return Ok(());
    };
    let mut tokens = Vec::with_capacity(items.len());
    let mut logprobs = Vec::with_capacity(items.len());
    for item in items {
        if let (Some(token), Some(lp)) = (
            item.get("token").and_then(Value::as_str),
            item.get("logprob").and_then(Value::as_f64),
        ) {
            tokens.push(token.to_owned());
            logprobs.push(lp as f32);
        }
    }
    if tokens.is_empty() {
        return Ok(());
    }
    progress.send(EngineEvent::TokenLogprobs { tokens, logprobs })
}

fn error_text(error: &Value) -> String {
    match error.get("message").and_then(Value::as_str) {
        Some(m) => m.to_owned(),
        None => quote(&error.to_string()),
    }
}

async fn wait_cancelled(cancel: &CancelToken) {
    let mut tick = tokio::time::interval(Duration::from_millis(CANCEL_POLL_MS));
    loop {
        tick.tick().await;
        if cancel.is_cancelled() {
            return;
        }
    }
}

/// Milliseconds to wait according to a `Retry-After` header given in
/// seconds (RFC 9110 §10.2.3; the HTTP-date form is not honoured and falls
/// back to the backoff), capped at two minutes.
fn retry_after_ms(headers: &reqwest::header::HeaderMap) -> Option<u64> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    let secs: f64 = value.trim().parse().ok()?;
    if !secs.is_finite() || secs < 0.0 {
        return None;
    }
    Some(((secs * 1000.0) as u64).min(MAX_RETRY_AFTER_MS))
}

/// An error and its sources, joined by `: `.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

fn request_error(url: &str, error: &reqwest::Error) -> EngineError {
    let chain = error_chain(error);
    if error.is_connect() {
        let what = if chain.to_ascii_lowercase().contains("refused") {
            "connection refused (is the server running and listening there?)"
        } else if error.is_timeout() {
            "connect timeout"
        } else {
            "connection failed"
        };
        EngineError::Remote(format!("cannot connect to {url}: {what} [{chain}]"))
    } else if error.is_timeout() {
        EngineError::Remote(format!("request to {url} timed out: {chain}"))
    } else {
        EngineError::Remote(format!("request to {url} failed: {chain}"))
    }
}

fn body_error(url: &str, error: &reqwest::Error) -> EngineError {
    EngineError::Remote(format!(
        "reading the response of {url} failed: {}",
        error_chain(error)
    ))
}

/// At most [`QUOTE_CHARS`] characters of `text`, with `…` when cut.
fn quote(text: &str) -> String {
    let mut out: String = text.chars().take(QUOTE_CHARS).collect();
    if text.chars().count() > QUOTE_CHARS {
        out.push('…');
    }
    out
}

/// A piece of split model text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Reasoning text, tags removed.
    Reasoning(String),
    /// Answer text.
    Content(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum SplitMode {
    #[default]
    Undecided,
    Thinking,
    Answer,
}

/// Splits streamed text with inline `<think>` … `</think>` into reasoning
/// and answer, with tags cut across chunk boundaries handled.
///
/// Rules (Qwen3 output conventions):
/// - text that starts (after whitespace) with `<think>` is reasoning up to
///   `</think>`; reasoning streams as it arrives;
/// - text with a `</think>` but no opening tag (the chat template opened the
///   block in the prompt) is reasoning up to that tag. Until the text either
///   shows `</think>`, shows `<predicted_observation>` or ends, it is held
///   back, because it cannot be classified earlier;
/// - everything after `</think>` is answer, passed through unchanged;
/// - text that ends inside an unclosed `<think>` block is reasoning.
#[derive(Debug, Clone, Default)]
pub struct ThinkSplitter {
    mode: SplitMode,
    buffer: String,
}

impl ThinkSplitter {
    /// Feeds the next piece of text; returns what can be classified now.
    pub fn push(&mut self, text: &str) -> Vec<Piece> {
        let mut out = Vec::new();
        match self.mode {
            SplitMode::Answer => out.push(Piece::Content(text.to_owned())),
            SplitMode::Thinking => {
                self.buffer.push_str(text);
                self.drain_thinking(&mut out);
            }
            SplitMode::Undecided => {
                self.buffer.push_str(text);
                let trimmed = self.buffer.trim_start();
                if let Some(rest) = trimmed.strip_prefix(THINK_OPEN) {
                    self.buffer = rest.to_owned();
                    self.mode = SplitMode::Thinking;
                    self.drain_thinking(&mut out);
                } else if THINK_OPEN.starts_with(trimmed) {
                    // Could still become `<think>`: wait.
                } else if let Some(i) = self.buffer.find(THINK_CLOSE) {
                    let rest = self.buffer.split_off(i);
                    let reasoning = std::mem::take(&mut self.buffer);
                    push_piece(&mut out, Piece::Reasoning(reasoning));
                    self.mode = SplitMode::Answer;
                    push_piece(
                        &mut out,
                        Piece::Content(rest[THINK_CLOSE.len()..].to_owned()),
                    );
                } else if self.buffer.contains(OBSERVATION_OPEN) {
                    self.mode = SplitMode::Answer;
                    push_piece(&mut out, Piece::Content(std::mem::take(&mut self.buffer)));
                }
            }
        }
        out
    }

    /// Ends the text; returns whatever was held back.
    pub fn finish(&mut self) -> Vec<Piece> {
        let mut out = Vec::new();
        let rest = std::mem::take(&mut self.buffer);
        match self.mode {
            SplitMode::Thinking => push_piece(&mut out, Piece::Reasoning(rest)),
            SplitMode::Undecided | SplitMode::Answer => push_piece(&mut out, Piece::Content(rest)),
        }
        self.mode = SplitMode::Answer;
        out
    }

    fn drain_thinking(&mut self, out: &mut Vec<Piece>) {
        if let Some(i) = self.buffer.find(THINK_CLOSE) {
            let rest = self.buffer.split_off(i);
            push_piece(out, Piece::Reasoning(std::mem::take(&mut self.buffer)));
            self.mode = SplitMode::Answer;
            push_piece(out, Piece::Content(rest[THINK_CLOSE.len()..].to_owned()));
            return;
        }
        // Hold back a suffix that may be the start of `</think>` (ASCII, so
        // the cut is a char boundary).
        let keep = (1..THINK_CLOSE.len())
            .rev()
            .find(|&k| self.buffer.ends_with(&THINK_CLOSE[..k]))
            .unwrap_or(0);
        let cut = self.buffer.len() - keep;
        let held = self.buffer.split_off(cut);
        push_piece(
            out,
            Piece::Reasoning(std::mem::replace(&mut self.buffer, held)),
        );
    }
}

fn push_piece(out: &mut Vec<Piece>, piece: Piece) {
    let empty = match &piece {
        Piece::Reasoning(t) | Piece::Content(t) => t.is_empty(),
    };
    if !empty {
        out.push(piece);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_all(chunks: &[&str]) -> (String, String) {
        let mut s = ThinkSplitter::default();
        let mut pieces = Vec::new();
        for c in chunks {
            pieces.extend(s.push(c));
        }
        pieces.extend(s.finish());
        let mut reasoning = String::new();
        let mut content = String::new();
        for p in pieces {
            match p {
                Piece::Reasoning(t) => reasoning.push_str(&t),
                Piece::Content(t) => content.push_str(&t),
            }
        }
        (reasoning, content)
    }

    #[test]
    fn think_tags_split_across_chunks() {
        let (r, c) = split_all(&[
            "<th",
            "ink>plan ",
            "it</th",
            "ink>\n\n<predicted_observation>x</predicted_observation>",
        ]);
        assert_eq!(r, "plan it");
        assert_eq!(c, "\n\n<predicted_observation>x</predicted_observation>");
    }

    #[test]
    fn closing_tag_only_means_reasoning_before_it() {
        let (r, c) = split_all(&[
            "the cursor ",
            "moves</think>",
            "<predicted_observation>ok</predicted_observation>",
        ]);
        assert_eq!(r, "the cursor moves");
        assert_eq!(c, "<predicted_observation>ok</predicted_observation>");
    }

    #[test]
    fn no_tags_is_all_content() {
        let (r, c) = split_all(&["<pre", "dicted_observation>a</predicted_observation>"]);
        assert_eq!(r, "");
        assert_eq!(c, "<predicted_observation>a</predicted_observation>");
        let (r, c) = split_all(&["plain text"]);
        assert_eq!((r.as_str(), c.as_str()), ("", "plain text"));
    }

    #[test]
    fn unclosed_think_is_reasoning() {
        let (r, c) = split_all(&["<think>still going </"]);
        assert_eq!(r, "still going </");
        assert_eq!(c, "");
    }

    #[test]
    fn base_url_gets_v1_only_without_path() {
        assert_eq!(
            normalize_base_url("http://127.0.0.1:8000").unwrap(),
            "http://127.0.0.1:8000/v1"
        );
        assert_eq!(
            normalize_base_url("http://127.0.0.1:8000/v1/").unwrap(),
            "http://127.0.0.1:8000/v1"
        );
        assert_eq!(
            normalize_base_url("http://h/api/v1").unwrap(),
            "http://h/api/v1"
        );
        assert!(normalize_base_url("ftp://h").is_err());
        assert!(normalize_base_url("not a url").is_err());
    }

    #[test]
    fn sse_lines() {
        let mut e = SseEvent::default();
        e.feed_line(": keep-alive", 1).unwrap();
        e.feed_line("event: message", 2).unwrap();
        e.feed_line("data: {\"a\":", 3).unwrap();
        e.feed_line("data:1}", 4).unwrap();
        assert_eq!(e.data, "{\"a\":\n1}");
        assert_eq!(e.first_line, Some(3));
        let err = e.feed_line("garbage here", 5).unwrap_err();
        assert_eq!(
            err,
            EngineError::Remote("malformed SSE line 5: `garbage here`".to_owned())
        );
    }

    #[test]
    fn api_key_is_redacted() {
        // SAFETY-free: environment edits are process-wide; use a unique name.
        let shown = format!("{:?}", ApiKey("sk-secret-123".to_owned()));
        assert!(!shown.contains("sk-secret-123"));
        assert_eq!(shown, "ApiKey(<redacted>)");
    }
}
