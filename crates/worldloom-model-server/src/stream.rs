//! Running a chat completion: each choice queued for the engine ([`start`],
//! [`drive`]), then answered as one `chat.completion` object or streamed as
//! `chat.completion.chunk` server-sent events with keep-alive comments.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use worldloom_engine::{
    EngineError, EngineEvent, GenerationStats, PredictRequest, StopReason, Token, collect_to_end,
};

use crate::AppState;
use crate::error::ApiError;
use crate::request::{ChatRequest, check_context, fresh_seed, parse_request};

/// OpenAI's `finish_reason`: `length` when the token budget ran out, else
/// `stop`.
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
    let drafted: usize = stats.iter().map(|s| s.drafted_tokens).sum();
    let accepted: usize = stats.iter().map(|s| s.accepted_tokens).sum();
    let mut usage = json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": prompt.saturating_sub(computed)},
    });
    if drafted > 0 {
        // Speculative decoding, in the names OpenAI's usage gives drafted
        // ("predicted") tokens.
        usage["completion_tokens_details"] = json!({
            "accepted_prediction_tokens": accepted,
            "rejected_prediction_tokens": drafted - accepted,
        });
    }
    usage
}

/// Seconds since the Unix epoch (a response's `created`).
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

/// `POST /v1/chat/completions`: the body read within the limit, parsed and
/// checked against the context, then the choices run and answered whole or
/// streamed.
pub(crate) async fn chat_completions(
    State(state): State<Arc<AppState>>,
    request: Request,
) -> Response {
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
