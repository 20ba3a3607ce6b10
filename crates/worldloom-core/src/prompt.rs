//! Prompt building: the chat messages that ask a world model for the
//! observation at a node, in the AgentWorldBench layout.
//!
//! For turn `k` (the edge into the node at depth `k`) the messages are, as in
//! the official AgentWorldBench evaluation script (`eval/eval.py`, inference
//! step): the system prompt (omitted when empty), then for each earlier turn
//! `j < k` a user message (turn `j`'s prompt) and an assistant message (the
//! observation after turn `j`, as a `response` string starting with
//! `**Environment Observation:**`), then the user message of turn `k`.
//!
//! - Turn prompts come from the source when it has them (AgentWorldBench
//!   `prompt[k-1]`, as the official script sends it even where the row's
//!   `current_prompt` differs; `current_prompt` only when the row's `prompt`
//!   list is too short to hold its own turn); otherwise they are rendered
//!   from [`PromptTemplates`] with the state the action was taken from and
//!   the action.
//! - **Teacher-forced** context ([`ContextMode::TeacherForced`]) uses real
//!   observations (falling back to the authored one, then the preferred
//!   prediction, for states that were never recorded, such as those on an
//!   edited branch). **Free-running** context ([`ContextMode::FreeRunning`])
//!   uses the authored observation, else the chosen (or newest) prediction,
//!   and the real observation only where a state has neither (the initial
//!   state).
//! - A turn with a control instruction ([`PromptOptions::perturbations`],
//!   a "perturbation" such as "the server returns an error page") gets it
//!   appended to its user message under [`CONTROL_INSTRUCTION_HEADING`].
//! - Source prompt strings are used as given in both modes, so for
//!   AgentWorldBench GUI rows, whose prompts embed the current state, only the
//!   assistant history changes in free-running mode.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::action::{Action, ActionFormat};
use crate::domain::{ChatMessage, ChatRole, Domain};
use crate::error::{CoreError, Result};
use crate::observation::Observation;
use crate::trajectory::{ContextMode, EdgeId, NodeId, Trajectory};

/// Default turn template for GUI domains (web, os, android). Placeholders are
/// described on [`PromptTemplates`].
pub const DEFAULT_GUI_TURN_TEMPLATE: &str = "### Turn {turn}\n{?goal}**Task Instruction:**\n{goal}\n\n{/goal}{?state}**Current State:**\n{state}\n\n{/state}{?error}**Last Action Error:**\n{error}\n\n{/error}**Action:**\n{action_block}";

/// Default turn template for text domains (mcp, search, terminal, swe): the
/// state appears only in turn 1 (later states are the history's assistant
/// messages).
pub const DEFAULT_TEXT_TURN_TEMPLATE: &str = "### Turn {turn}\n{?goal}**Task Instruction:**\n{goal}\n\n{/goal}{?initial_state}**Initial State:**\n{initial_state}\n\n{/initial_state}**Action:**\n{action_block}";

/// Turn templates and system prompts, per domain.
///
/// A template is text with placeholders: `{turn}` (1-based turn number),
/// `{goal}`, `{state}` (the state the action is taken from, every turn),
/// `{initial_state}` (the same, but only in turn 1), `{error}` (that state's
/// step error message), `{url}`, `{title}`, `{representation}` (e.g.
/// `axtree`), `{action}` (raw action text) and `{action_block}` (the action in
/// a Markdown code fence labelled by its format). A section
/// `{?name}…{/name}` is kept only when `name` is non-empty. Unknown
/// placeholders are left as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptTemplates {
    /// Turn templates by domain.
    pub turn: BTreeMap<Domain, String>,
    /// System prompts by domain, used when a trajectory carries none.
    pub system: BTreeMap<Domain, String>,
}

impl Default for PromptTemplates {
    fn default() -> Self {
        let turn = Domain::ALL
            .into_iter()
            .map(|d| {
                let t = if d.is_gui() {
                    DEFAULT_GUI_TURN_TEMPLATE
                } else {
                    DEFAULT_TEXT_TURN_TEMPLATE
                };
                (d, t.to_owned())
            })
            .collect();
        let system = Domain::ALL
            .into_iter()
            .map(|d| (d, default_system_prompt(d)))
            .collect();
        Self { turn, system }
    }
}

/// Options of [`build_messages`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PromptOptions {
    /// Which observations make up the history.
    pub mode: ContextMode,
    /// Templates for sources without prompt strings.
    pub templates: PromptTemplates,
    /// A system prompt that replaces the trajectory's and the default.
    pub system_prompt: Option<String>,
    /// Control instructions (perturbations) by turn: each is appended to
    /// the user message of its turn as a [`CONTROL_INSTRUCTION_HEADING`]
    /// section, in history turns as well as the predicted one, so that a
    /// branch's prompts stay prefixes of each other.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub perturbations: BTreeMap<EdgeId, String>,
}

/// The heading of the section a control instruction adds to a turn's user
/// message: `\n\n**Control Instruction:**\n<instruction>` after the turn's
/// prompt.
pub const CONTROL_INSTRUCTION_HEADING: &str = "**Control Instruction:**";

/// `prompt` with the control instruction section appended (unchanged for a
/// blank instruction).
pub fn with_control_instruction(prompt: &str, instruction: &str) -> String {
    let instruction = instruction.trim();
    if instruction.is_empty() {
        return prompt.to_owned();
    }
    format!("{prompt}\n\n{CONTROL_INSTRUCTION_HEADING}\n{instruction}")
}

/// Renders `template` with `values` (see [`PromptTemplates`] for the syntax).
pub fn render_template(template: &str, values: &BTreeMap<&str, String>) -> String {
    let get = |name: &str| values.get(name).map(String::as_str).unwrap_or("");
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            return out;
        };
        let name = &after[..close];
        let tail = &after[close + 1..];
        if let Some(section) = name.strip_prefix('?') {
            let end_tag = format!("{{/{section}}}");
            if let Some(end) = tail.find(&end_tag) {
                if !get(section).is_empty() {
                    out.push_str(&render_template(&tail[..end], values));
                }
                rest = &tail[end + end_tag.len()..];
                continue;
            }
        }
        if let Some(value) = values.get(name) {
            out.push_str(value);
        } else {
            out.push('{');
            out.push_str(name);
            out.push('}');
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// The action in a Markdown code fence labelled by its format (`python` for
/// BrowserGym and pyautogui, `json` for Android and tool calls, `bash` for
/// shell). Text already in a fence is returned as is.
pub fn action_block(action: &Action) -> String {
    let raw = action.raw.trim_end();
    if raw.trim_start().starts_with("```") {
        return raw.to_owned();
    }
    let language = match action.format {
        ActionFormat::Browsergym | ActionFormat::Pyautogui => "python",
        ActionFormat::AndroidJson | ActionFormat::ToolCall => "json",
        ActionFormat::Shell => "bash",
        ActionFormat::Text => "text",
    };
    let fence = if raw.contains("```") { "````" } else { "```" };
    format!("{fence}{language}\n{raw}\n{fence}")
}

/// Renders the prompt of turn `turn` (1-based) for `action` taken from a state
/// shown as `state`, with the trajectory's domain template.
pub fn render_turn_prompt(
    trajectory: &Trajectory,
    templates: &PromptTemplates,
    turn: usize,
    state: Option<&Observation>,
    action: &Action,
) -> String {
    let mut values: BTreeMap<&str, String> = BTreeMap::new();
    values.insert("turn", turn.to_string());
    values.insert("goal", trajectory.goal.clone().unwrap_or_default());
    let state_text = state.map(|s| s.text.clone()).unwrap_or_default();
    values.insert(
        "initial_state",
        if turn == 1 {
            state_text.clone()
        } else {
            String::new()
        },
    );
    values.insert("state", state_text);
    values.insert(
        "error",
        state
            .and_then(|s| s.error.as_ref())
            .map(|e| e.message.clone())
            .unwrap_or_default(),
    );
    values.insert(
        "url",
        state
            .and_then(|s| s.metadata.url.clone())
            .unwrap_or_default(),
    );
    values.insert(
        "title",
        state
            .and_then(|s| s.metadata.title.clone())
            .unwrap_or_default(),
    );
    values.insert(
        "representation",
        state
            .map(|s| s.representation.as_str().to_owned())
            .unwrap_or_default(),
    );
    values.insert("action", action.raw.clone());
    values.insert("action_block", action_block(action));
    let template = templates
        .turn
        .get(&trajectory.domain)
        .map(String::as_str)
        .unwrap_or(if trajectory.domain.is_gui() {
            DEFAULT_GUI_TURN_TEMPLATE
        } else {
            DEFAULT_TEXT_TURN_TEMPLATE
        });
    render_template(template, &values)
}

/// The observation that stands for `node` in history of the given mode (see
/// the module docs), as an owned [`Observation`].
pub fn context_observation(
    trajectory: &Trajectory,
    node: NodeId,
    mode: ContextMode,
) -> Option<Observation> {
    let n = trajectory.node(node)?;
    let authored = n.current_authored().map(|a| a.observation.clone());
    let predicted = n.preferred_prediction().and_then(|p| {
        p.observation
            .as_ref()
            .map(|text| Observation::new(p.representation, text.clone()))
    });
    let real = n.real.clone();
    match mode {
        ContextMode::TeacherForced => real.or(authored).or(predicted),
        ContextMode::FreeRunning => authored.or(predicted).or(real),
    }
}

/// The user prompt of turn `turn` (1-based), the turn along `edge`: the
/// source's prompt string, else one rendered from the templates.
///
/// For the current turn of an AgentWorldBench row this is `prompt[turn-1]`,
/// as the official script sends it; the row's `current_prompt` is used only
/// when the row's own `prompt` list is too short to hold the turn.
fn turn_prompt(
    trajectory: &Trajectory,
    options: &PromptOptions,
    edge: EdgeId,
    turn: usize,
    is_current: bool,
) -> Result<String> {
    let e = trajectory.try_edge(edge)?;
    if is_current
        && let Some(row) = &e.awb_row
        && row.prompt_count < turn
        && let Some(current) = row.current_prompt.as_ref()
        && !current.is_empty()
    {
        return Ok(current.clone());
    }
    if let Some(prompt) = &e.prompt {
        return Ok(prompt.clone());
    }
    let state = context_observation(trajectory, e.from, options.mode);
    Ok(render_turn_prompt(
        trajectory,
        &options.templates,
        turn,
        state.as_ref(),
        &e.action,
    ))
}

/// The system prompt for `trajectory`: the override, else the trajectory's
/// own, else the default for its domain.
pub fn system_prompt(trajectory: &Trajectory, options: &PromptOptions) -> String {
    options
        .system_prompt
        .clone()
        .or_else(|| trajectory.system_prompt.clone())
        .or_else(|| options.templates.system.get(&trajectory.domain).cloned())
        .unwrap_or_else(|| default_system_prompt(trajectory.domain))
}

/// Builds the messages that ask for the observation at `target`.
///
/// # Errors
/// [`CoreError::NoSuchNode`] for an unknown node; [`CoreError::Prompt`] for
/// the root (it has no turn) or when a history state has no observation in
/// the requested mode.
pub fn build_messages(
    trajectory: &Trajectory,
    target: NodeId,
    options: &PromptOptions,
) -> Result<Vec<ChatMessage>> {
    let path = trajectory.path_to(target)?;
    let turns = path.edges.len();
    if turns == 0 {
        return Err(CoreError::Prompt {
            trajectory: trajectory.id.clone(),
            node: target.0,
            message: "the root node is the initial state; it has no turn to predict".into(),
        });
    }
    let mut messages = Vec::with_capacity(2 * turns + 1);
    let system = system_prompt(trajectory, options);
    if !system.is_empty() {
        messages.push(ChatMessage::new(ChatRole::System, system));
    }
    for (j, &edge) in path.edges.iter().enumerate() {
        let is_current = j + 1 == turns;
        let mut prompt = turn_prompt(trajectory, options, edge, j + 1, is_current)?;
        if let Some(instruction) = options.perturbations.get(&edge) {
            prompt = with_control_instruction(&prompt, instruction);
        }
        messages.push(ChatMessage::new(ChatRole::User, prompt));
        if !is_current {
            let node = path.nodes[j + 1];
            let obs = context_observation(trajectory, node, options.mode).ok_or_else(|| {
                CoreError::Prompt {
                    trajectory: trajectory.id.clone(),
                    node: target.0,
                    message: format!(
                        "history node {node} (turn {}) has no observation to show",
                        j + 1
                    ),
                }
            })?;
            messages.push(ChatMessage::new(ChatRole::Assistant, obs.as_awb_response()));
        }
    }
    Ok(messages)
}

/// Worldloom's default system prompt for `domain`, written for this project.
/// It names the inputs (history, current state, action), the rules (preserve
/// the representation, change only what the action changes, unchanged state
/// for no-ops and invalid actions) and the output contract (reasoning first,
/// then exactly one closed observation block).
pub fn default_system_prompt(domain: Domain) -> String {
    let (role, state, notes) = match domain {
        Domain::Mcp => (
            "a tool server reached over the Model Context Protocol",
            "tool result",
            "Answer as the server would: a JSON result or a JSON error object for bad arguments, unknown tools or missing resources. Keep identifiers, timestamps and counts consistent with earlier results.",
        ),
        Domain::Search => (
            "a web search engine and the pages it returns",
            "search result page or fetched page text",
            "Return ranked results with titles, URLs and snippets, or the text of a fetched page. Results must stay plausible and consistent with what earlier turns already showed.",
        ),
        Domain::Terminal => (
            "a Linux shell session",
            "terminal output",
            "Print exactly what the command writes to the terminal, including errors, prompts and exit messages. Files, directories, environment variables and the working directory persist across turns.",
        ),
        Domain::Swe => (
            "a software repository with its tools (file viewer, editor, test runner)",
            "tool output",
            "Show file contents with their line numbers, edit confirmations, and test or build output as the real tools print them. Edits from earlier turns persist.",
        ),
        Domain::Web => (
            "a web browser driven by BrowserGym actions",
            "page state (accessibility tree or HTML, as given)",
            "Elements keep their `bid` identifiers unless the page changes. Typing and checking update only the affected element; clicks on links, buttons that submit and navigation load a new page.",
        ),
        Domain::Os => (
            "a desktop operating system whose windows are read through the accessibility tree",
            "accessibility tree (XML or linearized table, as given)",
            "Actions are Python code that moves the mouse and types (pyautogui). Keep window positions, sizes and roles consistent; update only the widgets the action affects, and open or close windows and menus as the desktop would.",
        ),
        Domain::Android => (
            "an Android phone whose screen is read as a uiautomator XML dump",
            "screen dump",
            "Actions tap, long-press, type, scroll, go back or open apps. Keep `resource-id`, class and bounds attributes consistent; a new screen replaces the hierarchy, a local edit changes only the affected nodes.",
        ),
    };
    format!(
        "# Your role\n\nYou are a world model of {role}. An agent acts in this environment. You receive the earlier turns of the session, the current {state} and the agent's next action. Predict the {state} that the environment shows right after the action.\n\n# How to predict\n\n1. Decide whether the action changes what is shown as a whole (a new page, screen, window or result) or only a part of it (a typed value, a checked box, a focus change).\n2. For a whole change, produce the new state in full. For a partial change, copy the current state and change only what the action touches.\n3. If the action has no effect, is invalid, or targets something disabled or missing, return the current state unchanged (or the error the environment reports).\n4. Keep the exact format of the states you were shown: same representation, same fields, same level of detail. Never invent metadata.\n\n{notes}\n\n# Answer format\n\nThink first if you need to. Then write the predicted {state} inside one {open}{close} block, complete and closed, with nothing else inside it.\n",
        open = crate::output::OBSERVATION_OPEN,
        close = crate::output::OBSERVATION_CLOSE,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Representation;
    use crate::trajectory::{AuthoredObservation, Prediction};

    fn web() -> Trajectory {
        let mut t = Trajectory::new(
            "w",
            Domain::Web,
            Some(Observation::new(Representation::Axtree, "S0")),
        );
        t.goal = Some("Buy socks".into());
        let (_, n1) = t
            .add_step(
                t.root(),
                Action::for_domain(Domain::Web, "click('3')"),
                Some(Observation::new(Representation::Axtree, "S1")),
            )
            .expect("step");
        t.add_step(
            n1,
            Action::for_domain(Domain::Web, "fill('4', 'wool')"),
            Some(Observation::new(Representation::Axtree, "S2")),
        )
        .expect("step");
        t
    }

    #[test]
    fn template_sections_and_placeholders() {
        let mut v = BTreeMap::new();
        v.insert("a", "x".to_string());
        v.insert("b", String::new());
        assert_eq!(
            render_template("{?a}A={a};{/a}{?b}B={b};{/b}{c}", &v),
            "A=x;{c}"
        );
    }

    #[test]
    fn teacher_forced_messages_for_rendered_prompts() {
        let t = web();
        let msgs = build_messages(&t, NodeId(2), &PromptOptions::default()).expect("messages");
        assert_eq!(msgs.len(), 4);
        assert_eq!(msgs[0].role, ChatRole::System);
        assert!(msgs[0].content.contains("<predicted_observation>"));
        assert_eq!(
            msgs[1].content,
            "### Turn 1\n**Task Instruction:**\nBuy socks\n\n**Current State:**\nS0\n\n**Action:**\n```python\nclick('3')\n```"
        );
        assert_eq!(
            msgs[2],
            ChatMessage::new(ChatRole::Assistant, "**Environment Observation:**\nS1")
        );
        assert!(msgs[3].content.starts_with("### Turn 2\n"));
        assert!(msgs[3].content.contains("**Current State:**\nS1\n"));
    }

    #[test]
    fn free_running_uses_predictions() {
        let mut t = web();
        let p = t
            .add_prediction(
                NodeId(1),
                Prediction::from_output("m", "<predicted_observation>P1</predicted_observation>"),
            )
            .expect("p");
        t.choose_prediction(NodeId(1), Some(p)).expect("choose");
        let opts = PromptOptions {
            mode: ContextMode::FreeRunning,
            ..PromptOptions::default()
        };
        let msgs = build_messages(&t, NodeId(2), &opts).expect("messages");
        assert_eq!(msgs[2].content, "**Environment Observation:**\nP1");
        assert!(msgs[3].content.contains("**Current State:**\nP1\n"));
        // Authored beats predictions in free-running mode.
        t.set_authored(
            NodeId(1),
            AuthoredObservation::from(Observation::new(Representation::Axtree, "A1")),
        )
        .expect("authored");
        let msgs = build_messages(&t, NodeId(2), &opts).expect("messages");
        assert_eq!(msgs[2].content, "**Environment Observation:**\nA1");
        // Teacher-forced still uses the real one.
        let msgs = build_messages(&t, NodeId(2), &PromptOptions::default()).expect("messages");
        assert_eq!(msgs[2].content, "**Environment Observation:**\nS1");
    }

    #[test]
    fn control_instructions_are_appended_to_their_turns() {
        let t = web();
        let mut opts = PromptOptions::default();
        opts.perturbations
            .insert(EdgeId(1), "the login session has expired".into());
        opts.perturbations.insert(EdgeId(0), "  ".into());
        let msgs = build_messages(&t, NodeId(2), &opts).expect("messages");
        let plain = build_messages(&t, NodeId(2), &PromptOptions::default()).expect("m");
        assert_eq!(msgs[1], plain[1]);
        assert_eq!(
            msgs[3].content,
            format!(
                "{}\n\n**Control Instruction:**\nthe login session has expired",
                plain[3].content
            )
        );
    }

    #[test]
    fn root_has_no_turn_and_empty_system_is_omitted() {
        let t = web();
        assert!(matches!(
            build_messages(&t, NodeId(0), &PromptOptions::default()),
            Err(CoreError::Prompt { .. })
        ));
        let opts = PromptOptions {
            system_prompt: Some(String::new()),
            ..PromptOptions::default()
        };
        let msgs = build_messages(&t, NodeId(1), &opts).expect("messages");
        assert_eq!(msgs[0].role, ChatRole::User);
    }

    #[test]
    fn text_domain_shows_initial_state_only_in_turn_one() {
        let mut t = Trajectory::new(
            "t",
            Domain::Terminal,
            Some(Observation::new(Representation::Text, "$ ")),
        );
        let (_, n1) = t
            .add_step(
                t.root(),
                Action::for_domain(Domain::Terminal, "ls"),
                Some(Observation::new(Representation::Text, "a b")),
            )
            .expect("s");
        let (_, n2) = t
            .add_step(n1, Action::for_domain(Domain::Terminal, "cat a"), None)
            .expect("s");
        let msgs = build_messages(&t, n2, &PromptOptions::default()).expect("m");
        assert_eq!(
            msgs[1].content,
            "### Turn 1\n**Initial State:**\n$ \n\n**Action:**\n```bash\nls\n```"
        );
        assert_eq!(
            msgs[3].content,
            "### Turn 2\n**Action:**\n```bash\ncat a\n```"
        );
    }

    #[test]
    fn default_system_prompts_differ_per_domain() {
        let all: Vec<String> = Domain::ALL.into_iter().map(default_system_prompt).collect();
        for (i, a) in all.iter().enumerate() {
            assert!(a.contains("<predicted_observation></predicted_observation>"));
            for b in &all[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }
}
