//! [`collect`]: drains a [`PredictionStream`] to its end, with cancellation
//! and a deadline. Every caller that needs a whole prediction (the studio's
//! steps, `worldloom step`/`rollout`, eval, the judge, the model server) goes
//! through it; callers that forward events as they come see each one in
//! `on_event` first.

use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use worldloom_core::ModelOutput;

use crate::world_model::{
    CancelToken, EngineError, EngineEvent, GenerationStats, PredictionStream, Token,
};

/// How often the caller's cancel token and the deadline are checked while
/// no event arrives, in milliseconds.
const POLL_MS: u64 = 10;

/// A prediction drained to its end.
#[derive(Debug, Clone, PartialEq)]
pub struct Collected {
    /// The generated text and its parse (observation, reasoning, status).
    pub output: ModelOutput,
    /// Every token, in generation order.
    pub tokens: Vec<Token>,
    /// The observation as tokens (see [`ObservationTokens`]); empty when the
    /// engine reported no log-probabilities.
    pub observation_tokens: Vec<Token>,
    /// Counts and timings reported by the engine.
    pub stats: GenerationStats,
    /// Milliseconds from the start of draining to the first generated text
    /// or token.
    pub time_to_first_token_ms: Option<f64>,
    /// Milliseconds from the start of draining to the end.
    pub total_ms: f64,
}

/// Why [`collect`] gave no prediction.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CollectError {
    /// The engine failed, or its stream ended without `Done`.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The caller's cancel token was set; the engine was cancelled and not
    /// waited for.
    #[error("cancelled")]
    Cancelled,
    /// The deadline passed; the engine was cancelled and not waited for.
    #[error("the prediction did not finish within its deadline")]
    DeadlineExceeded,
}

/// Pairs observation text with the token that released it, for showing
/// per-token log-probabilities over the observation.
///
/// Engines send a token's `Token` event before the events its text
/// releases, so each `Observation` event belongs to the last token seen.
/// Only tokens with a log-probability are paired; the texts of the tokens
/// returned concatenate to the observation text of those events.
#[derive(Debug, Clone, Default)]
pub struct ObservationTokens {
    last: Option<Token>,
}

impl ObservationTokens {
    /// A tracker that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one event; for an `Observation` event following a token with a
    /// log-probability, returns that token with the observation text as its
    /// text.
    pub fn on_event(&mut self, event: &EngineEvent) -> Option<Token> {
        match event {
            EngineEvent::Token(token) => {
                self.last = Some(token.clone());
                None
            }
            EngineEvent::Observation { text } => {
                let token = self.last.as_ref().filter(|t| t.logprob.is_some())?;
                Some(Token {
                    text: text.clone(),
                    ..token.clone()
                })
            }
            _ => None,
        }
    }
}

/// Drains `stream` until `Done`, handing every event to `on_event` first.
///
/// `cancel` is the caller's token: when it is set (checked at least every
/// 10 ms), the engine is cancelled and [`CollectError::Cancelled`] returned
/// at once. When `deadline` passes, likewise with
/// [`CollectError::DeadlineExceeded`]. A `Done` whose stop reason is
/// `Cancelled` (the engine's own token was used) is a normal result.
///
/// # Errors
/// [`CollectError::Engine`] for an `Error` event or a stream that ends
/// without `Done`; [`CollectError::Cancelled`];
/// [`CollectError::DeadlineExceeded`].
pub fn collect(
    stream: PredictionStream,
    cancel: &CancelToken,
    deadline: Option<Instant>,
    on_event: impl FnMut(&EngineEvent),
) -> Result<Collected, CollectError> {
    drain(stream, cancel, deadline, false, on_event)
}

/// Like [`collect`], but a cancel or a passed deadline only cancels the
/// engine: draining goes on to the engine's `Done` (stop reason
/// `Cancelled`, with the partial output and its statistics), so every event
/// reaches `on_event`. For callers that forward a stream to the end, such as
/// a server whose client must see the prediction finish.
///
/// # Errors
/// [`CollectError::Engine`] for an `Error` event or a stream that ends
/// without `Done`.
pub fn collect_to_end(
    stream: PredictionStream,
    cancel: &CancelToken,
    deadline: Option<Instant>,
    on_event: impl FnMut(&EngineEvent),
) -> Result<Collected, CollectError> {
    drain(stream, cancel, deadline, true, on_event)
}

fn drain(
    stream: PredictionStream,
    cancel: &CancelToken,
    deadline: Option<Instant>,
    to_end: bool,
    mut on_event: impl FnMut(&EngineEvent),
) -> Result<Collected, CollectError> {
    let start = Instant::now();
    let mut engine_cancelled = false;
    let mut tokens = Vec::new();
    let mut observation_tokens = Vec::new();
    let mut pairing = ObservationTokens::new();
    let mut first_ms = None;
    loop {
        let mut wait = Duration::from_millis(POLL_MS);
        if !engine_cancelled {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let stop = if cancel.is_cancelled() {
                Some(CollectError::Cancelled)
            } else if left.is_some_and(|l| l.is_zero()) {
                Some(CollectError::DeadlineExceeded)
            } else {
                None
            };
            if let Some(stop) = stop {
                stream.cancel.cancel();
                if !to_end {
                    return Err(stop);
                }
                engine_cancelled = true;
            } else if let Some(left) = left {
                wait = wait.min(left);
            }
        }
        let event = match stream.events.recv_timeout(wait) {
            Ok(event) => event,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(CollectError::Engine(EngineError::Stopped(
                    "the engine ended the prediction without a result".into(),
                )));
            }
        };
        on_event(&event);
        if let Some(token) = pairing.on_event(&event) {
            observation_tokens.push(token);
        }
        match event {
            EngineEvent::Token(token) => {
                first_ms.get_or_insert_with(|| start.elapsed().as_secs_f64() * 1e3);
                tokens.push(token);
            }
            EngineEvent::Reasoning { .. }
            | EngineEvent::Answer { .. }
            | EngineEvent::Observation { .. } => {
                first_ms.get_or_insert_with(|| start.elapsed().as_secs_f64() * 1e3);
            }
            EngineEvent::Done { stats, mut output } => {
                // The status once it is known why generation ended (engines
                // settle it themselves; this covers any that did not).
                output.settle(stats.stop_reason);
                return Ok(Collected {
                    output,
                    tokens,
                    observation_tokens,
                    stats,
                    time_to_first_token_ms: first_ms,
                    total_ms: start.elapsed().as_secs_f64() * 1e3,
                });
            }
            EngineEvent::Error { error } => return Err(CollectError::Engine(error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::{Sender, channel};

    use worldloom_core::{OutputParser, OutputStatus};

    use super::*;
    use crate::world_model::StopReason;

    /// A stream fed through the returned sender, and the engine's cancel
    /// token in it.
    fn new_stream() -> (Sender<EngineEvent>, PredictionStream, CancelToken) {
        let (tx, rx) = channel();
        let engine_cancel = CancelToken::new();
        let stream = PredictionStream {
            events: rx,
            cancel: engine_cancel.clone(),
        };
        (tx, stream, engine_cancel)
    }

    /// A `Done` event with these statistics and `output`.
    fn done(
        stop_reason: Option<StopReason>,
        completion_tokens: usize,
        output: ModelOutput,
    ) -> EngineEvent {
        EngineEvent::Done {
            stats: GenerationStats {
                completion_tokens,
                stop_reason,
                ..GenerationStats::default()
            },
            output,
        }
    }

    fn token(text: &str, logprob: Option<f32>) -> EngineEvent {
        EngineEvent::Token(Token {
            text: text.into(),
            id: None,
            logprob,
            top: Vec::new(),
        })
    }

    #[test]
    fn drains_to_done_and_pairs_observation_tokens() {
        let (tx, stream, _) = new_stream();
        let mut parser = OutputParser::new(true);
        for (text, lp) in [
            ("r</think>", -0.5),
            ("<predicted_observation>a", -0.25),
            ("b", -1.0),
        ] {
            tx.send(token(text, Some(lp))).unwrap();
            for e in EngineEvent::from_delta(parser.push(text)) {
                tx.send(e).unwrap();
            }
        }
        tx.send(done(Some(StopReason::EndOfTurn), 3, parser.finish_output()))
            .unwrap();
        let mut seen = 0;
        let c = collect(stream, &CancelToken::new(), None, |_| seen += 1).unwrap();
        assert_eq!(seen, 9);
        assert_eq!(c.output.parsed.observation.as_deref(), Some("ab"));
        assert_eq!(c.output.parsed.reasoning, "r");
        assert_eq!(c.tokens.len(), 3);
        let paired: Vec<(&str, Option<f32>)> = c
            .observation_tokens
            .iter()
            .map(|t| (t.text.as_str(), t.logprob))
            .collect();
        assert_eq!(paired, vec![("a", Some(-0.25)), ("b", Some(-1.0))]);
        assert_eq!(c.stats.completion_tokens, 3);
        assert!(c.time_to_first_token_ms.is_some());
    }

    #[test]
    fn the_status_is_settled_with_the_stop_reason() {
        // An engine that finishes its output without settling it.
        for (stop, status) in [
            (Some(StopReason::MaxTokens), OutputStatus::Truncated),
            (Some(StopReason::EndOfTurn), OutputStatus::NoObservation),
            (None, OutputStatus::NoObservation),
        ] {
            let (tx, stream, _) = new_stream();
            let mut parser = OutputParser::new(true);
            parser.push("still thinking");
            tx.send(done(stop, 0, parser.finish_output())).unwrap();
            let c = collect(stream, &CancelToken::new(), None, |_| {}).unwrap();
            assert_eq!(c.output.parsed.status, status, "{stop:?}");
            assert_eq!(c.output.parsed.observation, None);
            assert_eq!(c.output.parsed.reasoning, "still thinking");
        }
    }

    #[test]
    fn cancel_returns_at_once_and_cancels_the_engine() {
        let (tx, stream, engine_cancel) = new_stream();
        let cancel = CancelToken::new();
        let canceller = cancel.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            canceller.cancel();
        });
        let started = Instant::now();
        let result = collect(stream, &cancel, None, |_| {});
        t.join().unwrap();
        assert_eq!(result, Err(CollectError::Cancelled));
        assert!(engine_cancel.is_cancelled());
        assert!(started.elapsed() < Duration::from_secs(2));
        drop(tx);
    }

    #[test]
    fn deadline_cancels_the_engine() {
        let (tx, stream, engine_cancel) = new_stream();
        tx.send(token("x", None)).unwrap();
        let started = Instant::now();
        let mut events = 0;
        let result = collect(
            stream,
            &CancelToken::new(),
            Some(started + Duration::from_millis(60)),
            |_| events += 1,
        );
        assert_eq!(result, Err(CollectError::DeadlineExceeded));
        assert_eq!(events, 1);
        assert!(engine_cancel.is_cancelled());
        let elapsed = started.elapsed();
        assert!(
            elapsed >= Duration::from_millis(60) && elapsed < Duration::from_secs(2),
            "{elapsed:?}"
        );
    }

    #[test]
    fn collect_to_end_waits_for_the_engine() {
        let (tx, stream, engine_cancel) = new_stream();
        let watcher = engine_cancel.clone();
        let engine = std::thread::spawn(move || {
            while !watcher.is_cancelled() {
                std::thread::sleep(Duration::from_millis(5));
            }
            tx.send(token("late", None)).unwrap();
            tx.send(done(
                Some(StopReason::Cancelled),
                0,
                OutputParser::new(false).finish_output(),
            ))
            .unwrap();
        });
        let cancel = CancelToken::new();
        cancel.cancel();
        let mut seen = Vec::new();
        let c = collect_to_end(stream, &cancel, None, |e| seen.push(e.clone())).unwrap();
        engine.join().unwrap();
        assert_eq!(c.stats.stop_reason, Some(StopReason::Cancelled));
        assert_eq!(c.tokens.len(), 1);
        assert_eq!(seen.len(), 2);
    }

    #[test]
    fn errors_and_a_silent_end_are_engine_errors() {
        let (tx, stream, _) = new_stream();
        tx.send(EngineEvent::Error {
            error: EngineError::Model("boom".into()),
        })
        .unwrap();
        assert_eq!(
            collect(stream, &CancelToken::new(), None, |_| {}),
            Err(CollectError::Engine(EngineError::Model("boom".into())))
        );
        let (tx, stream, _) = new_stream();
        drop(tx);
        assert!(matches!(
            collect(stream, &CancelToken::new(), None, |_| {}),
            Err(CollectError::Engine(EngineError::Stopped(_)))
        ));
    }
}
