//! LLM-judge scoring on the five AgentWorldBench dimensions.
//!
//! Protocol (AgentWorldBench, technical report arXiv 2606.24597, and the
//! official `eval/eval.py judge` step): the judge sees the interaction
//! history, the current action, the world model's extracted prediction and
//! the real observation, and answers with strengths, weaknesses and integer
//! scores 1–5 for format, factuality, consistency, realism and quality. The
//! rubric prompts here are Worldloom's own; a folder of user prompts
//! (`<domain>.txt` or `<domain>/judge_system_prompt.txt`) replaces them per
//! domain.
//!
//! Judged rows get the fields the official `score` step reads:
//! `format`, `factuality`, `consistency`, `realism`, `quality` (integers),
//! `total_score` (their mean), `failed` (`0.0` or `1.0`), `strengths`,
//! `weaknesses`, `extracted_output`, `judge_raw_output`, and
//! `error_message` for failures. Rows without a generation fail with
//! "No model generation", as in the official script.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde_json::{Map, Value, json};
use worldloom_core::output::{THINK_CLOSE, THINK_OPEN};
use worldloom_core::{OutputParser, OutputStatus};
use worldloom_engine::{
    CancelToken, CollectError, GenerationParams, PredictRequest, WorldModel, collect,
};

use crate::EvalError;
use crate::bench::{BenchRow, domain_of, strip_response_marker};

pub use worldloom_core::judge::DIMENSIONS;

/// The tag around the judge's final JSON.
pub const VERDICT_TAG: &str = "final_evaluation";

/// What each domain's observations are, for the rubric.
fn domain_focus(domain: &str) -> &'static str {
    match domain {
        "mcp" => {
            "The environment is a tool server reached through the Model Context Protocol. An observation is a tool \
             result, usually JSON. Check field names and types, identifiers carried over from earlier calls, and \
             whether errors are the ones such a tool would really return."
        }
        "search" => {
            "The environment is a web search engine. An observation is a result page or a fetched document. Check \
             that results fit the query, that titles, URLs and snippets look like real ones, and that facts stated \
             are true of the world."
        }
        "terminal" => {
            "The environment is a shell. An observation is command output. Check exact output formats of the tools \
             used, exit behaviour, error messages, and that files and state created earlier persist."
        }
        "swe" => {
            "The environment is a software repository worked on with editing and test tools. An observation is tool \
             output: file views, diffs, test runs. Check that code, line numbers, paths and test results agree with \
             what earlier turns established."
        }
        "web" => {
            "The environment is a web browser. An observation is the page state (accessibility tree or HTML). Check \
             that the action's effect is applied to the right element, untouched parts stay unchanged, and element \
             ids, roles, names and values stay consistent."
        }
        "os" => {
            "The environment is a desktop operating system. An observation is the accessibility tree of the screen. \
             Check window and widget structure, names, states and positions after the action, and that unrelated \
             parts stay as they were."
        }
        "android" => {
            "The environment is an Android phone. An observation is a uiautomator view hierarchy. Check packages, \
             resource ids, texts, states and bounds after the action, and that the screen shown is the one the \
             action leads to."
        }
        _ => {
            "Check that the observation is what the real environment would return after this action."
        }
    }
}

/// Worldloom's rubric system prompt for a domain.
pub fn builtin_system_prompt(domain: &str) -> String {
    format!(
        "You grade a world model: a model that plays the part of an environment and writes the observation an \
agent would receive after its action. You are given the earlier turns, the current action, the world model's \
prediction and the observation the real environment returned. Compare them and grade the prediction.

Environment: {focus}

Grade each dimension with an integer from 1 (worst) to 5 (best):
- format: the prediction has the structure, syntax and layout of a real observation of this environment \
(parsable, complete, same representation as the real one).
- factuality: the details that matter (values, names, ids, numbers, messages) agree with the real observation \
and with what the action must cause.
- consistency: the prediction agrees with the history: state set up in earlier turns is kept, nothing \
contradicts what the agent already saw.
- realism: a real environment could have produced this output, including plausible errors and side effects.
- quality: overall usefulness as a stand-in for the real environment when training or testing an agent.

Judge the content, not the wording: a prediction can differ from the real observation in details that the \
action does not determine (timestamps, random ids) without losing points. Missing or invented state changes \
cost points.

Think as long as you need, then end your answer with exactly one block:
<{tag}>
{{\"strengths\": [\"...\"], \"weaknesses\": [\"...\"], \"scores\": {{\"format\": 1, \"factuality\": 1, \
\"consistency\": 1, \"realism\": 1, \"quality\": 1}}}}
</{tag}>
The block holds only that JSON object.",
        focus = domain_focus(domain),
        tag = VERDICT_TAG
    )
}

/// Judge system prompts per domain: a user folder's files where present,
/// Worldloom's rubric elsewhere.
#[derive(Debug, Clone, Default)]
pub struct JudgePrompts {
    folder: Option<PathBuf>,
}

impl JudgePrompts {
    /// Worldloom's own rubric for every domain.
    pub fn builtin() -> Self {
        Self { folder: None }
    }

    /// Prompts from `folder` (`<domain>.txt` or
    /// `<domain>/judge_system_prompt.txt`), falling back to the rubric for
    /// domains it does not cover.
    ///
    /// Errors: [`EvalError::Input`] when `folder` is not a directory.
    pub fn from_folder(folder: &Path) -> Result<Self, EvalError> {
        if !folder.is_dir() {
            return Err(EvalError::Input(format!(
                "{}: judge prompt folder not found",
                folder.display()
            )));
        }
        Ok(Self {
            folder: Some(folder.to_path_buf()),
        })
    }

    /// The system prompt for `domain`.
    ///
    /// Errors: [`EvalError::Io`] when a user prompt file exists but cannot
    /// be read.
    pub fn system_prompt(&self, domain: &str) -> Result<String, EvalError> {
        if let Some(folder) = &self.folder {
            for candidate in [
                folder.join(format!("{domain}.txt")),
                folder.join(domain).join("judge_system_prompt.txt"),
            ] {
                if candidate.is_file() {
                    return std::fs::read_to_string(&candidate)
                        .map_err(|e| EvalError::io(&candidate, e));
                }
            }
        }
        Ok(builtin_system_prompt(domain))
    }
}

/// The text the judge grades as the prediction: the extracted observation
/// (status `ok`, or `truncated` with an unclosed block), or else the answer
/// after the reasoning (`ModelOutput::answer`: empty when the output ends
/// inside reasoning, so reasoning is never graded as the observation). The
/// status is the one every path gives the same text
/// (`worldloom_core::output::output_status`).
pub fn judged_prediction(generation: &str) -> String {
    let mut parser = OutputParser::new(false);
    parser.push(generation);
    let output = parser.finish_output();
    match (output.parsed.status, output.parsed.observation) {
        (OutputStatus::Ok | OutputStatus::Truncated, Some(observation)) => observation,
        _ => output.answer.trim().to_owned(),
    }
}

/// The judge chat for one row: our rubric (or the user's) as system
/// message; the history, current action, prediction and real observation as
/// the user message (the official layout of these four parts).
///
/// Errors: [`EvalError::Input`] for malformed row fields;
/// [`EvalError::Io`] for an unreadable user prompt.
pub fn judge_messages(
    row: &BenchRow,
    prediction: &str,
    prompts: &JudgePrompts,
) -> Result<Vec<worldloom_core::ChatMessage>, EvalError> {
    use worldloom_core::{ChatMessage, ChatRole};
    let turn = row.turn_index()?;
    let prompts_list = row.prompts()?;
    let responses = row.responses()?;
    let mut history = String::new();
    for j in 0..turn.min(prompts_list.len()).min(responses.len()) {
        history.push_str(&prompts_list[j]);
        history.push('\n');
        history.push_str(&responses[j]);
        history.push_str("\n\n");
    }
    let real = row.ground_truth()?.unwrap_or_default();
    let mut user = String::new();
    if !history.is_empty() {
        user.push_str("# Earlier turns\n\n");
        user.push_str(&history);
    }
    user.push_str("# Current turn\n\n");
    user.push_str(&row.current_prompt()?);
    user.push_str("\n\n# Prediction of the world model\n```\n");
    user.push_str(strip_response_marker(prediction));
    user.push_str("\n```\n\n# Real observation\n```\n");
    user.push_str(strip_response_marker(&real));
    user.push_str("\n```\n");
    Ok(vec![
        ChatMessage::new(ChatRole::System, prompts.system_prompt(&row.domain())?),
        ChatMessage::new(ChatRole::User, user),
    ])
}

/// A parsed judge answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// Scores 1–5, in [`DIMENSIONS`] order.
    pub scores: [u8; 5],
    /// Strengths the judge listed.
    pub strengths: Vec<String>,
    /// Weaknesses the judge listed.
    pub weaknesses: Vec<String>,
}

impl Verdict {
    /// Mean of the five scores.
    pub fn total(&self) -> f64 {
        self.scores.iter().map(|&s| f64::from(s)).sum::<f64>() / 5.0
    }
}

/// Removes reasoning: think blocks, and everything before a lone think
/// close.
fn strip_reasoning(text: &str) -> String {
    let mut rest = text;
    if let Some((_, after)) = rest.rsplit_once(THINK_CLOSE) {
        rest = after;
    }
    match rest.find(THINK_OPEN) {
        // An unclosed think at the end: keep what came before it.
        Some(i) => rest[..i].to_owned(),
        None => rest.to_owned(),
    }
}

/// The body of the last `<tag>…</tag>` block (an unclosed last block runs to
/// the end).
fn last_tagged_block<'a>(text: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = text.rfind(&open)? + open.len();
    let body = &text[start..];
    Some(body.find(&close).map_or(body, |end| &body[..end]))
}

/// The last fenced code block's body (```json … ``` or ``` … ```).
fn last_code_fence(text: &str) -> Option<&str> {
    let mut fences: Vec<usize> = text.match_indices("```").map(|(i, _)| i).collect();
    if fences.len() < 2 {
        return None;
    }
    if fences.len() % 2 == 1 {
        fences.pop();
    }
    let (open, close) = (fences[fences.len() - 2], fences[fences.len() - 1]);
    let inner = &text[open + 3..close];
    // Drop an info string such as `json`.
    Some(match inner.find('\n') {
        Some(nl) if !inner[..nl].contains('{') => &inner[nl + 1..],
        _ => inner,
    })
}

/// The last balanced `{…}` object in `text` (string-aware).
fn last_json_object(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    let mut best = None;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'{' {
            let mut depth = 0usize;
            let mut in_string = false;
            let mut escaped = false;
            let mut end = None;
            for (j, &b) in bytes.iter().enumerate().skip(i) {
                if in_string {
                    match (escaped, b) {
                        (true, _) => escaped = false,
                        (false, b'\\') => escaped = true,
                        (false, b'"') => in_string = false,
                        _ => {}
                    }
                    continue;
                }
                match b {
                    b'"' => in_string = true,
                    b'{' => depth += 1,
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = Some(j);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            if let Some(end) = end {
                best = Some(&text[i..=end]);
                i = end + 1;
                continue;
            }
        }
        i += 1;
    }
    best
}

/// Minor repairs of almost-JSON: typographic quotes, trailing commas, and
/// missing closing braces/brackets at the end.
fn repair_json(text: &str) -> String {
    let text = text.trim().replace(['\u{201c}', '\u{201d}'], "\"");
    let mut out = String::with_capacity(text.len() + 4);
    let mut stack = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => stack.push('}'),
            '[' => stack.push(']'),
            '}' | ']' => {
                stack.pop();
            }
            ',' => {
                // Drop a comma followed only by whitespace and a closer (or the end).
                let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
                if matches!(next, Some('}' | ']') | None) {
                    continue;
                }
            }
            _ => {}
        }
        out.push(c);
    }
    if in_string {
        out.push('"');
    }
    while let Some(closer) = stack.pop() {
        out.push(closer);
    }
    out
}

fn score_of(value: Option<&Value>) -> Option<u8> {
    let v = value?;
    let x = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    (x.fract() == 0.0 && (1.0..=5.0).contains(&x)).then_some(x as u8)
}

fn string_list(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .collect(),
        Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// Parses a judge answer: reasoning removed; the last
/// `<final_evaluation>` block, else the last code fence, else the last JSON
/// object; minor repairs; scores under `scores` or at the top level (also as
/// `<dimension>_score`), integers 1–5 (integral numbers and numeric strings
/// accepted).
///
/// Errors: a message saying what is missing or out of range.
pub fn parse_judge_output(raw: &str) -> Result<Verdict, String> {
    let answer = strip_reasoning(raw);
    let candidates: Vec<&str> = [
        last_tagged_block(&answer, VERDICT_TAG),
        last_code_fence(&answer),
        last_json_object(&answer),
        // An object cut off at the end, for repair.
        answer.find('{').map(|i| &answer[i..]),
    ]
    .into_iter()
    .flatten()
    .collect();
    if candidates.is_empty() {
        return Err("no JSON verdict found in the judge answer".to_owned());
    }
    let mut last_error = String::new();
    for candidate in candidates {
        // Inside a tagged block there may still be a fence or prose.
        let inner = last_code_fence(candidate).unwrap_or(candidate);
        let inner = last_json_object(inner).unwrap_or(inner);
        let value: Value = match serde_json::from_str(inner)
            .or_else(|_| serde_json::from_str(&repair_json(inner)))
        {
            Ok(v) => v,
            Err(e) => {
                last_error = format!("the verdict is not JSON ({e})");
                continue;
            }
        };
        let scores_obj = value
            .get("scores")
            .filter(|s| s.is_object())
            .unwrap_or(&value);
        let mut scores = [0u8; 5];
        let mut missing = Vec::new();
        for (slot, dim) in scores.iter_mut().zip(DIMENSIONS) {
            match score_of(scores_obj.get(dim))
                .or_else(|| score_of(scores_obj.get(format!("{dim}_score").as_str())))
            {
                Some(s) => *slot = s,
                None => missing.push(dim),
            }
        }
        if !missing.is_empty() {
            last_error = format!(
                "missing or out-of-range scores (integers 1–5): {}",
                missing.join(", ")
            );
            continue;
        }
        return Ok(Verdict {
            scores,
            strengths: string_list(value.get("strengths")),
            weaknesses: string_list(value.get("weaknesses")),
        });
    }
    Err(last_error)
}

/// Settings of a judge run.
#[derive(Debug, Clone)]
pub struct JudgeOptions {
    /// Judge calls in flight at once.
    pub concurrency: usize,
    /// Attempts per row when the call fails or the answer does not parse.
    pub max_attempts: usize,
    /// Judge generation parameters.
    pub params: GenerationParams,
    /// Draw a progress bar on stderr.
    pub progress: bool,
    /// Limit on one judge call, in milliseconds.
    pub call_timeout_ms: u64,
}

impl Default for JudgeOptions {
    fn default() -> Self {
        Self {
            concurrency: 4,
            max_attempts: 3,
            // The judge generates as a prediction run does: the official
            // script's sampling, the whole answer kept.
            params: crate::run::RunOptions::default().params,
            progress: true,
            call_timeout_ms: 1_800_000,
        }
    }
}

/// What a judge run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JudgeSummary {
    /// Rows in the predictions file.
    pub total: usize,
    /// Rows already judged in the output.
    pub already_done: usize,
    /// Rows written now.
    pub written: usize,
    /// Of those, rows that failed (`failed: 1.0`).
    pub failed: usize,
}

/// Calls the judge once; (answer text, error).
fn call_judge(
    judge: &dyn WorldModel,
    messages: Vec<worldloom_core::ChatMessage>,
    options: &JudgeOptions,
    stop: &CancelToken,
) -> Result<String, String> {
    let stream = judge
        .predict(PredictRequest::new(messages, options.params.clone()))
        .map_err(|e| e.to_string())?;
    let deadline = std::time::Instant::now() + Duration::from_millis(options.call_timeout_ms);
    match collect(stream, stop, Some(deadline), |_| {}) {
        Ok(c) if c.stats.stop_reason == Some(worldloom_engine::StopReason::Cancelled) => {
            Err(CANCELLED.to_owned())
        }
        Ok(c) => Ok(c.output.answer),
        Err(CollectError::Cancelled | CollectError::DeadlineExceeded) => Err(CANCELLED.to_owned()),
        Err(CollectError::Engine(e)) => Err(e.to_string()),
    }
}

/// The error of a judge call cut short.
const CANCELLED: &str = "judge call cancelled (timeout or interrupt)";

/// Judges one prediction row (a row of `worldloom eval` output or of the
/// official `infer` step); returns the row with the judged fields added and
/// whether it failed.
///
/// Errors: [`EvalError`] for malformed row fields or unreadable prompts.
pub fn judge_row(
    fields: &Map<String, Value>,
    judge: &dyn WorldModel,
    prompts: &JudgePrompts,
    options: &JudgeOptions,
    stop: &CancelToken,
) -> Result<(Map<String, Value>, bool), EvalError> {
    let mut out = fields.clone();
    let generation = fields.get("gen").and_then(Value::as_str).unwrap_or("");
    if generation.trim().is_empty() {
        out.insert("failed".into(), json!(1.0));
        out.insert("error_message".into(), json!("No model generation"));
        return Ok((out, true));
    }
    let row = BenchRow {
        fields: fields.clone(),
        source: PathBuf::from("predictions"),
        line: 0,
    };
    let prediction = judged_prediction(generation);
    let messages = judge_messages(&row, &prediction, prompts)?;
    let mut last_raw = String::new();
    let mut last_error = String::new();
    for _ in 0..options.max_attempts.max(1) {
        match call_judge(judge, messages.clone(), options, stop) {
            Err(e) => last_error = format!("judge call failed: {e}"),
            Ok(raw) => match parse_judge_output(&raw) {
                Ok(v) => {
                    for (dim, s) in DIMENSIONS.iter().zip(v.scores) {
                        out.insert((*dim).into(), json!(s));
                    }
                    out.insert("total_score".into(), json!(v.total()));
                    out.insert("failed".into(), json!(0.0));
                    out.insert("strengths".into(), json!(v.strengths));
                    out.insert("weaknesses".into(), json!(v.weaknesses));
                    out.insert("extracted_output".into(), json!(prediction));
                    out.insert("judge_raw_output".into(), json!(raw));
                    return Ok((out, false));
                }
                Err(e) => {
                    last_error = format!("judge answer not understood: {e}");
                    last_raw = raw;
                }
            },
        }
        if stop.is_cancelled() {
            break;
        }
    }
    out.insert("total_score".into(), json!(0));
    out.insert("failed".into(), json!(1.0));
    out.insert(
        "error_message".into(),
        json!(format!("Judge scoring failed: {last_error}")),
    );
    out.insert("extracted_output".into(), json!(prediction));
    if !last_raw.is_empty() {
        out.insert("judge_raw_output".into(), json!(last_raw));
    }
    Ok((out, true))
}

/// Reads a JSON Lines file of objects (blank lines skipped).
///
/// Errors: [`EvalError::Io`]; [`EvalError::Input`] naming the line.
pub fn read_jsonl(path: &Path) -> Result<Vec<Map<String, Value>>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|e| EvalError::io(path, e))?;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(m)) => rows.push(m),
            Ok(_) => {
                return Err(EvalError::Input(format!(
                    "{}:{}: not a JSON object",
                    path.display(),
                    i + 1
                )));
            }
            Err(e) => {
                return Err(EvalError::Input(format!(
                    "{}:{}: not JSON: {e}",
                    path.display(),
                    i + 1
                )));
            }
        }
    }
    Ok(rows)
}

/// The identity of a prediction row for resuming: `wl_key` when present,
/// else `domain|id|turn_idx`.
fn row_key(fields: &Map<String, Value>, index: usize) -> String {
    if let Some(k) = fields.get("wl_key").and_then(Value::as_str) {
        return k.to_owned();
    }
    match fields.get("id") {
        Some(id) if !id.is_null() => format!(
            "{}|{id}|{}",
            domain_of(fields),
            fields
                .get("turn_idx")
                .map(Value::to_string)
                .unwrap_or_else(|| "1".to_owned())
        ),
        _ => format!("row {index}"),
    }
}

/// Judges every row of `predictions` not yet in `output`, appending judged
/// rows to `output` (whole lines, flushed; resumable like `worldloom eval`).
///
/// Errors: [`EvalError`] for unreadable or malformed files.
pub fn run_judge(
    predictions: &Path,
    judge: Arc<dyn WorldModel>,
    prompts: &JudgePrompts,
    output: &Path,
    options: &JudgeOptions,
    stop: Arc<AtomicBool>,
) -> Result<JudgeSummary, EvalError> {
    let rows = read_jsonl(predictions)?;
    let done: HashSet<String> = if output.exists() {
        // Cut a torn last line first, as the eval run does.
        let text = std::fs::read_to_string(output).map_err(|e| EvalError::io(output, e))?;
        if !text.is_empty() && !text.ends_with('\n') {
            let keep = text.rfind('\n').map_or(0, |i| i + 1);
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(output)
                .map_err(|e| EvalError::io(output, e))?;
            file.set_len(keep as u64)
                .map_err(|e| EvalError::io(output, e))?;
        }
        read_jsonl(output)?
            .iter()
            .enumerate()
            .map(|(i, r)| row_key(r, i))
            .collect()
    } else {
        HashSet::new()
    };
    let mut summary = JudgeSummary {
        total: rows.len(),
        ..JudgeSummary::default()
    };
    let todo: Vec<&Map<String, Value>> = rows
        .iter()
        .enumerate()
        .filter(|(i, r)| {
            let skip = done.contains(&row_key(r, *i));
            if skip {
                summary.already_done += 1;
            }
            !skip
        })
        .map(|(_, r)| r)
        .collect();
    let first_error = std::sync::Mutex::new(None);
    let stop_token = CancelToken::from(Arc::clone(&stop));
    let (written, failed) = crate::run::write_parallel(
        &todo,
        options.concurrency,
        &stop,
        output,
        options.progress,
        None,
        |row: &&Map<String, Value>| match judge_row(
            row,
            judge.as_ref(),
            prompts,
            options,
            &stop_token,
        ) {
            Ok(result) => Some(result),
            Err(e) => {
                if let Ok(mut slot) = first_error.lock() {
                    slot.get_or_insert(e);
                }
                stop.store(true, std::sync::atomic::Ordering::SeqCst);
                None
            }
        },
    )?;
    if let Some(e) = first_error.into_inner().ok().flatten() {
        return Err(e);
    }
    summary.written = written;
    summary.failed = failed;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"strengths": ["right file"], "weaknesses": [], "scores": {"format": 5, "factuality": 4, "consistency": 4, "realism": 5, "quality": 4}}"#;

    #[test]
    fn tagged_block_after_reasoning() {
        let raw = format!(
            "<think>maybe <final_evaluation>{{\"scores\": {{}}}}</final_evaluation></think>Fine.\n<final_evaluation>\n{GOOD}\n</final_evaluation>"
        );
        let v = parse_judge_output(&raw).unwrap();
        assert_eq!(v.scores, [5, 4, 4, 5, 4]);
        assert_eq!(v.strengths, vec!["right file".to_owned()]);
        assert!((v.total() - 4.4).abs() < 1e-9);
    }

    #[test]
    fn lone_think_close_and_code_fence() {
        let raw = format!("reasoning with {{ braces }}</think>\n```json\n{GOOD}\n```\n");
        assert_eq!(parse_judge_output(&raw).unwrap().scores, [5, 4, 4, 5, 4]);
    }

    #[test]
    fn flat_scores_strings_and_repairs() {
        let raw = "Verdict: {\"format\": \"3\", \"factuality_score\": 2, \"consistency\": 2.0, \"realism\": 1, \"quality\": 2, \"weaknesses\": [\u{201c}wrong value\u{201d},],";
        let v = parse_judge_output(raw).unwrap();
        assert_eq!(v.scores, [3, 2, 2, 1, 2]);
        assert_eq!(v.weaknesses, vec!["wrong value".to_owned()]);
    }

    #[test]
    fn out_of_range_and_missing_fail() {
        let e = parse_judge_output("{\"format\": 6, \"factuality\": 3, \"consistency\": 3, \"realism\": 3, \"quality\": 3}").unwrap_err();
        assert!(e.contains("format"), "{e}");
        let e = parse_judge_output(
            "{\"format\": 4, \"factuality\": 3.5, \"consistency\": 3, \"realism\": 3}",
        )
        .unwrap_err();
        assert!(e.contains("factuality") && e.contains("quality"), "{e}");
        assert!(parse_judge_output("no verdict at all").is_err());
    }

    #[test]
    fn prompts_from_folder_override_per_domain() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("web.txt"), "custom web rubric").unwrap();
        std::fs::create_dir(dir.path().join("os")).unwrap();
        std::fs::write(
            dir.path().join("os").join("judge_system_prompt.txt"),
            "custom os rubric",
        )
        .unwrap();
        let p = JudgePrompts::from_folder(dir.path()).unwrap();
        assert_eq!(p.system_prompt("web").unwrap(), "custom web rubric");
        assert_eq!(p.system_prompt("os").unwrap(), "custom os rubric");
        assert!(
            p.system_prompt("terminal")
                .unwrap()
                .contains("The environment is a shell")
        );
    }

    #[test]
    fn judge_sees_history_action_prediction_and_truth() {
        let Value::Object(fields) = json!({"task": "terminal", "prompt": ["ls", "touch a"],
            "response": ["**Environment Observation:**\nb", "**Environment Observation:**\n"], "turn_idx": 2})
        else {
            panic!()
        };
        let row = BenchRow {
            fields,
            source: PathBuf::from("t"),
            line: 1,
        };
        let m = judge_messages(&row, "predicted", &JudgePrompts::builtin()).unwrap();
        assert!(m[0].content.contains("The environment is a shell"));
        let u = &m[1].content;
        assert!(
            u.contains("# Earlier turns\n\nls\n**Environment Observation:**\nb"),
            "{u}"
        );
        assert!(u.contains("# Current turn\n\ntouch a"), "{u}");
        assert!(u.contains("```\npredicted\n```"), "{u}");
        assert!(u.ends_with("# Real observation\n```\n\n```\n"), "{u}");
    }

    #[test]
    fn prediction_for_the_judge() {
        assert_eq!(
            judged_prediction("<think>x</think><predicted_observation> a </predicted_observation>"),
            "a"
        );
        assert_eq!(judged_prediction("plan</think>\nno tags"), "no tags");
        assert_eq!(judged_prediction("The cart opens."), "The cart opens.");
        // Output cut off inside reasoning: nothing to grade, never the
        // reasoning (nor a draft inside it).
        assert_eq!(
            judged_prediction("<think>The cart opens. <predicted_observation>draft"),
            ""
        );
        assert_eq!(
            judged_prediction("<think>x</think><predicted_observation> cut off"),
            "cut off"
        );
    }
}
