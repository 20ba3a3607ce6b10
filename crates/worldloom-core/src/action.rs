//! Actions: what the agent did at a state, kept as raw text plus a parsed
//! form where the format is known.
//!
//! Formats: BrowserGym action calls (`click('12')`, `fill('41', 'text')`; the
//! BrowserGym `HighLevelActionSet` functions), Android actions as JSON in the
//! AndroidWorld / AndroidControl style (`{"action_type": "click", "x": 540,
//! "y": 1200}`), desktop `pyautogui` code (kept raw), and MCP / terminal / SWE
//! tool calls (raw text; JSON bodies parsed).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::domain::Domain;

pub mod form;

/// One action, as the agent wrote it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Action {
    /// The exact original text of the action (a Python call, a JSON object, a
    /// shell command, a fenced tool call…).
    pub raw: String,
    /// Which action language `raw` is written in.
    pub format: ActionFormat,
    /// The parsed form, when `raw` parses in `format`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parsed: Option<ParsedAction>,
}

impl Action {
    /// An action in `format`, parsed where the format has a parser.
    pub fn new(raw: impl Into<String>, format: ActionFormat) -> Self {
        let raw = raw.into();
        let parsed = parse_action(&raw, format);
        Self {
            raw,
            format,
            parsed,
        }
    }

    /// An action whose format is the usual one of `domain`: BrowserGym calls
    /// for web, Android JSON for android, `pyautogui` code for os, tool calls
    /// for mcp, shell commands for terminal, text otherwise.
    pub fn for_domain(domain: Domain, raw: impl Into<String>) -> Self {
        Self::new(raw, ActionFormat::for_domain(domain))
    }

    /// Why this action is malformed in its format, or `None` when it is
    /// well formed: an empty text; BrowserGym text that is not calls with
    /// literal arguments; Android text that is not JSON (line and column)
    /// or not a known action object; a tool call that is not a JSON body.
    /// `pyautogui` code, shell commands and plain text have no parser and
    /// are never malformed unless empty. The studio's action form and
    /// `worldloom serve-env` both report this text.
    pub fn problem(&self) -> Option<String> {
        if self.raw.trim().is_empty() {
            return Some("the action is empty".to_owned());
        }
        if self.parsed.is_some() {
            return None;
        }
        match self.format {
            ActionFormat::Browsergym => Some(
                "not BrowserGym call syntax: expected one call per line with literal arguments, e.g. click('12')"
                    .to_owned(),
            ),
            ActionFormat::AndroidJson => Some(match serde_json::from_str::<Value>(self.raw.trim()) {
                Err(e) => format!("line {}, column {}: not JSON: {e}", e.line(), e.column()),
                Ok(_) => "the JSON is not a known Android action (an object with `action_type`)"
                    .to_owned(),
            }),
            ActionFormat::ToolCall => Some(
                "not a JSON tool call (an object or array, optionally in a code fence)".to_owned(),
            ),
            ActionFormat::Pyautogui | ActionFormat::Shell | ActionFormat::Text => None,
        }
    }

    /// A one-line summary for lists: the raw text's first line, cut at 80
    /// characters.
    pub fn summary(&self) -> String {
        let line = self.raw.trim().lines().next().unwrap_or("");
        if line.chars().count() > 80 {
            let cut: String = line.chars().take(79).collect();
            format!("{cut}…")
        } else {
            line.to_owned()
        }
    }
}

/// The action language of [`Action::raw`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "kebab-case")]
pub enum ActionFormat {
    /// BrowserGym high-level action calls (Python call syntax).
    Browsergym,
    /// Android action JSON (AndroidWorld / AndroidControl style).
    AndroidJson,
    /// Desktop Python code using `pyautogui` (kept raw).
    Pyautogui,
    /// A tool call (MCP, SWE); JSON bodies, possibly in a code fence, are parsed.
    ToolCall,
    /// A shell command or terminal keystrokes.
    Shell,
    /// Anything else, kept raw.
    Text,
}

impl ActionFormat {
    /// The usual action format of a domain.
    pub fn for_domain(domain: Domain) -> Self {
        match domain {
            Domain::Web => ActionFormat::Browsergym,
            Domain::Android => ActionFormat::AndroidJson,
            Domain::Os => ActionFormat::Pyautogui,
            Domain::Mcp | Domain::Swe => ActionFormat::ToolCall,
            Domain::Terminal => ActionFormat::Shell,
            Domain::Search => ActionFormat::Text,
        }
    }
}

/// A parsed action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ParsedAction {
    /// One or more BrowserGym calls (one per line in the raw text).
    Browsergym {
        /// The calls in order.
        calls: Vec<PythonCall>,
    },
    /// An Android action.
    Android {
        /// The action.
        action: AndroidAction,
    },
    /// A JSON body (tool calls): the value as parsed.
    Json {
        /// The parsed JSON value.
        value: Value,
    },
}

/// Parses `raw` in `format`; `None` when the format has no parser or the text
/// does not parse.
pub fn parse_action(raw: &str, format: ActionFormat) -> Option<ParsedAction> {
    match format {
        ActionFormat::Browsergym => {
            parse_python_calls(raw).map(|calls| ParsedAction::Browsergym { calls })
        }
        ActionFormat::AndroidJson => {
            let value: Value = serde_json::from_str(raw.trim()).ok()?;
            AndroidAction::from_json(&value).map(|action| ParsedAction::Android { action })
        }
        ActionFormat::ToolCall => parse_json_body(raw).map(|value| ParsedAction::Json { value }),
        ActionFormat::Pyautogui | ActionFormat::Shell | ActionFormat::Text => None,
    }
}

/// Parses a JSON body, optionally inside a Markdown code fence.
fn parse_json_body(raw: &str) -> Option<Value> {
    let mut text = raw.trim();
    if let Some(rest) = text.strip_prefix("```") {
        let newline = rest.find('\n')?;
        let body = &rest[newline + 1..];
        text = body.trim_end().strip_suffix("```").unwrap_or(body).trim();
    }
    if !(text.starts_with('{') || text.starts_with('[')) {
        return None;
    }
    serde_json::from_str(text).ok()
}

/// A Python function call with literal arguments, e.g. `fill('41', "it's")`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PythonCall {
    /// The function name (dotted names such as `pyautogui.click` allowed).
    pub function: String,
    /// Positional arguments, converted to JSON (str → string, int/float →
    /// number, True/False → bool, None → null, list/tuple → array, dict →
    /// object).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<Value>,
    /// Keyword arguments in source order.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub kwargs: Map<String, Value>,
}

/// Parses one or more Python calls, one per non-empty line (`#` comment lines
/// are skipped). `None` if any line is not a call with literal arguments.
pub fn parse_python_calls(raw: &str) -> Option<Vec<PythonCall>> {
    let mut parser = PyParser {
        s: raw.as_bytes(),
        src: raw,
        i: 0,
    };
    let mut calls = Vec::new();
    loop {
        parser.skip_ws_and_comments();
        if parser.i >= parser.s.len() {
            break;
        }
        calls.push(parser.call()?);
        parser.skip_inline_ws();
        match parser.peek() {
            None | Some(b'\n') | Some(b'\r') | Some(b';') | Some(b'#') => {
                if parser.peek() == Some(b';') {
                    parser.i += 1;
                }
            }
            Some(_) => return None,
        }
    }
    if calls.is_empty() { None } else { Some(calls) }
}

/// Parses one Python literal (string, number, bool, None, list, tuple, dict).
pub fn parse_python_literal(raw: &str) -> Option<Value> {
    let mut parser = PyParser {
        s: raw.as_bytes(),
        src: raw,
        i: 0,
    };
    parser.skip_all_ws();
    let value = parser.literal()?;
    parser.skip_all_ws();
    (parser.i == parser.s.len()).then_some(value)
}

struct PyParser<'a> {
    s: &'a [u8],
    src: &'a str,
    i: usize,
}

impl PyParser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip_inline_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    fn skip_all_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn skip_ws_and_comments(&mut self) {
        loop {
            self.skip_all_ws();
            if self.peek() == Some(b'#') {
                while !matches!(self.peek(), None | Some(b'\n')) {
                    self.i += 1;
                }
            } else {
                return;
            }
        }
    }

    fn ident(&mut self) -> Option<&str> {
        let start = self.i;
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || c == b'_' || (c == b'.' && self.i > start) {
                self.i += 1;
            } else {
                break;
            }
        }
        if self.i == start || self.s[start].is_ascii_digit() {
            self.i = start;
            return None;
        }
        self.src.get(start..self.i)
    }

    fn call(&mut self) -> Option<PythonCall> {
        let function = self.ident()?.to_owned();
        self.skip_inline_ws();
        if self.peek() != Some(b'(') {
            return None;
        }
        self.i += 1;
        let mut call = PythonCall {
            function,
            args: Vec::new(),
            kwargs: Map::new(),
        };
        loop {
            self.skip_all_ws();
            if self.peek() == Some(b')') {
                self.i += 1;
                return Some(call);
            }
            // keyword argument?
            let save = self.i;
            let mut keyword = None;
            if let Some(name) = self.ident() {
                let name = name.to_owned();
                self.skip_all_ws();
                if self.peek() == Some(b'=') && self.s.get(self.i + 1) != Some(&b'=') {
                    self.i += 1;
                    keyword = Some(name);
                } else {
                    self.i = save;
                }
            }
            self.skip_all_ws();
            let value = self.literal()?;
            match keyword {
                Some(name) => {
                    call.kwargs.insert(name, value);
                }
                None if call.kwargs.is_empty() => call.args.push(value),
                None => return None,
            }
            self.skip_all_ws();
            match self.peek()? {
                b',' => self.i += 1,
                b')' => {}
                _ => return None,
            }
        }
    }

    fn literal(&mut self) -> Option<Value> {
        let c = self.peek()?;
        match c {
            b'\'' | b'"' => self.string(false),
            b'r' | b'R' | b'u' | b'U' | b'b' | b'B'
                if matches!(self.s.get(self.i + 1), Some(b'\'' | b'"')) =>
            {
                let raw = matches!(c, b'r' | b'R');
                self.i += 1;
                self.string(raw)
            }
            b'[' => self.sequence(b']'),
            b'(' => self.sequence(b')'),
            b'{' => self.dict(),
            b'-' | b'+' | b'0'..=b'9' | b'.' => self.number(),
            _ => {
                let word = self.ident()?;
                match word {
                    "True" => Some(Value::Bool(true)),
                    "False" => Some(Value::Bool(false)),
                    "None" => Some(Value::Null),
                    _ => None,
                }
            }
        }
    }

    fn sequence(&mut self, close: u8) -> Option<Value> {
        self.i += 1;
        let mut items = Vec::new();
        loop {
            self.skip_all_ws();
            if self.peek()? == close {
                self.i += 1;
                return Some(Value::Array(items));
            }
            items.push(self.literal()?);
            self.skip_all_ws();
            match self.peek()? {
                b',' => self.i += 1,
                c if c == close => {}
                _ => return None,
            }
        }
    }

    fn dict(&mut self) -> Option<Value> {
        self.i += 1;
        let mut map = Map::new();
        loop {
            self.skip_all_ws();
            if self.peek()? == b'}' {
                self.i += 1;
                return Some(Value::Object(map));
            }
            let key = match self.literal()? {
                Value::String(s) => s,
                other => other.to_string(),
            };
            self.skip_all_ws();
            if self.peek()? != b':' {
                return None;
            }
            self.i += 1;
            self.skip_all_ws();
            let value = self.literal()?;
            map.insert(key, value);
            self.skip_all_ws();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {}
                _ => return None,
            }
        }
    }

    fn number(&mut self) -> Option<Value> {
        let start = self.i;
        while matches!(
            self.peek(),
            Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'_' | b'0'..=b'9')
        ) {
            self.i += 1;
        }
        let text: String = self
            .src
            .get(start..self.i)?
            .chars()
            .filter(|&c| c != '_')
            .collect();
        if let Ok(n) = text.parse::<i64>() {
            return Some(Value::from(n));
        }
        let f = text.parse::<f64>().ok()?;
        serde_json::Number::from_f64(f).map(Value::Number)
    }

    /// A quoted string starting at the quote; handles triple quotes and the
    /// Python escape sequences (`\n`, `\t`, `\\`, `\'`, `\xhh`, `\uXXXX`,
    /// `\UXXXXXXXX`, octal `\ooo`, line continuation).
    fn string(&mut self, raw: bool) -> Option<Value> {
        let quote = self.peek()?;
        let triple =
            self.s.get(self.i + 1) == Some(&quote) && self.s.get(self.i + 2) == Some(&quote);
        self.i += if triple { 3 } else { 1 };
        let mut out = String::new();
        loop {
            let rest = self.src.get(self.i..)?;
            let c = rest.chars().next()?;
            if c as u32 == quote as u32 {
                if !triple {
                    self.i += 1;
                    return Some(Value::String(out));
                }
                if rest.as_bytes().get(1) == Some(&quote) && rest.as_bytes().get(2) == Some(&quote)
                {
                    self.i += 3;
                    return Some(Value::String(out));
                }
                out.push(c);
                self.i += 1;
                continue;
            }
            if c == '\n' && !triple {
                return None;
            }
            if c != '\\' {
                out.push(c);
                self.i += c.len_utf8();
                continue;
            }
            // backslash
            let next = rest[1..].chars().next()?;
            if raw {
                out.push('\\');
                out.push(next);
                self.i += 1 + next.len_utf8();
                continue;
            }
            self.i += 1 + next.len_utf8();
            match next {
                '\n' => {}
                '\\' => out.push('\\'),
                '\'' => out.push('\''),
                '"' => out.push('"'),
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'a' => out.push('\u{7}'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                'v' => out.push('\u{b}'),
                'x' => out.push(self.hex_escape(2)?),
                'u' => out.push(self.hex_escape(4)?),
                'U' => out.push(self.hex_escape(8)?),
                '0'..='7' => {
                    let mut value = next as u32 - '0' as u32;
                    for _ in 0..2 {
                        match self.peek() {
                            Some(d @ b'0'..=b'7') => {
                                value = value * 8 + u32::from(d - b'0');
                                self.i += 1;
                            }
                            _ => break,
                        }
                    }
                    out.push(char::from_u32(value)?);
                }
                other => {
                    // Python keeps unknown escapes as written.
                    out.push('\\');
                    out.push(other);
                }
            }
        }
    }

    fn hex_escape(&mut self, digits: usize) -> Option<char> {
        let hex = self.src.get(self.i..self.i + digits)?;
        let value = u32::from_str_radix(hex, 16).ok()?;
        self.i += digits;
        // A lone surrogate cannot be a Rust char; use U+FFFD as lossy decoding does.
        Some(char::from_u32(value).unwrap_or('\u{FFFD}'))
    }
}

/// An Android action in the AndroidWorld / AndroidControl JSON style.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "action_type", rename_all = "snake_case")]
pub enum AndroidAction {
    /// Tap a point or an element.
    Click {
        /// Where.
        target: AndroidTarget,
    },
    /// Long-press a point or an element.
    LongPress {
        /// Where.
        target: AndroidTarget,
    },
    /// Type text (into the focused field, or into `target`).
    Type {
        /// The text typed.
        text: String,
        /// The field, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<AndroidTarget>,
    },
    /// Scroll (or swipe) in a direction.
    Scroll {
        /// `up`, `down`, `left` or `right`, as written.
        direction: String,
        /// The scrolled element or point, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<AndroidTarget>,
    },
    /// The system back button.
    NavigateBack,
    /// The system home button.
    NavigateHome,
    /// Press enter on the keyboard.
    KeyboardEnter,
    /// Open an app by name.
    OpenApp {
        /// The app's name as written.
        app_name: String,
    },
    /// Wait for the screen to change.
    Wait,
    /// Any other `action_type`; the whole object is kept in [`Action::raw`].
    Other {
        /// The `action_type` value.
        name: String,
    },
}

/// Where an Android action acts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(untagged)]
pub enum AndroidTarget {
    /// Screen coordinates in pixels.
    Point {
        /// x in pixels from the left edge.
        x_px: f64,
        /// y in pixels from the top edge.
        y_px: f64,
    },
    /// An element by `resource-id` or index, as written.
    Element {
        /// The element reference.
        element: String,
    },
}

impl AndroidAction {
    /// Reads an action object; `None` when it has no string `action_type`.
    pub fn from_json(value: &Value) -> Option<Self> {
        let obj = value.as_object()?;
        let kind = obj.get("action_type")?.as_str()?;
        let target = AndroidTarget::from_json(obj);
        let text = |key: &str| obj.get(key).and_then(Value::as_str).map(str::to_owned);
        Some(match kind {
            "click" | "tap" => AndroidAction::Click { target: target? },
            "long_press" => AndroidAction::LongPress { target: target? },
            "type" | "input_text" => AndroidAction::Type {
                text: text("text")?,
                target,
            },
            "scroll" | "swipe" => AndroidAction::Scroll {
                direction: text("direction")?,
                target,
            },
            "navigate_back" => AndroidAction::NavigateBack,
            "navigate_home" => AndroidAction::NavigateHome,
            "keyboard_enter" => AndroidAction::KeyboardEnter,
            "open_app" => AndroidAction::OpenApp {
                app_name: text("app_name")?,
            },
            "wait" => AndroidAction::Wait,
            other => AndroidAction::Other {
                name: other.to_owned(),
            },
        })
    }
}

impl AndroidTarget {
    fn from_json(obj: &Map<String, Value>) -> Option<Self> {
        if let (Some(x), Some(y)) = (
            obj.get("x").and_then(Value::as_f64),
            obj.get("y").and_then(Value::as_f64),
        ) {
            return Some(AndroidTarget::Point { x_px: x, y_px: y });
        }
        for key in ["element", "index", "resource_id", "resource-id"] {
            match obj.get(key) {
                Some(Value::String(s)) => {
                    return Some(AndroidTarget::Element { element: s.clone() });
                }
                Some(Value::Number(n)) => {
                    return Some(AndroidTarget::Element {
                        element: n.to_string(),
                    });
                }
                _ => {}
            }
        }
        None
    }
}

/// The element an action names, before it is looked up in a tree: a
/// BrowserGym `bid`, a screen point in pixels, or an element reference
/// (Android `resource-id`, visible text or index) as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ActionTarget {
    /// A BrowserGym element id (`click('12')`; the first bid of
    /// `drag_and_drop`).
    Bid {
        /// The call that names it (`click`, `fill`…).
        verb: String,
        /// The bid as written (numbers as their decimal text).
        bid: String,
    },
    /// A point on the screen (Android tap, long press or swipe start;
    /// `pyautogui.click(x, y)`; BrowserGym `mouse_click(x, y)`).
    Point {
        /// The action's name (`click`, `long_press`, `pyautogui.click`…).
        verb: String,
        /// x in pixels from the screen's (or page's) left edge.
        x_px: f64,
        /// y in pixels from the top edge.
        y_px: f64,
    },
    /// An element named otherwise: an Android `resource-id`, visible text
    /// or element index, as written.
    Element {
        /// The action's name.
        verb: String,
        /// The reference as written.
        element: String,
    },
}

/// BrowserGym functions whose first argument is the bid acted on.
const BID_FUNCTIONS: [&str; 10] = [
    "click",
    "dblclick",
    "hover",
    "fill",
    "select_option",
    "clear",
    "focus",
    "press",
    "upload_file",
    "drag_and_drop",
];

/// BrowserGym functions whose first two arguments are page coordinates.
const BROWSERGYM_POINT_FUNCTIONS: [&str; 6] = [
    "mouse_click",
    "mouse_dblclick",
    "mouse_move",
    "mouse_down",
    "mouse_up",
    "mouse_drag_and_drop",
];

/// `pyautogui` functions whose `x`, `y` say where the pointer acts.
const PYAUTOGUI_POINT_FUNCTIONS: [&str; 8] = [
    "click",
    "doubleClick",
    "tripleClick",
    "rightClick",
    "middleClick",
    "moveTo",
    "mouseDown",
    "mouseUp",
];

impl Action {
    /// The element this action names, when it names one: the first
    /// BrowserGym call with a bid (or page coordinates); an Android tap,
    /// long press, typed-into field or swipe start; the first
    /// `pyautogui` pointer call with `x` and `y` (lines of the code that
    /// are not calls are skipped). `None` for actions that name no element
    /// (`press('Enter')`, `navigate_back`, `pyautogui.write(…)`). An action
    /// stored without its parsed form (native files keep only the text) is
    /// parsed here.
    pub fn target(&self) -> Option<ActionTarget> {
        if self.format == ActionFormat::Pyautogui {
            return pyautogui_target(&self.raw);
        }
        let parsed = match &self.parsed {
            Some(p) => std::borrow::Cow::Borrowed(p),
            None => std::borrow::Cow::Owned(parse_action(&self.raw, self.format)?),
        };
        match parsed.as_ref() {
            ParsedAction::Browsergym { calls } => calls.iter().find_map(browsergym_target),
            ParsedAction::Android { action } => android_target(action),
            ParsedAction::Json { .. } => None,
        }
    }
}

/// A literal argument as a bid: strings as written, integers as decimal text.
fn bid_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

/// `x` and `y` of a call: its first two positional numbers, or keywords.
fn call_point(call: &PythonCall, x_key: &str, y_key: &str) -> Option<(f64, f64)> {
    let x = call.args.first().or_else(|| call.kwargs.get(x_key))?;
    let y = call.args.get(1).or_else(|| call.kwargs.get(y_key))?;
    Some((x.as_f64()?, y.as_f64()?))
}

fn browsergym_target(call: &PythonCall) -> Option<ActionTarget> {
    let verb = call.function.as_str();
    if BID_FUNCTIONS.contains(&verb) {
        let bid = call
            .args
            .first()
            .or_else(|| call.kwargs.get("bid"))
            .or_else(|| call.kwargs.get("from_bid"))
            .and_then(bid_text)?;
        return Some(ActionTarget::Bid {
            verb: verb.to_owned(),
            bid,
        });
    }
    if BROWSERGYM_POINT_FUNCTIONS.contains(&verb) {
        let (x_key, y_key) = if verb == "mouse_drag_and_drop" {
            ("from_x", "from_y")
        } else {
            ("x", "y")
        };
        let (x_px, y_px) = call_point(call, x_key, y_key)?;
        return Some(ActionTarget::Point {
            verb: verb.to_owned(),
            x_px,
            y_px,
        });
    }
    None
}

fn android_target(action: &AndroidAction) -> Option<ActionTarget> {
    let (verb, target) = match action {
        AndroidAction::Click { target } => ("click", target),
        AndroidAction::LongPress { target } => ("long_press", target),
        AndroidAction::Type {
            target: Some(target),
            ..
        } => ("type", target),
        AndroidAction::Scroll {
            target: Some(target),
            ..
        } => ("scroll", target),
        _ => return None,
    };
    let verb = verb.to_owned();
    Some(match target {
        AndroidTarget::Point { x_px, y_px } => ActionTarget::Point {
            verb,
            x_px: *x_px,
            y_px: *y_px,
        },
        AndroidTarget::Element { element } => ActionTarget::Element {
            verb,
            element: element.clone(),
        },
    })
}

fn pyautogui_target(raw: &str) -> Option<ActionTarget> {
    raw.lines()
        .flat_map(|line| line.split(';'))
        .filter_map(|stmt| parse_python_calls(stmt.trim()))
        .flatten()
        .find_map(|call| {
            let name = call.function.strip_prefix("pyautogui.")?;
            if !PYAUTOGUI_POINT_FUNCTIONS.contains(&name) {
                return None;
            }
            let (x_px, y_px) = call_point(&call, "x", "y")?;
            Some(ActionTarget::Point {
                verb: call.function.clone(),
                x_px,
                y_px,
            })
        })
}

#[cfg(test)]
mod tests;
