//! AgentWorldBench JSONL (Qwen/AgentWorldBench; fields documented in the
//! QwenLM/Qwen-AgentWorld README and read by its `eval/eval.py`).
//!
//! One row per evaluated turn: `task` (a domain name, possibly `x/y` with the
//! domain last), `id`, `prompt` (every turn's prompt string), `response`
//! (every turn's ground-truth observation, starting with
//! `**Environment Observation:**`), `current_prompt` (the evaluated turn's
//! prompt), `system_str`, `turn_idx` (1-based) and `total_turns`.
//!
//! Rows of one trajectory carry the same `task`, `system_str` and
//! `total_turns`, and `prompt`/`response` lists that agree entry by entry on
//! their common length; each such row is one turn of the trajectory. Import
//! groups rows that way (first fit, in file order), so a file of
//! interleaved trajectories still splits correctly. Every row's raw strings
//! and field order are kept ([`AwbRowInfo`]) so that export reproduces the row
//! field for field. A row with a `gen` field (the official script's
//! inference output) also gets that output as a prediction. SFT chat lines
//! (`{"messages": [...]}`, as [`crate::formats::sft`] writes them) are read as
//! the rows they stand for.

use std::path::Path;

use serde_json::{Map, Value};

use crate::action::Action;
use crate::domain::Domain;
use crate::error::{CoreError, ImportWarning, Result};
use crate::formats::{dedupe_ids, file_name, guess_representation};
use crate::observation::{AWB_RESPONSE_MARKER, Observation};
use crate::trajectory::{AwbRowInfo, NodeId, Prediction, Source, Trajectory};

/// Fields rebuilt from the tree on export (stored as `null` placeholders).
const REBUILT: [&str; 4] = ["prompt", "response", "current_prompt", "system_str"];

struct Row {
    line: usize,
    index: usize,
    fields: Map<String, Value>,
    domain: Domain,
    task: String,
    system: Option<String>,
    prompts: Vec<String>,
    responses: Vec<String>,
    prompt_is_string: bool,
    response_is_string: bool,
    current_prompt: Option<String>,
    turn: usize,
    total_turns: Option<Value>,
}

fn string_list(
    value: Option<Value>,
    path: &Path,
    line: usize,
    field: &str,
) -> Result<(Vec<String>, bool, bool)> {
    // (list, was a single string, present and rebuilt). The strings are
    // moved out of the row, never copied: a row can hold hundreds of
    // megabytes of observations.
    match value {
        None => Ok((Vec::new(), false, false)),
        Some(Value::String(s)) => Ok((vec![s], true, true)),
        Some(Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                match item {
                    Value::String(s) => out.push(s),
                    other => {
                        return Err(CoreError::Field {
                            path: path.to_path_buf(),
                            line: Some(line),
                            field: format!("{field}[{i}]"),
                            message: format!("expected a string, found {}", type_name(&other)),
                        });
                    }
                }
            }
            Ok((out, false, true))
        }
        Some(other) => Err(CoreError::Field {
            path: path.to_path_buf(),
            line: Some(line),
            field: field.into(),
            message: format!("expected a list of strings, found {}", type_name(&other)),
        }),
    }
}

/// Moves a string field's value out of the row (leaving `null`, the
/// placeholder export rebuilds it from); `None` when absent or not a string.
fn take_string(fields: &mut Map<String, Value>, key: &str) -> Option<String> {
    match fields.get_mut(key) {
        Some(slot @ Value::String(_)) => match std::mem::take(slot) {
            Value::String(s) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn parse_row(
    path: &Path,
    line: usize,
    index: usize,
    value: Value,
    warnings: &mut Vec<ImportWarning>,
) -> Result<Row> {
    let field_err = |field: &str, message: String| CoreError::Field {
        path: path.to_path_buf(),
        line: Some(line),
        field: field.into(),
        message,
    };
    let Value::Object(mut fields) = value else {
        return Err(field_err(
            "(row)",
            format!("expected a JSON object, found {}", type_name(&value)),
        ));
    };
    if fields.contains_key("messages") && !fields.contains_key("prompt") {
        // An SFT chat line (`formats::sft`): the same row in chat form.
        fields = crate::formats::sft::to_awb_row(path, line, fields)?;
    }
    let task = match fields.get("task") {
        Some(Value::String(s)) => s.clone(),
        None => {
            warnings.push(ImportWarning {
                path: path.display().to_string(),
                line: Some(line),
                byte_offset: None,
                message:
                    "no `task` field; domain mcp assumed, as the official evaluation script does"
                        .into(),
            });
            "mcp".into()
        }
        Some(other) => {
            return Err(field_err(
                "task",
                format!("expected a string, found {}", type_name(other)),
            ));
        }
    };
    let domain: Domain = task.parse().map_err(|e: String| field_err("task", e))?;
    // Taken out of the row (a `null` left in place, as export expects).
    let (prompts, prompt_is_string, _) = string_list(
        fields.get_mut("prompt").map(std::mem::take),
        path,
        line,
        "prompt",
    )?;
    let (responses, response_is_string, _) = string_list(
        fields.get_mut("response").map(std::mem::take),
        path,
        line,
        "response",
    )?;
    let turn = match fields.get("turn_idx") {
        None => 1,
        Some(v) => v.as_u64().map(|t| t.max(1) as usize).ok_or_else(|| {
            field_err(
                "turn_idx",
                format!("expected a positive integer, found {v}"),
            )
        })?,
    };
    // `prompt`, `response` (above), `system_str` and `current_prompt` are
    // the REBUILT fields: moved out, `null` left in their place.
    let system = take_string(&mut fields, REBUILT[3]);
    let current_prompt = take_string(&mut fields, REBUILT[2]);
    let total_turns = fields.get("total_turns").cloned();
    Ok(Row {
        line,
        index,
        fields,
        domain,
        task,
        system,
        prompts,
        responses,
        prompt_is_string,
        response_is_string,
        current_prompt,
        turn,
        total_turns,
    })
}

fn compatible(a: &[String], b: &[String]) -> bool {
    a.iter().zip(b).all(|(x, y)| x == y)
}

struct Group {
    rows: Vec<Row>,
}

impl Group {
    fn accepts(&self, row: &Row) -> bool {
        let first = &self.rows[0];
        first.task == row.task
            && first.system == row.system
            && first.total_turns == row.total_turns
            && self.rows.iter().all(|r| {
                r.turn != row.turn
                    && compatible(&r.prompts, &row.prompts)
                    && compatible(&r.responses, &row.responses)
            })
    }
}

/// Imports an AgentWorldBench JSONL file. Blank lines are skipped, as the
/// official script does.
///
/// # Errors
/// [`CoreError::Json`] (with the line number) for a malformed line and
/// [`CoreError::Field`] for a row of the wrong shape, unless `skip_bad_rows`,
/// which turns both into warnings; [`CoreError::Format`] for a file with no
/// rows.
pub fn import(
    path: &Path,
    skip_bad_rows: bool,
    warnings: &mut Vec<ImportWarning>,
) -> Result<Vec<Trajectory>> {
    let mut streamed = Vec::new();
    if let Some(out) = import_streaming(path, skip_bad_rows, &mut streamed)? {
        warnings.append(&mut streamed);
        return Ok(out);
    }
    let text = crate::input::read_text_into(path, warnings)?;
    let rows = text.lines().enumerate().filter_map(|(i, raw_line)| {
        let line = i + 1;
        let trimmed = raw_line.trim();
        (!trimmed.is_empty()).then(|| {
            let value = serde_json::from_str::<Value>(trimmed).map_err(|e| CoreError::Json {
                path: path.to_path_buf(),
                line,
                column: e.column(),
                message: e.to_string(),
            });
            (line, value)
        })
    });
    group_rows(path, skip_bad_rows, warnings, rows)
}

/// Groups parsed rows (line number and JSON value, in file order) into
/// trajectories.
fn group_rows(
    path: &Path,
    skip_bad_rows: bool,
    warnings: &mut Vec<ImportWarning>,
    rows: impl Iterator<Item = (usize, Result<Value>)>,
) -> Result<Vec<Trajectory>> {
    let mut groups: Vec<Group> = Vec::new();
    let mut index = 0;
    for (line, value) in rows {
        let parsed = value.and_then(|v| parse_row(path, line, index, v, warnings));
        let row = match parsed {
            Ok(row) => row,
            Err(err) if skip_bad_rows => {
                warnings.push(ImportWarning {
                    path: path.display().to_string(),
                    line: Some(line),
                    byte_offset: None,
                    message: format!("row skipped: {err}"),
                });
                continue;
            }
            Err(err) => return Err(err),
        };
        index += 1;
        match groups.iter_mut().find(|g| g.accepts(&row)) {
            Some(g) => g.rows.push(row),
            None => groups.push(Group { rows: vec![row] }),
        }
    }
    if groups.is_empty() {
        return Err(CoreError::Format {
            path: path.to_path_buf(),
            message: "no AgentWorldBench rows in this file".into(),
        });
    }
    let mut out: Vec<Trajectory> = groups
        .into_iter()
        .map(|g| build(path, g, warnings))
        .collect();
    dedupe_ids(&mut out);
    Ok(out)
}

/// The task and the state a turn prompt carries (the first prompt of a
/// trajectory holds the task's goal and, in GUI domains, its first state).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptSections {
    /// The goal section ([`GOAL_HEADINGS`]: `**Task Instruction:**`,
    /// `**Task:**`, …), trimmed.
    pub goal: Option<String>,
    /// The state section (`**Current State:**`, `**Initial State:**`,
    /// `**Current Page State:**`, `**Current Screen State:**`: see
    /// [`is_state_heading`]), with its line breaks kept and surrounding
    /// blank lines removed.
    pub state: Option<String>,
    /// The name of every bold heading at the start of a line, in order
    /// (`Task`, `Current Page State`, `Action`): what a warning about a
    /// missing section can show.
    pub headings: Vec<String>,
}

/// The headings of a goal section, compared without case: the official
/// template's `Task Instruction` and the variants AgentWorldBench rows of
/// other sources write.
pub const GOAL_HEADINGS: [&str; 5] = [
    "task instruction",
    "task",
    "instruction",
    "goal",
    "task goal",
];

/// Whether a bold heading's name (`Current Page State` of
/// `**Current Page State:**`) names a state section: `State` alone, or
/// `Current …State` / `Initial …State` (any words between), without case.
pub fn is_state_heading(name: &str) -> bool {
    let name = name.trim().to_ascii_lowercase();
    name == "state"
        || (name.ends_with("state")
            && (name.starts_with("current ") || name.starts_with("initial ")))
}

/// A bold heading at the start of a line: `**Name:**` or `**Name**:`.
struct Heading<'a> {
    /// Byte offset of the line's start.
    at: usize,
    /// The name, trimmed (`Task Instruction`).
    name: &'a str,
    /// Byte offset just past the heading.
    body: usize,
    /// The line before it is blank (or it opens the prompt).
    after_blank: bool,
}

/// Every line of `prompt` that opens with a bold heading, in order.
fn headings(prompt: &str) -> Vec<Heading<'_>> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut previous_blank = true;
    for line in prompt.split_inclusive('\n') {
        let text = line.trim_end_matches(['\n', '\r']);
        let lead = text.len() - text.trim_start_matches([' ', '\t']).len();
        if let Some(rest) = text[lead..].strip_prefix("**") {
            // `**Name:**` or `**Name**:`, the name on one line, short.
            let found = rest
                .find(":**")
                .map(|end| (end, end + 3))
                .into_iter()
                .chain(rest.find("**:").map(|end| (end, end + 3)))
                .min_by_key(|(end, _)| *end);
            if let Some((end, past)) = found {
                let name = rest[..end].trim();
                if !name.is_empty() && name.len() <= 60 && !name.contains('*') {
                    out.push(Heading {
                        at,
                        name,
                        body: at + lead + 2 + past,
                        after_blank: previous_blank,
                    });
                }
            }
        }
        previous_blank = text.trim().is_empty();
        at += line.len();
    }
    out
}

/// Reads the goal and the state sections of a turn prompt (see
/// [`crate::prompt::DEFAULT_GUI_TURN_TEMPLATE`]): headings are bold at the
/// start of a line, `**Name:**` or `**Name**:`; the goal is the first
/// section under one of [`GOAL_HEADINGS`], the state the first under a
/// heading [`is_state_heading`] accepts (`**Current State:**`,
/// `**Initial State:**`, `**Current Page State:**`,
/// `**Current Screen State:**`, …). A goal runs to the next heading after
/// a blank line; a state to the next `**Action:**` or
/// `**Last Action Error:**` heading after a blank line (so a state may
/// itself hold bold text). Absent or blank sections are `None`. This is
/// the one reader of these sections: `serve-env`'s tasks use it.
pub fn prompt_sections(prompt: &str) -> PromptSections {
    let found = headings(prompt);
    let section = |i: usize, ends: &dyn Fn(&str) -> bool| -> Option<String> {
        let start = found[i].body;
        let end = found[i + 1..]
            .iter()
            .find(|h| h.after_blank && ends(h.name))
            .map_or(prompt.len(), |h| h.at);
        let body = &prompt[start..end.max(start)];
        let body = body.trim_start_matches([' ', '\t']);
        let body = body
            .strip_prefix("\r\n")
            .or_else(|| body.strip_prefix('\n'))
            .unwrap_or(body);
        let text = body.trim_matches(['\n', '\r']).trim_end();
        (!text.trim().is_empty()).then(|| text.to_owned())
    };
    let is_goal = |name: &str| GOAL_HEADINGS.iter().any(|g| name.eq_ignore_ascii_case(g));
    let goal = found
        .iter()
        .position(|h| is_goal(h.name))
        .and_then(|i| section(i, &|_| true))
        .map(|g| g.trim().to_owned());
    let state_end = |name: &str| {
        name.eq_ignore_ascii_case("action") || name.eq_ignore_ascii_case("last action error")
    };
    let state = found
        .iter()
        .position(|h| is_state_heading(h.name))
        .and_then(|i| section(i, &state_end));
    PromptSections {
        goal,
        state,
        headings: found.iter().map(|h| h.name.to_owned()).collect(),
    }
}

/// Reads the rows straight from the file, one JSON value at a time, without
/// holding the file's text, and moves each row's strings into the tree
/// (`docs/benchmarks.md`, "Huge observations"). The file is read once: the
/// same pass checks that each value sits on its own line
/// ([`super::lines`]) and, inside an import's reads, hashes it
/// ([`crate::input`]). `None` when the file is not the simple case (valid
/// UTF-8, one JSON value per non-blank line, every value parsing): the
/// line-by-line reader over the whole text then reads it, with its exact
/// errors and skipping rules.
fn import_streaming(
    path: &Path,
    skip_bad_rows: bool,
    warnings: &mut Vec<ImportWarning>,
) -> Result<Option<Vec<Trajectory>>> {
    let file = crate::input::open(path)?;
    let (tracked, layout) = super::lines::LineReader::new(file);
    let reader = std::io::BufReader::with_capacity(1 << 20, tracked);
    let mut stream = serde_json::Deserializer::from_reader(reader).into_iter::<Value>();
    let mut simple = true;
    let mut ends: Vec<u64> = Vec::new();
    let rows = std::iter::from_fn(|| {
        if !simple {
            return None;
        }
        match stream.next() {
            None => {
                simple = layout.borrow().one_value_per_line(&ends);
                None
            }
            Some(Ok(value)) => {
                let end = stream.byte_offset() as u64;
                let (line, fits) = layout.borrow().place(ends.len(), end);
                ends.push(end);
                if fits == Some(false) {
                    simple = false;
                    return None;
                }
                Some((line, Ok(value)))
            }
            Some(Err(_)) => {
                simple = false;
                None
            }
        }
    });
    let out = group_rows(path, skip_bad_rows, warnings, rows);
    drop(stream);
    if !simple {
        warnings.clear();
        return Ok(None);
    }
    out.map(Some)
}

/// The text after `**Action:**` up to the next blank-line-separated `**…:**`
/// heading, with a surrounding code fence removed; the whole prompt when it
/// has no such section.
pub fn action_from_prompt(prompt: &str) -> String {
    let Some(at) = prompt.find("**Action:**") else {
        return prompt.trim().to_owned();
    };
    let mut section = prompt[at + "**Action:**".len()..].trim_start_matches([' ', '\t']);
    section = section.strip_prefix('\n').unwrap_or(section);
    // Inside a fence the section ends at the closing fence.
    let trimmed = section.trim_start();
    if let Some(rest) = trimmed.strip_prefix("```") {
        let ticks = 3 + rest.bytes().take_while(|&b| b == b'`').count();
        let fence = "`".repeat(ticks);
        let after = &trimmed[ticks..];
        if let Some(nl) = after.find('\n') {
            let body = &after[nl + 1..];
            let close = body
                .find(&format!("\n{fence}"))
                .map(|c| c + 1)
                .or_else(|| body.starts_with(&fence).then_some(0));
            if let Some(close) = close {
                return body[..close].trim_end_matches('\n').to_owned();
            }
        }
    }
    let end = section.find("\n\n**").unwrap_or(section.len());
    section[..end].trim().to_owned()
}

/// Splits the `**Environment Observation:**` prefix (with the blank space
/// after it) off a response, in place: the body keeps the response's buffer.
fn split_response(mut response: String) -> (String, String) {
    if let Some(rest) = response.strip_prefix(AWB_RESPONSE_MARKER) {
        let body = rest.trim_start_matches([' ', '\t', '\r', '\n']);
        let prefix_len = response.len() - body.len();
        let prefix: String = response.drain(..prefix_len).collect();
        (prefix, response)
    } else {
        (String::new(), response)
    }
}

fn build(path: &Path, group: Group, warnings: &mut Vec<ImportWarning>) -> Trajectory {
    let mut rows = group.rows;
    rows.sort_by_key(|r| r.turn);
    // Each row's list lengths (kept for export) before the longest lists are
    // moved out: rows of one group agree entry by entry, so the longest
    // holds every turn's string, and nothing is copied.
    let counts: Vec<(usize, usize)> = rows
        .iter()
        .map(|r| (r.prompts.len(), r.responses.len()))
        .collect();
    let longest = |rows: &mut [Row], f: fn(&mut Row) -> &mut Vec<String>| {
        let at = (0..rows.len()).max_by_key(|&i| f(&mut rows[i]).len());
        at.map(|i| std::mem::take(f(&mut rows[i])))
            .unwrap_or_default()
    };
    let mut prompts = longest(&mut rows, |r| &mut r.prompts);
    let mut responses = longest(&mut rows, |r| &mut r.responses);
    let first = &rows[0];
    let domain = first.domain;
    let max_turn = rows.iter().map(|r| r.turn).max().unwrap_or(1);
    let turns = prompts.len().max(responses.len()).max(max_turn);
    // A row id `<trajectory id>#<turn>` (as Worldloom writes them) names
    // the row; the trajectory is `<trajectory id>`.
    let id = match first.fields.get("id") {
        Some(Value::String(s)) => s
            .strip_suffix(&format!("#{}", first.turn))
            .filter(|stem| !stem.is_empty())
            .unwrap_or(s)
            .to_owned(),
        Some(Value::Number(n)) => n.to_string(),
        _ => format!("awb-line-{}", first.line),
    };
    let mut t = Trajectory::new(id, domain, None);
    t.source = Source {
        format: "agentworldbench".into(),
        path: Some(file_name(path)),
    };
    t.system_prompt = Some(first.system.clone().unwrap_or_default());
    let mut node = t.root();
    for k in 1..=turns {
        let at = rows.iter().position(|r| r.turn == k);
        let row = at.map(|i| &rows[i]);
        let prompt = prompts
            .get_mut(k - 1)
            .map(std::mem::take)
            .or_else(|| row.and_then(|r| r.current_prompt.clone()));
        let action_text = prompt
            .as_deref()
            .map(action_from_prompt)
            .unwrap_or_default();
        let real = responses.get_mut(k - 1).map(|resp| {
            let (prefix, body) = split_response(std::mem::take(resp));
            let mut obs = Observation::new(guess_representation(domain, &body), body);
            obs.prefix = prefix;
            obs
        });
        let current = row.and_then(|r| {
            r.current_prompt
                .clone()
                .filter(|c| Some(c) != prompt.as_ref())
        });
        let Ok((edge, next)) = t.add_step(node, Action::for_domain(domain, action_text), real)
        else {
            break;
        };
        let e = &mut t.edges[edge.0 as usize];
        e.prompt = prompt;
        if let (Some(r), Some(i)) = (row, at) {
            let (prompt_count, response_count) = counts[i];
            let mut info = AwbRowInfo {
                fields: r.fields.clone(),
                prompt_count,
                response_count,
                current_prompt: current,
                prompt_is_string: r.prompt_is_string,
                response_is_string: r.response_is_string,
                row: Some(r.index),
            };
            if r.system.is_some() && r.system != first.system {
                info.fields.insert(
                    "system_str".into(),
                    r.system.clone().map(Value::String).unwrap_or(Value::Null),
                );
            }
            e.awb_row = Some(info);
            if let Some(Value::String(generated)) = r.fields.get("gen") {
                let mut p = Prediction::from_output("agentworldbench:gen", generated.clone());
                p.representation = t.nodes[next.0 as usize]
                    .real
                    .as_ref()
                    .map(|o| o.representation)
                    .unwrap_or_default();
                let _ = t.add_prediction(next, p);
            }
        }
        node = next;
    }
    if rows.len() < turns && rows.iter().all(|r| r.turn != 1) {
        warnings.push(ImportWarning {
            path: path.display().to_string(),
            line: Some(rows[0].line),
            byte_offset: None,
            message: format!(
                "trajectory `{}`: rows for only {} of {turns} turns",
                t.id,
                rows.len()
            ),
        });
    }
    t
}

/// Writes trajectories as AgentWorldBench JSONL, one row per turn along each
/// trajectory's main path whose target state has an observation (real, else
/// authored).
///
/// Turns imported from AgentWorldBench are written back exactly: same fields
/// in the same order with the same values. If every exported row came from an
/// AgentWorldBench file, rows keep their original file order. Other turns get
/// `task` = domain, `id` = `"<trajectory id>#<turn>"`, every turn's prompt and
/// response, `current_prompt`, `system_str` (the trajectory's, or the default
/// system prompt of its domain), `turn_idx` and `total_turns`.
pub fn export(trajectories: &[Trajectory]) -> String {
    let mut rows: Vec<(Option<usize>, Value)> = Vec::new();
    let options = crate::prompt::PromptOptions::default();
    for t in trajectories {
        let path = t.main_path();
        let mut prompts = Vec::new();
        let mut responses = Vec::new();
        for (j, &edge_id) in path.edges.iter().enumerate() {
            let Some(edge) = t.edge(edge_id) else {
                continue;
            };
            let prompt = match &edge.prompt {
                Some(p) => p.clone(),
                None => {
                    let state = crate::prompt::context_observation(t, edge.from, options.mode);
                    crate::prompt::render_turn_prompt(
                        t,
                        &options.templates,
                        j + 1,
                        state.as_ref(),
                        &edge.action,
                    )
                }
            };
            prompts.push(prompt);
            let target = t.node(path.nodes[j + 1]);
            let obs = target.and_then(|n| {
                n.real
                    .clone()
                    .or_else(|| n.current_authored().map(|a| a.observation.clone()))
            });
            responses.push(obs.map(|o| o.as_awb_response()));
        }
        let known: Vec<String> = responses.iter().map_while(|r| r.clone()).collect();
        let system = crate::prompt::system_prompt(t, &options);
        for (j, &edge_id) in path.edges.iter().enumerate() {
            let Some(edge) = t.edge(edge_id) else {
                continue;
            };
            if responses[j].is_none() && edge.awb_row.is_none() {
                continue;
            }
            let row = match &edge.awb_row {
                Some(info) => {
                    let mut out = Map::new();
                    for (key, value) in &info.fields {
                        let rebuilt = match (key.as_str(), value) {
                            ("prompt", Value::Null) => Some(list_or_string(
                                &prompts,
                                info.prompt_count,
                                info.prompt_is_string,
                            )),
                            ("response", Value::Null) => Some(list_or_string(
                                &known,
                                info.response_count,
                                info.response_is_string,
                            )),
                            ("current_prompt", Value::Null) => Some(Value::String(
                                info.current_prompt
                                    .clone()
                                    .unwrap_or_else(|| prompts[j].clone()),
                            )),
                            ("system_str", Value::Null) => Some(Value::String(system.clone())),
                            _ => None,
                        };
                        out.insert(key.clone(), rebuilt.unwrap_or_else(|| value.clone()));
                    }
                    (info.row, Value::Object(out))
                }
                None => {
                    let mut out = Map::new();
                    out.insert("task".into(), Value::String(t.domain.as_str().into()));
                    out.insert("id".into(), Value::String(format!("{}#{}", t.id, j + 1)));
                    out.insert("prompt".into(), Value::from(prompts.clone()));
                    out.insert("response".into(), Value::from(known.clone()));
                    out.insert("current_prompt".into(), Value::String(prompts[j].clone()));
                    out.insert("system_str".into(), Value::String(system.clone()));
                    out.insert("turn_idx".into(), Value::from(j + 1));
                    out.insert("total_turns".into(), Value::from(path.edges.len()));
                    (None, Value::Object(out))
                }
            };
            rows.push(row);
        }
    }
    if rows.iter().all(|(index, _)| index.is_some()) {
        rows.sort_by_key(|(index, _)| *index);
    }
    let mut out = String::new();
    for (_, row) in rows {
        out.push_str(&row.to_string());
        out.push('\n');
    }
    out
}

fn list_or_string(items: &[String], count: usize, as_string: bool) -> Value {
    if as_string {
        return Value::String(items.first().cloned().unwrap_or_default());
    }
    Value::from(items.iter().take(count).cloned().collect::<Vec<_>>())
}

/// The node of each turn along the main path whose row came from
/// AgentWorldBench, by turn (for callers that match rows to nodes).
pub fn row_nodes(t: &Trajectory) -> Vec<(usize, NodeId)> {
    let path = t.main_path();
    path.edges
        .iter()
        .enumerate()
        .filter(|(_, e)| t.edge(**e).is_some_and(|e| e.awb_row.is_some()))
        .map(|(j, _)| (j + 1, path.nodes[j + 1]))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn prompt_sections_read_goal_and_state() {
        let p = "### Turn 1\n**Task Instruction:**\nBuy two mugs.\n\n**Current State:**\nRootWebArea 'Mugs'\n\t[21] link 'Cart (0)'\n\n**Action:**\n```python\nfill('33', '2')\n```";
        let s = prompt_sections(p);
        assert_eq!(s.goal.as_deref(), Some("Buy two mugs."));
        assert_eq!(
            s.state.as_deref(),
            Some("RootWebArea 'Mugs'\n\t[21] link 'Cart (0)'")
        );
        let text = prompt_sections("### Turn 1\n**Action:**\n```bash\nls\n```");
        assert_eq!((text.goal, text.state), (None, None));
        assert_eq!(text.headings, ["Action"]);
        let initial = prompt_sections("**Initial State:**\n$ \n\n**Action:**\nls");
        assert_eq!(initial.state.as_deref(), Some("$"));
    }

    #[test]
    fn prompt_sections_read_the_heading_variants_of_other_sources() {
        let page = "### Turn 1\n**Task:**\nBuy two mugs.\n\n**Current Page State:**\nRootWebArea 'Mugs'\n**bold** text\n\n**Action:**\nclick('3')";
        let s = prompt_sections(page);
        assert_eq!(s.goal.as_deref(), Some("Buy two mugs."));
        assert_eq!(
            s.state.as_deref(),
            Some("RootWebArea 'Mugs'\n**bold** text")
        );
        let screen = "**Task:** Turn on wifi\n\n**Current Screen State:**\n<hierarchy/>\n\n**Last Action Error:**\nnone\n\n**Action:**\n{}";
        let s = prompt_sections(screen);
        assert_eq!(s.goal.as_deref(), Some("Turn on wifi"));
        assert_eq!(s.state.as_deref(), Some("<hierarchy/>"));
        let other = prompt_sections(
            "**Goal**:\r\nFind it\r\n\r\n**current state:**\r\n$ ls\r\n\r\n**Action:**\r\nls",
        );
        assert_eq!(other.goal.as_deref(), Some("Find it"));
        assert_eq!(other.state.as_deref(), Some("$ ls"));
        // Headings only count at the start of a line.
        let inline = prompt_sections("Say **Task:** here\n\n**Action:**\nls");
        assert_eq!((inline.goal, inline.state), (None, None));
        assert_eq!(inline.headings, ["Action"]);
        assert!(is_state_heading("Current Screen State"));
        assert!(!is_state_heading("Statement"));
        assert!(!is_state_heading("Current Action"));
    }

    use super::*;

    #[test]
    fn action_sections() {
        assert_eq!(
            action_from_prompt("### Turn 1\n**Action:**\n```json\n{\"a\": 1}\n```\n\n**Note:** x"),
            "{\"a\": 1}"
        );
        assert_eq!(
            action_from_prompt("### Turn 2\n**Action:** click('3')\n\n**Current State:**\n..."),
            "click('3')"
        );
        assert_eq!(action_from_prompt("ls -la"), "ls -la");
        assert_eq!(
            action_from_prompt("**Action:**\n```bash\necho '```'\n```"),
            "echo '```'"
        );
    }

    /// The whole-text reader, for comparing with the streaming one.
    fn import_whole(path: &Path, skip: bool) -> (Result<Vec<Trajectory>>, Vec<ImportWarning>) {
        let mut warnings = Vec::new();
        let text = crate::input::read_text_into(path, &mut warnings).unwrap();
        let rows = text.lines().enumerate().filter_map(|(i, l)| {
            let t = l.trim();
            (!t.is_empty()).then(|| {
                let v = serde_json::from_str::<Value>(t).map_err(|e| CoreError::Json {
                    path: path.to_path_buf(),
                    line: i + 1,
                    column: e.column(),
                    message: e.to_string(),
                });
                (i + 1, v)
            })
        });
        let out = group_rows(path, skip, &mut warnings, rows);
        (out, warnings)
    }

    #[test]
    fn rows_stream_from_the_file_when_simple_and_read_the_same() {
        let sample = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../samples/agentworldbench/agentworldbench_sample.jsonl");
        let dir = tempfile::tempdir().unwrap();
        let text = std::fs::read_to_string(&sample).unwrap();
        // Blank lines, CRLF endings and trailing spaces stay simple.
        let mut spaced = String::from("\n  \n");
        for l in text.lines() {
            spaced.push_str(l);
            spaced.push_str(" \r\n\n");
        }
        for (name, content) in [("plain.jsonl", text.clone()), ("spaced.jsonl", spaced)] {
            let path = dir.path().join(name);
            std::fs::write(&path, &content).unwrap();
            let mut w = Vec::new();
            let streamed = import_streaming(&path, false, &mut w)
                .unwrap()
                .expect("a simple file streams");
            let (whole, ww) = import_whole(&path, false);
            assert_eq!(streamed, whole.unwrap(), "{name}");
            assert_eq!(w, ww, "{name}");
            assert_eq!(import(&path, false, &mut Vec::new()).unwrap(), streamed);
        }
        // Not the simple case: the whole-text reader answers, with its
        // errors and line numbers.
        let first = text.lines().next().unwrap();
        let cases = [
            ("two.jsonl", format!("{first}{first}\n").into_bytes()),
            ("bad.jsonl", format!("{first}\n{{\"task\": \n").into_bytes()),
            ("split.jsonl", first.replacen(",", ",\n", 1).into_bytes()),
            ("latin1.jsonl", {
                let mut b = first.as_bytes().to_vec();
                let at = b.iter().position(|&c| c == b'"').unwrap() + 1;
                b.insert(at, 0xE9);
                b
            }),
        ];
        for (name, bytes) in cases {
            let path = dir.path().join(name);
            std::fs::write(&path, &bytes).unwrap();
            let mut w = Vec::new();
            assert!(
                import_streaming(&path, true, &mut w).unwrap().is_none(),
                "{name}"
            );
            assert!(w.is_empty(), "{name}");
            let (whole, ww) = import_whole(&path, true);
            let mut got = Vec::new();
            let via = import(&path, true, &mut got);
            assert_eq!(via.is_ok(), whole.is_ok(), "{name}");
            if let (Ok(a), Ok(b)) = (&via, &whole) {
                assert_eq!(a, b, "{name}");
            }
            assert_eq!(got, ww, "{name}");
        }
        // A row of the wrong shape is the same error either way.
        let path = dir.path().join("shape.jsonl");
        std::fs::write(&path, format!("{first}\n{{\"task\": 5}}\n")).unwrap();
        let streamed = import_streaming(&path, false, &mut Vec::new()).unwrap_err();
        let whole = import_whole(&path, false).0.unwrap_err();
        assert_eq!(streamed.to_string(), whole.to_string());
        assert!(
            streamed.to_string().contains("shape.jsonl:2:"),
            "{streamed}"
        );
    }

    #[test]
    fn response_prefix_split() {
        assert_eq!(
            split_response("**Environment Observation:**\n{}".into()),
            ("**Environment Observation:**\n".into(), "{}".into())
        );
        assert_eq!(
            split_response("plain".into()),
            (String::new(), "plain".into())
        );
    }
}
