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
//!   yields no observation: status `no_observation`, reasoning kept.
//! - The observation is trimmed of surrounding whitespace and of a leading
//!   `**Environment Observation:**` marker.
//! - Tags match ASCII case-insensitively, as in the official script.

use serde::{Deserialize, Serialize};

use crate::observation::AWB_RESPONSE_MARKER;

/// The outcome of extracting an observation from model output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum OutputStatus {
    /// A closed `<predicted_observation>` block was found.
    Ok,
    /// The last block has no closing tag; its content runs to the end.
    Truncated,
    /// There is output, but no observation block outside reasoning.
    NoObservation,
    /// The output (answer content) is empty or whitespace only.
    Empty,
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

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";
const OBS_OPEN: &str = "<predicted_observation>";
const OBS_CLOSE: &str = "</predicted_observation>";

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

/// Parses raw model output (reasoning inline). See the module docs for the
/// rules.
pub fn parse_model_output(raw: &str) -> ParsedOutput {
    let mut warnings = Vec::new();
    if raw.trim().is_empty() {
        return ParsedOutput {
            observation: None,
            reasoning: String::new(),
            status: OutputStatus::Empty,
            warnings,
        };
    }
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
                    }
                    None => {
                        reasoning_parts.push(&raw[start..]);
                        unclosed_think = true;
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
        let status = if reasoning.is_empty() && stray == 0 {
            OutputStatus::Empty
        } else {
            OutputStatus::NoObservation
        };
        return ParsedOutput {
            observation: None,
            reasoning,
            status,
            warnings,
        };
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
        OutputStatus::Ok
    } else {
        warnings.push(
            "the last <predicted_observation> block is not closed; content taken to the end".into(),
        );
        OutputStatus::Truncated
    };
    ParsedOutput {
        observation: Some(observation.to_owned()),
        reasoning,
        status,
        warnings,
    }
}

/// Parses an OpenAI-style chat message whose reasoning may come separately in
/// `reasoning_content` (vLLM/SGLang with a reasoning parser). The observation
/// comes only from `content`: empty content is an `empty` prediction with the
/// reasoning kept, never an observation, even when the reasoning holds a
/// `<predicted_observation>` draft.
pub fn parse_openai_message(
    content: Option<&str>,
    reasoning_content: Option<&str>,
) -> ParsedOutput {
    let mut parsed = parse_model_output(content.unwrap_or(""));
    if let Some(separate) = reasoning_content.map(str::trim).filter(|r| !r.is_empty()) {
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
    }
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ok_with_reasoning() {
        let p = parse_model_output(
            "<think>a</think>\n<predicted_observation>\nX\n</predicted_observation>",
        );
        assert_eq!(p.status, OutputStatus::Ok);
        assert_eq!(p.observation.as_deref(), Some("X"));
        assert_eq!(p.reasoning, "a");
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    }

    #[test]
    fn lone_closing_think() {
        let p = parse_model_output(
            "plan the page\n</think>\n\n<predicted_observation>[1] button 'OK'</predicted_observation>",
        );
        assert_eq!(p.status, OutputStatus::Ok);
        assert_eq!(p.observation.as_deref(), Some("[1] button 'OK'"));
        assert_eq!(p.reasoning, "plan the page");
    }

    #[test]
    fn nested_think_hides_drafts() {
        let raw = "<think>outer <think>inner</think> draft <predicted_observation>DRAFT</predicted_observation></think><predicted_observation>FINAL</predicted_observation>";
        let p = parse_model_output(raw);
        assert_eq!(p.observation.as_deref(), Some("FINAL"));
        assert!(p.reasoning.contains("DRAFT"));
        assert_eq!(p.status, OutputStatus::Ok);
    }

    #[test]
    fn last_block_wins_and_marker_is_stripped() {
        let raw = "<predicted_observation>first</predicted_observation> then <predicted_observation>**Environment Observation:**\nsecond</predicted_observation>";
        let p = parse_model_output(raw);
        assert_eq!(p.observation.as_deref(), Some("second"));
        assert!(
            p.warnings
                .iter()
                .any(|w| w.contains("2 <predicted_observation> blocks"))
        );
    }

    #[test]
    fn unclosed_block_is_truncated() {
        let p = parse_model_output("</think><predicted_observation><hierarchy><node text='a'/>");
        assert_eq!(p.status, OutputStatus::Truncated);
        assert_eq!(
            p.observation.as_deref(),
            Some("<hierarchy><node text='a'/>")
        );
    }

    #[test]
    fn tag_like_text_inside_observation_is_content() {
        let raw = "<predicted_observation><div><think>literal</think></div>\n<PREDICTED_OBSERVATION> x</predicted_observation>";
        let p = parse_model_output(raw);
        assert_eq!(
            p.observation.as_deref(),
            Some("<div><think>literal</think></div>\n<PREDICTED_OBSERVATION> x")
        );
        assert_eq!(p.reasoning, "");
    }

    #[test]
    fn cut_off_inside_think_is_no_observation() {
        let p = parse_model_output("<think>The click opens the cart. <predicted_observation>draft");
        assert_eq!(p.status, OutputStatus::NoObservation);
        assert_eq!(p.observation, None);
        assert!(p.reasoning.starts_with("The click opens the cart."));
        assert!(p.warnings.iter().any(|w| w.contains("never closed")));
    }

    #[test]
    fn untagged_answer_is_no_observation() {
        let p = parse_model_output("The page now shows the cart.");
        assert_eq!(p.status, OutputStatus::NoObservation);
        assert_eq!(p.observation, None);
    }

    #[test]
    fn empty_and_whitespace() {
        assert_eq!(parse_model_output("").status, OutputStatus::Empty);
        assert_eq!(parse_model_output(" \n\t").status, OutputStatus::Empty);
        assert_eq!(
            parse_model_output("<think></think>").status,
            OutputStatus::Empty
        );
    }

    #[test]
    fn reasoning_only_openai_answer_is_empty_never_a_match() {
        let p = parse_openai_message(
            Some(""),
            Some("thinking... <predicted_observation>X</predicted_observation>"),
        );
        assert_eq!(p.status, OutputStatus::Empty);
        assert_eq!(p.observation, None);
        assert!(p.reasoning.contains("thinking"));
        let p = parse_openai_message(None, Some("r"));
        assert_eq!(p.status, OutputStatus::Empty);
    }

    #[test]
    fn non_ascii_around_tags() {
        let p = parse_model_output(
            "思考</think><predicted_observation>语言 °F</predicted_observation>",
        );
        assert_eq!(p.observation.as_deref(), Some("语言 °F"));
        assert_eq!(p.reasoning, "思考");
    }
}
