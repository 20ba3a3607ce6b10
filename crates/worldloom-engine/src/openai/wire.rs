//! The JSON shapes of chat-completions answers: finish reasons, usage,
//! separately delivered reasoning, error bodies.

use serde_json::Value;

use super::errors::quote;
use super::progress::Progress;
use crate::world_model::StopReason;

pub(super) fn finish_reason(choice: &Value) -> Option<StopReason> {
    let reason = choice.get("finish_reason").and_then(Value::as_str)?;
    // vLLM names the matched stop string in `stop_reason`.
    let matched = choice.get("stop_reason").is_some_and(Value::is_string);
    Some(StopReason::from_finish_reason(reason, matched))
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

pub(super) fn error_text(error: &Value) -> String {
    match error.get("message").and_then(Value::as_str) {
        Some(m) => m.to_owned(),
        None => quote(&error.to_string()),
    }
}
