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
//! **Files.** `lifecycle` binds, serves and stops the server (also on its
//! own thread, [`BackgroundServer`]); `door` keeps `worldloom-door`'s door
//! in front of every route; `routes` answers the model list and unknown
//! routes; `request` reads a chat-completions body into a [`GenerationParams`]
//! request (each field checked by name); `stream` runs the choices through
//! the queue and answers them whole or as server-sent events; `error` is the
//! OpenAI error shape.
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
//! Worldloom's `stop_after_observation` and `speculative` (`false` turns the
//! server's speculative decoding off for the request; the output is the
//! same, only slower or faster). Fields not given keep
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

mod door;
mod error;
mod lifecycle;
mod request;
mod routes;
mod stream;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use tokio::sync::Semaphore;
use worldloom_engine::{CancelToken, GenerationParams, WorldModel};

pub use lifecycle::{
    BackgroundServer, RunningServer, ServerError, check_exposure, router, serve, spawn,
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

/// What every handler shares: the engine, the queue, the settings.
pub(crate) struct AppState {
    pub(crate) engine: Arc<dyn WorldModel>,
    pub(crate) model_id: String,
    pub(crate) default_params: GenerationParams,
    pub(crate) max_concurrent: usize,
    pub(crate) queue: Semaphore,
    pub(crate) next_id: AtomicU64,
    /// Set when the server shuts down: predictions in flight are cancelled.
    pub(crate) stopping: CancelToken,
    pub(crate) api_key: Option<String>,
    pub(crate) body_limit: usize,
    pub(crate) keepalive: Duration,
    pub(crate) log_requests: bool,
    /// The bound address: its port (and, on loopback, its host) must be
    /// the `Host` header's.
    pub(crate) addr: SocketAddr,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_limit_follows_the_context() {
        assert_eq!(body_limit(Some(262_144)), 262_144 * 16 + (1 << 20));
        assert_eq!(body_limit(Some(10)), BODY_FLOOR_BYTES);
        assert_eq!(body_limit(None), BODY_UNKNOWN_CONTEXT_BYTES);
    }
}
