//! Reading a `POST /v1/chat/completions` body: the model, the messages and
//! every sampling field, each checked by name (a refusal's `param` names the
//! field), fields not given keeping the server's defaults; fields this
//! server does not honour are refused rather than ignored. Then the
//! context check (vLLM's rule) and, for a request without `seed`, a fresh
//! one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::StatusCode;
use serde_json::{Map, Value};
use worldloom_core::{ChatMessage, ChatRole};
use worldloom_engine::local::context_length_error;
use worldloom_engine::{EngineError, GenerationParams};

use crate::error::ApiError;
use crate::{AppState, MAX_CHOICES, MAX_TOP_LOGPROBS};

#[cfg(test)]
mod tests;

/// A parsed chat-completions request.
#[derive(Debug)]
pub(crate) struct ChatRequest {
    /// The chat, roles mapped to Worldloom's (`developer` is `system`).
    pub(crate) messages: Vec<ChatMessage>,
    /// The server's defaults with the request's fields applied.
    pub(crate) params: GenerationParams,
    /// Whether `max_tokens` / `max_completion_tokens` was given.
    pub(crate) max_tokens_given: bool,
    /// The request's seed, if it gave one.
    pub(crate) seed: Option<u64>,
    /// Choices asked for (`n`).
    pub(crate) n: usize,
    /// Answer as server-sent events.
    pub(crate) stream: bool,
    /// Send `usage` in a last chunk (`stream_options.include_usage`).
    pub(crate) include_usage: bool,
}

/// Request fields this server honours (or accepts as metadata).
const KNOWN_FIELDS: &[&str] = &[
    "model",
    "messages",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "presence_penalty",
    "frequency_penalty",
    "repetition_penalty",
    "seed",
    "n",
    "stop",
    "stop_token_ids",
    "skip_special_tokens",
    "logprobs",
    "top_logprobs",
    "stream",
    "stream_options",
    "chat_template_kwargs",
    "stop_after_observation",
    "speculative",
    "user",
];

/// Refuses fields this server would otherwise ignore (unknown ones, and
/// OpenAI features it does not have), naming the field.
fn refuse_unsupported(object: &Map<String, Value>) -> Result<(), ApiError> {
    for (key, value) in object {
        if KNOWN_FIELDS.contains(&key.as_str()) || value.is_null() {
            continue;
        }
        let default_value = match key.as_str() {
            "response_format" => {
                value.get("type").and_then(Value::as_str) == Some("text")
                    && value.as_object().is_some_and(|o| o.len() == 1)
            }
            "tool_choice" => value.as_str() == Some("none"),
            _ => false,
        };
        if default_value {
            continue;
        }
        return Err(ApiError::invalid(
            key.clone(),
            format!(
                "`{key}` is not supported by this server (see docs/eval.md for the fields it honours)"
            ),
        ));
    }
    for (outer, allowed) in [
        ("stream_options", "include_usage"),
        ("chat_template_kwargs", "enable_thinking"),
    ] {
        match object.get(outer) {
            None | Some(Value::Null) => {}
            Some(Value::Object(inner)) => {
                if let Some(key) = inner.keys().find(|k| k.as_str() != allowed) {
                    return Err(ApiError::invalid(
                        format!("{outer}.{key}"),
                        format!(
                            "`{outer}.{key}` is not supported by this server (only `{outer}.{allowed}`)"
                        ),
                    ));
                }
            }
            Some(_) => {
                return Err(ApiError::invalid(
                    outer,
                    format!("`{outer}` must be an object"),
                ));
            }
        }
    }
    Ok(())
}

/// Reads a chat-completions body for the model `model_id`, fields not given
/// keeping `defaults`.
///
/// # Errors
/// 400 naming the field that is missing, malformed, out of range or not
/// supported; 404 (`model_not_found`) for another model.
pub(crate) fn parse_request(
    body: &[u8],
    model_id: &str,
    defaults: &GenerationParams,
) -> Result<ChatRequest, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid("body", format!("the request body is not JSON: {e}")))?;
    let object = value
        .as_object()
        .ok_or_else(|| ApiError::invalid("body", "the request body must be a JSON object"))?;
    check_model(object, model_id)?;
    refuse_unsupported(object)?;
    let messages = parse_messages(object)?;
    let fields = Fields(object);
    let mut params = defaults.clone();
    let max_tokens_given = apply_sampling(&fields, &mut params)?;
    let seed = fields.seed()?;
    let n = fields.choices()?;
    apply_stops(&fields, &mut params)?;
    apply_switches(&fields, &mut params)?;
    apply_logprobs(&fields, &mut params)?;
    Ok(ChatRequest {
        messages,
        params,
        max_tokens_given,
        seed,
        n,
        stream: fields.boolean("stream")?.unwrap_or(false),
        include_usage: object
            .get("stream_options")
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// `model` must be given and name the served model.
fn check_model(object: &Map<String, Value>, model_id: &str) -> Result<(), ApiError> {
    let model = object
        .get("model")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::invalid("model", "`model` (a string) is required"))?;
    if model != model_id {
        return Err(ApiError {
            status: StatusCode::NOT_FOUND,
            kind: "invalid_request_error",
            message: format!(
                "The model `{model}` does not exist; this server serves `{model_id}` (see GET /v1/models)."
            ),
            param: Some("model".to_owned()),
            code: Some("model_not_found"),
        });
    }
    Ok(())
}

/// `messages`: a non-empty list of `system`, `developer`, `user` or
/// `assistant` messages.
fn parse_messages(object: &Map<String, Value>) -> Result<Vec<ChatMessage>, ApiError> {
    let raw_messages = object
        .get("messages")
        .and_then(Value::as_array)
        .filter(|m| !m.is_empty())
        .ok_or_else(|| ApiError::invalid("messages", "`messages` must be a non-empty array"))?;
    raw_messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            Ok(ChatMessage::new(
                message_role(i, m)?,
                message_content(i, m)?,
            ))
        })
        .collect()
}

/// The role of message `i`.
fn message_role(i: usize, m: &Value) -> Result<ChatRole, ApiError> {
    match m.get("role").and_then(Value::as_str) {
        Some("system" | "developer") => Ok(ChatRole::System),
        Some("user") => Ok(ChatRole::User),
        Some("assistant") => Ok(ChatRole::Assistant),
        other => Err(ApiError::invalid(
            "messages",
            format!(
                "messages[{i}].role {other:?} is not supported (system, developer, user, assistant)"
            ),
        )),
    }
}

/// The text of message `i`: a string, or a list of `text` parts joined;
/// none is empty.
fn message_content(i: usize, m: &Value) -> Result<String, ApiError> {
    match m.get("content") {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for (j, part) in parts.iter().enumerate() {
                match (
                    part.get("type").and_then(Value::as_str),
                    part.get("text").and_then(Value::as_str),
                ) {
                    (Some("text"), Some(t)) => text.push_str(t),
                    _ => {
                        return Err(ApiError::invalid(
                            "messages",
                            format!("messages[{i}].content[{j}] is not a text part"),
                        ));
                    }
                }
            }
            Ok(text)
        }
        Some(_) => Err(ApiError::invalid(
            "messages",
            format!("messages[{i}].content must be a string or a list of text parts"),
        )),
    }
}

/// The request's top-level fields, read by name; `null` counts as absent.
struct Fields<'a>(&'a Map<String, Value>);

impl Fields<'_> {
    /// The field as a number.
    fn number(&self, field: &'static str) -> Result<Option<f64>, ApiError> {
        match self.0.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| ApiError::invalid(field, format!("`{field}` must be a number"))),
        }
    }

    /// The field as `true` or `false`.
    fn boolean(&self, field: &'static str) -> Result<Option<bool>, ApiError> {
        match self.0.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_bool().map(Some).ok_or_else(|| {
                ApiError::invalid(field, format!("`{field}` must be true or false"))
            }),
        }
    }

    /// The number field within `[lo, hi]`.
    fn in_range(&self, field: &'static str, lo: f64, hi: f64) -> Result<Option<f64>, ApiError> {
        self.number(field)?
            .map(|x| in_range(field, x, lo, hi))
            .transpose()
    }

    /// `seed`: an integer (negative ones wrap, as two's complement).
    fn seed(&self) -> Result<Option<u64>, ApiError> {
        match self.0.get("seed") {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .or_else(|| v.as_i64().map(|x| x as u64))
                .map(Some)
                .ok_or_else(|| ApiError::invalid("seed", "`seed` must be an integer")),
        }
    }

    /// `n`: an integer from 1 to [`MAX_CHOICES`], 1 when absent.
    fn choices(&self) -> Result<usize, ApiError> {
        match self.number("n")? {
            None => Ok(1),
            Some(n) if n.fract() == 0.0 && (1.0..=MAX_CHOICES as f64).contains(&n) => {
                Ok(n as usize)
            }
            Some(n) => Err(ApiError::invalid(
                "n",
                format!("`n` must be an integer from 1 to {MAX_CHOICES}, got {n}"),
            )),
        }
    }
}

/// `x` when it is finite and within `[lo, hi]`.
fn in_range(field: &'static str, x: f64, lo: f64, hi: f64) -> Result<f64, ApiError> {
    if x.is_finite() && x >= lo && x <= hi {
        Ok(x)
    } else {
        Err(ApiError::invalid(
            field,
            format!("`{field}` must be in [{lo}, {hi}], got {x}"),
        ))
    }
}

/// The token budget and the sampling numbers (`max_tokens` /
/// `max_completion_tokens`, `temperature`, `top_p`, `top_k`, `min_p`, the
/// three penalties); returns whether a token budget was given.
fn apply_sampling(fields: &Fields, params: &mut GenerationParams) -> Result<bool, ApiError> {
    let mut max_tokens_given = false;
    if let Some(n) = fields
        .number("max_completion_tokens")?
        .or(fields.number("max_tokens")?)
    {
        let n = in_range("max_tokens", n, 0.0, f64::MAX)?;
        if n < 1.0 {
            return Err(ApiError::invalid(
                "max_tokens",
                "`max_tokens` must be at least 1",
            ));
        }
        params.max_new_tokens = n as usize;
        max_tokens_given = true;
    }
    if let Some(t) = fields.in_range("temperature", 0.0, f64::MAX)? {
        params.temperature = t as f32;
    }
    if let Some(p) = fields.number("top_p")? {
        if !(p > 0.0 && p <= 1.0) {
            return Err(ApiError::invalid(
                "top_p",
                format!("`top_p` must be in (0, 1], got {p}"),
            ));
        }
        params.top_p = p as f32;
    }
    if let Some(k) = fields.number("top_k")? {
        // vLLM uses -1 for "disabled"; Worldloom uses 0.
        params.top_k = if k < 0.0 { 0 } else { k as usize };
    }
    if let Some(p) = fields.in_range("min_p", 0.0, 1.0)? {
        params.min_p = p as f32;
    }
    if let Some(p) = fields.in_range("presence_penalty", -2.0, 2.0)? {
        params.presence_penalty = p as f32;
    }
    if let Some(p) = fields.in_range("frequency_penalty", -2.0, 2.0)? {
        params.frequency_penalty = p as f32;
    }
    if let Some(p) = fields.number("repetition_penalty")? {
        if !(p.is_finite() && p > 0.0) {
            return Err(ApiError::invalid(
                "repetition_penalty",
                format!("`repetition_penalty` must be > 0, got {p}"),
            ));
        }
        params.repetition_penalty = p as f32;
    }
    Ok(max_tokens_given)
}

/// `stop` (a string or a list of strings) and `stop_token_ids`.
fn apply_stops(fields: &Fields, params: &mut GenerationParams) -> Result<(), ApiError> {
    let stop_message = "`stop` must be a string or a list of strings";
    match fields.0.get("stop") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => params.stop = vec![s.clone()],
        Some(Value::Array(items)) => {
            params.stop = items
                .iter()
                .map(|s| s.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| ApiError::invalid("stop", stop_message))?;
        }
        Some(_) => return Err(ApiError::invalid("stop", stop_message)),
    }
    let ids_message = "`stop_token_ids` must be a list of token ids";
    match fields.0.get("stop_token_ids") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            params.stop_token_ids = items
                .iter()
                .map(|v| v.as_u64().and_then(|x| u32::try_from(x).ok()))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| ApiError::invalid("stop_token_ids", ids_message))?;
        }
        Some(_) => return Err(ApiError::invalid("stop_token_ids", ids_message)),
    }
    Ok(())
}

/// The switches: `skip_special_tokens`,
/// `chat_template_kwargs.enable_thinking`, `stop_after_observation`,
/// `speculative`.
fn apply_switches(fields: &Fields, params: &mut GenerationParams) -> Result<(), ApiError> {
    if let Some(b) = fields.boolean("skip_special_tokens")? {
        params.skip_special_tokens = b;
    }
    if let Some(b) = fields
        .0
        .get("chat_template_kwargs")
        .and_then(|k| k.get("enable_thinking"))
    {
        params.enable_thinking = b.as_bool().ok_or_else(|| {
            ApiError::invalid(
                "chat_template_kwargs.enable_thinking",
                "`chat_template_kwargs.enable_thinking` must be true or false",
            )
        })?;
    }
    if let Some(b) = fields.boolean("stop_after_observation")? {
        params.stop_after_observation = b;
    }
    if let Some(b) = fields.boolean("speculative")? {
        params.speculative = b;
    }
    Ok(())
}

/// `logprobs` and `top_logprobs` (0 to [`MAX_TOP_LOGPROBS`], more than 0
/// only with `logprobs: true`).
fn apply_logprobs(fields: &Fields, params: &mut GenerationParams) -> Result<(), ApiError> {
    params.logprobs = fields.boolean("logprobs")?.unwrap_or(false);
    params.top_logprobs = match fields.number("top_logprobs")? {
        None => 0,
        Some(k) if k.fract() == 0.0 && (0.0..=MAX_TOP_LOGPROBS as f64).contains(&k) => {
            if !params.logprobs && k > 0.0 {
                return Err(ApiError::invalid(
                    "top_logprobs",
                    "`top_logprobs` needs `logprobs: true`",
                ));
            }
            k as usize
        }
        Some(k) => {
            return Err(ApiError::invalid(
                "top_logprobs",
                format!("`top_logprobs` must be an integer from 0 to {MAX_TOP_LOGPROBS}, got {k}"),
            ));
        }
    };
    Ok(())
}

/// A fresh seed for a request without one (per-process random hashing keys,
/// the clock and a counter; not for cryptography).
pub(crate) fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.finish()
}

/// Refuses a request longer than the engine's context (vLLM's rule and
/// wording); without `max_tokens`, bounds generation by what the context
/// leaves.
pub(crate) fn check_context(state: &AppState, request: &mut ChatRequest) -> Result<(), ApiError> {
    let Some(context) = state.engine.context_tokens() else {
        return Ok(());
    };
    let Some(counted) = state
        .engine
        .count_prompt_tokens(&request.messages, request.params.enable_thinking)
    else {
        return Ok(());
    };
    let prompt = counted.map_err(|e| ApiError::from_engine(&e))?;
    let asked = request.params.max_new_tokens;
    let refuse = if request.max_tokens_given {
        prompt + asked > context
    } else {
        prompt >= context
    };
    if refuse {
        let EngineError::InvalidRequest(message) = context_length_error(context, prompt, asked)
        else {
            unreachable!("context_length_error is an InvalidRequest");
        };
        return Err(ApiError {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error",
            message,
            param: Some("messages".to_owned()),
            code: Some("context_length_exceeded"),
        });
    }
    if !request.max_tokens_given {
        request.params.max_new_tokens = asked.min(context - prompt);
    }
    Ok(())
}
