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
//! An AgentLab result folder (`step_N.pkl.gz`, `exp_args.pkl`,
//! `summary_info.json`, `screenshot_step_N.png`) holds the same steps as
//! gzip'd pickles of AgentLab's `StepInfo`; [`import_results_folder`] reads
//! them with the restricted unpickler of [`crate::formats::pickle`] (nothing
//! executed or imported; unknown classes, NumPy arrays among them, become
//! inert records) and maps each as a step of the JSON format.
//!
//! A step's `screenshot_path` (a result folder's `screenshot_step_N.png`)
//! that names an existing file gives its state a screenshot
//! ([`crate::screenshot::attach`]).
//!
//! A file holding raw observation objects instead of steps (a CDP
//! `dom_object` / `axtree_object` snapshot) imports as a one-state trajectory
//! whose observation is the file's JSON text.

use std::path::Path;

use serde_json::{Map, Value};

use crate::action::{Action, ActionFormat};
use crate::domain::{Domain, Representation};
use crate::error::{CoreError, ImportWarning, Result, json_error};
use crate::formats::{AGENT_REASONING, file_name, file_stem};
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
    let text = crate::input::read_text_into(path, warnings)?;
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
    from_steps(path, file_stem(path), steps, top, warnings)
}

/// Builds the trajectory `id` from step records (JSON objects, as in the
/// step JSON file) and the file's other top-level fields `top`.
///
/// # Errors
/// As [`import`], naming `path`.
fn from_steps(
    path: &Path,
    id: String,
    steps: Vec<Value>,
    top: Map<String, Value>,
    warnings: &mut Vec<ImportWarning>,
) -> Result<Trajectory> {
    if steps.is_empty() {
        return Err(CoreError::Format {
            path: path.to_path_buf(),
            message: "no steps".into(),
        });
    }
    let mut t = Trajectory::new(id, Domain::Web, None);
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
        if let Some(file) = screenshot_file(path, &obj) {
            crate::screenshot::attach(&mut t.nodes[target.0 as usize].screenshot, &file, warnings);
        }
        t.nodes[target.0 as usize].extra = obj;
        node = target;
        match action {
            Some(Value::String(raw)) => {
                let action = match executed_action(&raw) {
                    Some(executed) => {
                        // The agent's whole answer was stored as the action:
                        // keep what BrowserGym ran, the rest as reasoning.
                        if !edge_extra.contains_key(AGENT_REASONING)
                            && !executed.reasoning.is_empty()
                        {
                            edge_extra
                                .insert(AGENT_REASONING.into(), Value::String(executed.reasoning));
                        }
                        edge_extra.insert(RECORDED_ACTION.into(), Value::String(raw));
                        Action::new(executed.code, ActionFormat::Browsergym)
                    }
                    None => Action::new(raw, ActionFormat::Browsergym),
                };
                pending_action = Some((action, edge_extra))
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

/// The edge `extra` field holding the action text as recorded, when the
/// action imported is the code taken out of it ([`executed_action`]).
pub const RECORDED_ACTION: &str = "recorded_action";

/// What BrowserGym executed of an agent's free-text answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutedAction {
    /// The code of the answer's fenced block (its language tag, such as
    /// `python`, dropped), trimmed.
    pub code: String,
    /// The rest of the answer, trimmed: the agent's reasoning.
    pub reasoning: String,
}

/// The action executed from a recorded action that is an agent's whole
/// answer (several sentences ending in a fenced `` ```click('123')``` ``):
/// AgentLab's demo agent stores its raw answer as the action, and
/// BrowserGym's non-strict action set runs the calls in it. The code is the
/// last fenced block whose contents parse as BrowserGym calls; everything
/// else is the reasoning. `None` when `raw` already parses as BrowserGym
/// calls, or when no fenced block of it does (it is then kept as written).
pub fn executed_action(raw: &str) -> Option<ExecutedAction> {
    if crate::action::parse_action(raw, ActionFormat::Browsergym).is_some() {
        return None;
    }
    let fences: Vec<usize> = raw.match_indices("```").map(|(i, _)| i).collect();
    // Pairs of fences, last first: the answer's final block is the action.
    for pair in fences.chunks_exact(2).rev() {
        let (open, close) = (pair[0], pair[1]);
        let inside = &raw[open + 3..close];
        let code = match inside.split_once('\n') {
            // A language tag on the opening fence's line.
            Some((tag, rest))
                if !tag.trim().is_empty()
                    && tag.trim().chars().all(|c| c.is_ascii_alphanumeric()) =>
            {
                rest
            }
            _ => inside,
        }
        .trim();
        if code.is_empty() || crate::action::parse_action(code, ActionFormat::Browsergym).is_none()
        {
            continue;
        }
        let reasoning = format!("{}{}", &raw[..open], &raw[close + 3..]);
        return Some(ExecutedAction {
            code: code.to_owned(),
            reasoning: reasoning.trim().to_owned(),
        });
    }
    None
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

/// Fields of an AgentLab `StepInfo` kept on the node besides the
/// observation and the action.
const STEP_FIELDS_KEPT: [&str; 5] = [
    "reward",
    "raw_reward",
    "terminated",
    "truncated",
    "task_info",
];

/// Observation fields not imported from a step pickle: the raw CDP
/// snapshots, which `axtree_txt` and `pruned_html` render.
const OBS_FIELDS_DROPPED: [&str; 2] = ["dom_object", "axtree_object"];

/// The step pickles of an AgentLab result folder (`step_N.pkl.gz`, or
/// `step_N.pkl`), by step number.
fn step_pickles(dir: &Path) -> Result<std::collections::BTreeMap<usize, std::path::PathBuf>> {
    crate::formats::folder::step_files(dir, &[".pkl.gz", ".pkl"])
}

/// Whether `dir` is an AgentLab result folder: it holds `step_N.pkl.gz`
/// step pickles or an `exp_args.pkl`.
pub fn is_result_folder(dir: &Path) -> bool {
    dir.is_dir()
        && (dir.join("exp_args.pkl").is_file() || step_pickles(dir).is_ok_and(|s| !s.is_empty()))
}

fn read_pickle(path: &Path) -> Result<crate::formats::pickle::Pickle> {
    use crate::formats::pickle;
    let file = crate::input::open(path)?;
    pickle::load_reader(file, &pickle::Limits::default()).map_err(|e| CoreError::Format {
        path: path.to_path_buf(),
        message: format!("not a readable pickle: {e}"),
    })
}

fn pickle_json(
    path: &Path,
    p: &crate::formats::pickle::Pickle,
    v: &crate::formats::pickle::PyValue,
) -> Result<Value> {
    p.to_json(v).map_err(|e| CoreError::Format {
        path: path.to_path_buf(),
        message: format!("not a readable pickle: {e}"),
    })
}

/// One `StepInfo` pickle as a step record of the step JSON format.
fn step_from_pickle(path: &Path, dir: &Path, number: usize) -> Result<Value> {
    use crate::formats::pickle::PyValue;
    let p = read_pickle(path)?;
    let root = p.root();
    let what = |v: &PyValue| match p.class_of(v) {
        Some((m, n)) => crate::formats::pickle::record_label(m, n),
        None => {
            let text = pickle_json(path, &p, v).unwrap_or(Value::Null).to_string();
            match text.char_indices().nth(200) {
                Some((cut, _)) => format!("{}…", &text[..cut]),
                None => text,
            }
        }
    };
    let Some(fields) = p.fields(root) else {
        return Err(CoreError::Format {
            path: path.to_path_buf(),
            message: format!(
                "not an AgentLab step (a StepInfo with `obs` and `action`): the pickle holds {}",
                what(root)
            ),
        });
    };
    if !fields.iter().any(|(k, _)| *k == "obs" || *k == "action") {
        return Err(CoreError::Format {
            path: path.to_path_buf(),
            message: format!(
                "not an AgentLab step (a StepInfo with `obs` and `action`): the pickle holds {} without either",
                what(root)
            ),
        });
    }
    let field_error = |name: &str, message: String| CoreError::Field {
        path: path.to_path_buf(),
        line: None,
        field: name.to_owned(),
        message,
    };
    let mut step = Map::new();
    if let Some(obs) = p.field(root, "obs").filter(|o| **o != PyValue::None) {
        let Some(obs_fields) = p.fields(obs) else {
            return Err(field_error(
                "obs",
                format!("expected a dict, found {}", what(obs)),
            ));
        };
        for (key, value) in obs_fields {
            if OBS_FIELDS_DROPPED.contains(&key) {
                continue;
            }
            let json = pickle_json(path, &p, value)?;
            let must_be_text = OBS_TEXT_FIELDS.iter().any(|(k, _)| *k == key)
                || matches!(key, "url" | "last_action_error" | "goal");
            if must_be_text && !(json.is_string() || json.is_null()) {
                return Err(field_error(
                    &format!("obs.{key}"),
                    format!("expected a string, found {json}"),
                ));
            }
            step.insert(key.to_owned(), json);
        }
    }
    let action = match p.field(root, "action") {
        None | Some(PyValue::None) => Value::Null,
        Some(PyValue::Str(s)) => Value::String(s.to_string()),
        Some(other) => {
            return Err(field_error(
                "action",
                format!("expected a string or None, found {}", what(other)),
            ));
        }
    };
    step.insert("action".into(), action);
    if let Some(think) = p
        .field(root, "agent_info")
        .and_then(|info| p.field(info, "think"))
    {
        step.insert("think".into(), pickle_json(path, &p, think)?);
    }
    for key in STEP_FIELDS_KEPT {
        if let Some(v) = p.field(root, key) {
            step.insert(key.into(), pickle_json(path, &p, v)?);
        }
    }
    for (key, prefix) in [
        ("screenshot_path", "screenshot_step_"),
        ("screenshot_som_path", "screenshot_som_step_"),
    ] {
        if let Some(name) = ["png", "jpg", "jpeg"]
            .iter()
            .map(|ext| format!("{prefix}{number}.{ext}"))
            .find(|name| dir.join(name).is_file())
        {
            step.insert(key.into(), Value::String(name));
        }
    }
    Ok(Value::Object(step))
}

/// The screenshot file a step names (`screenshot_path`: the result
/// folder's `screenshot_step_N.png`, or a recorded path), found as given,
/// relative to the step file's folder, or by its file name in that folder
/// (a path recorded on another machine); `None` when no such file exists.
fn screenshot_file(path: &Path, step: &Map<String, Value>) -> Option<std::path::PathBuf> {
    let named = Path::new(step.get("screenshot_path")?.as_str()?);
    let dir = if path.is_dir() {
        path
    } else {
        path.parent().unwrap_or(Path::new(""))
    };
    [
        Some(dir.join(named)),
        named.file_name().map(|n| dir.join(n)),
    ]
    .into_iter()
    .flatten()
    .find(|p| p.is_file())
}

/// The text items of a BrowserGym `goal_object` (a list of
/// `{"type": "text", "text": …}` messages), joined by newlines.
fn goal_text(goal_object: &Value) -> Option<String> {
    let texts: Vec<&str> = goal_object
        .as_array()?
        .iter()
        .filter_map(|m| m.get("text").and_then(Value::as_str))
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// Imports an AgentLab result folder: `step_N.pkl.gz` pickles of AgentLab's
/// `StepInfo` (observation at step N, action taken from it), with optional
/// `exp_args.pkl`, `summary_info.json`, `goal_object.pkl.gz` and
/// `screenshot_step_N.png` beside them. Pickles are read by
/// [`crate::formats::pickle`], which executes and imports nothing; classes
/// become inert records. Each step maps as a step of the JSON format; the
/// trajectory's `extra` holds `exp_args` and `summary_info`.
///
/// # Errors
/// [`CoreError::Format`] naming the step file for a pickle that does not
/// read (with byte offset and opcode) or is not a step;
/// [`CoreError::Field`] naming the file and field for an observation text
/// that is not a string; [`CoreError::Format`] for a folder without steps.
pub fn import_results_folder(dir: &Path, warnings: &mut Vec<ImportWarning>) -> Result<Trajectory> {
    let files = step_pickles(dir)?;
    if files.is_empty() {
        return Err(CoreError::Format {
            path: dir.to_path_buf(),
            message: "an AgentLab result folder without step_N.pkl.gz files: the experiment recorded no step".into(),
        });
    }
    let mut expected = 0;
    let mut steps = Vec::with_capacity(files.len());
    for (number, file) in &files {
        if *number != expected {
            warnings.push(ImportWarning {
                path: dir.display().to_string(),
                line: None,
                byte_offset: None,
                message: format!(
                    "no step_{expected}.pkl.gz: steps {expected}–{} are missing; the steps around the gap are linked directly",
                    number - 1
                ),
            });
        }
        expected = number + 1;
        steps.push(step_from_pickle(file, dir, *number)?);
    }
    let mut top = Map::new();
    let exp_args = dir.join("exp_args.pkl");
    if exp_args.is_file() {
        match read_pickle(&exp_args).and_then(|p| pickle_json(&exp_args, &p, p.root())) {
            Ok(v) => {
                top.insert("exp_args".into(), v);
            }
            Err(e) => warnings.push(ImportWarning {
                path: exp_args.display().to_string(),
                line: None,
                byte_offset: None,
                message: format!("not imported: {e}"),
            }),
        }
    }
    let summary = dir.join("summary_info.json");
    if summary.is_file() {
        let text = crate::input::read_text_into(&summary, warnings)?;
        match serde_json::from_str::<Value>(&text) {
            Ok(v) => {
                top.insert("summary_info".into(), v);
            }
            Err(e) => warnings.push(ImportWarning {
                path: summary.display().to_string(),
                line: Some(e.line()),
                byte_offset: None,
                message: format!("not imported: invalid JSON: {e}"),
            }),
        }
    }
    let has_goal = steps[0].get("goal").is_some_and(Value::is_string);
    if !has_goal {
        let from_obs = steps[0].get("goal_object").and_then(goal_text);
        let goal_file = dir.join("goal_object.pkl.gz");
        let goal = match from_obs {
            Some(g) => Some(g),
            None if goal_file.is_file() => {
                let p = read_pickle(&goal_file)?;
                goal_text(&pickle_json(&goal_file, &p, p.root())?)
            }
            None => None,
        };
        if let (Some(goal), Value::Object(first)) = (goal, &mut steps[0]) {
            first.insert("goal".into(), Value::String(goal));
        }
    }
    from_steps(dir, file_name(dir), steps, top, warnings)
}
