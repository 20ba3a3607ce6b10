//! WebArena result traces: the HTML render its runner writes per task
//! (`render_<task_id>.html`, `browser_env/helper_functions.py`
//! `RenderHelper`) and the JSON traces derived from it (a list of
//! `{"instruction", "input", "output"}` turns closed by
//! `{"meta_data": {"intent", "result"}}`).
//!
//! The render holds the task's config as `key: value` lines in a first
//! `<pre>`, then per step: `<h3 class='url'>` (the page URL),
//! `<div class='state_obv'><pre>` (the accessibility-tree observation), an
//! optional `<img src='data:image/png;base64,…'>` (the screenshot),
//! `<div class='prev_action'>` (the action history's last entry) and
//! `<div class='predict_action'>` holding `raw_parsed_prediction` (the raw
//! model output), `action_object` (the action's Python repr) and
//! `parsed_action` (the action as WebArena prints it, `click [16] where
//! [16] is Account Activity`); with the `playwright` action set the
//! `predict_action` div holds the Playwright code alone.
//!
//! The render is untrusted HTML: it is read with html5ever's tokenizer only,
//! in pieces (no tree is built, no script runs, nothing is fetched), so the
//! time is linear in the file and the unclosed `<div>`s the runner writes
//! cost nothing. A step's image is kept as its state's screenshot: the
//! `data:` URL's base64 text is decoded into the image's bytes (bounded by
//! the screenshot limit; the pixels are never decoded), see
//! [`crate::screenshot::attach_data_url`].
//!
//! Mapping: step i is node i (observation: representation `axtree`, the
//! URL in the metadata); the action taken from step i is the edge to node
//! i+1, its text WebArena's action without the ` where [id] is …` part
//! (format `text`: WebArena's action language has no parser here); the last
//! step's action (usually `stop [answer]`) has no next state and is kept in
//! the last node's `extra` (`final_action`). The task's `intent` is the goal.

use std::cell::RefCell;
use std::path::Path;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use serde_json::{Map, Value};

use crate::action::{Action, ActionFormat};
use crate::domain::{Domain, Representation};
use crate::error::{CoreError, ImportWarning, Result, json_error};
use crate::formats::{AGENT_REASONING, file_name, file_stem};
use crate::observation::Observation;
use crate::trajectory::{Source, Trajectory};

/// The source format name of trajectories read here.
pub const FORMAT: &str = "webarena";

/// A step's screenshot inside the render: an `<img>` whose `src` is a
/// base64 `data:` URL, as written (not decoded yet). The media type the
/// URL states is not kept: the image's own header decides it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddedImage {
    /// 1-based line of the `<img>` tag in the render.
    pub line: u64,
    /// The URL's base64 text.
    pub base64: String,
}

/// One step of a WebArena trace, as either file states it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Step {
    /// The page URL.
    pub url: Option<String>,
    /// The observation text (the accessibility tree, with its tab line).
    pub observation: String,
    /// The action history's last entry shown with this state: the previous
    /// action, or the runner's message when it did not parse.
    pub previous_action: Option<String>,
    /// The model's raw output at this step.
    pub raw_prediction: Option<String>,
    /// The action as WebArena prints it (`click [16] where [16] is …`,
    /// `none`, `stop [answer]`), or the Playwright code.
    pub parsed_action: Option<String>,
    /// The step's screenshot in the render, when it has one.
    pub screenshot: Option<EmbeddedImage>,
}

/// A WebArena trace as read, before it becomes a trajectory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    /// The task's config (the render's `key: value` lines; the JSON
    /// trace's `meta_data`, with `intent` and `result`), values as written.
    pub config: Map<String, Value>,
    /// The agent's system prompt (the JSON trace's `instruction`).
    pub system_prompt: Option<String>,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

/// Whether `text` is a WebArena render (it has `state_obv` blocks).
pub fn looks_like_render(text: &str) -> bool {
    let head = text.trim_start();
    head.starts_with('<')
        && (text.contains("class='state_obv'") || text.contains("class=\"state_obv\""))
}

/// Whether a JSON document is WebArena's JSON trace: a list whose first
/// item has `instruction`, `input` (starting `OBSERVATION:`) and `output`.
pub fn looks_like_traces(value: &Value) -> bool {
    value
        .as_array()
        .and_then(|items| items.first())
        .is_some_and(|first| {
            first.get("instruction").is_some()
                && first.get("output").is_some()
                && first
                    .get("input")
                    .and_then(Value::as_str)
                    .is_some_and(|i| i.trim_start().starts_with("OBSERVATION:"))
        })
}

/// Imports a WebArena render (`render_<task>.html`) or JSON trace.
///
/// # Errors
/// [`CoreError::Io`]; [`CoreError::Json`] with line and column for a trace
/// that is not JSON; [`CoreError::Field`] naming `[i].field` for a turn
/// whose field is not a string; [`CoreError::Format`] when the file holds
/// no step.
pub fn import(path: &Path, warnings: &mut Vec<ImportWarning>) -> Result<Trajectory> {
    let text = crate::input::read_text_into(path, warnings)?;
    let trace = if looks_like_render(&text) {
        read_render(&text)
    } else {
        let value: Value = serde_json::from_str(&text).map_err(|e| json_error(path, &e))?;
        drop(text);
        read_traces(path, value, warnings)?
    };
    build(path, trace, warnings)
}

/// Reads a render: its config (`key: value` lines of its first `<pre>`)
/// and steps; no system prompt (the render has none).
pub fn read_render(text: &str) -> Trace {
    let sink = RenderSink::default();
    let tokenizer = Tokenizer::new(sink, TokenizerOpts::default());
    let queue = BufferQueue::default();
    // Fed in pieces: the tokenizer never holds a copy of the whole file.
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = rest.len().min(64 * 1024);
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        queue.push_back(StrTendril::from(&rest[..cut]));
        rest = &rest[cut..];
        while let html5ever::TokenizerResult::Script(_) = tokenizer.feed(&queue) {}
    }
    tokenizer.end();
    let state = tokenizer.sink.state.take();
    Trace {
        config: config_map(&state.config),
        system_prompt: None,
        steps: state.steps,
    }
}

/// `key: value` lines as a map of strings.
fn config_map(text: &str) -> Map<String, Value> {
    text.lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.trim().to_owned(), Value::String(v.trim().to_owned())))
        .collect()
}

/// What the tokenizer is inside of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Capture {
    Config,
    Url,
    Observation,
    Raw,
    Parsed,
    PreviousAction,
    Skip,
}

#[derive(Default)]
struct RenderState {
    config: String,
    steps: Vec<Step>,
    /// The class of the last `<div>` opened.
    last_div: String,
    /// The text being captured and what it is.
    capture: Option<(Capture, String)>,
    /// `<div>`s open inside the captured `prev_action` div.
    div_depth: usize,
    /// Inside `predict_action`: its `<div>` depth and all its text.
    predict: Option<(usize, String)>,
}

#[derive(Default)]
struct RenderSink {
    state: RefCell<RenderState>,
}

fn attr<'a>(tag: &'a Tag, name: &str) -> Option<&'a str> {
    tag.attrs
        .iter()
        .find(|a| &*a.name.local == name)
        .map(|a| &*a.value)
}

impl RenderState {
    fn start(&mut self, tag: &Tag) -> Option<RawKind> {
        let name = &*tag.name;
        let class = attr(tag, "class").unwrap_or("").trim().to_owned();
        match name {
            "style" | "xmp" | "iframe" | "noembed" | "noframes" => return Some(RawKind::Rawtext),
            "script" => return Some(RawKind::ScriptData),
            "textarea" | "title" => return Some(RawKind::Rcdata),
            "h3" if class == "url" => {
                self.steps.push(Step::default());
                self.capture = Some((Capture::Url, String::new()));
            }
            "pre" if self.capture.is_none() => {
                let kind = match self.last_div.as_str() {
                    _ if self.steps.is_empty() => Capture::Config,
                    "state_obv" => Capture::Observation,
                    "raw_parsed_prediction" => Capture::Raw,
                    "parsed_action" => Capture::Parsed,
                    _ => Capture::Skip,
                };
                self.capture = Some((kind, String::new()));
            }
            "div" => {
                if let Some((depth, _)) = &mut self.predict {
                    *depth += 1;
                }
                if matches!(self.capture, Some((Capture::PreviousAction, _))) {
                    self.div_depth += 1;
                }
                match class.as_str() {
                    "prev_action" if self.capture.is_none() && !self.steps.is_empty() => {
                        self.capture = Some((Capture::PreviousAction, String::new()));
                        self.div_depth = 0;
                    }
                    "predict_action" if self.predict.is_none() && !self.steps.is_empty() => {
                        self.predict = Some((0, String::new()));
                    }
                    _ => {}
                }
                self.last_div = class;
            }
            "img" => {
                if let (Some(step), Some(src)) = (self.steps.last_mut(), attr(tag, "src"))
                    && let Some(data) = src.trim().strip_prefix("data:")
                    && let Some((_, payload)) = data.split_once(";base64,")
                {
                    step.screenshot = Some(EmbeddedImage {
                        line: 0,
                        base64: payload.to_owned(),
                    });
                }
            }
            _ => {}
        }
        None
    }

    fn end(&mut self, name: &str) {
        match (name, self.capture.take()) {
            ("h3", Some((Capture::Url, text))) => {
                let url = text.trim();
                let url = url.strip_prefix("URL:").unwrap_or(url).trim();
                if let Some(step) = self.steps.last_mut() {
                    step.url = (!url.is_empty()).then(|| url.to_owned());
                }
            }
            ("pre", Some((kind, text))) if kind != Capture::PreviousAction => {
                // The tree builder drops a newline right after `<pre>`.
                let text = text.strip_prefix('\n').unwrap_or(&text).to_owned();
                match (kind, self.steps.last_mut()) {
                    (Capture::Config, _) => self.config = text,
                    (Capture::Observation, Some(s)) => s.observation = text,
                    (Capture::Raw, Some(s)) => s.raw_prediction = Some(text),
                    (Capture::Parsed, Some(s)) => s.parsed_action = Some(text),
                    _ => {}
                }
            }
            ("div", Some((Capture::PreviousAction, text))) if self.div_depth == 0 => {
                if let Some(step) = self.steps.last_mut() {
                    step.previous_action = Some(text.trim().to_owned());
                }
            }
            ("div", Some((Capture::PreviousAction, text))) => {
                self.div_depth -= 1;
                self.capture = Some((Capture::PreviousAction, text));
            }
            (_, other) => self.capture = other,
        }
        if name == "div"
            && let Some((depth, text)) = self.predict.take()
        {
            if depth > 0 {
                self.predict = Some((depth - 1, text));
            } else if let Some(step) = self.steps.last_mut()
                && step.parsed_action.is_none()
            {
                // The `playwright` action set: the div holds the code alone.
                let code = text.trim();
                step.parsed_action = (!code.is_empty()).then(|| code.to_owned());
            }
        }
    }

    fn text(&mut self, text: &str) {
        if let Some((_, buf)) = &mut self.capture {
            buf.push_str(text);
        }
        if let Some((_, buf)) = &mut self.predict {
            buf.push_str(text);
        }
    }
}

impl TokenSink for RenderSink {
    type Handle = ();

    fn process_token(&self, token: Token, line_number: u64) -> TokenSinkResult<()> {
        let mut state = self.state.borrow_mut();
        match token {
            Token::TagToken(tag) if tag.kind == TagKind::StartTag => {
                let raw = state.start(&tag);
                if &*tag.name == "img"
                    && let Some(shot) = state.steps.last_mut().and_then(|s| s.screenshot.as_mut())
                    && shot.line == 0
                {
                    shot.line = line_number;
                }
                if let Some(kind) = raw {
                    return TokenSinkResult::RawData(kind);
                }
            }
            Token::TagToken(tag) => state.end(&tag.name),
            Token::CharacterTokens(text) => state.text(&text),
            _ => {}
        }
        TokenSinkResult::Continue
    }
}

/// The JSON trace's turns as steps, with the task's intent and result (as
/// config) and the system prompt (`instruction`).
fn read_traces(path: &Path, value: Value, warnings: &mut Vec<ImportWarning>) -> Result<Trace> {
    let Value::Array(items) = value else {
        return Err(CoreError::Format {
            path: path.to_path_buf(),
            message: "expected a JSON list of {instruction, input, output} turns".into(),
        });
    };
    let mut config = Map::new();
    let mut system = None;
    let mut steps = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let field = |name: &str, found: &Value| CoreError::Field {
            path: path.to_path_buf(),
            line: None,
            field: format!("[{i}].{name}"),
            message: format!("expected a string, found {found}"),
        };
        let Value::Object(mut obj) = item else {
            return Err(CoreError::Field {
                path: path.to_path_buf(),
                line: None,
                field: format!("[{i}]"),
                message: "expected an object".into(),
            });
        };
        if let Some(meta) = obj.remove("meta_data") {
            if let Value::Object(meta) = meta {
                config.extend(meta);
            }
            continue;
        }
        let mut text = |name: &str| -> Result<Option<String>> {
            match obj.remove(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s)),
                Some(other) => Err(field(name, &other)),
            }
        };
        let instruction = text("instruction")?;
        let input = text("input")?.unwrap_or_default();
        let output = text("output")?;
        if system.is_none() {
            system = instruction;
        }
        let mut step = parse_input(&input).unwrap_or_else(|| {
            warnings.push(ImportWarning {
                path: path.display().to_string(),
                line: None,
                byte_offset: None,
                message: format!(
                    "[{i}].input has no `OBSERVATION:` … `URL:` … `OBJECTIVE:` … `PREVIOUS ACTION:` layout; the whole input is the observation"
                ),
            });
            Step {
                observation: input.clone(),
                ..Step::default()
            }
        });
        if let Some(objective) = step.raw_prediction.take()
            && !config.contains_key("intent")
        {
            config.insert("intent".into(), Value::String(objective));
        }
        step.parsed_action = output;
        steps.push(step);
    }
    Ok(Trace {
        config,
        system_prompt: system,
        steps,
    })
}

/// Splits a trace turn's input (`OBSERVATION:\n…\nURL: …\nOBJECTIVE: …\n
/// PREVIOUS ACTION: …`); the objective travels in `raw_prediction` until
/// [`read_traces`] takes it.
fn parse_input(input: &str) -> Option<Step> {
    let body = input.trim_start().strip_prefix("OBSERVATION:")?;
    let (rest, previous) = body.rsplit_once("\nPREVIOUS ACTION:")?;
    let (rest, objective) = rest.rsplit_once("\nOBJECTIVE:")?;
    let (observation, url) = rest.rsplit_once("\nURL:")?;
    let previous = previous.trim();
    Some(Step {
        url: Some(url.trim().to_owned()).filter(|u| !u.is_empty()),
        observation: observation
            .strip_prefix('\n')
            .unwrap_or(observation)
            .to_owned(),
        previous_action: (!previous.is_empty() && previous != "None").then(|| previous.to_owned()),
        raw_prediction: Some(objective.trim().to_owned()),
        parsed_action: None,
        screenshot: None,
    })
}

/// The message WebArena puts in the action history when the model's output
/// did not parse (the action executed is then `none`).
const UNPARSED: &str = "The previous prediction you issued was";

/// A WebArena action as recorded (`click [16] where [16] is Account
/// Activity`): the action (`click [16]`) and the element's text.
fn split_action(recorded: &str) -> (String, Option<String>) {
    let recorded = recorded.trim();
    if recorded.starts_with(UNPARSED) {
        return ("none".into(), None);
    }
    let id = recorded
        .split_once('[')
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(id, _)| id);
    if let Some(id) = id
        && let Some(at) = recorded.rfind(&format!(" where [{id}] is "))
    {
        let element = recorded[at + id.len() + 12..].trim();
        return (
            recorded[..at].trim().to_owned(),
            (!element.is_empty()).then(|| element.to_owned()),
        );
    }
    (recorded.to_owned(), None)
}

/// The prose of a raw prediction around its last fenced block.
fn reasoning_of(raw: &str) -> Option<String> {
    let start = raw.rfind("```")?;
    let open = raw[..start].rfind("```")?;
    let text = format!("{}{}", &raw[..open], &raw[start + 3..]);
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// Builds the trajectory from the steps read.
fn build(path: &Path, trace: Trace, warnings: &mut Vec<ImportWarning>) -> Result<Trajectory> {
    let Trace {
        config,
        system_prompt: system,
        steps,
    } = trace;
    if steps.is_empty() {
        return Err(CoreError::Format {
            path: path.to_path_buf(),
            message: "a WebArena trace with no step (no `state_obv` block or no turn)".into(),
        });
    }
    let mut t = Trajectory::new(file_stem(path), Domain::Web, None);
    t.source = Source {
        format: FORMAT.into(),
        path: Some(file_name(path)),
    };
    t.goal = config
        .get("intent")
        .and_then(Value::as_str)
        .map(str::to_owned);
    t.system_prompt = system;
    t.extra.insert("config".into(), Value::Object(config));
    let count = steps.len();
    let mut node = t.root();
    let mut pending: Option<(Action, Map<String, Value>)> = None;
    for (i, step) in steps.into_iter().enumerate() {
        let mut observation = Observation::new(Representation::Axtree, step.observation);
        observation.metadata.url = step.url;
        let target = match pending.take() {
            None => {
                t.nodes[0].real = Some(observation);
                t.root()
            }
            Some((action, extra)) => {
                let (edge, next) = t.add_step(node, action, Some(observation))?;
                t.edges[edge.0 as usize].extra = extra;
                next
            }
        };
        if let Some(previous) = step.previous_action.filter(|p| p != "None") {
            t.nodes[target.0 as usize]
                .extra
                .insert("previous_action".into(), Value::String(previous));
        }
        if let Some(image) = &step.screenshot {
            crate::screenshot::attach_data_url(
                &mut t.nodes[target.0 as usize].screenshot,
                path,
                usize::try_from(image.line).ok(),
                &image.base64,
                warnings,
            );
        }
        node = target;
        let mut extra = Map::new();
        if let Some(raw) = step.raw_prediction.filter(|r| !r.trim().is_empty()) {
            // The prose around the action's block, else the whole output.
            let reasoning = reasoning_of(&raw).unwrap_or_else(|| raw.trim().to_owned());
            extra.insert(AGENT_REASONING.into(), Value::String(reasoning));
            extra.insert("raw_prediction".into(), Value::String(raw));
        }
        let Some(recorded) = step.parsed_action else {
            if i + 1 < count {
                warnings.push(ImportWarning {
                    path: path.display().to_string(),
                    line: None,
                    byte_offset: None,
                    message: format!("step {i} has no action but is followed by another step; an empty action links them"),
                });
                pending = Some((Action::new("", ActionFormat::Text), extra));
            }
            continue;
        };
        let (action, element) = split_action(&recorded);
        if let Some(element) = element {
            extra.insert("element".into(), Value::String(element));
        }
        if recorded.trim() != action {
            extra.insert("parsed_action".into(), Value::String(recorded));
            if action == "none" && !extra.contains_key(AGENT_REASONING) {
                // The runner's message on an output that did not parse.
                if let Some(Value::String(m)) = extra.get("parsed_action").cloned() {
                    extra.insert(AGENT_REASONING.into(), Value::String(m));
                }
            }
        }
        if i + 1 < count {
            pending = Some((Action::new(action, ActionFormat::Text), extra));
        } else {
            let last = &mut t.nodes[target.0 as usize].extra;
            last.insert("final_action".into(), Value::String(action));
            for (k, v) in extra {
                last.insert(format!("final_{k}"), v);
            }
        }
    }
    Ok(t)
}
