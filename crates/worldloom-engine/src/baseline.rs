//! World models that need no weights, named for what they do.
//!
//! - [`CopyEngine`] predicts the current state unchanged: the stale-state
//!   baseline. A world model that cannot beat it has learned nothing about
//!   the effect of actions.
//! - [`ReplayEngine`] answers with predictions recorded earlier for exactly
//!   the same chat (a lookup, no model), to re-score or display old runs.
//!
//! Both answer at once on the caller's thread (the whole answer is known), so
//! the [`PredictionStream`] already holds every event when `predict`
//! returns; cancelling has nothing to stop.

use std::collections::HashMap;
use std::path::Path;
use std::sync::mpsc::channel;

use serde::Deserialize;
use worldloom_core::output::{OutputParser, format_observation};
use worldloom_core::{ChatMessage, ChatRole};

use crate::world_model::{
    CancelToken, EngineError, EngineEvent, GenerationStats, PredictRequest, PredictionStream,
    StopReason, Token, WorldModel,
};

/// A finished stream holding the whole `output` as one `Token`, the
/// parser's events for it, and `Done`.
fn answered(output: String) -> PredictionStream {
    let (tx, rx) = channel();
    let mut parser = OutputParser::new(false);
    let mut delta = parser.push(&output);
    delta.extend(parser.flush());
    // The receiver is alive (held below), so these sends cannot fail.
    let _ = tx.send(EngineEvent::Token(Token {
        text: output,
        id: None,
        logprob: None,
        top: Vec::new(),
    }));
    for event in EngineEvent::from_delta(delta) {
        let _ = tx.send(event);
    }
    let _ = tx.send(EngineEvent::Done {
        stats: GenerationStats {
            stop_reason: Some(StopReason::EndOfTurn),
            ..GenerationStats::default()
        },
        output: parser.finish_output(),
    });
    PredictionStream {
        events: rx,
        cancel: CancelToken::new(),
    }
}

/// The stale-state baseline: predicts that the action changes nothing.
///
/// The current state is [`PredictRequest::current_observation`] when given,
/// else the content of the last assistant message (in AgentWorldBench chats
/// that is the observation the current action is taken from). The output is
/// that text verbatim inside the observation block
/// ([`format_observation`]), with no reasoning; token counts in the stats are 0 (no tokenizer is involved).
#[derive(Debug, Clone, Copy, Default)]
pub struct CopyEngine;

impl CopyEngine {
    /// The current state the engine would copy, if the request has one.
    pub fn current_state(request: &PredictRequest) -> Option<&str> {
        request.current_observation.as_deref().or_else(|| {
            request
                .messages
                .iter()
                .rev()
                .find(|m| m.role == ChatRole::Assistant)
                .map(|m| m.content.as_str())
        })
    }
}

impl WorldModel for CopyEngine {
    fn name(&self) -> String {
        "copy".to_owned()
    }

    /// Errors: [`EngineError::InvalidRequest`] when the request has neither a
    /// `current_observation` nor an assistant message (the first turn of a
    /// chat whose state lives only inside the user prompt).
    fn predict(&self, request: PredictRequest) -> Result<PredictionStream, EngineError> {
        let state = Self::current_state(&request).ok_or_else(|| {
            EngineError::InvalidRequest(
                "copy baseline: the request has no current_observation and no assistant message to copy".to_owned(),
            )
        })?;
        Ok(answered(format_observation(state)))
    }
}

/// The key of a recorded prediction: the chat, role by role.
type ChatKey = Vec<(ChatRole, String)>;

fn chat_key(messages: &[ChatMessage]) -> ChatKey {
    messages
        .iter()
        .map(|m| (m.role, m.content.clone()))
        .collect()
}

/// One line of a replay file (JSON Lines): the chat sent to the model and
/// the raw output it gave.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ReplayRecord {
    /// The exact chat (OpenAI chat-completions message shape).
    pub messages: Vec<ChatMessage>,
    /// The raw model output (optional think block, then the observation
    /// block).
    pub output: String,
}

/// Errors reading a replay file.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A line is not a [`ReplayRecord`].
    #[error("{path}:{line}: not a replay record ({message})")]
    Record {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// Replays recorded predictions: the answer to a chat is the output recorded
/// for exactly that chat (same roles and contents, in order); the generation
/// parameters are ignored. Records are given in code
/// ([`ReplayEngine::insert`]) or read from JSON Lines of [`ReplayRecord`].
#[derive(Debug, Clone, Default)]
pub struct ReplayEngine {
    recorded: HashMap<ChatKey, String>,
}

impl ReplayEngine {
    /// An engine with no recordings.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `output` as the answer to `messages` (a later record for the
    /// same chat replaces an earlier one).
    pub fn insert(&mut self, messages: &[ChatMessage], output: impl Into<String>) {
        self.recorded.insert(chat_key(messages), output.into());
    }

    /// Number of recorded chats.
    pub fn len(&self) -> usize {
        self.recorded.len()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.recorded.is_empty()
    }

    /// Reads a JSON Lines file of [`ReplayRecord`]s (blank lines skipped).
    ///
    /// Errors: [`ReplayError::Io`] when unreadable, [`ReplayError::Record`]
    /// naming the line that does not parse.
    pub fn from_jsonl(path: &Path) -> Result<Self, ReplayError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ReplayError::Io {
            path: name.clone(),
            source,
        })?;
        let mut engine = Self::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let record: ReplayRecord =
                serde_json::from_str(line).map_err(|e| ReplayError::Record {
                    path: name.clone(),
                    line: i + 1,
                    message: e.to_string(),
                })?;
            engine.insert(&record.messages, record.output);
        }
        Ok(engine)
    }
}

impl WorldModel for ReplayEngine {
    fn name(&self) -> String {
        "replay".to_owned()
    }

    /// Errors: [`EngineError::InvalidRequest`] when nothing was recorded for
    /// this chat.
    fn predict(&self, request: PredictRequest) -> Result<PredictionStream, EngineError> {
        match self.recorded.get(&chat_key(&request.messages)) {
            Some(output) => Ok(answered(output.clone())),
            None => Err(EngineError::InvalidRequest(format!(
                "replay: no prediction recorded for this chat ({} messages; {} chats recorded)",
                request.messages.len(),
                self.recorded.len()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world_model::GenerationParams;

    fn chat() -> Vec<ChatMessage> {
        vec![
            ChatMessage::new(ChatRole::System, "sys"),
            ChatMessage::new(ChatRole::User, "ls"),
            ChatMessage::new(ChatRole::Assistant, "a.txt b.txt"),
            ChatMessage::new(ChatRole::User, "touch c.txt"),
        ]
    }

    fn collect(stream: PredictionStream) -> Vec<EngineEvent> {
        stream.events.iter().collect()
    }

    #[test]
    fn copy_repeats_last_assistant_message() {
        let events = collect(
            CopyEngine
                .predict(PredictRequest::new(chat(), GenerationParams::default()))
                .unwrap(),
        );
        assert_eq!(events.len(), 4);
        assert_eq!(
            events[0],
            EngineEvent::Token(Token {
                text: "<predicted_observation>\na.txt b.txt\n</predicted_observation>".into(),
                id: None,
                logprob: None,
                top: Vec::new(),
            })
        );
        assert_eq!(
            events[1],
            EngineEvent::Answer {
                text: "<predicted_observation>\na.txt b.txt\n</predicted_observation>".into()
            }
        );
        assert_eq!(
            events[2],
            EngineEvent::Observation {
                text: "a.txt b.txt".into()
            }
        );
        assert!(
            matches!(&events[3], EngineEvent::Done { stats, output } if stats.stop_reason == Some(StopReason::EndOfTurn) && output.parsed.observation.as_deref() == Some("a.txt b.txt"))
        );
    }

    #[test]
    fn copy_prefers_current_observation() {
        let mut request = PredictRequest::new(chat(), GenerationParams::default());
        request.current_observation = Some("<html/>".into());
        let events = collect(CopyEngine.predict(request).unwrap());
        assert_eq!(
            events[1],
            EngineEvent::Answer {
                text: format_observation("<html/>")
            }
        );
    }

    #[test]
    fn copy_without_state_is_refused() {
        let request = PredictRequest::new(
            vec![ChatMessage::new(ChatRole::User, "go")],
            GenerationParams::default(),
        );
        assert!(matches!(
            CopyEngine.predict(request),
            Err(EngineError::InvalidRequest(_))
        ));
    }

    #[test]
    fn replay_looks_up_exact_chat() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let record = serde_json::json!({"messages": chat(), "output": "<think>t</think>X"});
        std::fs::write(&path, format!("{record}\n\n")).unwrap();
        let engine = ReplayEngine::from_jsonl(&path).unwrap();
        assert_eq!(engine.len(), 1);
        let events = collect(
            engine
                .predict(PredictRequest::new(chat(), GenerationParams::default()))
                .unwrap(),
        );
        assert!(
            matches!(&events[0], EngineEvent::Token(t) if t.text == "<think>t</think>X"),
            "{events:?}"
        );
        assert_eq!(events[1], EngineEvent::Reasoning { text: "t".into() });
        assert_eq!(events[2], EngineEvent::Answer { text: "X".into() });
        let mut other = chat();
        other[3].content.push('!');
        assert!(
            engine
                .predict(PredictRequest::new(other, GenerationParams::default()))
                .is_err()
        );
    }

    #[test]
    fn replay_file_errors_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        std::fs::write(&path, "{\"messages\": [], \"output\": \"\"}\n{oops\n").unwrap();
        let err = ReplayEngine::from_jsonl(&path).unwrap_err().to_string();
        assert!(err.contains("r.jsonl:2:"), "{err}");
    }
}
