//! `worldloom parse-output`: extract the observation and reasoning from raw
//! model output.
//!
//! The input is raw text, or a JSON OpenAI chat-completions response (or just
//! its `message` object, or a choice) with `content` and optional
//! `reasoning_content`. The status is decided as on every other path
//! (`worldloom_core::output::output_status`): a response's `finish_reason`
//! (`length`: the token limit) or `--stop-reason` says why generation ended.

use std::io::Read;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde_json::{Value, json};
use worldloom_core::output::StopReason;
use worldloom_core::{ParsedOutput, parse_model_output, parse_openai_message};

/// Arguments of `worldloom parse-output`.
#[derive(Args, Debug)]
pub struct ParseOutputArgs {
    /// The output file, or `-` for standard input.
    pub file: String,
    /// Print `{"observation", "reasoning", "status", "warnings"}` as JSON.
    #[arg(long)]
    pub json: bool,
    /// Why generation ended, when the input does not say (`max_tokens` or
    /// `length`: the token limit, `end_of_turn`, `stop_string`,
    /// `observation_closed`, `cancelled`); overrides a response's
    /// `finish_reason`.
    #[arg(long, value_name = "REASON")]
    pub stop_reason: Option<StopReason>,
}

/// Parses `text`: an OpenAI-style JSON message/response when it is one, else
/// raw output. `stop` (or else a response's `finish_reason`) settles the
/// status.
pub fn parse_text(text: &str, stop: Option<StopReason>) -> ParsedOutput {
    if let Ok(value) = serde_json::from_str::<Value>(text.trim()) {
        let choice = value
            .pointer("/choices/0")
            .or(Some(&value))
            .filter(|c| c.get("message").is_some());
        let message = choice
            .and_then(|c| c.get("message"))
            .or(Some(&value))
            .filter(|m| m.get("content").is_some() || m.get("reasoning_content").is_some());
        if let Some(m) = message {
            let reasoning = m
                .get("reasoning_content")
                .or_else(|| m.get("reasoning"))
                .and_then(Value::as_str);
            let mut parsed =
                parse_openai_message(m.get("content").and_then(Value::as_str), reasoning);
            let finish = choice.and_then(|c| {
                let reason = c.get("finish_reason").and_then(Value::as_str)?;
                let matched = c.get("stop_reason").is_some_and(Value::is_string);
                Some(StopReason::from_finish_reason(reason, matched))
            });
            parsed.settle(stop.or(finish));
            return parsed;
        }
    }
    let mut parsed = parse_model_output(text);
    parsed.settle(stop);
    parsed
}

/// Runs `worldloom parse-output`.
pub fn run(args: &ParseOutputArgs) -> anyhow::Result<()> {
    let mut text = String::new();
    if args.file == "-" {
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading standard input")?;
    } else {
        let path = PathBuf::from(&args.file);
        let decoded = worldloom_core::input::read_text(&path)?;
        if let Some(w) = decoded.warning {
            eprintln!("warning: {w}");
        }
        text = decoded.text;
    }
    let parsed = parse_text(&text, args.stop_reason);
    if args.json {
        let out = json!({
            "observation": parsed.observation,
            "reasoning": parsed.reasoning,
            "status": parsed.status.as_str(),
            "warnings": parsed.warnings,
        });
        outln!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        outln!("status: {}", parsed.status);
        for w in &parsed.warnings {
            outln!("warning: {w}");
        }
        if !parsed.reasoning.is_empty() {
            outln!("--- reasoning ---\n{}", parsed.reasoning);
        }
        match &parsed.observation {
            Some(o) => outln!("--- observation ---\n{o}"),
            None => outln!("--- no observation ---"),
        }
    }
    Ok(())
}
