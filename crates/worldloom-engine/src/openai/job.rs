//! One prediction on the engine's runtime: the HTTP request with its
//! retries, then the answer read as server-sent events or as one JSON body,
//! each piece handed to [`Progress`].

use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::Value;
use worldloom_core::output::OutputParser;

use super::ApiKey;
use super::errors::{body_error, error_chain, quote, request_error};
use super::progress::{Halt, Progress};
use super::retry::{backoff_ms, retry_after_ms};
use super::sse::{SseEvent, SseLineError, SseLineReader};
use super::wire::{error_text, finish_reason, reasoning_field, take_usage};
use crate::world_model::{CancelToken, EngineError, EngineEvent, GenerationParams, StopReason};

/// How often the cancellation flag is polled, in milliseconds.
const CANCEL_POLL_MS: u64 = 5;

/// Everything one prediction needs, moved onto the runtime.
pub(super) struct Job {
    pub(super) http: reqwest::Client,
    pub(super) url: String,
    pub(super) api_key: Option<ApiKey>,
    pub(super) body: Value,
    pub(super) stream: bool,
    pub(super) params: GenerationParams,
    pub(super) read_timeout: Duration,
    pub(super) max_retries: u32,
    pub(super) initial_backoff_ms: u64,
    pub(super) max_backoff_ms: u64,
    pub(super) model: String,
    /// Cap on one SSE line, in bytes.
    pub(super) max_line_bytes: usize,
    /// Limit on the whole prediction, retries included.
    pub(super) deadline: Option<Duration>,
}

/// Result of driving the HTTP exchange.
type Drive = Result<Result<(), EngineError>, Halt>;

impl Job {
    pub(super) async fn run(self, tx: Sender<EngineEvent>, cancel: CancelToken) {
        let mut progress = Progress {
            tx,
            started: Instant::now(),
            first_output: None,
            chunks: 0,
            prompt_tokens: None,
            cached_tokens: 0,
            completion_tokens: None,
            stop_reason: None,
            parser: OutputParser::new(false),
            stop_after_observation: self.params.stop_after_observation,
            observation_closed: false,
            ended: false,
        };
        let deadline = self.deadline;
        let outcome = tokio::select! {
            outcome = self.drive(&mut progress) => Some(outcome),
            () = wait_cancelled(&cancel) => None,
            () = wait_deadline(deadline) => Some(Ok(Err(EngineError::Remote(format!(
                "{} did not finish its answer within the step deadline of {} ms; stopped",
                self.url,
                deadline.map_or(0, |d| d.as_millis())
            ))))),
        };
        // Here the HTTP response (if any) has been dropped: the connection is closed.
        let last = match outcome {
            None => {
                let Ok(output) = progress.finish_output() else {
                    progress.ended = true;
                    return;
                };
                EngineEvent::Done {
                    stats: progress.stats(Some(StopReason::Cancelled)),
                    output,
                }
            }
            Some(Err(Halt::ReceiverGone)) => {
                progress.ended = true;
                return;
            }
            Some(Ok(Err(error))) => EngineEvent::Error { error },
            Some(Ok(Ok(()))) => {
                let Ok(mut output) = progress.finish_output() else {
                    progress.ended = true;
                    return;
                };
                let reason = if progress.observation_closed {
                    Some(StopReason::ObservationClosed)
                } else {
                    progress.stop_reason
                };
                output.settle(reason);
                EngineEvent::Done {
                    stats: progress.stats(reason),
                    output,
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
                    backoff_ms(attempt, self.initial_backoff_ms, self.max_backoff_ms)
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
        progress.take(
            choice,
            reasoning_field(message),
            message.get("content").and_then(Value::as_str),
        )?;
        take_usage(&value, progress);
        progress.stop_reason = finish_reason(choice).or(progress.stop_reason);
        Ok(Ok(()))
    }

    async fn read_events(&self, response: reqwest::Response, progress: &mut Progress) -> Drive {
        let mut bytes = response.bytes_stream();
        let mut lines = SseLineReader::new(self.max_line_bytes);
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
                    return self.end_of_stream(&mut lines, &mut event, progress, received_bytes);
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
            lines.push(&chunk);
            while let Some(line) = lines.next_line() {
                let line = match line {
                    Ok(line) => line,
                    Err(e) => return Ok(Err(self.line_error(&e))),
                };
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
                } else if let Err(message) = event.feed_line(&line, lines.lines()) {
                    return Ok(Err(EngineError::Remote(format!(
                        "{message} (from {})",
                        self.url
                    ))));
                }
            }
        }
    }

    /// The connection ended. A final event whose lines are complete but
    /// lack the blank line after them still counts; a cut line ends the
    /// prediction with "closed mid-stream" unless it is a whole event by
    /// itself (a server that omits the last newline).
    fn end_of_stream(
        &self,
        lines: &mut SseLineReader,
        event: &mut SseEvent,
        progress: &mut Progress,
        received_bytes: usize,
    ) -> Drive {
        let pending = lines.pending();
        let cut_line = if pending.is_empty() {
            None
        } else {
            Some((lines.lines() + 1, quote(&String::from_utf8_lossy(pending))))
        };
        let closed_mid_line = |line_no: usize, text: &str| {
            EngineError::Remote(format!(
                "{} closed mid-stream after {received_bytes} bytes, in the middle of SSE line {line_no}: `{text}`",
                self.url
            ))
        };
        if let Some((line_no, text)) = &cut_line {
            let whole = String::from_utf8_lossy(lines.pending()).into_owned();
            if event.feed_line(&whole, *line_no).is_err() {
                return Ok(Err(closed_mid_line(*line_no, text)));
            }
        }
        if !event.data.is_empty() {
            match self.dispatch(event, progress)? {
                Flow::Continue => {}
                Flow::Finished => return Ok(Ok(())),
                Flow::Failed(e) => {
                    return Ok(Err(match &cut_line {
                        Some((line_no, text)) => closed_mid_line(*line_no, text),
                        None => e,
                    }));
                }
            }
        }
        if progress.stop_reason.is_some() {
            // Some servers close after the final chunk without `[DONE]`.
            return Ok(Ok(()));
        }
        Ok(Err(EngineError::Remote(format!(
            "{} closed the stream after {received_bytes} bytes, before its end (`data: [DONE]` or a finish_reason)",
            self.url
        ))))
    }

    fn line_error(&self, error: &SseLineError) -> EngineError {
        EngineError::Remote(match error {
            SseLineError::TooLong { line, cap } => format!(
                "SSE line {line} from {} is longer than {cap} bytes (the SSE line cap, `max_sse_line_bytes`); stopped reading",
                self.url
            ),
            SseLineError::NotUtf8 { line, text } => format!(
                "malformed SSE line {line} from {}: not UTF-8: `{text}`",
                self.url
            ),
        })
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
            let reasoning = reasoning_field(delta);
            let content = delta.get("content").and_then(Value::as_str);
            if reasoning.is_some_and(|t| !t.is_empty()) || content.is_some_and(|t| !t.is_empty()) {
                progress.chunks += 1;
            }
            progress.take(choice, reasoning, content)?;
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

/// Waits for `deadline` to pass; forever when there is none.
async fn wait_deadline(deadline: Option<Duration>) {
    match deadline {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
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
