//! SFT chat JSONL export: one `{"messages": [...]}` line per turn, the layout
//! fine-tuning frameworks (LLaMA-Factory, ms-swift, Unsloth) read for chat
//! data. Each line is the teacher-forced prompt of the turn (system, history,
//! current prompt; see [`crate::prompt::build_messages`]) followed by the
//! target: the state's authored observation if it has one, else its real
//! observation, as an AgentWorldBench response wrapped in
//! observation tags (the answer format the system prompts ask
//! for). Every root-to-leaf branch is covered; each node gives at most one line.
//!
//! Each line also carries `task` (the domain) and `id` (`<trajectory id>#<turn>`),
//! the AgentWorldBench fields that say which trajectory and domain the line
//! belongs to; fine-tuning frameworks read `messages` and ignore them. With
//! them a line is an AgentWorldBench row in chat form, and the AgentWorldBench
//! importer reads SFT files back ([`to_awb_row`]).

use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::domain::{ChatMessage, ChatRole};
use crate::error::{CoreError, Result};
use crate::observation::AWB_RESPONSE_MARKER;
use crate::output::{OutputStatus, parse_model_output};
use crate::prompt::{PromptOptions, build_messages};
use crate::trajectory::Trajectory;

#[derive(Serialize)]
struct SftLine<'a> {
    task: &'a str,
    id: String,
    messages: &'a [ChatMessage],
}

/// Writes SFT chat JSONL for `trajectories`.
///
/// # Errors
/// [`crate::CoreError::Prompt`] when a history state has no observation.
pub fn export(trajectories: &[Trajectory], options: &PromptOptions) -> Result<String> {
    let mut out = String::new();
    for t in trajectories {
        let mut seen = std::collections::HashSet::new();
        for branch in t.branches() {
            for &node in branch.nodes.iter().skip(1) {
                if !seen.insert(node) {
                    continue;
                }
                let Some(n) = t.node(node) else { continue };
                let Some(target) = n
                    .current_authored()
                    .map(|a| a.observation.clone())
                    .or_else(|| n.real.clone())
                else {
                    continue;
                };
                let mut messages = build_messages(t, node, options)?;
                let turn = branch.nodes.iter().position(|&n| n == node).unwrap_or(0);
                let body = &target.text;
                messages.push(ChatMessage::new(
                    ChatRole::Assistant,
                    crate::output::format_observation(body),
                ));
                out.push_str(
                    &serde_json::to_string(&SftLine {
                        task: t.domain.as_str(),
                        id: format!("{}#{turn}", t.id),
                        messages: &messages,
                    })
                    .unwrap_or_default(),
                );
                out.push('\n');
            }
        }
    }
    Ok(out)
}

/// Rewrites one SFT chat line (`{"messages": [...]}`, optional `task`, `id`)
/// as the AgentWorldBench row it stands for: `system_str` from a leading
/// system message, `prompt` = the user messages, `response` = the assistant
/// messages (the last one, the target, unwrapped from
/// the observation tags and given the `**Environment Observation:**`
/// heading like the others), `turn_idx` = the number of user messages,
/// `current_prompt` = the last user message. Other fields are kept (`id`
/// `<trajectory id>#<turn>` names the trajectory as for any row).
///
/// # Errors
/// [`CoreError::Field`] naming `path`, `line` and the message index for a
/// message that is not `{"role", "content"}` with a known role, for messages
/// out of user/assistant order, or for a line that does not end with an
/// assistant message.
pub fn to_awb_row(
    path: &Path,
    line: usize,
    mut fields: Map<String, Value>,
) -> Result<Map<String, Value>> {
    let field_err = |field: String, message: String| CoreError::Field {
        path: path.to_path_buf(),
        line: Some(line),
        field,
        message,
    };
    let Some(Value::Array(messages)) = fields.remove("messages") else {
        return Err(field_err(
            "messages".into(),
            "expected a list of chat messages".into(),
        ));
    };
    let mut system = None;
    let (mut prompts, mut responses) = (Vec::new(), Vec::new());
    for (i, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str);
        let Some(content) = m.get("content").and_then(Value::as_str) else {
            return Err(field_err(
                format!("messages[{i}].content"),
                "expected a string".into(),
            ));
        };
        match role {
            Some("system") if i == 0 => system = Some(content.to_owned()),
            Some("user") if prompts.len() == responses.len() => prompts.push(content.to_owned()),
            Some("assistant") if prompts.len() == responses.len() + 1 => {
                responses.push(content.to_owned());
            }
            Some(r @ ("system" | "user" | "assistant")) => {
                return Err(field_err(
                    format!("messages[{i}].role"),
                    format!(
                        "`{r}` out of order: expected a system message first, then user and assistant messages in turn"
                    ),
                ));
            }
            other => {
                return Err(field_err(
                    format!("messages[{i}].role"),
                    format!("expected system, user or assistant, found {other:?}"),
                ));
            }
        }
    }
    if prompts.is_empty() || responses.len() != prompts.len() {
        return Err(field_err(
            "messages".into(),
            "the last message must be the assistant's target observation".into(),
        ));
    }
    if let Some(target) = responses.last_mut() {
        let parsed = parse_model_output(target);
        let body = match (parsed.status, parsed.observation) {
            (OutputStatus::Ok, Some(obs)) => obs,
            _ => target.clone(),
        };
        if !body.starts_with(AWB_RESPONSE_MARKER) {
            *target = format!("{AWB_RESPONSE_MARKER}\n{body}");
        }
    }
    fields.insert("turn_idx".into(), Value::from(prompts.len()));
    if let Some(last) = prompts.last() {
        fields.insert("current_prompt".into(), Value::String(last.clone()));
    }
    if let Some(system) = system {
        fields.insert("system_str".into(), Value::String(system));
    }
    fields.insert("prompt".into(), Value::from(prompts));
    fields.insert("response".into(), Value::from(responses));
    Ok(fields)
}
