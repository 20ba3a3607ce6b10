//! Episodes: a task's first state, then turns the agent acts and the world
//! model answers, free-running (each prediction is the next turn's
//! history).
//!
//! A step: the action is read in the domain's action language
//! ([`Action::for_domain`]) and refused when malformed
//! ([`Action::problem`]; the episode stays where it was). A terminal action
//! (see [`terminal_action`]) ends the episode without a prediction.
//! Otherwise the turn is added and predicted by the use-case layer every
//! door shares (`worldloom_predict::turn::predict_turn`): the chat by
//! `worldloom-core`'s prompt builder in free-running mode (with the turn's
//! control instruction, if one was drawn), the current observation by the
//! layer's one rule (the observation of the state the action is taken
//! from), the engine's event stream drained by `worldloom-engine`'s
//! `collect` (deadline, cancel); the prediction record becomes the turn's
//! chosen prediction (`worldloom_predict::rollout::keep_chosen`). An output without an observation block
//! ends the episode (reason `unparseable_prediction`, the parser's status
//! reported); so does the turn limit (`turn_limit`). A failing engine
//! answers an error and leaves the episode at the same state.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};
use worldloom_core::prompt::context_observation;
use worldloom_core::{
    Action, ActionFormat, AndroidAction, ContextMode, Domain, OutputStatus, ParsedAction,
    Representation, Trajectory,
};
use worldloom_engine::{CancelToken, GenerationParams, WorldModel};
use worldloom_predict::rollout::keep_chosen;
use worldloom_predict::turn::{PredictError, Stop, predict_turn};

use crate::error::EnvError;
use crate::metrics::Metrics;
use crate::record::Recorder;
use crate::reward::{Reward, RewardOutcome, ZeroReward};
use crate::state::Episode;
use crate::tasks::{EPISODE_SOURCE_FORMAT, TaskSet, splitmix64, unit_interval};

/// Control instructions drawn per step ("perturbations", as the studio's).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Perturbations {
    /// The instructions to draw from.
    pub instructions: Vec<String>,
    /// Probability in [0, 1] that a step gets one.
    pub probability: f64,
}

/// Settings of the environment.
#[derive(Clone)]
pub struct EnvConfig {
    /// Steps after which an episode ends (`turn_limit`).
    pub max_turns: usize,
    /// Longest one prediction may take.
    pub step_timeout: Duration,
    /// Generation parameters; the seed is replaced per step by
    /// `episode seed + turn`.
    pub params: GenerationParams,
    /// The reward.
    pub reward: Arc<dyn Reward>,
    /// Control instructions drawn per step.
    pub perturbations: Perturbations,
}

impl Default for EnvConfig {
    fn default() -> Self {
        Self {
            max_turns: 30,
            step_timeout: Duration::from_secs(600),
            params: GenerationParams::default(),
            reward: Arc::new(ZeroReward),
            perturbations: Perturbations::default(),
        }
    }
}

/// What `reset` may say (every field optional; `openenv-core`'s
/// `ResetRequest` plus `task_id` and `domain`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResetParams {
    /// Seed of the task choice, of the perturbation draws and of the
    /// world model's sampling (`seed + turn`); a fresh one when absent.
    pub seed: Option<u64>,
    /// The episode's id (at most 255 characters); a fresh one when absent.
    pub episode_id: Option<String>,
    /// A task by id.
    pub task_id: Option<String>,
    /// A domain to draw the task from.
    pub domain: Option<Domain>,
}

impl ResetParams {
    /// Reads reset data: an object with `seed` (integer ≥ 0), `episode_id`
    /// (string, ≤ 255 characters), `task_id` (string), `domain` (a domain
    /// name); `null` fields count as absent.
    ///
    /// # Errors
    /// [`EnvError::Invalid`] naming the field, for unknown fields too.
    pub fn from_json(data: &Value) -> Result<Self, EnvError> {
        let Some(obj) = data.as_object() else {
            if data.is_null() {
                return Ok(Self::default());
            }
            return Err(EnvError::Invalid("reset data must be a JSON object".into()));
        };
        let mut out = Self::default();
        for (key, value) in obj {
            if value.is_null() {
                continue;
            }
            let text = || {
                value.as_str().map(str::to_owned).ok_or_else(|| {
                    EnvError::Invalid(format!(
                        "{key}: expected a string, got {}",
                        crate::error::json_kind(value)
                    ))
                })
            };
            match key.as_str() {
                "seed" => {
                    out.seed =
                        Some(value.as_u64().ok_or_else(|| {
                            EnvError::Invalid("seed: expected an integer ≥ 0".into())
                        })?)
                }
                "episode_id" => {
                    let id = text()?;
                    if id.is_empty() || id.chars().count() > 255 {
                        return Err(EnvError::Invalid(
                            "episode_id: expected 1 to 255 characters".into(),
                        ));
                    }
                    out.episode_id = Some(id);
                }
                "task_id" => out.task_id = Some(text()?),
                "domain" => {
                    let name = text()?;
                    out.domain = Some(name.parse().map_err(|_| {
                        EnvError::Invalid(format!(
                            "domain: `{name}` is not one of {}",
                            Domain::ALL.map(Domain::as_str).join(", ")
                        ))
                    })?)
                }
                other => {
                    return Err(EnvError::Invalid(format!(
                        "unknown reset field `{other}` (known: seed, episode_id, task_id, domain)"
                    )));
                }
            }
        }
        Ok(out)
    }
}

/// Reads step data (the action object `openenv-core` clients send):
/// `{"action": TEXT}` — the action as its domain writes it (a BrowserGym
/// call, Android JSON, `pyautogui` code, a tool call, a shell command); an
/// object or array is taken as its JSON text. `metadata` (an object) is
/// accepted and ignored.
///
/// # Errors
/// [`EnvError::Invalid`] naming the field.
pub fn action_text(data: &Value) -> Result<String, EnvError> {
    let Some(obj) = data.as_object() else {
        return Err(EnvError::Invalid(
            "the action must be a JSON object such as {\"action\": \"click('12')\"}".into(),
        ));
    };
    for key in obj.keys() {
        if key != "action" && key != "metadata" {
            return Err(EnvError::Invalid(format!(
                "unknown action field `{key}` (known: action, metadata)"
            )));
        }
    }
    match obj.get("action") {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v @ (Value::Object(_) | Value::Array(_))) => Ok(v.to_string()),
        Some(_) => Err(EnvError::Invalid(
            "action: expected a string (or a JSON object for Android and tool calls)".into(),
        )),
        None => Err(EnvError::Invalid(
            "action: missing; send {\"action\": \"<the action as the domain writes it>\"}".into(),
        )),
    }
}

/// Whether `action` ends the episode in its domain, and how it is spelled:
/// - web (BrowserGym): a `send_msg_to_user(…)` or `report_infeasible(…)`
///   call;
/// - android: `action_type` `status` (AndroidWorld), `answer`,
///   `terminate`, `finish` or `complete`;
/// - os (`pyautogui`): `DONE` or `FAIL` alone (OSWorld's special actions);
/// - mcp, swe (tool calls): a JSON call whose `name` or `tool` is
///   `finish`, `submit`, `answer` or `final_answer`;
/// - terminal: `exit` (with or without a code);
/// - search: a JSON call with `tool`/`name` `answer` or `finish`, or text
///   starting with `answer:`.
pub fn terminal_action(domain: Domain, action: &Action) -> bool {
    const TOOL_ENDS: [&str; 5] = ["finish", "submit", "answer", "final_answer", "done"];
    let raw = action.raw.trim();
    let json_tool = || {
        let value = match &action.parsed {
            Some(ParsedAction::Json { value }) => Some(value.clone()),
            _ => serde_json::from_str::<Value>(raw).ok(),
        };
        value
            .as_ref()
            .and_then(|v| v.get("name").or_else(|| v.get("tool")))
            .and_then(Value::as_str)
            .is_some_and(|n| TOOL_ENDS.contains(&n))
    };
    match domain {
        Domain::Web => matches!(&action.parsed, Some(ParsedAction::Browsergym { calls })
            if calls.iter().any(|c| c.function == "send_msg_to_user" || c.function == "report_infeasible")),
        Domain::Android => {
            matches!(&action.parsed, Some(ParsedAction::Android { action: AndroidAction::Other { name } })
            if ["status", "answer", "terminate", "finish", "complete"].contains(&name.as_str()))
        }
        Domain::Os => raw == "DONE" || raw == "FAIL",
        Domain::Mcp | Domain::Swe => json_tool(),
        Domain::Terminal => raw == "exit" || raw.starts_with("exit "),
        Domain::Search => json_tool() || raw.to_ascii_lowercase().starts_with("answer:"),
    }
}

/// A one-paragraph description of a domain's action language, returned
/// with every initial observation.
pub fn action_space(domain: Domain) -> String {
    let text = match domain {
        Domain::Web => {
            "BrowserGym high-level actions, one Python call per line with literal arguments: click('12'), fill('41', 'text'), select_option('7', 'Red'), hover('3'), press('41', 'Enter'), scroll(0, 200), goto('https://…'), go_back(), go_forward(), new_tab(), tab_close(), tab_focus(1). Element ids are the [bid] numbers of the accessibility tree. Ends the episode: send_msg_to_user('answer') or report_infeasible('reason')."
        }
        Domain::Android => {
            "One Android action as a JSON object with `action_type`: click / long_press (x, y in pixels or `index`), type (text), scroll (direction), navigate_back, navigate_home, keyboard_enter, open_app (app_name), wait. Ends the episode: {\"action_type\": \"status\", \"goal_status\": \"complete\"} (or answer / terminate / finish)."
        }
        Domain::Os => {
            "Python code using pyautogui on the desktop (pyautogui.click(x, y), pyautogui.write('text'), pyautogui.hotkey('ctrl', 's'), …); coordinates in screen pixels. Ends the episode: DONE or FAIL alone."
        }
        Domain::Mcp => {
            "One tool call as JSON, optionally in a ```json fence: {\"name\": TOOL, \"arguments\": {…}}. Ends the episode: a call named finish, submit, answer or final_answer."
        }
        Domain::Swe => {
            "One tool call as JSON (view, edit, run tests, …), optionally in a ```json fence: {\"tool\": NAME, …}. Ends the episode: a call named submit, finish or answer."
        }
        Domain::Terminal => {
            "One shell command line (or keystrokes) as typed at the prompt. Ends the episode: exit."
        }
        Domain::Search => {
            "One search or fetch call, e.g. {\"tool\": \"search\", \"query\": \"…\"}. Ends the episode: {\"tool\": \"answer\", …} or text starting with `answer:`."
        }
    };
    text.to_owned()
}

/// The answer to a reset or a step: OpenEnv's `observation`, `reward`,
/// `done`.
#[derive(Debug, Clone, PartialEq)]
pub struct StepAnswer {
    /// The observation object (see `docs/openenv.md` for its fields).
    pub observation: Value,
    /// The step's reward (`None` after a reset).
    pub reward: Option<f64>,
    /// Whether the episode has ended.
    pub done: bool,
}

impl StepAnswer {
    /// `{"observation": …, "reward": …, "done": …}` (`openenv-core`'s
    /// `ResetResponse` / `StepResponse` and its WebSocket observation data).
    pub fn to_json(&self) -> Value {
        json!({"observation": self.observation, "reward": self.reward, "done": self.done})
    }
}

/// Tasks, engine, recorder and settings shared by every session.
pub struct Environment {
    tasks: TaskSet,
    engine: Arc<dyn WorldModel>,
    recorder: Option<Recorder>,
    config: EnvConfig,
    /// Counters for `/metrics`.
    pub metrics: Metrics,
    next_episode: AtomicU64,
}

fn fresh_seed() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    splitmix64(nanos ^ u64::from(std::process::id()))
}

impl Environment {
    /// An environment over `tasks` with `engine`, recording into
    /// `recorder` when given.
    pub fn new(
        tasks: TaskSet,
        engine: Arc<dyn WorldModel>,
        recorder: Option<Recorder>,
        config: EnvConfig,
    ) -> Self {
        Self {
            tasks,
            engine,
            recorder,
            config,
            metrics: Metrics::default(),
            next_episode: AtomicU64::new(1),
        }
    }

    /// The tasks.
    pub fn tasks(&self) -> &TaskSet {
        &self.tasks
    }

    /// The engine's name.
    pub fn engine_name(&self) -> String {
        self.engine.name()
    }

    /// The settings.
    pub fn config(&self) -> &EnvConfig {
        &self.config
    }

    /// The workspace episodes are recorded into.
    pub fn recorder(&self) -> Option<&Recorder> {
        self.recorder.as_ref()
    }

    /// Starts an episode (blocking: it writes to the workspace).
    ///
    /// # Errors
    /// [`EnvError::Invalid`] for an unknown task or domain;
    /// [`EnvError::Record`].
    pub fn reset(&self, params: &ResetParams) -> Result<(Episode, StepAnswer), EnvError> {
        let seed = params.seed.unwrap_or_else(fresh_seed);
        let task = self
            .tasks
            .pick(seed, params.task_id.as_deref(), params.domain)?
            .clone();
        let id = params.episode_id.clone().unwrap_or_else(|| {
            format!(
                "ep-{:x}-{}",
                splitmix64(seed ^ fresh_seed()) & 0xffff_ffff,
                self.next_episode.fetch_add(1, Ordering::Relaxed)
            )
        });
        // A task that starts mid-tree (a tagged branch's fork point) brings
        // its history; its last state is where the episode starts.
        let mut trajectory = match &task.history {
            Some(history) => {
                let mut t = history.clone();
                t.id = id.clone();
                t
            }
            None => Trajectory::new(id.clone(), task.domain, task.initial.clone()),
        };
        trajectory.source.format = EPISODE_SOURCE_FORMAT.to_owned();
        trajectory.source.path = Some(format!("task {} ({})", task.id, task.source));
        trajectory.goal = task.goal.clone();
        trajectory.system_prompt = task.system_prompt.clone();
        trajectory
            .extra
            .insert("episode".into(), json!({"task_id": task.id, "seed": seed, "engine": self.engine.name(), "reward": self.config.reward.name()}));
        let recorded = match &self.recorder {
            Some(r) => Some(r.start(&trajectory)?),
            None => None,
        };
        let leaf = trajectory
            .main_path()
            .nodes
            .last()
            .copied()
            .unwrap_or_else(|| trajectory.root());
        let episode = Episode {
            id,
            task,
            seed,
            trajectory,
            leaf,
            step_count: 0,
            done: false,
            done_reason: None,
            total_reward: 0.0,
            perturbations: BTreeMap::new(),
            recorded,
            recorded_leaf: recorded.map(|_| leaf),
            started: Instant::now(),
        };
        self.metrics
            .episodes_started
            .fetch_add(1, Ordering::Relaxed);
        let mut observation = self.observation(&episode, None);
        if let Value::Object(map) = &mut observation {
            map.insert(
                "action_space".into(),
                json!(action_space(episode.task.domain)),
            );
            map.insert("system_prompt".into(), json!(episode.task.system_prompt));
            map.insert("start_turn".into(), json!(episode.task.start_turn()));
        }
        Ok((
            episode,
            StepAnswer {
                observation,
                reward: None,
                done: false,
            },
        ))
    }

    /// The observation object of `episode`'s current state.
    fn observation(&self, episode: &Episode, extra: Option<Map<String, Value>>) -> Value {
        let state =
            context_observation(&episode.trajectory, episode.leaf, ContextMode::FreeRunning);
        let representation = state
            .as_ref()
            .map(|s| s.representation)
            .or_else(|| episode.task.initial.as_ref().map(|o| o.representation))
            .unwrap_or(Representation::Text);
        let mut map = Map::new();
        map.insert(
            "text".into(),
            json!(state.map(|s| s.text).unwrap_or_default()),
        );
        map.insert("domain".into(), json!(episode.task.domain.as_str()));
        map.insert("representation".into(), json!(representation.as_str()));
        map.insert("goal".into(), json!(episode.task.goal));
        map.insert("episode_id".into(), json!(episode.id));
        map.insert("task_id".into(), json!(episode.task.id));
        map.insert("turn".into(), json!(episode.step_count));
        if let Some(extra) = extra {
            map.extend(extra);
        }
        Value::Object(map)
    }

    /// The state object: `episode_id`, `step_count` (as `openenv-core`'s
    /// `State`) and the start turn, task, seed, done flag, reason, total
    /// reward and the recorded trajectory's workspace key.
    pub fn state(&self, episode: &Episode) -> Value {
        json!({
            "episode_id": episode.id,
            "step_count": episode.step_count,
            "start_turn": episode.task.start_turn(),
            "task_id": episode.task.id,
            "domain": episode.task.domain.as_str(),
            "seed": episode.seed,
            "done": episode.done,
            "done_reason": episode.done_reason,
            "total_reward": episode.total_reward,
            "perturbations": episode.perturbations.iter().map(|(k, v)| json!({"turn": k, "instruction": v})).collect::<Vec<_>>(),
            "trajectory_key": episode.recorded.map(|k| k.0),
            "engine": self.engine.name(),
        })
    }

    fn draw_perturbation(&self, episode: &Episode, turn: usize) -> Option<String> {
        let p = &self.config.perturbations;
        if p.instructions.is_empty() || p.probability <= 0.0 {
            return None;
        }
        let base = episode.seed ^ splitmix64(turn as u64);
        if unit_interval(base) >= p.probability {
            return None;
        }
        let index = (splitmix64(base ^ 0x5eed) % p.instructions.len() as u64) as usize;
        Some(p.instructions[index].clone())
    }

    /// Takes one step (blocking: it waits for the world model). `cancel`
    /// stops the prediction (a closed socket).
    ///
    /// # Errors
    /// [`EnvError::Session`] for an episode that has ended;
    /// [`EnvError::Invalid`] / [`EnvError::InvalidAction`] for a malformed
    /// action; [`EnvError::Engine`] when the world model fails (the episode
    /// stays at the same state); [`EnvError::Record`].
    pub fn step(
        &self,
        episode: &mut Episode,
        data: &Value,
        cancel: &CancelToken,
    ) -> Result<StepAnswer, EnvError> {
        if episode.done {
            return Err(EnvError::Session(format!(
                "episode `{}` has ended ({}); reset to start another",
                episode.id,
                episode.done_reason.as_deref().unwrap_or("done")
            )));
        }
        let raw = action_text(data).inspect_err(|_| {
            self.metrics.invalid_actions.fetch_add(1, Ordering::Relaxed);
        })?;
        let domain = episode.task.domain;
        let action = Action::for_domain(domain, raw);
        if let Some(problem) = action.problem() {
            self.metrics.invalid_actions.fetch_add(1, Ordering::Relaxed);
            return Err(EnvError::InvalidAction(format!(
                "{problem} (a {} action is expected: {})",
                format_name(action.format),
                domain
            )));
        }
        let turn = episode.step_count + 1;
        let started = Instant::now();
        if terminal_action(domain, &action) {
            let mut t = episode.trajectory.clone();
            let (_, node) = t
                .add_step(episode.leaf, action.clone(), None)
                .map_err(|e| EnvError::Record(e.to_string()))?;
            if let (Some(r), Some(key), Some(from)) =
                (&self.recorder, episode.recorded, episode.recorded_leaf)
            {
                episode.recorded_leaf = Some(r.turn(key, from, action, None, None)?.1);
            }
            episode.trajectory = t;
            episode.leaf = node;
            episode.step_count = turn;
            return self.finish_step(episode, Some("terminal_action"), Map::new(), started);
        }
        let perturbation = self.draw_perturbation(episode, turn);
        let mut t = episode.trajectory.clone();
        let (edge, node) = t
            .add_step(episode.leaf, action.clone(), None)
            .map_err(|e| EnvError::Record(e.to_string()))?;
        let mut perturbations = BTreeMap::new();
        if let Some(p) = &perturbation {
            perturbations.insert(edge, p.clone());
        }
        let mut params = self.config.params.clone();
        params.seed = episode.seed.wrapping_add(turn as u64);
        let stop = Stop {
            cancel,
            deadline: Some(Instant::now() + self.config.step_timeout),
            keep_partial: false,
        };
        let predicted = predict_turn(
            self.engine.as_ref(),
            &t,
            node,
            ContextMode::FreeRunning,
            perturbations,
            &params,
            stop,
            |_| {},
        )
        .map_err(|e| match e {
            PredictError::Prompt(e) => EnvError::Engine(format!("building the prompt: {e}")),
            PredictError::Collect(e) => {
                self.metrics.engine_errors.fetch_add(1, Ordering::Relaxed);
                EnvError::Engine(e.to_string())
            }
        })?;
        let collected = predicted.collected;
        let prediction = predicted.record;
        self.metrics
            .completion_tokens
            .fetch_add(collected.stats.completion_tokens as u64, Ordering::Relaxed);
        if let (Some(r), Some(key), Some(from)) =
            (&self.recorder, episode.recorded, episode.recorded_leaf)
        {
            let (_, node) = r.turn(
                key,
                from,
                action,
                perturbation.as_deref(),
                Some(&prediction),
            )?;
            episode.recorded_leaf = Some(node);
        }
        let status = prediction.status;
        let observed = prediction.observation.is_some();
        keep_chosen(&mut t, node, prediction).map_err(|e| EnvError::Record(e.to_string()))?;
        episode.trajectory = t;
        episode.leaf = node;
        episode.step_count = turn;
        if let Some(p) = &perturbation {
            episode.perturbations.insert(turn, p.clone());
        }
        let mut extra = Map::new();
        extra.insert("status".into(), json!(status.as_str()));
        extra.insert("perturbation".into(), json!(perturbation));
        extra.insert("prediction_ms".into(), json!(collected.total_ms));
        let reason = if !observed {
            self.metrics.unparseable.fetch_add(1, Ordering::Relaxed);
            extra.insert(
                "error".into(),
                json!(format!(
                    "the world model's output has no observation (parser status `{}`); the episode ends",
                    status.as_str()
                )),
            );
            Some("unparseable_prediction")
        } else if turn >= self.config.max_turns {
            Some("turn_limit")
        } else {
            None
        };
        debug_assert!(status != OutputStatus::Ok || observed);
        self.finish_step(episode, reason, extra, started)
    }

    fn finish_step(
        &self,
        episode: &mut Episode,
        reason: Option<&str>,
        mut extra: Map<String, Value>,
        started: Instant,
    ) -> Result<StepAnswer, EnvError> {
        let mut done = reason.is_some();
        episode.done = done;
        episode.done_reason = reason.map(str::to_owned);
        let reward = self.config.reward.reward(episode, done);
        if reward.ends_episode && !done {
            done = true;
            episode.done = true;
            episode.done_reason = Some("target_reached".to_owned());
        }
        episode.total_reward += reward.value;
        self.metrics.steps.fetch_add(1, Ordering::Relaxed);
        self.metrics
            .step_us_total
            .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        extra.insert("done_reason".into(), json!(episode.done_reason));
        if let Some(r) = &reward.rationale {
            extra.insert("reward_rationale".into(), json!(r));
        }
        if done {
            self.end(episode, Some(&reward))?;
        }
        Ok(StepAnswer {
            observation: self.observation(episode, Some(extra)),
            reward: Some(reward.value),
            done,
        })
    }

    /// Records the end of `episode` (its reason, steps, reward) once; with
    /// the last step's `reward`, its rationale and (for an LLM judge) the
    /// judge's call are kept too.
    ///
    /// # Errors
    /// [`EnvError::Record`].
    pub fn end(
        &self,
        episode: &mut Episode,
        reward: Option<&RewardOutcome>,
    ) -> Result<(), EnvError> {
        let rationale = reward.and_then(|r| r.rationale.as_deref());
        let judge = reward.and_then(|r| r.judge.as_ref());
        episode.done = true;
        let reason = episode
            .done_reason
            .get_or_insert_with(|| "closed".to_owned())
            .clone();
        self.metrics
            .episodes_finished
            .fetch_add(1, Ordering::Relaxed);
        if let (Some(r), Some(key)) = (&self.recorder, episode.recorded.take()) {
            let mut note = format!(
                "episode {} ended: {reason} after {} step(s) in {:.1} s; reward {} ({}), seed {}, task {}",
                episode.id,
                episode.step_count,
                episode.started.elapsed().as_secs_f64(),
                episode.total_reward,
                self.config.reward.name(),
                episode.seed,
                episode.task.id
            );
            if let Some(r) = rationale {
                note.push_str(&format!("\nrationale: {r}"));
            }
            r.finish(key, &note, judge)?;
            episode.recorded = Some(key);
        }
        Ok(())
    }
}

fn format_name(format: ActionFormat) -> &'static str {
    match format {
        ActionFormat::Browsergym => "BrowserGym",
        ActionFormat::AndroidJson => "Android JSON",
        ActionFormat::Pyautogui => "pyautogui",
        ActionFormat::ToolCall => "tool-call",
        ActionFormat::Shell => "shell",
        ActionFormat::Text => "text",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_actions_per_domain() {
        let t = |d: Domain, raw: &str| terminal_action(d, &Action::for_domain(d, raw));
        assert!(t(Domain::Web, "send_msg_to_user('done')"));
        assert!(!t(Domain::Web, "click('12')"));
        assert!(t(
            Domain::Android,
            r#"{"action_type": "status", "goal_status": "complete"}"#
        ));
        assert!(!t(Domain::Android, r#"{"action_type": "wait"}"#));
        assert!(t(Domain::Os, "DONE"));
        assert!(!t(Domain::Os, "pyautogui.click(1, 2)"));
        assert!(t(Domain::Mcp, r#"{"name": "finish", "arguments": {}}"#));
        assert!(t(Domain::Swe, "```json\n{\"tool\": \"submit\"}\n```"));
        assert!(t(Domain::Terminal, "exit 0"));
        assert!(!t(Domain::Terminal, "exitcode"));
        assert!(t(Domain::Search, "answer: 6 minutes"));
    }

    #[test]
    fn reset_and_action_fields_are_checked_by_name() {
        let p = ResetParams::from_json(&json!({"seed": 3, "domain": "web", "episode_id": null}))
            .expect("valid");
        assert_eq!((p.seed, p.domain), (Some(3), Some(Domain::Web)));
        let err = ResetParams::from_json(&json!({"sed": 3}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`sed`"), "{err}");
        let err = ResetParams::from_json(&json!({"seed": -1}))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("seed:"), "{err}");
        let err = ResetParams::from_json(&json!({"domain": "moon"}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("swe, web, os, android"), "{err}");
        let err = ResetParams::from_json(&json!({"episode_id": 7}))
            .unwrap_err()
            .to_string();
        assert_eq!(err, "episode_id: expected a string, got a number (7)");
        assert_eq!(
            action_text(&json!({"action": "ls"})).ok().as_deref(),
            Some("ls")
        );
        assert_eq!(
            action_text(&json!({"action": {"action_type": "wait"}}))
                .ok()
                .as_deref(),
            Some(r#"{"action_type":"wait"}"#)
        );
        assert!(
            action_text(&json!({"cmd": "ls"}))
                .unwrap_err()
                .to_string()
                .contains("`cmd`")
        );
        assert!(action_text(&json!({})).is_err());
    }
}
