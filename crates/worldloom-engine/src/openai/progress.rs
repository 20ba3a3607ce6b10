//! What one prediction produced so far: the output parser, usage and
//! timings; every piece of the answer becomes events here.

use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use serde_json::Value;
use worldloom_core::output::{OutputDelta, OutputParser};

use crate::world_model::{
    EngineError, EngineEvent, GenerationStats, StopReason, Token, TopLogprob,
};

/// Why the event pump stopped early without an error.
pub(super) enum Halt {
    /// The caller dropped the receiver.
    ReceiverGone,
}

/// What happened to one prediction while it ran.
pub(super) struct Progress {
    pub(super) tx: Sender<EngineEvent>,
    pub(super) started: Instant,
    pub(super) first_output: Option<Instant>,
    pub(super) chunks: usize,
    pub(super) prompt_tokens: Option<usize>,
    pub(super) cached_tokens: usize,
    pub(super) completion_tokens: Option<usize>,
    pub(super) stop_reason: Option<StopReason>,
    pub(super) parser: OutputParser,
    pub(super) stop_after_observation: bool,
    pub(super) observation_closed: bool,
    /// Whether the final `Done`/`Error` was sent.
    pub(super) ended: bool,
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
    pub(super) fn send(&self, event: EngineEvent) -> Result<(), Halt> {
        self.tx.send(event).map_err(|_| Halt::ReceiverGone)
    }

    pub(super) fn mark_output(&mut self) {
        if self.first_output.is_none() {
            self.first_output = Some(Instant::now());
        }
    }

    pub(super) fn emit(&self, delta: OutputDelta) -> Result<(), Halt> {
        for event in EngineEvent::from_delta(delta) {
            self.send(event)?;
        }
        Ok(())
    }

    /// Handles one message or chunk: its tokens, separate reasoning and
    /// `content`.
    pub(super) fn take(
        &mut self,
        choice: &Value,
        reasoning: Option<&str>,
        content: Option<&str>,
    ) -> Result<(), Halt> {
        let reasoning = reasoning.filter(|t| !t.is_empty());
        let content = content.filter(|t| !t.is_empty() && !self.observation_closed);
        if reasoning.is_some() || content.is_some() {
            self.mark_output();
        }
        let tokens = logprob_tokens(choice);
        if tokens.is_empty() {
            if let Some(text) = content {
                self.send(EngineEvent::Token(Token {
                    text: text.to_owned(),
                    id: None,
                    logprob: None,
                    top: Vec::new(),
                }))?;
            }
        } else {
            for token in tokens {
                self.send(EngineEvent::Token(token))?;
            }
        }
        if let Some(text) = reasoning {
            let delta = self.parser.push_reasoning(text);
            self.emit(delta)?;
        }
        if let Some(text) = content {
            let delta = if self.stop_after_observation {
                self.parser.push_to_close(text).0
            } else {
                self.parser.push(text)
            };
            self.observation_closed |= self.stop_after_observation && delta.observation_closed;
            self.emit(delta)?;
        }
        Ok(())
    }

    /// Releases what the parser holds and returns the finished output.
    pub(super) fn finish_output(&mut self) -> Result<worldloom_core::ModelOutput, Halt> {
        let delta = self.parser.flush();
        self.emit(delta)?;
        let parser = std::mem::replace(&mut self.parser, OutputParser::new(false));
        Ok(parser.finish_output())
    }

    pub(super) fn stats(&self, stop_reason: Option<StopReason>) -> GenerationStats {
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
            decode_tokens_per_sec: GenerationStats::decode_rate(completion_tokens, decode_ms),
            stop_reason,
            ..GenerationStats::default()
        }
    }
}

/// The tokens a choice reports log-probabilities for: the chat shape
/// (`logprobs.content[]` of `{token, logprob, top_logprobs: [{token,
/// logprob}]}`) or the legacy completions shape (`logprobs.tokens[]` with
/// `token_logprobs[]` and `top_logprobs[]` maps of token to
/// log-probability). No ids. A token whose log-probability is missing or
/// `null` keeps its text with `logprob: None`; alternatives without a
/// number are left out.
fn logprob_tokens(choice: &Value) -> Vec<Token> {
    let Some(logprobs) = choice.get("logprobs").filter(|l| l.is_object()) else {
        return Vec::new();
    };
    let number = |v: Option<&Value>| v.and_then(Value::as_f64).map(|x| x as f32);
    if let Some(items) = logprobs.get("content").and_then(Value::as_array) {
        return items
            .iter()
            .filter_map(|item| {
                let text = item.get("token")?.as_str()?.to_owned();
                let top = item
                    .get("top_logprobs")
                    .and_then(Value::as_array)
                    .map(|alts| {
                        alts.iter()
                            .filter_map(|alt| {
                                Some(TopLogprob {
                                    text: alt.get("token")?.as_str()?.to_owned(),
                                    id: None,
                                    logprob: number(alt.get("logprob"))?,
                                })
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                Some(Token {
                    text,
                    id: None,
                    logprob: number(item.get("logprob")),
                    top,
                })
            })
            .collect();
    }
    let Some(texts) = logprobs.get("tokens").and_then(Value::as_array) else {
        return Vec::new();
    };
    let values = logprobs.get("token_logprobs").and_then(Value::as_array);
    let tops = logprobs.get("top_logprobs").and_then(Value::as_array);
    texts
        .iter()
        .enumerate()
        .filter_map(|(i, text)| {
            let mut top: Vec<TopLogprob> = tops
                .and_then(|t| t.get(i))
                .and_then(Value::as_object)
                .map(|alts| {
                    alts.iter()
                        .filter_map(|(text, lp)| {
                            Some(TopLogprob {
                                text: text.clone(),
                                id: None,
                                logprob: number(Some(lp))?,
                            })
                        })
                        .collect()
                })
                .unwrap_or_default();
            // A JSON object has no order to rely on: most likely first.
            top.sort_by(|a, b| b.logprob.total_cmp(&a.logprob));
            Some(Token {
                text: text.as_str()?.to_owned(),
                id: None,
                logprob: number(values.and_then(|v| v.get(i))),
                top,
            })
        })
        .collect()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
