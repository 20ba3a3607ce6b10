//! Actions as forms: each action language's catalogue of named actions
//! with typed parameters, an action text read into a name and its fields,
//! and fields written back as the action text.
//!
//! The studio's "Edit action" form is built from this module (through the
//! API's `action_space`, `parse_action` and `format_action`), so the form
//! and the parser are one definition. Field names are the raw ones of the
//! language: BrowserGym and `pyautogui` parameter names (`bid`, `x`), the
//! Android JSON keys (`x`, `y`, `element`, `text`), a tool call's `name`
//! and `arguments`. Every field travels as the text a user types: numbers
//! as their decimal text, a list as comma-separated items, JSON as JSON
//! text; an empty text is a parameter not given.
//!
//! Languages with a form:
//! - BrowserGym: one call of the `HighLevelActionSet` functions with
//!   literal arguments (`click('12')`, `fill('41', 'text')`); positional
//!   arguments in the function's order, keywords by name.
//! - `pyautogui`: one `pyautogui.<function>(…)` call, or OSWorld's `WAIT`,
//!   `DONE`, `FAIL` alone.
//! - Android JSON: one object with `action_type` (AndroidWorld style, plus
//!   the AndroidControl `type` and an `element` for taps), written as
//!   `{"action_type": "click", "x": 540, "y": 559}`.
//! - Tool calls: `{"name": …, "arguments": {…}}`, optionally in a code fence.
//!
//! Shell commands and plain text have no form (an empty catalogue).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{ActionFormat, parse_python_calls};

/// How a parameter's text is read and written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum ParamKind {
    /// Any text; written as a string literal.
    String,
    /// A decimal number such as `540` or `-120.5`; written as a number.
    Number,
    /// Comma-separated items, each written as a string (`pyautogui.hotkey`).
    List,
    /// A JSON value (a tool call's `arguments`); empty means `{}`.
    Json,
}

/// One parameter of an action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ActionParam {
    /// The raw parameter name (a Python parameter or a JSON key).
    pub name: String,
    /// How its text is read.
    pub kind: ParamKind,
    /// Whether the action needs it. Optional parameters may be left empty.
    pub required: bool,
    /// What it means, in one line.
    pub description: String,
}

/// One action of a language's catalogue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ActionSpec {
    /// The action's name as written (`click`, `doubleClick`, `open_app`).
    pub name: String,
    /// What it does, in one line.
    pub description: String,
    /// Its parameters, in positional order.
    pub params: Vec<ActionParam>,
}

/// An action as a filled form: its name and each parameter's text.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ActionFields {
    /// The action's name, one of the catalogue's.
    pub name: String,
    /// Parameter name → text as typed (an empty or absent text: not given).
    pub fields: BTreeMap<String, String>,
}

/// Why fields do not make an action: the parameter at fault, when one is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FieldProblem {
    /// The parameter at fault; `None` when the action itself is (an unknown
    /// name, a language without a form).
    pub param: Option<String>,
    /// The problem, naming the action and the parameter
    /// (`click: bid is required`).
    pub message: String,
}

impl FieldProblem {
    fn of(param: &str, message: String) -> Self {
        Self {
            param: Some(param.to_owned()),
            message,
        }
    }
}

/// What a catalogue is written in: a call (`name(args)` or
/// `pyautogui.name(args)`), a JSON object, or a tool call.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Syntax {
    Call { prefix: &'static str },
    AndroidJson,
    ToolCall,
    None,
}

fn syntax(format: ActionFormat) -> Syntax {
    match format {
        ActionFormat::Browsergym => Syntax::Call { prefix: "" },
        ActionFormat::Pyautogui => Syntax::Call {
            prefix: "pyautogui.",
        },
        ActionFormat::AndroidJson => Syntax::AndroidJson,
        ActionFormat::ToolCall => Syntax::ToolCall,
        ActionFormat::Shell | ActionFormat::Text => Syntax::None,
    }
}

/// OSWorld's special `pyautogui` actions, written alone.
const PYAUTOGUI_SPECIALS: [&str; 3] = ["WAIT", "DONE", "FAIL"];

/// The name of the one action of the tool-call catalogue.
pub const TOOL_CALL: &str = "tool_call";

/// `(name, kind, required, description)` of a parameter.
type P = (&'static str, ParamKind, bool, &'static str);

const fn req(name: &'static str, kind: ParamKind, description: &'static str) -> P {
    (name, kind, true, description)
}

const fn opt(name: &'static str, kind: ParamKind, description: &'static str) -> P {
    (name, kind, false, description)
}

use ParamKind::{Json, List, Number, String as Text};

const BID: P = req("bid", Text, "the element's [bid] in the accessibility tree");
const X: P = req("x", Number, "x in pixels from the left edge");
const Y: P = req("y", Number, "y in pixels from the top edge");

/// BrowserGym `HighLevelActionSet` functions (signatures as in BrowserGym's
/// `action/functions.py`).
#[rustfmt::skip]
const BROWSERGYM: &[(&str, &str, &[P])] = &[
    ("click", "click an element", &[BID, opt("button", Text, "left, middle or right (default left)")]),
    ("dblclick", "double-click an element", &[BID]),
    ("hover", "move the mouse over an element", &[BID]),
    ("fill", "type a value into a field, replacing its text", &[BID, req("value", Text, "the text")]),
    ("select_option", "choose an option of a select element", &[BID, req("options", Text, "the option's text or value")]),
    ("clear", "clear a field", &[BID]),
    ("focus", "focus an element", &[BID]),
    ("press", "press a key combination on an element", &[BID, req("key_comb", Text, "keys such as Enter or Control+a")]),
    ("scroll", "scroll the page", &[req("delta_x", Number, "horizontal pixels"), req("delta_y", Number, "vertical pixels (positive: down)")]),
    ("drag_and_drop", "drag an element onto another", &[req("from_bid", Text, "the dragged element's bid"), req("to_bid", Text, "the target element's bid")]),
    ("upload_file", "upload a file through a file input", &[BID, req("file", Text, "the file's path")]),
    ("mouse_click", "click at page coordinates", &[X, Y, opt("button", Text, "left, middle or right (default left)")]),
    ("keyboard_press", "press a key combination on the page", &[req("key", Text, "keys such as Enter or Control+a")]),
    ("keyboard_type", "type text at the focus", &[req("text", Text, "the text")]),
    ("goto", "open a URL", &[req("url", Text, "the URL")]),
    ("go_back", "go back in the tab's history", &[]),
    ("go_forward", "go forward in the tab's history", &[]),
    ("new_tab", "open a new tab", &[]),
    ("tab_close", "close the current tab", &[]),
    ("tab_focus", "switch to a tab", &[req("index", Number, "the tab's index, from 0")]),
    ("send_msg_to_user", "answer the user (ends the episode)", &[req("text", Text, "the message")]),
    ("report_infeasible", "report the task infeasible (ends the episode)", &[req("reason", Text, "why")]),
    ("noop", "do nothing and wait", &[opt("wait_ms", Number, "milliseconds (default 1000)")]),
];

/// `pyautogui` functions as OSWorld agents write them, and OSWorld's
/// special actions.
#[rustfmt::skip]
const PYAUTOGUI: &[(&str, &str, &[P])] = &[
    ("click", "click at a screen point", &[X, Y]),
    ("doubleClick", "double-click at a screen point", &[X, Y]),
    ("tripleClick", "triple-click at a screen point", &[X, Y]),
    ("rightClick", "right-click at a screen point", &[X, Y]),
    ("middleClick", "middle-click at a screen point", &[X, Y]),
    ("moveTo", "move the pointer to a screen point", &[X, Y]),
    ("dragTo", "drag from the pointer to a screen point", &[X, Y]),
    ("scroll", "scroll the wheel (positive: up)", &[req("clicks", Number, "wheel clicks"), opt("x", Number, "x in pixels where to scroll"), opt("y", Number, "y in pixels where to scroll")]),
    ("write", "type text", &[req("message", Text, "the text")]),
    ("typewrite", "type text (older name of write)", &[req("message", Text, "the text")]),
    ("press", "press and release a key", &[req("keys", Text, "a key name such as enter or tab")]),
    ("hotkey", "press keys together", &[req("keys", List, "key names in order, e.g. ctrl, s")]),
    ("keyDown", "hold a key down", &[req("key", Text, "a key name")]),
    ("keyUp", "release a key", &[req("key", Text, "a key name")]),
    ("WAIT", "wait for the screen to change", &[]),
    ("DONE", "the task is done (ends the episode)", &[]),
    ("FAIL", "the task cannot be done (ends the episode)", &[]),
];

const OPT_X: P = opt("x", Number, "x in pixels from the left edge");
const OPT_Y: P = opt("y", Number, "y in pixels from the top edge");
const ELEMENT: P = opt(
    "element",
    Text,
    "the element's resource-id or index (instead of x and y)",
);

/// AndroidWorld's `JSONAction` types, plus the AndroidControl-style `type`
/// and an `element` instead of `x`/`y`.
#[rustfmt::skip]
const ANDROID: &[(&str, &str, &[P])] = &[
    ("click", "tap a point or an element", &[OPT_X, OPT_Y, ELEMENT]),
    ("long_press", "long-press a point or an element", &[OPT_X, OPT_Y, ELEMENT]),
    ("input_text", "type text into a field (at x, y when given)", &[req("text", Text, "the text"), OPT_X, OPT_Y]),
    ("type", "type text into the focused field", &[req("text", Text, "the text")]),
    ("scroll", "scroll the screen", &[req("direction", Text, "up, down, left or right")]),
    ("navigate_back", "the system back button", &[]),
    ("navigate_home", "the system home button", &[]),
    ("keyboard_enter", "press enter on the keyboard", &[]),
    ("open_app", "open an app by name", &[req("app_name", Text, "the app's name")]),
    ("wait", "wait for the screen to change", &[]),
    ("status", "end the episode", &[req("goal_status", Text, "complete or infeasible")]),
    ("answer", "answer the user", &[req("text", Text, "the answer")]),
];

const TOOL_CALLS: &[(&str, &str, &[P])] = &[(
    TOOL_CALL,
    "call a tool",
    &[
        req("name", Text, "the tool's name"),
        opt(
            "arguments",
            Json,
            "the arguments as a JSON object (empty: {})",
        ),
    ],
)];

fn table(format: ActionFormat) -> &'static [(&'static str, &'static str, &'static [P])] {
    match format {
        ActionFormat::Browsergym => BROWSERGYM,
        ActionFormat::Pyautogui => PYAUTOGUI,
        ActionFormat::AndroidJson => ANDROID,
        ActionFormat::ToolCall => TOOL_CALLS,
        ActionFormat::Shell | ActionFormat::Text => &[],
    }
}

/// The catalogue of an action language: every action the form offers, in
/// the order shown, with its parameters. Empty for shell commands and plain
/// text, which have no form.
pub fn catalogue(format: ActionFormat) -> Vec<ActionSpec> {
    table(format)
        .iter()
        .map(|(name, description, params)| ActionSpec {
            name: (*name).to_owned(),
            description: (*description).to_owned(),
            params: params
                .iter()
                .map(|(name, kind, required, description)| ActionParam {
                    name: (*name).to_owned(),
                    kind: *kind,
                    required: *required,
                    description: (*description).to_owned(),
                })
                .collect(),
        })
        .collect()
}

fn spec_of(format: ActionFormat, name: &str) -> Option<&'static [P]> {
    table(format)
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, _, params)| *params)
}

fn names(format: ActionFormat) -> String {
    table(format)
        .iter()
        .map(|(n, _, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads an action text as a catalogue action and its fields (raw field
/// names; every parameter of the action present, empty when not given).
///
/// # Errors
/// Why the text does not fit the form, in one sentence: not one action of
/// the language, an action the catalogue lacks, an argument or key the
/// action does not take, a value of the wrong kind; or that the language
/// has no form.
pub fn read_fields(raw: &str, format: ActionFormat) -> Result<ActionFields, String> {
    let text = raw.trim();
    if text.is_empty() {
        return Err("the action is empty".to_owned());
    }
    match syntax(format) {
        Syntax::Call { prefix } => read_call(text, format, prefix),
        Syntax::AndroidJson => read_android(text),
        Syntax::ToolCall => read_tool_call(text),
        Syntax::None => Err(no_form(format)),
    }
}

fn no_form(format: ActionFormat) -> String {
    match format {
        ActionFormat::Shell => "shell commands have no form; edit the raw text".to_owned(),
        _ => "free-text actions have no form; edit the raw text".to_owned(),
    }
}

/// Sets action `name`'s field `param` to `value` as the form's text,
/// or says that the value is not of the field's kind.
fn set_field(
    fields: &mut BTreeMap<String, String>,
    name: &str,
    param: &P,
    value: &Value,
) -> Result<(), String> {
    let (pname, kind, _, _) = *param;
    let text = field_text(value, kind)
        .ok_or_else(|| format!("{name}: {pname} is not {}", kind_word(kind)))?;
    fields.insert(pname.to_owned(), text);
    Ok(())
}

/// A literal as a field's text: strings as they are, numbers as their
/// decimal text, `None` as empty.
fn field_text(value: &Value, kind: ParamKind) -> Option<String> {
    match (value, kind) {
        (Value::Null, _) => Some(String::new()),
        (Value::String(s), ParamKind::String | ParamKind::List) => Some(s.clone()),
        (Value::String(s), ParamKind::Number) => number_text(s).map(str::to_owned),
        (Value::Number(n), ParamKind::String | ParamKind::Number | ParamKind::List) => {
            Some(n.to_string())
        }
        (v, ParamKind::Json) => serde_json::to_string_pretty(v).ok(),
        _ => None,
    }
}

fn kind_word(kind: ParamKind) -> &'static str {
    match kind {
        ParamKind::String => "text",
        ParamKind::Number => "a number",
        ParamKind::List => "a list of keys",
        ParamKind::Json => "JSON",
    }
}

fn read_call(text: &str, format: ActionFormat, prefix: &str) -> Result<ActionFields, String> {
    if prefix == "pyautogui." && PYAUTOGUI_SPECIALS.contains(&text) {
        return Ok(ActionFields {
            name: text.to_owned(),
            fields: BTreeMap::new(),
        });
    }
    let mut calls = parse_python_calls(text).ok_or_else(|| {
        format!(
            "not one {prefix}call with literal arguments, e.g. {}",
            if prefix.is_empty() {
                "click('12')"
            } else {
                "pyautogui.click(640, 360)"
            }
        )
    })?;
    if calls.len() != 1 {
        return Err(format!("{} calls: the form holds one action", calls.len()));
    }
    let call = calls.remove(0);
    let name = call
        .function
        .strip_prefix(prefix)
        .filter(|n| !n.contains('.'))
        .ok_or_else(|| format!("`{}` is not a {prefix}call", call.function))?;
    let params = spec_of(format, name)
        .ok_or_else(|| format!("`{name}` is not in the form (known: {})", names(format)))?;
    let mut fields: BTreeMap<String, String> = params
        .iter()
        .map(|(p, _, _, _)| ((*p).to_owned(), String::new()))
        .collect();
    // A single list parameter takes every positional argument.
    if let [(pname, ParamKind::List, _, _)] = params {
        let mut items = Vec::new();
        for arg in &call.args {
            items.push(
                field_text(arg, ParamKind::String)
                    .ok_or_else(|| format!("{name}: {pname}: each key must be text"))?,
            );
        }
        if let Some(k) = call.kwargs.keys().next() {
            return Err(format!("{name}: keyword `{k}` is not in the form"));
        }
        fields.insert((*pname).to_owned(), items.join(", "));
        return Ok(ActionFields {
            name: name.to_owned(),
            fields,
        });
    }
    if call.args.len() > params.len() {
        return Err(format!(
            "{name}: {} arguments, the form has {}",
            call.args.len(),
            params.len()
        ));
    }
    if let Some(k) = call
        .kwargs
        .keys()
        .find(|k| !params.iter().any(|(n, _, _, _)| n == k))
    {
        return Err(format!("{name}: keyword `{k}` is not in the form"));
    }
    let positional = call.args.iter().zip(params.iter()).map(|(v, p)| (p, v));
    let keywords = call
        .kwargs
        .iter()
        .filter_map(|(k, v)| params.iter().find(|(n, _, _, _)| n == k).map(|p| (p, v)));
    for (param, value) in positional.chain(keywords) {
        set_field(&mut fields, name, param, value)?;
    }
    Ok(ActionFields {
        name: name.to_owned(),
        fields,
    })
}

fn read_android(text: &str) -> Result<ActionFields, String> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| format!("line {}, column {}: not JSON: {e}", e.line(), e.column()))?;
    let Value::Object(obj) = value else {
        return Err("not a JSON object with `action_type`".to_owned());
    };
    let name = obj
        .get("action_type")
        .and_then(Value::as_str)
        .ok_or("the object has no string `action_type`")?;
    let format = ActionFormat::AndroidJson;
    let params = spec_of(format, name)
        .ok_or_else(|| format!("`{name}` is not in the form (known: {})", names(format)))?;
    let mut fields: BTreeMap<String, String> = params
        .iter()
        .map(|(p, _, _, _)| ((*p).to_owned(), String::new()))
        .collect();
    for (key, value) in &obj {
        if key == "action_type" {
            continue;
        }
        let param = params
            .iter()
            .find(|(n, _, _, _)| n == key)
            .ok_or_else(|| format!("{name}: key `{key}` is not in the form"))?;
        set_field(&mut fields, name, param, value)?;
    }
    Ok(ActionFields {
        name: name.to_owned(),
        fields,
    })
}

fn read_tool_call(text: &str) -> Result<ActionFields, String> {
    let value = super::parse_json_body(text)
        .ok_or("not a JSON tool call (an object, optionally in a code fence)")?;
    let Value::Object(obj) = value else {
        return Err(
            "not one tool call: the form holds an object {\"name\", \"arguments\"}".to_owned(),
        );
    };
    let name = obj
        .get("name")
        .and_then(Value::as_str)
        .ok_or("the tool call has no string `name`")?;
    if let Some(key) = obj.keys().find(|k| *k != "name" && *k != "arguments") {
        return Err(format!(
            "key `{key}` is not in the form (it holds `name` and `arguments`)"
        ));
    }
    let arguments = obj
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    let mut fields = BTreeMap::new();
    fields.insert("name".to_owned(), name.to_owned());
    fields.insert(
        "arguments".to_owned(),
        serde_json::to_string_pretty(&arguments).unwrap_or_default(),
    );
    Ok(ActionFields {
        name: TOOL_CALL.to_owned(),
        fields,
    })
}

/// The trimmed text when it is a decimal number (`540`, `-120.5`; no
/// exponent, no `+`, no spaces inside).
fn number_text(text: &str) -> Option<&str> {
    let t = text.trim();
    let digits = t.strip_prefix('-').unwrap_or(t);
    let (int, frac) = match digits.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (digits, None),
    };
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (all_digits(int) && frac.is_none_or(all_digits)).then_some(t)
}

/// A Python string literal: single quotes, with backslash, quote, newline,
/// carriage return and tab escaped.
pub fn python_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('\'');
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Writes a filled form as the action text in `format`'s language:
/// `click('12')`, `pyautogui.click(640, 360)`, `DONE`,
/// `{"action_type": "click", "x": 540, "y": 559}`,
/// `{"name": "search", "arguments": {"q": "x"}}`. Optional parameters
/// after a missing one are written as keywords. Reading the text back
/// with [`read_fields`] gives the same fields (numbers and JSON
/// normalized).
///
/// # Errors
/// A [`FieldProblem`] naming the parameter: a required one empty, a number
/// that is not a decimal number, arguments that are not a JSON object, a
/// parameter the action does not take, a click without a point or an
/// element; or naming none for an unknown action or a language without a
/// form.
pub fn write_fields(form: &ActionFields, format: ActionFormat) -> Result<String, FieldProblem> {
    let syntax = syntax(format);
    if syntax == Syntax::None {
        return Err(FieldProblem {
            param: None,
            message: no_form(format),
        });
    }
    let name = form.name.as_str();
    let params = spec_of(format, name).ok_or_else(|| FieldProblem {
        param: None,
        message: format!("unknown action `{name}` (known: {})", names(format)),
    })?;
    if let Some(extra) = form
        .fields
        .iter()
        .find(|(k, v)| !v.trim().is_empty() && !params.iter().any(|(n, _, _, _)| n == *k))
    {
        return Err(FieldProblem::of(
            extra.0,
            format!(
                "{name}: no parameter {} (it takes {})",
                extra.0,
                if params.is_empty() {
                    "none".to_owned()
                } else {
                    params
                        .iter()
                        .map(|(n, _, _, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ),
        ));
    }
    let value = |p: &str| form.fields.get(p).map(|v| v.trim()).unwrap_or("");
    for (pname, kind, required, _) in params {
        let v = value(pname);
        if v.is_empty() {
            if *required && *kind != ParamKind::Json {
                return Err(FieldProblem::of(
                    pname,
                    format!("{name}: {pname} is required"),
                ));
            }
            continue;
        }
        if *kind == ParamKind::Number && number_text(v).is_none() {
            return Err(FieldProblem::of(
                pname,
                format!("{name}: {pname}: a number is needed, got \"{v}\""),
            ));
        }
    }
    match syntax {
        Syntax::Call { prefix } => Ok(write_call(form, name, prefix, params)),
        Syntax::AndroidJson => write_android(form, name, params),
        Syntax::ToolCall => write_tool_call(form),
        Syntax::None => unreachable!("handled above"),
    }
}

fn write_call(form: &ActionFields, name: &str, prefix: &str, params: &[P]) -> String {
    if prefix == "pyautogui." && PYAUTOGUI_SPECIALS.contains(&name) {
        return name.to_owned();
    }
    // Text of a field as a Python literal. Numbers are checked by the caller.
    let literal = |kind: ParamKind, v: &str| match kind {
        ParamKind::Number => v.to_owned(),
        ParamKind::List => v
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(python_string)
            .collect::<Vec<_>>()
            .join(", "),
        ParamKind::String | ParamKind::Json => python_string(v),
    };
    let mut args = Vec::new();
    let mut gap = false;
    for (pname, kind, _, _) in params {
        let raw = form.fields.get(*pname).map(String::as_str).unwrap_or("");
        // Strings keep their spaces; only emptiness is judged on the trim.
        let v = if *kind == ParamKind::String {
            raw
        } else {
            raw.trim()
        };
        if raw.trim().is_empty() {
            gap = true;
            continue;
        }
        let text = literal(*kind, v);
        args.push(if gap { format!("{pname}={text}") } else { text });
    }
    format!("{prefix}{name}({})", args.join(", "))
}

/// A checked number field as a JSON number: an integer when it has no
/// fraction, else a float.
fn json_number(v: &str) -> Option<Value> {
    if let Ok(i) = v.parse::<i64>() {
        return Some(Value::from(i));
    }
    v.parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map(Value::Number)
}

fn write_android(form: &ActionFields, name: &str, params: &[P]) -> Result<String, FieldProblem> {
    let given = |p: &str| form.fields.get(p).is_some_and(|v| !v.trim().is_empty());
    let has = |p: &str| params.iter().any(|(n, _, _, _)| *n == p);
    if has("x") && has("y") {
        match (given("x"), given("y")) {
            (true, false) => {
                return Err(FieldProblem::of("y", format!("{name}: y is needed with x")));
            }
            (false, true) => {
                return Err(FieldProblem::of("x", format!("{name}: x is needed with y")));
            }
            (false, false) if has("element") && !given("element") => {
                return Err(FieldProblem::of(
                    "x",
                    format!("{name}: give x and y, or element"),
                ));
            }
            (true, true) if given("element") => {
                return Err(FieldProblem::of(
                    "element",
                    format!("{name}: give x and y, or element, not both"),
                ));
            }
            _ => {}
        }
    }
    let mut parts = vec![format!("\"action_type\": {}", json_string(name))];
    for (pname, kind, _, _) in params {
        let Some(raw) = form.fields.get(*pname).filter(|v| !v.trim().is_empty()) else {
            continue;
        };
        let value = match kind {
            ParamKind::Number => json_number(raw.trim()).ok_or_else(|| {
                FieldProblem::of(pname, format!("{name}: {pname}: not a finite number"))
            })?,
            _ => Value::String(raw.clone()),
        };
        parts.push(format!("{}: {value}", json_string(pname)));
    }
    Ok(format!("{{{}}}", parts.join(", ")))
}

fn json_string(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

fn write_tool_call(form: &ActionFields) -> Result<String, FieldProblem> {
    let name = form.fields.get("name").map(|v| v.trim()).unwrap_or("");
    let text = form.fields.get("arguments").map(|v| v.trim()).unwrap_or("");
    let arguments: Value = if text.is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str(text).map_err(|e| {
            FieldProblem::of(
                "arguments",
                format!(
                    "{TOOL_CALL}: arguments: line {}, column {}: not JSON: {e}",
                    e.line(),
                    e.column()
                ),
            )
        })?
    };
    if !arguments.is_object() {
        return Err(FieldProblem::of(
            "arguments",
            format!("{TOOL_CALL}: arguments: a JSON object is needed"),
        ));
    }
    Ok(format!(
        "{{\"name\": {}, \"arguments\": {arguments}}}",
        json_string(name)
    ))
}

#[cfg(test)]
mod tests;
