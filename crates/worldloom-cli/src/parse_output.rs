//! `worldloom parse-output`: extract the observation and reasoning from raw
//! model output.
//!
//! The input is raw text, or a JSON OpenAI chat-completions response (or just
//! its `message` object) with `content` and optional `reasoning_content`.

use std::io::Read;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde_json::{Value, json};
use worldloom_core::{ParsedOutput, parse_model_output, parse_openai_message};

/// Arguments of `worldloom parse-output`.
#[derive(Args, Debug)]
pub struct ParseOutputArgs {
    /// The output file, or `-` for standard input.
    pub file: String,
    /// Print `{"observation", "reasoning", "status", "warnings"}` as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Parses `text`: an OpenAI-style JSON message/response when it is one, else
/// raw output.
pub fn parse_text(text: &str) -> ParsedOutput {
    if let Ok(value) = serde_json::from_str::<Value>(text.trim()) {
        let message = value
            .pointer("/choices/0/message")
            .or_else(|| value.get("message"))
            .or(Some(&value))
            .filter(|m| m.get("content").is_some() || m.get("reasoning_content").is_some());
        if let Some(m) = message {
            let reasoning = m
                .get("reasoning_content")
                .or_else(|| m.get("reasoning"))
                .and_then(Value::as_str);
            return parse_openai_message(m.get("content").and_then(Value::as_str), reasoning);
        }
    }
    parse_model_output(text)
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
        let decoded = worldloom_core::text::read_text(&path)?;
        if let Some(w) = decoded.warning {
            eprintln!("warning: {w}");
        }
        text = decoded.text;
    }
    let parsed = parse_text(&text);
    if args.json {
        let out = json!({
            "observation": parsed.observation,
            "reasoning": parsed.reasoning,
            "status": parsed.status.as_str(),
            "warnings": parsed.warnings,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!("status: {}", parsed.status);
        for w in &parsed.warnings {
            println!("warning: {w}");
        }
        if !parsed.reasoning.is_empty() {
            println!("--- reasoning ---\n{}", parsed.reasoning);
        }
        match &parsed.observation {
            Some(o) => println!("--- observation ---\n{o}"),
            None => println!("--- no observation ---"),
        }
    }
    Ok(())
}
