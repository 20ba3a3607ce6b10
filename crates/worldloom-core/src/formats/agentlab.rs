//! BrowserGym / AgentLab step records as JSON: a list of steps (top level, or
//! under `steps`), each with the observation at step t (`axtree_txt`,
//! `pruned_html`, `dom_txt`, `url`, `focused_element_bid`,
//! `open_pages_urls`/`open_pages_titles`, `extra_element_properties`,
//! `last_action_error`) and the action taken at step t (`action`, with the
//! agent's `think` and `llm_answer_raw`); step t+1 holds the next observation
//! and the last step's action is `null` (BrowserGym `StepInfo`).
//!
//! Mapping: step t is node t; its action is the edge to node t+1. The main
//! text is `axtree_txt` (else `pruned_html`, else `dom_txt`); the others are
//! views. `last_action_error` (the error of the action that led to step t)
//! becomes the node's [`StepError`]; with an empty tree it makes an error
//! step, not a blank page. Every other field is kept in the node's or edge's
//! `extra`.
//!
//! A file holding raw observation objects instead of steps (a CDP
//! `dom_object` / `axtree_object` snapshot) imports as a one-state trajectory
//! whose observation is the file's JSON text.

use std::path::Path;

use serde_json::{Map, Value};

use crate::action::{Action, ActionFormat};
use crate::domain::{Domain, Representation};
use crate::error::{CoreError, ImportWarning, Result, json_error};
use crate::formats::{file_name, file_stem};
use crate::observation::{Observation, ObservationView, StepError, StepErrorKind};
use crate::trajectory::{Source, Trajectory};

const OBS_TEXT_FIELDS: [(&str, Representation); 3] = [
    ("axtree_txt", Representation::Axtree),
    ("pruned_html", Representation::Html),
    ("dom_txt", Representation::Html),
];

/// Whether a parsed JSON document looks like AgentLab step records or a raw
/// BrowserGym observation snapshot.
pub fn looks_like(value: &Value) -> bool {
    let is_step = |v: &Value| {
        OBS_TEXT_FIELDS.iter().any(|(k, _)| v.get(k).is_some())
            || v.get("last_action_error").is_some()
    };
    match value {
        Value::Array(items) => items.first().is_some_and(is_step),
        Value::Object(obj) => {
            obj.get("steps")
                .and_then(Value::as_array)
                .is_some_and(|s| s.first().is_some_and(is_step))
                || is_step(value)
                || obj.contains_key("axtree_object")
                || obj.contains_key("dom_object")
        }
        _ => false,
    }
}

/// Imports one AgentLab step JSON file.
///
/// # Errors
/// [`CoreError::Json`] with line and column for invalid JSON;
/// [`CoreError::Field`] naming `steps[i].field` for a field of the wrong type;
/// [`CoreError::Format`] when the file holds no steps.
pub fn import(path: &Path, warnings: &mut Vec<ImportWarning>) -> Result<Trajectory> {
    let text = crate::text::read_text_into(path, warnings)?;
    let value: Value = serde_json::from_str(&text).map_err(|e| json_error(path, &e))?;
    let (steps, top): (Vec<Value>, Map<String, Value>) = match value {
        Value::Array(items) => (items, Map::new()),
        Value::Object(mut obj) => match obj.remove("steps") {
            Some(Value::Array(items)) => (items, obj),
            Some(other) => {
                return Err(CoreError::Field {
                    path: path.to_path_buf(),
                    line: None,
                    field: "steps".into(),
                    message: format!("expected a list, found {other}"),
                });
            }
            None if obj.contains_key("axtree_object") || obj.contains_key("dom_object") => {
                return Ok(snapshot(path, &text, obj));
            }
            None => (vec![Value::Object(obj)], Map::new()),
        },
        _ => {
            return Err(CoreError::Format {
                path: path.to_path_buf(),
                message: "expected a JSON list of steps or an object with `steps`".into(),
            });
        }
    };
    if steps.is_empty() {
        return Err(CoreError::Format {
            path: path.to_path_buf(),
            message: "no steps".into(),
        });
    }
    let mut t = Trajectory::new(file_stem(path), Domain::Web, None);
    t.source = Source {
        format: "agentlab".into(),
        path: Some(file_name(path)),
    };
    t.extra = top;
    t.goal = steps[0]
        .get("goal")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut node = t.root();
    let mut pending_action: Option<(Action, Map<String, Value>)> = None;
    let count = steps.len();
    for (i, step) in steps.into_iter().enumerate() {
        let field = |name: &str, message: String| CoreError::Field {
            path: path.to_path_buf(),
            line: None,
            field: format!("steps[{i}].{name}"),
            message,
        };
        let Value::Object(mut obj) = step else {
            return Err(field("(step)", "expected an object".into()));
        };
        let take_string = |obj: &mut Map<String, Value>, name: &str| -> Result<Option<String>> {
            match obj.remove(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s)),
                Some(other) => {
                    let message = format!("expected a string, found {other}");
                    obj.insert(name.to_owned(), other);
                    Err(field(name, message))
                }
            }
        };
        let mut texts = Vec::new();
        for (name, repr) in OBS_TEXT_FIELDS {
            if let Some(text) = take_string(&mut obj, name)? {
                texts.push((name, repr, text));
            }
        }
        let mut observation = match texts.first() {
            Some((_, repr, text)) => Observation::new(*repr, text.clone()),
            None => Observation::new(Representation::Axtree, String::new()),
        };
        observation.views = texts
            .iter()
            .skip(1)
            .map(|(name, repr, text)| ObservationView {
                name: (*name).to_owned(),
                representation: *repr,
                text: text.clone(),
            })
            .collect();
        let url = take_string(&mut obj, "url")?;
        observation.metadata.focused_bid = match obj.remove("focused_element_bid") {
            Some(Value::String(s)) if !s.is_empty() => Some(s),
            Some(Value::String(_)) | None | Some(Value::Null) => None,
            Some(other) => Some(other.to_string()),
        };
        for key in [
            "open_pages_urls",
            "open_pages_titles",
            "extra_element_properties",
        ] {
            if let Some(v) = obj.remove(key) {
                observation.metadata.extra.insert(key.into(), v);
            }
        }
        let urls = observation
            .metadata
            .extra
            .get("open_pages_urls")
            .and_then(Value::as_array);
        let titles = observation
            .metadata
            .extra
            .get("open_pages_titles")
            .and_then(Value::as_array);
        if let (Some(urls), Some(titles), Some(u)) = (urls, titles, url.as_deref()) {
            observation.metadata.title = urls
                .iter()
                .position(|x| x.as_str() == Some(u))
                .and_then(|p| titles.get(p))
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        observation.metadata.url = url;
        if let Some(message) = take_string(&mut obj, "last_action_error")?.filter(|m| !m.is_empty())
        {
            observation.error = Some(StepError {
                kind: StepErrorKind::Action,
                message,
            });
        }
        if obj.get("goal").and_then(Value::as_str) == t.goal.as_deref() {
            obj.remove("goal");
        }
        let action = obj.remove("action");
        let mut edge_extra = Map::new();
        for key in ["think", "llm_answer_raw"] {
            if let Some(v) = obj.remove(key)
                && !v.is_null()
            {
                edge_extra.insert(key.into(), v);
            }
        }
        // Attach this step's state.
        let target = if i == 0 {
            t.nodes[0].real = Some(observation);
            t.root()
        } else {
            let (act, extra) = pending_action
                .take()
                .unwrap_or_else(|| (Action::new("", ActionFormat::Browsergym), Map::new()));
            let (edge, next) = t.add_step(node, act, Some(observation))?;
            t.edges[edge.0 as usize].extra = extra;
            next
        };
        t.nodes[target.0 as usize].extra = obj;
        node = target;
        match action {
            Some(Value::String(raw)) => {
                pending_action = Some((Action::new(raw, ActionFormat::Browsergym), edge_extra))
            }
            None | Some(Value::Null) => {
                if i + 1 < count {
                    warnings.push(ImportWarning {
                        path: path.display().to_string(),
                        line: None,
                        byte_offset: None,
                        message: format!("steps[{i}] has no action but is followed by another step; an empty action links them"),
                    });
                    pending_action = Some((Action::new("", ActionFormat::Browsergym), edge_extra));
                } else if !edge_extra.is_empty() {
                    t.nodes[target.0 as usize].extra.extend(edge_extra);
                }
            }
            Some(other) => {
                return Err(field(
                    "action",
                    format!("expected a string or null, found {other}"),
                ));
            }
        }
    }
    Ok(t)
}

fn snapshot(path: &Path, text: &str, top: Map<String, Value>) -> Trajectory {
    let mut obs = Observation::new(Representation::Json, text.to_owned());
    if let Some(Value::String(note)) = top.get("note") {
        obs.metadata
            .extra
            .insert("note".into(), Value::String(note.clone()));
    }
    let mut t = Trajectory::new(file_stem(path), Domain::Web, Some(obs));
    t.source = Source {
        format: "agentlab".into(),
        path: Some(file_name(path)),
    };
    t.extra.insert(
        "kind".into(),
        Value::String("raw observation snapshot (CDP DOM snapshot and accessibility tree)".into()),
    );
    t
}
