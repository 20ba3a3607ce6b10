//! SFT chat JSONL export: one `{"messages": [...]}` line per turn, the layout
//! fine-tuning frameworks (LLaMA-Factory, ms-swift, Unsloth) read for chat
//! data. Each line is the teacher-forced prompt of the turn (system, history,
//! current prompt; see [`crate::prompt::build_messages`]) followed by the
//! target: the state's authored observation if it has one, else its real
//! observation, as an AgentWorldBench response wrapped in
//! `<predicted_observation>` tags (the answer format the system prompts ask
//! for). Every root-to-leaf branch is covered; each node gives at most one line.

use serde::Serialize;

use crate::domain::{ChatMessage, ChatRole};
use crate::error::Result;
use crate::prompt::{PromptOptions, build_messages};
use crate::trajectory::Trajectory;

#[derive(Serialize)]
struct SftLine<'a> {
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
                let body = &target.text;
                messages.push(ChatMessage::new(
                    ChatRole::Assistant,
                    format!("<predicted_observation>\n{body}\n</predicted_observation>"),
                ));
                out.push_str(
                    &serde_json::to_string(&SftLine {
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
