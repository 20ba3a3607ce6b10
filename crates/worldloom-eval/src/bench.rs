//! AgentWorldBench rows: loading, chat building and ground truth.
//!
//! Source: the AgentWorldBench data format and the official evaluation
//! script `eval/eval.py` of QwenLM/Qwen-AgentWorld. A row is one JSON object
//! per line in `<domain>_test.jsonl`, with `task`, `id`, `system_str`,
//! `prompt` (list of turn prompts, or one string), `response` (list of
//! real observations, or one string), `current_prompt`, `turn_idx`
//! (1-based) and `total_turns`. Rows are kept as JSON objects so every field,
//! known or not, is written back unchanged.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use worldloom_core::{ChatMessage, ChatRole, Representation};

use crate::EvalError;

/// One benchmark row and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchRow {
    /// The row's fields in file order.
    pub fields: Map<String, Value>,
    /// The file it was read from.
    pub source: PathBuf,
    /// 1-based line number in `source`.
    pub line: usize,
}

/// The files to read: `path` itself when it is a file, else every
/// `*_test.jsonl` directly inside it, sorted by name (as the official script
/// globs them).
///
/// Errors: [`EvalError::Io`] when the path cannot be read,
/// [`EvalError::Input`] when a folder holds no `*_test.jsonl`.
pub fn bench_files(path: &Path) -> Result<Vec<PathBuf>, EvalError> {
    let meta = std::fs::metadata(path).map_err(|e| EvalError::io(path, e))?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| EvalError::io(path, e))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|p| {
            p.is_file()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with("_test.jsonl"))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(EvalError::Input(format!(
            "{}: no *_test.jsonl files in this folder",
            path.display()
        )));
    }
    Ok(files)
}

/// Reads every row of a file or folder (see [`bench_files`]); blank lines
/// are skipped.
///
/// Errors: [`EvalError::Io`]; [`EvalError::Input`] naming file and line for
/// a line that is not a JSON object.
pub fn load_rows(path: &Path) -> Result<Vec<BenchRow>, EvalError> {
    let mut rows = Vec::new();
    for file in bench_files(path)? {
        let text = std::fs::read_to_string(&file).map_err(|e| EvalError::io(&file, e))?;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let value: Value = serde_json::from_str(line).map_err(|e| {
                EvalError::Input(format!("{}:{}: not JSON: {e}", file.display(), i + 1))
            })?;
            let Value::Object(fields) = value else {
                return Err(EvalError::Input(format!(
                    "{}:{}: not a JSON object",
                    file.display(),
                    i + 1
                )));
            };
            rows.push(BenchRow {
                fields,
                source: file.clone(),
                line: i + 1,
            });
        }
    }
    Ok(rows)
}

impl BenchRow {
    fn at(&self) -> String {
        format!("{}:{}", self.source.display(), self.line)
    }

    /// The domain name: the last `/` part of `task` (`agentworld/web` →
    /// `web`), `mcp` when `task` is absent, as in the official script.
    pub fn domain(&self) -> String {
        domain_of(&self.fields)
    }

    /// The 0-based index of the evaluated turn: `max(turn_idx − 1, 0)`,
    /// `turn_idx` defaulting to 1.
    ///
    /// Errors: [`EvalError::Input`] when `turn_idx` is not an integer.
    pub fn turn_index(&self) -> Result<usize, EvalError> {
        match self.fields.get("turn_idx") {
            None | Some(Value::Null) => Ok(0),
            Some(v) => v.as_i64().map(|t| (t - 1).max(0) as usize).ok_or_else(|| {
                EvalError::Input(format!(
                    "{}: field `turn_idx` is not an integer: {v}",
                    self.at()
                ))
            }),
        }
    }

    fn string_list(&self, field: &str) -> Result<Vec<String>, EvalError> {
        match self.fields.get(field) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::String(s)) => Ok(vec![s.clone()]),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    v.as_str().map(str::to_owned).ok_or_else(|| {
                        EvalError::Input(format!(
                            "{}: field `{field}[{i}]` is not a string",
                            self.at()
                        ))
                    })
                })
                .collect(),
            Some(_) => Err(EvalError::Input(format!(
                "{}: field `{field}` is not a string or a list",
                self.at()
            ))),
        }
    }

    fn text_field(&self, field: &str) -> Result<String, EvalError> {
        match self.fields.get(field) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(EvalError::Input(format!(
                "{}: field `{field}` is not a string",
                self.at()
            ))),
        }
    }

    /// The turn prompts (`prompt`).
    ///
    /// Errors: [`EvalError::Input`] for a field of the wrong type.
    pub fn prompts(&self) -> Result<Vec<String>, EvalError> {
        self.string_list("prompt")
    }

    /// The real observations (`response`).
    ///
    /// Errors: [`EvalError::Input`] for a field of the wrong type.
    pub fn responses(&self) -> Result<Vec<String>, EvalError> {
        self.string_list("response")
    }

    /// The prompt of the evaluated turn as the official script's judge shows
    /// it: `current_prompt` when non-empty, else `prompt[turn]`, else empty.
    /// The world model is sent [`BenchRow::turn_prompt`] instead; the two
    /// differ only when the row's `current_prompt` is not `prompt[turn]`.
    ///
    /// Errors: [`EvalError::Input`] for a field of the wrong type.
    pub fn current_prompt(&self) -> Result<String, EvalError> {
        let current = self.text_field("current_prompt")?;
        if !current.is_empty() {
            return Ok(current);
        }
        Ok(self
            .prompts()?
            .get(self.turn_index()?)
            .cloned()
            .unwrap_or_default())
    }

    /// The prompt of the evaluated turn as the official script's inference
    /// step sends it: `prompt[turn]`, even where `current_prompt` differs;
    /// `current_prompt` when the `prompt` list is too short to hold the turn
    /// (where the official script fails); else empty.
    ///
    /// Errors: [`EvalError::Input`] for a field of the wrong type.
    pub fn turn_prompt(&self) -> Result<String, EvalError> {
        match self.prompts()?.get(self.turn_index()?) {
            Some(prompt) => Ok(prompt.clone()),
            None => self.text_field("current_prompt"),
        }
    }

    /// The chat sent to the world model, built as the official script builds
    /// it: `system_str` as the system message (when non-empty), then for each
    /// earlier turn `j < turn` (bounded by both lists) `prompt[j]` as a user
    /// message and `response[j]` as an assistant message, then
    /// [`BenchRow::turn_prompt`] as the last user message.
    ///
    /// Errors: [`EvalError::Input`] for a field of the wrong type.
    pub fn messages(&self) -> Result<Vec<ChatMessage>, EvalError> {
        let turn = self.turn_index()?;
        let prompts = self.prompts()?;
        let responses = self.responses()?;
        let system = self.text_field("system_str")?;
        let mut messages = Vec::with_capacity(2 * turn + 2);
        if !system.is_empty() {
            messages.push(ChatMessage::new(ChatRole::System, system));
        }
        for j in 0..turn.min(prompts.len()).min(responses.len()) {
            messages.push(ChatMessage::new(ChatRole::User, prompts[j].clone()));
            messages.push(ChatMessage::new(ChatRole::Assistant, responses[j].clone()));
        }
        messages.push(ChatMessage::new(ChatRole::User, self.turn_prompt()?));
        Ok(messages)
    }

    /// The real observation of the evaluated turn (`response[turn]`), raw.
    ///
    /// Errors: [`EvalError::Input`] for a field of the wrong type.
    pub fn ground_truth(&self) -> Result<Option<String>, EvalError> {
        Ok(self.responses()?.get(self.turn_index()?).cloned())
    }

    /// The observation the evaluated action is taken from
    /// (`response[turn − 1]`), raw; `None` on the first turn.
    ///
    /// Errors: [`EvalError::Input`] for a field of the wrong type.
    pub fn previous_observation(&self) -> Result<Option<String>, EvalError> {
        let turn = self.turn_index()?;
        if turn == 0 {
            return Ok(None);
        }
        Ok(self.responses()?.get(turn - 1).cloned())
    }

    /// The key that identifies this row across runs (for resuming):
    /// `domain|id|turn_idx`, or the file name and line when `id` is absent.
    pub fn key(&self) -> String {
        let turn = self
            .fields
            .get("turn_idx")
            .map(Value::to_string)
            .unwrap_or_else(|| "1".to_owned());
        match self.fields.get("id") {
            Some(id) if !id.is_null() => format!("{}|{id}|{turn}", self.domain()),
            _ => format!(
                "{}|{}:{}",
                self.domain(),
                self.source
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                self.line
            ),
        }
    }
}

/// The domain of a row given as a JSON object (see [`BenchRow::domain`]).
pub fn domain_of(fields: &Map<String, Value>) -> String {
    let task = fields.get("task").and_then(Value::as_str).unwrap_or("mcp");
    task.rsplit('/').next().unwrap_or(task).to_owned()
}

/// Removes a leading `**Environment Observation:**` marker (the prefix of
/// AgentWorldBench ground-truth responses) and surrounding whitespace.
pub fn strip_response_marker(text: &str) -> &str {
    let trimmed = text.trim();
    trimmed
        .strip_prefix(worldloom_core::observation::AWB_RESPONSE_MARKER)
        .map(str::trim)
        .unwrap_or(trimmed)
}

/// Guesses how an observation is written, for the deterministic metrics:
/// GUI domains by their first character (`<` → HTML / AT-SPI XML /
/// uiautomator XML; otherwise BrowserGym accessibility tree for web and the
/// linearized table for OS), other domains JSON when the text parses as
/// JSON, else plain text.
pub fn sniff_representation(domain: &str, observation: &str) -> Representation {
    let t = observation.trim_start();
    let markup = t.starts_with('<');
    match domain {
        "web" if markup => Representation::Html,
        "web" => Representation::Axtree,
        "os" if markup => Representation::OsXml,
        "os" => Representation::OsTable,
        "android" => Representation::AndroidXml,
        _ if serde_json::from_str::<Value>(t).is_ok_and(|v| v.is_object() || v.is_array()) => {
            Representation::Json
        }
        _ => Representation::Text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(value: Value) -> BenchRow {
        let Value::Object(fields) = value else {
            panic!("not an object")
        };
        BenchRow {
            fields,
            source: PathBuf::from("x_test.jsonl"),
            line: 3,
        }
    }

    #[test]
    fn messages_follow_the_official_layout() {
        let r = row(
            json!({"task": "agentworld/terminal", "id": 7, "system_str": "S",
            "prompt": ["p1", "p2", "p3"], "response": ["o1", "o2", "o3"], "turn_idx": 3}),
        );
        let m = r.messages().unwrap();
        let got: Vec<(ChatRole, &str)> = m.iter().map(|m| (m.role, m.content.as_str())).collect();
        assert_eq!(
            got,
            vec![
                (ChatRole::System, "S"),
                (ChatRole::User, "p1"),
                (ChatRole::Assistant, "o1"),
                (ChatRole::User, "p2"),
                (ChatRole::Assistant, "o2"),
                (ChatRole::User, "p3"),
            ]
        );
        assert_eq!(r.ground_truth().unwrap().as_deref(), Some("o3"));
        assert_eq!(r.previous_observation().unwrap().as_deref(), Some("o2"));
        assert_eq!(r.domain(), "terminal");
        assert_eq!(r.key(), "terminal|7|3");
    }

    #[test]
    fn turn_prompt_wins_over_current_prompt_and_strings_are_lists() {
        let r = row(
            json!({"prompt": "only", "response": "obs", "current_prompt": "now", "system_str": ""}),
        );
        let m = r.messages().unwrap();
        assert_eq!(m, vec![ChatMessage::new(ChatRole::User, "only")]);
        // The judge shows the row's `current_prompt`, as the official judge does.
        assert_eq!(r.current_prompt().unwrap(), "now");
        assert_eq!(r.domain(), "mcp");
        assert_eq!(r.ground_truth().unwrap().as_deref(), Some("obs"));
        assert_eq!(r.previous_observation().unwrap(), None);
        assert_eq!(r.key(), "mcp|x_test.jsonl:3");
    }

    #[test]
    fn current_prompt_stands_in_only_when_prompt_is_too_short() {
        let r = row(
            json!({"prompt": ["p1", "p2"], "response": ["o1", "o2", "o3"],
            "current_prompt": "c3", "turn_idx": 3}),
        );
        let m = r.messages().unwrap();
        assert_eq!(
            m,
            vec![
                ChatMessage::new(ChatRole::User, "p1"),
                ChatMessage::new(ChatRole::Assistant, "o1"),
                ChatMessage::new(ChatRole::User, "p2"),
                ChatMessage::new(ChatRole::Assistant, "o2"),
                ChatMessage::new(ChatRole::User, "c3"),
            ]
        );
        assert_eq!(r.current_prompt().unwrap(), "c3");
        let r = row(json!({"prompt": ["p1", "p2"], "response": ["o1", "o2"],
            "current_prompt": "other", "turn_idx": 2}));
        assert_eq!(r.turn_prompt().unwrap(), "p2");
        assert_eq!(
            r.messages().unwrap()[2],
            ChatMessage::new(ChatRole::User, "p2")
        );
        assert_eq!(r.current_prompt().unwrap(), "other");
        let r = row(json!({"prompt": [], "turn_idx": 1}));
        assert_eq!(
            r.messages().unwrap(),
            vec![ChatMessage::new(ChatRole::User, "")]
        );
    }

    #[test]
    fn history_is_bounded_by_both_lists() {
        let r = row(json!({"prompt": ["p1", "p2", "p3"], "response": ["o1"], "turn_idx": 3}));
        let m = r.messages().unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m[2], ChatMessage::new(ChatRole::User, "p3"));
        assert_eq!(r.ground_truth().unwrap(), None);
    }

    #[test]
    fn wrong_types_name_file_line_and_field() {
        let e = row(json!({"turn_idx": "2"}))
            .messages()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x_test.jsonl:3") && e.contains("`turn_idx`"),
            "{e}"
        );
        let e = row(json!({"prompt": [1]}))
            .messages()
            .unwrap_err()
            .to_string();
        assert!(e.contains("`prompt[0]`"), "{e}");
    }

    #[test]
    fn representation_guess() {
        assert_eq!(
            sniff_representation("web", "RootWebArea 'x'"),
            Representation::Axtree
        );
        assert_eq!(sniff_representation("web", " <html>"), Representation::Html);
        assert_eq!(
            sniff_representation("os", "<desktop-frame/>"),
            Representation::OsXml
        );
        assert_eq!(
            sniff_representation("os", "tag\tname"),
            Representation::OsTable
        );
        assert_eq!(
            sniff_representation("mcp", "{\"a\": 1}"),
            Representation::Json
        );
        assert_eq!(
            sniff_representation("terminal", "total 0"),
            Representation::Text
        );
        assert_eq!(
            strip_response_marker("**Environment Observation:**\n ok \n"),
            "ok"
        );
    }
}
