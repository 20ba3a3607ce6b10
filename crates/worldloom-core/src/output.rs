//! Model-output parsing: separate reasoning from the answer and extract the
//! predicted observation.
//!
//! Qwen-AgentWorld answers with optional reasoning in `<think>…</think>`
//! followed by the observation in `<predicted_observation>…
//! </predicted_observation>` (AgentWorldBench system prompts; the official
//! evaluation script `eval/eval.py` extracts the last such block). Qwen3.5
//! chat templates open the think block inside the prompt, so the output often
//! starts with reasoning and only closes it (a lone `</think>`).
//!
//! The rules (differences from the official parser are listed in
//! `docs/formats.md`):
//! - The text is scanned once, left to right. Outside any block, `<think>`
//!   opens reasoning; think blocks nest (a depth counter), and everything
//!   inside them is reasoning, including any `<predicted_observation>` drafts.
//! - A `</think>` with no open think block makes everything before it
//!   reasoning (including observation blocks seen before it).
//! - `<predicted_observation>` outside reasoning opens an observation block;
//!   inside it every character is content (tag-like text such as `<think>` or
//!   `<div>` included) until `</predicted_observation>`. The **last** block
//!   wins. A block with no closing tag runs to the end: status `truncated`.
//! - An unclosed `<think>` at the end (generation stopped while reasoning)
//!   yields no observation, reasoning kept. Reasoning delivered apart from
//!   the answer (an API's `reasoning_content`) with an empty answer is the
//!   same output and gets the same status.
//! - The observation is trimmed of surrounding whitespace and of a leading
//!   `**Environment Observation:**` marker.
//! - Tags match ASCII case-insensitively, as in the official script.
//!
//! - The status is decided by one function, [`output_status`], from what the
//!   output holds and, when known, why generation ended ([`StopReason`]):
//!   `ok` (a closed observation block), `truncated` (an unclosed block, or
//!   no block because generation hit the token limit: reasoning kept, never
//!   taken as the observation), `no_observation` (output, but no block),
//!   `empty` (nothing, reasoning included). Every path (engines, `collect`,
//!   `parse-output`, eval, the judge, the studio, `serve-model`'s clients)
//!   goes through it, so the same output gets the same status everywhere.
//!
//! [`OutputParser`] applies these rules to a stream (engines feed it as they
//! generate, starting inside reasoning when the prompt opened the think
//! block) and to a whole text ([`parse_model_output`] is one push and
//! `finish`). This module is the one place that spells the tags.

use serde::{Deserialize, Serialize};

use crate::observation::AWB_RESPONSE_MARKER;

/// The outcome of extracting an observation from model output (decided by
/// [`output_status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum OutputStatus {
    /// A closed `<predicted_observation>` block was found.
    Ok,
    /// Cut off: the last block has no closing tag (its content runs to the
    /// end and is the observation), or generation stopped at the token limit
    /// before any block (no observation; the reasoning is kept).
    Truncated,
    /// There is output (reasoning or text), but no observation block
    /// outside reasoning.
    NoObservation,
    /// Nothing was generated: no answer and no reasoning beyond whitespace.
    Empty,
}

/// Why generation ended, as engines report it (OpenAI-compatible servers'
/// `finish_reason` read by [`StopReason::from_finish_reason`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model emitted its end-of-turn token (`<|im_end|>` for Qwen).
    EndOfTurn,
    /// The output reached one of the requested stop strings.
    StopString,
    /// The observation block closed and the engine was asked to stop there.
    ObservationClosed,
    /// The limit on new tokens was reached.
    MaxTokens,
    /// The caller cancelled.
    Cancelled,
}

impl StopReason {
    /// The snake_case name (`end_of_turn`, `stop_string`,
    /// `observation_closed`, `max_tokens`, `cancelled`).
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::EndOfTurn => "end_of_turn",
            StopReason::StopString => "stop_string",
            StopReason::ObservationClosed => "observation_closed",
            StopReason::MaxTokens => "max_tokens",
            StopReason::Cancelled => "cancelled",
        }
    }

    /// Reads an OpenAI `finish_reason`: `length` is the token limit;
    /// `stop` is a stop string when the server names the matched string
    /// (vLLM's `stop_reason`, `matched_stop_string`), else the end of the
    /// turn; anything else (`tool_calls`, `content_filter`, …) ended the
    /// turn too.
    pub fn from_finish_reason(finish_reason: &str, matched_stop_string: bool) -> Self {
        match finish_reason {
            "length" => StopReason::MaxTokens,
            "stop" if matched_stop_string => StopReason::StopString,
            _ => StopReason::EndOfTurn,
        }
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for StopReason {
    type Err = String;

    /// A snake_case name ([`StopReason::as_str`]) or an OpenAI
    /// `finish_reason` (`length`, `stop`).
    fn from_str(s: &str) -> Result<Self, String> {
        let all = [
            StopReason::EndOfTurn,
            StopReason::StopString,
            StopReason::ObservationClosed,
            StopReason::MaxTokens,
            StopReason::Cancelled,
        ];
        if let Some(r) = all.iter().find(|r| r.as_str() == s) {
            return Ok(*r);
        }
        match s {
            "length" | "stop" => Ok(StopReason::from_finish_reason(s, false)),
            _ => Err(format!(
                "unknown stop reason `{s}` (one of: {}, or an OpenAI finish_reason `length` / `stop`)",
                all.map(StopReason::as_str).join(", ")
            )),
        }
    }
}

/// What an output holds, as far as its status goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    /// Nothing but whitespace, reasoning included.
    Nothing,
    /// Reasoning or text, but no observation block outside reasoning.
    NoBlock,
    /// An observation block without its closing tag.
    OpenBlock,
    /// A closed observation block.
    ClosedBlock,
    /// Already cut at the token limit with no block (a status decided
    /// before, kept as it is).
    CutBeforeBlock,
}

impl Found {
    /// What a parse (or a status decided before) says the output holds.
    fn of(parsed: &ParsedOutput) -> Found {
        match parsed.status {
            OutputStatus::Ok => Found::ClosedBlock,
            OutputStatus::Truncated if parsed.observation.is_some() => Found::OpenBlock,
            OutputStatus::Truncated => Found::CutBeforeBlock,
            OutputStatus::NoObservation => Found::NoBlock,
            // Reasoning delivered apart, with an empty answer: output
            // without a block, as when the think block is never closed.
            OutputStatus::Empty if !parsed.reasoning.trim().is_empty() => Found::NoBlock,
            OutputStatus::Empty => Found::Nothing,
        }
    }
}

/// The status of an output: the one rule every path uses (module docs).
///
/// `parsed` is what the output holds (a parse, possibly with reasoning
/// delivered apart); `stop` is why generation ended, `None` when unknown
/// (a text read from a file). A closed block is `ok`; an unclosed block is
/// `truncated`; output without a block is `truncated` when generation hit
/// the token limit ([`StopReason::MaxTokens`]) and `no_observation`
/// otherwise; nothing at all is `empty`. Deciding again with the same or no
/// stop reason changes nothing.
pub fn output_status(parsed: &ParsedOutput, stop: Option<StopReason>) -> OutputStatus {
    decide(Found::of(parsed), stop)
}

fn decide(found: Found, stop: Option<StopReason>) -> OutputStatus {
    match found {
        Found::ClosedBlock => OutputStatus::Ok,
        Found::OpenBlock | Found::CutBeforeBlock => OutputStatus::Truncated,
        Found::NoBlock if stop == Some(StopReason::MaxTokens) => OutputStatus::Truncated,
        Found::NoBlock => OutputStatus::NoObservation,
        Found::Nothing => OutputStatus::Empty,
    }
}

impl OutputStatus {
    /// The snake_case name (`ok`, `truncated`, `no_observation`, `empty`).
    pub fn as_str(self) -> &'static str {
        match self {
            OutputStatus::Ok => "ok",
            OutputStatus::Truncated => "truncated",
            OutputStatus::NoObservation => "no_observation",
            OutputStatus::Empty => "empty",
        }
    }
}

impl std::fmt::Display for OutputStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Parsed model output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParsedOutput {
    /// The extracted observation; `None` unless status is `ok` or `truncated`.
    pub observation: Option<String>,
    /// The reasoning text (think blocks joined by a blank line, trimmed).
    pub reasoning: String,
    /// What was found.
    pub status: OutputStatus,
    /// Oddities worth showing (several blocks, text outside blocks, unclosed
    /// think, an empty block).
    pub warnings: Vec<String>,
}

impl ParsedOutput {
    /// Decides the status again knowing why generation ended
    /// ([`output_status`]); output cut at the token limit before an
    /// observation block becomes `truncated` with a warning saying so (its
    /// reasoning kept, no observation).
    pub fn settle(&mut self, stop: Option<StopReason>) {
        let status = output_status(self, stop);
        if status == OutputStatus::Truncated && self.status != OutputStatus::Truncated {
            self.warnings.push(
                "generation stopped at the token limit before an observation block: truncated, no observation"
                    .into(),
            );
        }
        self.status = status;
    }
}

/// The tag that opens reasoning.
pub const THINK_OPEN: &str = "<think>";
/// The tag that closes reasoning.
pub const THINK_CLOSE: &str = "</think>";
/// The tag that opens the predicted observation.
pub const OBSERVATION_OPEN: &str = "<predicted_observation>";
/// The tag that closes the predicted observation.
pub const OBSERVATION_CLOSE: &str = "</predicted_observation>";
const OBS_OPEN: &str = OBSERVATION_OPEN;
const OBS_CLOSE: &str = OBSERVATION_CLOSE;

fn starts_with_ci(haystack: &str, at: usize, needle: &str) -> bool {
    haystack
        .as_bytes()
        .get(at..at + needle.len())
        .is_some_and(|b| b.eq_ignore_ascii_case(needle.as_bytes()))
}

/// Finds the next `<` at or after `from` where one of `tags` starts.
fn next_tag<'t>(text: &str, from: usize, tags: &[&'t str]) -> Option<(usize, &'t str)> {
    let bytes = text.as_bytes();
    let mut i = from;
    while let Some(offset) = bytes.get(i..)?.iter().position(|&b| b == b'<') {
        let at = i + offset;
        if let Some(tag) = tags.iter().find(|t| starts_with_ci(text, at, t)) {
            return Some((at, tag));
        }
        i = at + 1;
    }
    None
}

/// The whole-text parse behind [`OutputParser::finish`]: the parsed output
/// and where the answer (the text after the last think block) starts, `None`
/// when the text ends inside reasoning.
fn parse_whole(raw: &str) -> (ParsedOutput, Option<usize>) {
    let mut warnings = Vec::new();
    if raw.trim().is_empty() {
        let parsed = ParsedOutput {
            observation: None,
            reasoning: String::new(),
            status: decide(Found::Nothing, None),
            warnings,
        };
        return (parsed, Some(0));
    }
    let mut answer_from = Some(0);
    let mut reasoning_parts: Vec<&str> = Vec::new();
    // Text outside think and observation blocks, since the last reset.
    let mut outside: Vec<&str> = Vec::new();
    let mut blocks: Vec<(&str, bool)> = Vec::new(); // (content, closed)
    let mut pos = 0;
    let mut unclosed_think = false;
    loop {
        let Some((at, tag)) = next_tag(raw, pos, &[THINK_OPEN, THINK_CLOSE, OBS_OPEN]) else {
            outside.push(&raw[pos..]);
            break;
        };
        outside.push(&raw[pos..at]);
        match tag {
            THINK_OPEN => {
                // Reasoning until the matching close (nesting counted).
                let start = at + THINK_OPEN.len();
                let mut depth = 1;
                let mut cursor = start;
                let mut end = None;
                while let Some((t_at, t)) = next_tag(raw, cursor, &[THINK_OPEN, THINK_CLOSE]) {
                    if t == THINK_OPEN {
                        depth += 1;
                    } else {
                        depth -= 1;
                        if depth == 0 {
                            end = Some(t_at);
                            break;
                        }
                    }
                    cursor = t_at + t.len();
                }
                match end {
                    Some(e) => {
                        reasoning_parts.push(&raw[start..e]);
                        pos = e + THINK_CLOSE.len();
                        answer_from = Some(pos);
                    }
                    None => {
                        reasoning_parts.push(&raw[start..]);
                        unclosed_think = true;
                        answer_from = None;
                        break;
                    }
                }
            }
            THINK_CLOSE => {
                // A lone close: everything before it was reasoning.
                reasoning_parts.clear();
                reasoning_parts.push(&raw[..at]);
                if !blocks.is_empty() {
                    warnings.push(format!(
                        "{} <predicted_observation> block(s) before a lone </think> were treated as reasoning",
                        blocks.len()
                    ));
                }
                blocks.clear();
                outside.clear();
                pos = at + THINK_CLOSE.len();
                answer_from = Some(pos);
            }
            _ => {
                let start = at + OBS_OPEN.len();
                match next_tag(raw, start, &[OBS_CLOSE]) {
                    Some((close_at, _)) => {
                        blocks.push((&raw[start..close_at], true));
                        pos = close_at + OBS_CLOSE.len();
                    }
                    None => {
                        blocks.push((&raw[start..], false));
                        break;
                    }
                }
            }
        }
    }

    let reasoning = reasoning_parts
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    let stray: usize = outside.iter().map(|s| s.trim().len()).sum();
    if unclosed_think {
        warnings.push("reasoning was cut off: <think> is never closed".into());
        if next_tag(
            reasoning_parts.last().copied().unwrap_or(""),
            0,
            &[OBS_OPEN],
        )
        .is_some()
        {
            warnings.push(
                "a <predicted_observation> inside the unclosed reasoning was not used".into(),
            );
        }
    }
    let Some(&(content, closed)) = blocks.last() else {
        if stray > 0 {
            warnings.push(format!(
                "{stray} bytes of text outside reasoning, with no <predicted_observation> block"
            ));
        }
        let found = if reasoning.is_empty() && stray == 0 {
            Found::Nothing
        } else {
            Found::NoBlock
        };
        let parsed = ParsedOutput {
            observation: None,
            reasoning,
            status: decide(found, None),
            warnings,
        };
        return (parsed, answer_from);
    };
    if blocks.len() > 1 {
        warnings.push(format!(
            "{} <predicted_observation> blocks; the last one is used",
            blocks.len()
        ));
    }
    if stray > 0 {
        warnings.push(format!(
            "{stray} bytes of text outside reasoning and observation blocks ignored"
        ));
    }
    let mut observation = content.trim();
    if let Some(rest) = observation.strip_prefix(AWB_RESPONSE_MARKER) {
        observation = rest.trim();
    }
    if observation.is_empty() {
        warnings.push("the <predicted_observation> block is empty".into());
    }
    let status = if closed {
        decide(Found::ClosedBlock, None)
    } else {
        warnings.push(
            "the last <predicted_observation> block is not closed; content taken to the end".into(),
        );
        decide(Found::OpenBlock, None)
    };
    let parsed = ParsedOutput {
        observation: Some(observation.to_owned()),
        reasoning,
        status,
        warnings,
    };
    (parsed, answer_from)
}

/// Parses raw model output (reasoning inline) as a whole: `push(raw)` then
/// `finish()` on an [`OutputParser`] that starts outside reasoning. See the
/// module docs for the rules.
pub fn parse_model_output(raw: &str) -> ParsedOutput {
    let mut parser = OutputParser::new(false);
    parser.push(raw);
    parser.finish()
}

/// Formats an observation as model output, the way the baselines answer
/// (`<predicted_observation>\n…\n</predicted_observation>`, no reasoning).
pub fn format_observation(observation: &str) -> String {
    format!("{OBSERVATION_OPEN}\n{observation}\n{OBSERVATION_CLOSE}")
}

/// Whether a rendered prompt leaves a think block open (the generation
/// prompt of Qwen3.5 templates with thinking enabled), so that the output
/// starts as reasoning.
pub fn opens_reasoning(prompt: &str) -> bool {
    match (prompt.rfind(THINK_OPEN), prompt.rfind(THINK_CLOSE)) {
        (Some(open), Some(close)) => open > close,
        (Some(_), None) => true,
        _ => false,
    }
}

/// Each token's share of the observation, for token texts of an answer that
/// spells the observation block (as stored before the studio kept
/// observation tokens only): the texts are parsed one after the other and a
/// token's share is the observation text it released (tags and surrounding
/// whitespace removed, so shares may be empty). `None` when the texts hold
/// no observation block (they are the observation already).
pub fn observation_shares(texts: &[&str]) -> Option<Vec<String>> {
    next_tag(&texts.concat(), 0, &[OBSERVATION_OPEN])?;
    let mut parser = OutputParser::new(false);
    let mut shares: Vec<String> = texts.iter().map(|t| parser.push(t).observation).collect();
    let rest = parser.flush().observation;
    if let Some(last) = shares.last_mut() {
        last.push_str(&rest);
    }
    Some(shares)
}

/// What one [`OutputParser::push`] released.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutputDelta {
    /// New reasoning text (tags removed; not trimmed).
    pub reasoning: String,
    /// New observation text: tags, the leading `**Environment Observation:**`
    /// marker and surrounding whitespace removed.
    pub observation: String,
    /// New answer text: the generated text after the think block, tags of
    /// the observation block kept, line breaks right after the think block
    /// removed (the streaming form of [`ModelOutput::answer`]).
    pub answer: String,
    /// Whether an observation block closed in this push.
    pub observation_closed: bool,
}

impl OutputDelta {
    /// Whether nothing was released and no block closed.
    pub fn is_empty(&self) -> bool {
        self.reasoning.is_empty()
            && self.observation.is_empty()
            && self.answer.is_empty()
            && !self.observation_closed
    }

    /// Appends `other` (a later delta) to this one.
    pub fn extend(&mut self, other: OutputDelta) {
        self.reasoning.push_str(&other.reasoning);
        self.observation.push_str(&other.observation);
        self.answer.push_str(&other.answer);
        self.observation_closed |= other.observation_closed;
    }
}

/// A finished model output: the text as generated, the answer and the parse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelOutput {
    /// The generated text as pushed (reasoning inline, tags kept), without
    /// the think block a prompt opened.
    pub raw: String,
    /// Reasoning delivered separately ([`OutputParser::push_reasoning`], an
    /// API's `reasoning_content`), when there was any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// The answer: the generated text after the last think block (line
    /// breaks right after the block removed), what an OpenAI-compatible
    /// server with a reasoning parser returns as `content`; the whole text
    /// when there is no think block, empty when the output ends inside
    /// reasoning.
    pub answer: String,
    /// Observation, reasoning, status and warnings (module rules).
    pub parsed: ParsedOutput,
}

impl ModelOutput {
    /// [`ParsedOutput::settle`] on the parse: the status once it is known
    /// why generation ended. Engines call it when they finish, and
    /// `collect` for any engine that did not.
    pub fn settle(&mut self, stop: Option<StopReason>) {
        self.parsed.settle(stop);
    }
}

/// Where the streaming view of an [`OutputParser`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// At the start, outside reasoning: held back until a tag decides
    /// whether it was reasoning (a lone close) or text outside blocks.
    Undecided,
    /// Outside reasoning and observation blocks.
    Outside,
    /// Inside reasoning, at this nesting depth.
    Reasoning(usize),
    /// Inside an observation block.
    Observation,
}

/// Trims an observation while it streams: leading whitespace and the
/// `**Environment Observation:**` marker are dropped, trailing whitespace is
/// held until more text follows or the block ends.
#[derive(Debug, Clone, Default)]
struct ObservationTrim {
    /// Text not yet known to be past the leading whitespace and marker.
    head: String,
    started: bool,
    pending_ws: String,
}

impl ObservationTrim {
    fn feed(&mut self, text: &str, out: &mut String) {
        if !self.started {
            self.head.push_str(text);
            let trimmed = self.head.trim_start();
            let body = if let Some(rest) = trimmed.strip_prefix(AWB_RESPONSE_MARKER) {
                let rest = rest.trim_start();
                if rest.is_empty() {
                    return;
                }
                rest
            } else if trimmed.is_empty() || AWB_RESPONSE_MARKER.starts_with(trimmed) {
                return;
            } else {
                trimmed
            };
            let body = body.to_owned();
            self.head.clear();
            self.started = true;
            self.body(&body, out);
        } else {
            self.body(text, out);
        }
    }

    fn body(&mut self, text: &str, out: &mut String) {
        let kept = text.trim_end();
        if kept.is_empty() {
            self.pending_ws.push_str(text);
            return;
        }
        out.push_str(&self.pending_ws);
        out.push_str(kept);
        self.pending_ws = text[kept.len()..].to_owned();
    }

    /// The block ended: what the head still holds, trimmed.
    fn end(&mut self, out: &mut String) {
        if !self.started {
            let trimmed = self.head.trim();
            let body = trimmed
                .strip_prefix(AWB_RESPONSE_MARKER)
                .map_or(trimmed, str::trim);
            out.push_str(body);
        }
        *self = Self::default();
    }
}

/// Length of the longest suffix of `text` that is a proper, ASCII
/// case-insensitive prefix of one of `tags` (so it may become the tag).
fn held_len(text: &str, tags: &[&str]) -> usize {
    let bytes = text.as_bytes();
    let mut held = 0;
    for tag in tags {
        for k in (held + 1..tag.len()).rev() {
            if k <= bytes.len()
                && bytes[bytes.len() - k..].eq_ignore_ascii_case(&tag.as_bytes()[..k])
            {
                held = k;
                break;
            }
        }
    }
    held
}

/// The one parser of model output, for a stream and for a whole text.
///
/// Feed generated text with [`push`](Self::push) as it arrives; each push
/// returns the reasoning and observation it releases. Text that may be the
/// start of a tag, the observation's trailing whitespace, and (when the
/// output does not start in reasoning) the text before the first tag are
/// held back until decided. [`flush`](Self::flush) releases what is held at
/// the end; [`finish`](Self::finish) gives the [`ParsedOutput`] of the whole
/// text by the module rules, which is authoritative: the concatenated deltas
/// equal its reasoning (before trimming) and observation except in odd
/// outputs (several observation blocks, whose deltas follow one another; a
/// lone think close after an observation block; separately delivered
/// reasoning).
#[derive(Debug, Clone)]
pub struct OutputParser {
    starts_in_reasoning: bool,
    raw: String,
    separate: String,
    pos: usize,
    mode: Mode,
    trim: ObservationTrim,
    /// Whether answer text other than line breaks was released since the
    /// last think block.
    answer_started: bool,
}

impl OutputParser {
    /// A parser; `starts_in_reasoning` when the prompt opened the think
    /// block (see [`opens_reasoning`]).
    pub fn new(starts_in_reasoning: bool) -> Self {
        Self {
            starts_in_reasoning,
            raw: String::new(),
            separate: String::new(),
            pos: 0,
            mode: if starts_in_reasoning {
                Mode::Reasoning(1)
            } else {
                Mode::Undecided
            },
            trim: ObservationTrim::default(),
            // Line breaks are dropped only after a think block.
            answer_started: true,
        }
    }

    fn answer(&mut self, text: &str, delta: &mut OutputDelta) {
        let text = if self.answer_started {
            text
        } else {
            text.trim_start_matches(['\n', '\r'])
        };
        if !text.is_empty() {
            self.answer_started = true;
            delta.answer.push_str(text);
        }
    }

    /// The text pushed so far.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// Adds generated text; returns what it releases.
    pub fn push(&mut self, text: &str) -> OutputDelta {
        self.raw.push_str(text);
        self.advance(false)
    }

    /// Adds generated text up to the end of the first observation block that
    /// closes in it (for engines that stop there); returns what it releases
    /// and how many bytes of `text` were taken (all of them unless a block
    /// closed).
    pub fn push_to_close(&mut self, text: &str) -> (OutputDelta, usize) {
        let mut delta = OutputDelta::default();
        for (i, c) in text.char_indices() {
            let end = i + c.len_utf8();
            delta.extend(self.push(&text[i..end]));
            if delta.observation_closed {
                return (delta, end);
            }
        }
        (delta, text.len())
    }

    /// Adds reasoning delivered apart from the text (an API's
    /// `reasoning_content`); it is released at once and, in the final
    /// parse, comes before the inline reasoning.
    pub fn push_reasoning(&mut self, text: &str) -> OutputDelta {
        self.separate.push_str(text);
        OutputDelta {
            reasoning: text.to_owned(),
            ..OutputDelta::default()
        }
    }

    /// Ends the text: releases everything held back. Further pushes start
    /// after it.
    pub fn flush(&mut self) -> OutputDelta {
        self.advance(true)
    }

    /// The parse of everything pushed, by the module rules.
    pub fn finish(self) -> ParsedOutput {
        self.finish_output().parsed
    }

    /// The parse of everything pushed, with the raw text and the answer.
    pub fn finish_output(self) -> ModelOutput {
        let (mut parsed, answer_from) = if self.starts_in_reasoning && !self.raw.trim().is_empty() {
            let (parsed, from) = parse_whole(&format!("{THINK_OPEN}{}", self.raw));
            (parsed, from.map(|f| f.saturating_sub(THINK_OPEN.len())))
        } else {
            parse_whole(&self.raw)
        };
        let answer = match answer_from.and_then(|from| Some((from, self.raw.get(from..)?))) {
            Some((0, text)) => text.to_owned(),
            Some((_, text)) => text.trim_start_matches(['\n', '\r']).to_owned(),
            None => String::new(),
        };
        let separate = self.separate.trim();
        if !separate.is_empty() {
            parsed.reasoning = if parsed.reasoning.is_empty() {
                separate.to_owned()
            } else {
                format!("{separate}\n\n{}", parsed.reasoning)
            };
            if parsed.status == OutputStatus::Empty {
                parsed
                    .warnings
                    .push("content is empty; all text is in reasoning_content".into());
            }
            // Reasoning apart counts as output, as an unclosed think block does.
            parsed.status = output_status(&parsed, None);
        }
        ModelOutput {
            reasoning_content: (!self.separate.is_empty()).then_some(self.separate),
            raw: self.raw,
            answer,
            parsed,
        }
    }

    /// Consumes `raw[pos..]` as far as it is decided (everything when
    /// `last`).
    fn advance(&mut self, last: bool) -> OutputDelta {
        let mut delta = OutputDelta::default();
        loop {
            let rest = &self.raw[self.pos..];
            if rest.is_empty() {
                break;
            }
            match self.mode {
                Mode::Undecided | Mode::Outside => {
                    let undecided = self.mode == Mode::Undecided;
                    match next_tag(rest, 0, &[THINK_OPEN, THINK_CLOSE, OBS_OPEN]) {
                        Some((at, tag)) => {
                            let (before, with_tag) =
                                (rest[..at].to_owned(), rest[..at + tag.len()].to_owned());
                            self.pos += at + tag.len();
                            self.mode = match tag {
                                THINK_OPEN => Mode::Reasoning(1),
                                OBS_OPEN => Mode::Observation,
                                _ => Mode::Outside,
                            };
                            match tag {
                                THINK_CLOSE if undecided => {
                                    delta.reasoning.push_str(&before);
                                    self.answer_started = false;
                                }
                                // Text before the first think block is not
                                // part of the answer (it comes after the block).
                                THINK_OPEN if undecided => {}
                                THINK_OPEN | THINK_CLOSE => {
                                    self.answer(&before, &mut delta);
                                    self.answer_started = false;
                                }
                                _ => self.answer(&with_tag, &mut delta),
                            }
                        }
                        None if undecided && !last => break,
                        None => {
                            let held = if last {
                                0
                            } else {
                                held_len(rest, &[THINK_OPEN, THINK_CLOSE, OBS_OPEN])
                            };
                            let text = rest[..rest.len() - held].to_owned();
                            self.pos += text.len();
                            self.mode = Mode::Outside;
                            self.answer(&text, &mut delta);
                            break;
                        }
                    }
                }
                Mode::Reasoning(depth) => match next_tag(rest, 0, &[THINK_OPEN, THINK_CLOSE]) {
                    Some((at, tag)) => {
                        if tag == THINK_CLOSE && depth == 1 {
                            delta.reasoning.push_str(&rest[..at]);
                            self.mode = Mode::Outside;
                            self.answer_started = false;
                        } else {
                            delta.reasoning.push_str(&rest[..at + tag.len()]);
                            self.mode = Mode::Reasoning(if tag == THINK_OPEN {
                                depth + 1
                            } else {
                                depth - 1
                            });
                        }
                        self.pos += at + tag.len();
                    }
                    None => {
                        let held = if last {
                            0
                        } else {
                            held_len(rest, &[THINK_OPEN, THINK_CLOSE])
                        };
                        delta.reasoning.push_str(&rest[..rest.len() - held]);
                        self.pos += rest.len() - held;
                        break;
                    }
                },
                Mode::Observation => match next_tag(rest, 0, &[OBS_CLOSE]) {
                    Some((at, tag)) => {
                        let with_tag = rest[..at + tag.len()].to_owned();
                        self.trim.feed(&with_tag[..at], &mut delta.observation);
                        self.trim.end(&mut delta.observation);
                        delta.observation_closed = true;
                        self.pos += with_tag.len();
                        self.mode = Mode::Outside;
                        self.answer(&with_tag, &mut delta);
                    }
                    None => {
                        let held = if last {
                            0
                        } else {
                            held_len(rest, &[OBS_CLOSE])
                        };
                        let text = rest[..rest.len() - held].to_owned();
                        self.trim.feed(&text, &mut delta.observation);
                        self.pos += text.len();
                        self.answer(&text, &mut delta);
                        break;
                    }
                },
            }
        }
        if last && self.mode == Mode::Observation {
            self.trim.end(&mut delta.observation);
        }
        delta
    }
}

/// Parses an OpenAI-style chat message whose reasoning may come separately in
/// `reasoning_content` (vLLM/SGLang with a reasoning parser). The observation
/// comes only from `content`: empty content with reasoning is a
/// `no_observation` prediction with the reasoning kept (as the same text
/// with an unclosed think block inline), never an observation, even when the
/// reasoning holds a `<predicted_observation>` draft. Call
/// [`ParsedOutput::settle`] with the message's `finish_reason`
/// ([`StopReason::from_finish_reason`]) for the final status.
pub fn parse_openai_message(
    content: Option<&str>,
    reasoning_content: Option<&str>,
) -> ParsedOutput {
    let mut parser = OutputParser::new(false);
    if let Some(reasoning) = reasoning_content {
        parser.push_reasoning(reasoning);
    }
    parser.push(content.unwrap_or(""));
    parser.finish()
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod stream_tests;
