//! The Agent Trajectory Interchange Format (ATIF, Harbor's RFC 0001,
//! versions 1.0–1.4), which Harbor / Terminal-Bench agents (Terminus) and
//! OpenHands write for terminal and SWE runs: one JSON object with
//! `schema_version` (`ATIF-v1.x`), `session_id`, `agent` (`name`,
//! `version`, `model_name`), `steps`, and optional `notes`,
//! `final_metrics`, `extra`. Each step has `step_id`, `source` (`system`,
//! `user` or `agent`), `message`, and for agent steps `reasoning_content`,
//! `tool_calls` (`tool_call_id`, `function_name`, `arguments`),
//! `observation` (`results`: `source_call_id`, `content`,
//! `subagent_trajectory_ref`), `metrics`, `model_name`, `timestamp`,
//! `extra`.
//!
//! Mapping: the system step's message is the system prompt; the user
//! messages before the first agent step are the initial state's observation
//! (text) and the first of them the goal. Each agent step with tool calls
//! or an observation is a turn: its action is the tool calls (a shell
//! command for terminal runs, the calls as JSON `{"name", "arguments"}` for
//! SWE runs; the message itself for an action without tool calls), the
//! state it leads to is the observation's results' contents in order
//! (several results each under a `[source_call_id]` line). The agent's
//! `reasoning_content` (else its message) is the agent's reasoning beside
//! the action. An agent step with neither (a final answer) is kept on the
//! state it was given from (`final_message`), as are later user messages
//! (`user_messages`). The domain is `swe` when a tool edits files (a
//! function name with `edit`, `str_replace`, `write` or `file`) or the
//! agent is OpenHands / SWE-agent, else `terminal`.

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::action::{Action, ActionFormat};
use crate::domain::{Domain, Representation};
use crate::error::{CoreError, ImportWarning, Result, json_error};
use crate::formats::{AGENT_REASONING, file_name};
use crate::observation::Observation;
use crate::trajectory::{NodeId, Source, Trajectory};

/// The source format name of trajectories read here.
pub const FORMAT: &str = "atif";

/// Whether a JSON document is an ATIF trajectory: an object with a
/// `schema_version` starting `ATIF` and a `steps` list.
pub fn looks_like(value: &Value) -> bool {
    value
        .get("schema_version")
        .and_then(Value::as_str)
        .is_some_and(|v| v.trim().to_ascii_uppercase().starts_with("ATIF"))
        && value.get("steps").is_some_and(Value::is_array)
}

/// Argument names that hold a shell command in terminal agents' tools.
const COMMAND_ARGUMENTS: [&str; 4] = ["command", "cmd", "keystrokes", "script"];

/// Imports an ATIF trajectory file.
///
/// # Errors
/// [`CoreError::Json`] with line and column for invalid JSON;
/// [`CoreError::Field`] naming `steps[i].field` for a field of the wrong
/// type or a `source` that is not `system`, `user` or `agent`;
/// [`CoreError::Format`] for a file without steps.
pub fn import(path: &Path, warnings: &mut Vec<ImportWarning>) -> Result<Trajectory> {
    let text = crate::input::read_text_into(path, warnings)?;
    let value: Value = serde_json::from_str(&text).map_err(|e| json_error(path, &e))?;
    drop(text);
    let Value::Object(mut root) = value else {
        return Err(format_error(path, "expected an ATIF object"));
    };
    let steps = match root.remove("steps") {
        Some(Value::Array(steps)) if !steps.is_empty() => steps,
        Some(Value::Array(_)) => return Err(format_error(path, "an ATIF trajectory with no step")),
        _ => {
            return Err(CoreError::Field {
                path: path.to_path_buf(),
                line: None,
                field: "steps".into(),
                message: "expected a list of steps".into(),
            });
        }
    };
    let domain = domain_of(&root, &steps);
    let id = root
        .get("session_id")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map_or_else(|| crate::formats::file_stem(path), str::to_owned);
    let mut t = Trajectory::new(id, domain, None);
    t.source = Source {
        format: FORMAT.into(),
        path: Some(file_name(path)),
    };
    let mut node = t.root();
    let mut opening: Vec<String> = Vec::new();
    let mut started = false;
    for (i, step) in steps.into_iter().enumerate() {
        let step = Step::read(path, i, step)?;
        match step.source.as_str() {
            "system" => {
                if t.system_prompt.is_none() && !step.message.is_empty() {
                    t.system_prompt = Some(step.message);
                } else {
                    note(&mut t, node, "system_messages", step.message);
                }
            }
            "user" if !started => {
                if t.goal.is_none() && !step.message.trim().is_empty() {
                    t.goal = Some(step.message.trim().to_owned());
                }
                opening.push(step.message);
            }
            "user" => note(&mut t, node, "user_messages", step.message),
            _ => {
                if !started {
                    started = true;
                    t.nodes[0].real =
                        Some(Observation::new(Representation::Text, opening.join("\n\n")));
                }
                if step.tool_calls.is_empty() && step.results.is_empty() {
                    note(&mut t, node, "final_message", step.message);
                    continue;
                }
                let (action, extra) = step.action(domain);
                let observation = step.observation();
                let (edge, next) = t.add_step(node, action, Some(observation))?;
                t.edges[edge.0 as usize].extra = extra;
                node = next;
            }
        }
    }
    if !started {
        t.nodes[0].real = Some(Observation::new(Representation::Text, opening.join("\n\n")));
        warnings.push(ImportWarning {
            path: path.display().to_string(),
            line: None,
            byte_offset: None,
            message: "no agent step: the trajectory is its opening state only".into(),
        });
    }
    t.extra = root;
    Ok(t)
}

fn format_error(path: &Path, message: &str) -> CoreError {
    CoreError::Format {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// Appends `text` to the list `key` in the node's `extra` (a single
/// `final_message` is a string).
fn note(t: &mut Trajectory, node: NodeId, key: &str, text: String) {
    let extra = &mut t.nodes[node.0 as usize].extra;
    if key == "final_message" {
        extra.insert(key.into(), Value::String(text));
        return;
    }
    match extra.get_mut(key) {
        Some(Value::Array(items)) => items.push(Value::String(text)),
        _ => {
            extra.insert(key.into(), json!([text]));
        }
    }
}

/// `swe` when a tool edits files or the agent is OpenHands / SWE-agent,
/// else `terminal`.
fn domain_of(root: &Map<String, Value>, steps: &[Value]) -> Domain {
    let agent = root
        .get("agent")
        .and_then(|a| a.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase();
    if agent.contains("openhands") || agent.contains("swe") {
        return Domain::Swe;
    }
    let edits = steps
        .iter()
        .filter_map(|s| s.get("tool_calls").and_then(Value::as_array))
        .flatten()
        .filter_map(|c| c.get("function_name").and_then(Value::as_str))
        .any(|name| {
            let name = name.to_ascii_lowercase();
            ["edit", "str_replace", "write", "file"]
                .iter()
                .any(|w| name.contains(w))
        });
    if edits { Domain::Swe } else { Domain::Terminal }
}

/// One ATIF step, its fields checked.
struct Step {
    source: String,
    message: String,
    reasoning: Option<String>,
    tool_calls: Vec<Map<String, Value>>,
    results: Vec<Map<String, Value>>,
    /// The step's other fields (`step_id`, `timestamp`, `metrics`…).
    rest: Map<String, Value>,
}

impl Step {
    fn read(path: &Path, i: usize, value: Value) -> Result<Self> {
        let field = |name: &str, message: String| CoreError::Field {
            path: path.to_path_buf(),
            line: None,
            field: format!("steps[{i}].{name}"),
            message,
        };
        let Value::Object(mut obj) = value else {
            return Err(field("(step)", "expected an object".into()));
        };
        let source = match obj.remove("source") {
            Some(Value::String(s)) if matches!(s.as_str(), "system" | "user" | "agent") => s,
            Some(other) => {
                return Err(field(
                    "source",
                    format!("expected \"system\", \"user\" or \"agent\", found {other}"),
                ));
            }
            None => return Err(field("source", "missing".into())),
        };
        let mut string = |name: &str| -> Result<Option<String>> {
            match obj.remove(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s)),
                Some(other) => Err(field(name, format!("expected a string, found {other}"))),
            }
        };
        let message = string("message")?.unwrap_or_default();
        let reasoning = string("reasoning_content")?.filter(|r| !r.trim().is_empty());
        let objects = |v: Option<Value>, name: &str| -> Result<Vec<Map<String, Value>>> {
            match v {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Array(items)) => items
                    .into_iter()
                    .enumerate()
                    .map(|(j, item)| match item {
                        Value::Object(o) => Ok(o),
                        other => Err(field(
                            &format!("{name}[{j}]"),
                            format!("expected an object, found {other}"),
                        )),
                    })
                    .collect(),
                Some(other) => Err(field(name, format!("expected a list, found {other}"))),
            }
        };
        let tool_calls = objects(obj.remove("tool_calls"), "tool_calls")?;
        let results = match obj.remove("observation") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(mut o)) => objects(o.remove("results"), "observation.results")?,
            Some(other) => {
                return Err(field(
                    "observation",
                    format!("expected an object with `results`, found {other}"),
                ));
            }
        };
        Ok(Self {
            source,
            message,
            reasoning,
            tool_calls,
            results,
            rest: obj,
        })
    }

    /// The action of an agent step and its edge's `extra`.
    fn action(&self, domain: Domain) -> (Action, Map<String, Value>) {
        let mut extra = self.rest.clone();
        let reasoning = self.reasoning.clone().or_else(|| {
            (!self.tool_calls.is_empty() && !self.message.trim().is_empty())
                .then(|| self.message.trim().to_owned())
        });
        if let Some(r) = reasoning {
            extra.insert(AGENT_REASONING.into(), Value::String(r));
        }
        if !self.message.is_empty() {
            extra.insert("message".into(), Value::String(self.message.clone()));
        }
        if self.tool_calls.is_empty() {
            // An action without tool calls: the message is what was done.
            return (Action::new(self.message.trim(), ActionFormat::Text), extra);
        }
        extra.insert(
            "tool_calls".into(),
            Value::Array(self.tool_calls.iter().cloned().map(Value::Object).collect()),
        );
        let commands: Option<Vec<&str>> = self
            .tool_calls
            .iter()
            .map(|c| {
                let args = c.get("arguments")?.as_object()?;
                COMMAND_ARGUMENTS
                    .iter()
                    .find_map(|k| args.get(*k).and_then(Value::as_str))
            })
            .collect();
        if domain == Domain::Terminal
            && let Some(commands) = commands
        {
            return (Action::new(commands.join("\n"), ActionFormat::Shell), extra);
        }
        // Written by hand so that `name` comes first whatever the JSON
        // map's key order.
        let calls: Vec<String> = self
            .tool_calls
            .iter()
            .map(|c| {
                format!(
                    "{{\"name\":{},\"arguments\":{}}}",
                    c.get("function_name").unwrap_or(&Value::Null),
                    c.get("arguments").cloned().unwrap_or_else(|| json!({}))
                )
            })
            .collect();
        let raw = match calls.as_slice() {
            [one] => one.clone(),
            _ => format!("[{}]", calls.join(",")),
        };
        (Action::new(raw, ActionFormat::ToolCall), extra)
    }

    /// The state an agent step leads to: its results' contents.
    fn observation(&self) -> Observation {
        let content = |r: &Map<String, Value>| -> String {
            match r.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => r
                    .get("subagent_trajectory_ref")
                    .map(|refs| format!("(subagent trajectory: {refs})"))
                    .unwrap_or_default(),
                Some(other) => other.to_string(),
            }
        };
        let text = match self.results.as_slice() {
            [one] => content(one),
            many => many
                .iter()
                .map(|r| {
                    let id = r
                        .get("source_call_id")
                        .and_then(Value::as_str)
                        .unwrap_or("result");
                    format!("[{id}]\n{}", content(r))
                })
                .collect::<Vec<_>>()
                .join("\n\n"),
        };
        let mut obs = Observation::new(Representation::Text, text);
        if self.results.len() > 1 {
            obs.metadata.extra.insert(
                "results".into(),
                Value::Array(self.results.iter().cloned().map(Value::Object).collect()),
            );
        }
        obs
    }
}
