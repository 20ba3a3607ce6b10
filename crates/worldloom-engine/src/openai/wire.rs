//! The JSON shapes of chat-completions answers: finish reasons, usage,
//! separately delivered reasoning, log-probabilities, error bodies.

use serde_json::Value;

use super::errors::quote;
use super::progress::Progress;
use crate::world_model::{StopReason, Token, TopLogprob};

pub(super) fn finish_reason(choice: &Value) -> Option<StopReason> {
    match choice.get("finish_reason").and_then(Value::as_str)? {
        "length" => Some(StopReason::MaxTokens),
        "stop" => {
            // vLLM names the matched stop string in `stop_reason`.
            if choice.get("stop_reason").is_some_and(Value::is_string) {
                Some(StopReason::StopString)
            } else {
                Some(StopReason::EndOfTurn)
            }
        }
        _ => Some(StopReason::EndOfTurn),
    }
}

pub(super) fn take_usage(value: &Value, progress: &mut Progress) {
    let Some(usage) = value.get("usage").filter(|u| u.is_object()) else {
        return;
    };
    let count = |v: Option<&Value>| v.and_then(Value::as_u64).map(|n| n as usize);
    if let Some(n) = count(usage.get("prompt_tokens")) {
        progress.prompt_tokens = Some(n);
    }
    if let Some(n) = count(usage.get("completion_tokens")) {
        progress.completion_tokens = Some(n);
    }
    if let Some(n) = count(
        usage
            .get("prompt_tokens_details")
            .and_then(|d| d.get("cached_tokens")),
    ) {
        progress.cached_tokens = n;
    }
}

/// Reasoning delivered apart from `content`: `reasoning_content` (vLLM and
/// SGLang with a reasoning parser, DeepSeek) or `reasoning` (newer vLLM,
/// Ollama, OpenRouter), the first one present.
pub(super) fn reasoning_field(message: &Value) -> Option<&str> {
    ["reasoning_content", "reasoning"]
        .iter()
        .find_map(|field| message.get(*field))
        .and_then(Value::as_str)
}

/// The tokens of `choices[].logprobs.content[]` (text, log-probability and
/// `top_logprobs` alternatives; no ids).
pub(super) fn logprob_tokens(choice: &Value) -> Vec<Token> {
    let Some(items) = choice
        .get("logprobs")
        .and_then(|l| l.get("content"))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let entry = |item: &Value| -> Option<(String, f32)> {
        Some((
            item.get("token")?.as_str()?.to_owned(),
            item.get("logprob")?.as_f64()? as f32,
        ))
    };
    items
        .iter()
        .filter_map(|item| {
            let (text, logprob) = entry(item)?;
            let top = item
                .get("top_logprobs")
                .and_then(Value::as_array)
                .map(|alts| {
                    alts.iter()
                        .filter_map(entry)
                        .map(|(text, logprob)| TopLogprob {
                            text,
                            id: None,
                            logprob,
                        })
                        .collect()
                })
                .unwrap_or_default();
            Some(Token {
                text,
                id: None,
                logprob: Some(logprob),
                top,
            })
        })
        .collect()
}

pub(super) fn error_text(error: &Value) -> String {
    match error.get("message").and_then(Value::as_str) {
        Some(m) => m.to_owned(),
        None => quote(&error.to_string()),
    }
}
