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
//! - an inline think block in `content` (servers without a reasoning
//!   parser), split by `worldloom_core`'s [`OutputParser`]. Qwen3 chat
//!   templates open the block in the prompt, so the answer may hold only its
//!   close, which makes the text before it reasoning.
//!
//! `content` goes through the parser, which gives the `Answer` and
//! `Observation` events and the finished output. Token events are the
//! tokens the endpoint reports log-probabilities for (with their
//! `top_logprobs` alternatives), or, without them, one per streamed
//! `content` chunk.
//!
//! What [`GenerationParams`](crate::GenerationParams) asks for is sent in
//! the OpenAI wire shape: `max_tokens`, `temperature`, `top_p`, `seed`,
//! `stop`, `presence_penalty` and `frequency_penalty` (when not 0),
//! `logprobs: true` with `top_logprobs: k` (when `k` > 0); vLLM's
//! extensions behind [`OpenAiConfig::send_extensions`]. Log-probabilities
//! are read in the chat shape (`logprobs.content[]`: `token`, `logprob`,
//! `top_logprobs[]`) and in the legacy completions shape (`logprobs`:
//! `tokens`, `token_logprobs`, `top_logprobs` as `{token: logprob}` maps).
//!
//! Networking runs on a small tokio runtime owned by the engine; events reach
//! the caller over the [`PredictionStream`] channel. Cancelling drops the
//! HTTP response at once, which closes the connection (the server sees the
//! client go away and can stop generating).
//!
//! Files: `job` (one prediction: the request, its retries, reading the
//! answer), `progress` (the output parser, usage and timings, turned into
//! events), `sse` (the event line format), `wire` (the JSON shapes of
//! answers), `retry` (`Retry-After` and backoff), `errors` (messages).

use std::fmt;
use std::sync::mpsc::channel;
use std::time::Duration;

use serde_json::{Value, json};
use worldloom_core::ChatRole;

mod errors;
mod job;
mod progress;
mod retry;
mod sse;
mod wire;

use errors::{error_chain, quote, read_body, request_error};
use job::Job;
use retry::{backoff_ms, retry_after_ms};
pub use sse::{DEFAULT_MAX_SSE_LINE_BYTES, SseLineError, SseLineReader};

use crate::world_model::{CancelToken, EngineError, PredictRequest, PredictionStream, WorldModel};

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
    /// Cap on one server-sent-event line, in bytes (default
    /// [`DEFAULT_MAX_SSE_LINE_BYTES`], 16 MiB). A longer line ends the
    /// prediction with an [`EngineError::Remote`] naming the cap.
    pub max_sse_line_bytes: usize,
    /// Limit on one whole prediction (the step deadline), in milliseconds,
    /// from sending the request to the last byte, retries and their waits
    /// included; `None` sets none. An endpoint that trickles bytes slowly
    /// enough never trips [`OpenAiConfig::read_timeout_ms`]; the deadline
    /// ends it with an [`EngineError::Remote`] naming the limit.
    pub deadline_ms: Option<u64>,
    /// Send the non-standard sampling fields vLLM and SGLang accept
    /// (`top_k`, `min_p`, `repetition_penalty`, `stop_token_ids`,
    /// `skip_special_tokens`, `chat_template_kwargs.enable_thinking`; each
    /// only when the parameters differ from the server's default). Turn off
    /// for endpoints that reject unknown fields. The standard fields
    /// (`logprobs`, `top_logprobs`, `presence_penalty`,
    /// `frequency_penalty`, `stop`, `seed`) are sent either way.
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
            max_sse_line_bytes: DEFAULT_MAX_SSE_LINE_BYTES,
            deadline_ms: None,
            send_extensions: true,
        }
    }
}

/// The largest `/v1/models` body read, in bytes.
const MAX_MODELS_BODY: usize = 16 * 1024 * 1024;

/// The model names of a `/v1/models` answer (`data[].id`).
fn parse_model_list(
    url: &str,
    status: reqwest::StatusCode,
    body: &str,
) -> Result<Vec<String>, EngineError> {
    if !status.is_success() {
        return Err(EngineError::Remote(format!(
            "{url} answered {status}: {}",
            quote(body)
        )));
    }
    let value: Value = serde_json::from_str(body).map_err(|e| {
        EngineError::Remote(format!(
            "{url} did not answer a model list ({e}): {}",
            quote(body)
        ))
    })?;
    let data = value.get("data").and_then(Value::as_array).ok_or_else(|| {
        EngineError::Remote(format!(
            "{url} answered without a `data` array: {}",
            quote(body)
        ))
    })?;
    Ok(data
        .iter()
        .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_owned))
        .collect())
}

/// An API key read from the environment; its `Debug` never shows it.
#[derive(Clone)]
pub(super) struct ApiKey(pub(super) String);

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

    /// Replaces the API key with `key`, sent as `Authorization: Bearer …`
    /// (for keys read from elsewhere than an environment variable, such as
    /// the OS keyring). The key is never written to disk or logged.
    #[must_use]
    pub fn with_api_key(mut self, key: String) -> Self {
        self.api_key = Some(ApiKey(key));
        self
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
    /// Bounded by the same limits as a prediction: the connect timeout, the
    /// read timeout for the headers and between body chunks, the retries on
    /// 429 and 5xx answers, and the deadline (for all attempts together).
    ///
    /// Errors: [`EngineError::Remote`] when the server cannot be reached,
    /// stays silent past a limit, answers with an error status or with a
    /// body that is not a model list.
    pub fn list_models(&self) -> Result<Vec<String>, EngineError> {
        let url = format!("{}/models", self.api_base);
        let http = self.http.clone();
        let api_key = self.api_key.clone();
        let read_timeout = Duration::from_millis(self.config.read_timeout_ms);
        let deadline = self.config.deadline_ms.map(Duration::from_millis);
        let (max_retries, initial_ms, max_ms) = (
            self.config.max_retries,
            self.config.initial_backoff_ms,
            self.config.max_backoff_ms,
        );
        self.wait_on(async move {
            let probe = async {
                let mut attempt: u32 = 0;
                loop {
                    let mut request = http.get(&url);
                    if let Some(key) = &api_key {
                        request = request.bearer_auth(&key.0);
                    }
                    let response = tokio::time::timeout(read_timeout, request.send())
                        .await
                        .map_err(|_| {
                            EngineError::Remote(format!(
                                "no answer from {url} within {} ms (read timeout)",
                                read_timeout.as_millis()
                            ))
                        })?
                        .map_err(|e| request_error(&url, &e))?;
                    let status = response.status();
                    let retryable = status.as_u16() == 429 || status.is_server_error();
                    if retryable && attempt < max_retries {
                        let wait_ms = retry_after_ms(response.headers())
                            .unwrap_or_else(|| backoff_ms(attempt, initial_ms, max_ms));
                        drop(response);
                        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
                        attempt += 1;
                        continue;
                    }
                    let body = read_body(response, &url, read_timeout, MAX_MODELS_BODY).await?;
                    return parse_model_list(&url, status, &body);
                }
            };
            match deadline {
                None => probe.await,
                Some(limit) => tokio::time::timeout(limit, probe)
                    .await
                    .unwrap_or_else(|_| {
                        Err(EngineError::Remote(format!(
                            "no model list from {url} within the deadline of {} ms",
                            limit.as_millis()
                        )))
                    }),
            }
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
            // Chat completions' shape: a flag, and the count of alternatives
            // apart (the legacy completions API took the count in `logprobs`).
            obj.insert("logprobs".into(), json!(true));
            if params.top_logprobs > 0 {
                obj.insert("top_logprobs".into(), json!(params.top_logprobs));
            }
        }
        if params.presence_penalty != 0.0 {
            obj.insert("presence_penalty".into(), json!(params.presence_penalty));
        }
        if params.frequency_penalty != 0.0 {
            obj.insert("frequency_penalty".into(), json!(params.frequency_penalty));
        }
        if self.config.send_extensions {
            if params.top_k > 0 {
                obj.insert("top_k".into(), json!(params.top_k));
            }
            if params.min_p > 0.0 {
                obj.insert("min_p".into(), json!(params.min_p));
            }
            if params.repetition_penalty != 1.0 {
                obj.insert(
                    "repetition_penalty".into(),
                    json!(params.repetition_penalty),
                );
            }
            if !params.stop_token_ids.is_empty() {
                obj.insert("stop_token_ids".into(), json!(params.stop_token_ids));
            }
            if !params.skip_special_tokens {
                // vLLM and SGLang skip special tokens unless told otherwise.
                obj.insert("skip_special_tokens".into(), json!(false));
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
            max_line_bytes: self.config.max_sse_line_bytes,
            deadline: self.config.deadline_ms.map(Duration::from_millis),
        };
        let token = cancel.clone();
        self.runtime()?
            .spawn(async move { job.run(tx, token).await });
        Ok(PredictionStream { events: rx, cancel })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn api_key_is_redacted() {
        // SAFETY-free: environment edits are process-wide; use a unique name.
        let shown = format!("{:?}", ApiKey("sk-secret-123".to_owned()));
        assert!(!shown.contains("sk-secret-123"));
        assert_eq!(shown, "ApiKey(<redacted>)");
    }
}
