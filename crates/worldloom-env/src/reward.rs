//! Rewards: pluggable; none (`0`) by default.
//!
//! A [`Reward`] sees the episode after every step and answers the step's
//! reward and, at the end, an optional rationale kept with the recorded
//! episode. The default [`ZeroReward`] answers `0.0` everywhere, so a
//! trainer that computes its own reward (from the observations it got)
//! loses nothing. [`LlmJudgeReward`] asks an LLM at the end of the episode
//! whether the goal was achieved (1 or 0), with its rationale;
//! [`TargetStateReward`] rewards reaching an authored target state.

use crate::state::Episode;

/// The reward of one step.
#[derive(Debug, Clone, PartialEq)]
pub struct RewardOutcome {
    /// The reward.
    pub value: f64,
    /// Why, when the reward says (kept in the recorded episode's note).
    pub rationale: Option<String>,
    /// The step reached what the reward looks for: the episode ends
    /// (`done_reason` `target_reached`).
    pub ends_episode: bool,
    /// The LLM judge's call behind this reward, kept with the recorded
    /// episode (a note, see [`crate::record::JUDGE_NOTE_HEADER`]).
    pub judge: Option<JudgeCall>,
}

/// One call of an LLM judge, as kept with the recorded episode: what was
/// sent and what came back.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JudgeCall {
    /// The judge engine's name (`openai:MODEL`).
    pub judge: String,
    /// The full chat sent: the rubric as the system message, the episode as
    /// the user message ([`LlmJudgeReward::messages`]).
    pub messages: Vec<worldloom_core::ChatMessage>,
    /// The judge's answer text (`None` when the call failed).
    pub answer: Option<String>,
    /// Why there is no verdict: the call failed, or the answer did not hold
    /// one.
    pub error: Option<String>,
    /// The verdict read from the answer (1 achieved, 0 not).
    pub verdict: Option<f64>,
    /// The answer's rationale.
    pub rationale: Option<String>,
}

/// How steps are rewarded.
pub trait Reward: Send + Sync {
    /// A short name, recorded with the episode (`none`).
    fn name(&self) -> String;

    /// The reward of the step that brought `episode` to its current state;
    /// `done` is whether that step ended the episode.
    fn reward(&self, episode: &Episode, done: bool) -> RewardOutcome;
}

/// `0.0` for every step.
#[derive(Debug, Clone, Copy, Default)]
pub struct ZeroReward;

impl Reward for ZeroReward {
    fn name(&self) -> String {
        "none".to_owned()
    }

    fn reward(&self, _episode: &Episode, _done: bool) -> RewardOutcome {
        RewardOutcome {
            ends_episode: false,
            value: 0.0,
            rationale: None,
            judge: None,
        }
    }
}

/// The rubric's system prompt of [`LlmJudgeReward`] (Worldloom's own).
pub const JUDGE_RUBRIC: &str = "You grade whether an agent achieved its task in a simulated environment. You see the task, then each action the agent took and the observation the environment returned after it. Decide from the observations alone whether the final state shows the task done (or, for a question, answered correctly). Partial progress is not done. Reply with one JSON object and nothing else: {\"achieved\": 1 or 0, \"rationale\": \"one or two sentences citing the observation that decides\"}.";

/// Characters of each observation shown to the judge (longer ones are cut
/// in the middle).
pub const JUDGE_OBSERVATION_CHARS: usize = 6000;

/// An LLM judge at the end of the episode: 1 when it says the goal was
/// achieved, else 0; steps before the end get 0. The judge is any engine
/// answering chats (an OpenAI-compatible endpoint); its answer must hold
/// `{"achieved": 0|1, "rationale": "…"}`. The rationale, the judge's name
/// and its raw answer become the reward's rationale (kept in the episode's
/// closing note); a judge that fails or answers something else gives 0 with
/// the reason.
pub struct LlmJudgeReward {
    judge: std::sync::Arc<dyn worldloom_engine::WorldModel>,
    params: worldloom_engine::GenerationParams,
    timeout: std::time::Duration,
}

impl LlmJudgeReward {
    /// A judge reward over `judge`, with greedy decoding, at most
    /// `max_tokens` generated and `timeout` per call.
    pub fn new(
        judge: std::sync::Arc<dyn worldloom_engine::WorldModel>,
        max_tokens: usize,
        timeout: std::time::Duration,
    ) -> Self {
        let params = worldloom_engine::GenerationParams {
            temperature: 0.0,
            max_new_tokens: max_tokens,
            stop_after_observation: false,
            ..worldloom_engine::GenerationParams::default()
        };
        Self {
            judge,
            params,
            timeout,
        }
    }

    /// The chat the judge is sent for `episode`.
    pub fn messages(episode: &Episode) -> Vec<worldloom_core::ChatMessage> {
        use worldloom_core::prompt::context_observation;
        use worldloom_core::{ChatMessage, ChatRole, ContextMode};
        let t = &episode.trajectory;
        let cut = |text: &str| {
            let chars: Vec<char> = text.chars().collect();
            if chars.len() <= JUDGE_OBSERVATION_CHARS {
                return text.to_owned();
            }
            let half = JUDGE_OBSERVATION_CHARS / 2;
            let head: String = chars[..half].iter().collect();
            let tail: String = chars[chars.len() - half..].iter().collect();
            format!(
                "{head}\n[… {} characters cut …]\n{tail}",
                chars.len() - 2 * half
            )
        };
        let mut user = format!(
            "## Task\n{}\n",
            episode.task.goal.as_deref().unwrap_or("(no goal given)")
        );
        if let Some(first) = context_observation(t, t.root(), ContextMode::FreeRunning) {
            user.push_str(&format!("\n## Initial observation\n{}\n", cut(&first.text)));
        }
        if let Ok(path) = t.path_to(episode.leaf) {
            for (i, (edge, node)) in path.edges.iter().zip(path.nodes.iter().skip(1)).enumerate() {
                let action = t.edge(*edge).map(|e| e.action.raw.as_str()).unwrap_or("");
                user.push_str(&format!("\n## Step {}\nAction:\n{action}\n", i + 1));
                match context_observation(t, *node, ContextMode::FreeRunning) {
                    Some(o) => user.push_str(&format!("Observation:\n{}\n", cut(&o.text))),
                    None => user.push_str("Observation: (none: the episode ended here)\n"),
                }
            }
        }
        vec![
            ChatMessage::new(ChatRole::System, JUDGE_RUBRIC),
            ChatMessage::new(ChatRole::User, user),
        ]
    }
}

/// Reads `{"achieved": …, "rationale": …}` from the last JSON object in
/// `answer`.
fn verdict(answer: &str) -> Result<(f64, String), String> {
    let end = answer.rfind('}').ok_or("no JSON object in the answer")?;
    let mut last_err = String::from("no JSON object in the answer");
    for (start, _) in answer[..end].rmatch_indices('{') {
        match serde_json::from_str::<serde_json::Value>(&answer[start..=end]) {
            Ok(v) => {
                let achieved = match v.get("achieved") {
                    Some(serde_json::Value::Bool(b)) => f64::from(u8::from(*b)),
                    Some(n) if n.as_f64() == Some(1.0) => 1.0,
                    Some(n) if n.as_f64() == Some(0.0) => 0.0,
                    _ => return Err("`achieved` is not 0, 1, true or false".into()),
                };
                let rationale = v
                    .get("rationale")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                return Ok((achieved, rationale));
            }
            Err(e) => last_err = format!("the answer's JSON does not parse: {e}"),
        }
    }
    Err(last_err)
}

impl Reward for LlmJudgeReward {
    fn name(&self) -> String {
        format!("llm-judge({})", self.judge.name())
    }

    fn reward(&self, episode: &Episode, done: bool) -> RewardOutcome {
        if !done {
            return RewardOutcome {
                ends_episode: false,
                value: 0.0,
                rationale: None,
                judge: None,
            };
        }
        let messages = Self::messages(episode);
        let request = worldloom_engine::PredictRequest::new(messages.clone(), self.params.clone());
        let deadline = std::time::Instant::now() + self.timeout;
        let answer = self
            .judge
            .predict(request)
            .map_err(|e| e.to_string())
            .and_then(|stream| {
                worldloom_engine::collect(
                    stream,
                    &worldloom_engine::CancelToken::new(),
                    Some(deadline),
                    |_| {},
                )
                .map_err(|e| e.to_string())
            });
        let name = self.judge.name();
        let mut call = JudgeCall {
            judge: name.clone(),
            messages,
            answer: None,
            error: None,
            verdict: None,
            rationale: None,
        };
        let (value, rationale) = match answer {
            Ok(collected) => {
                let text = collected.output.answer.trim().to_owned();
                call.answer = Some(text.clone());
                match verdict(&text) {
                    Ok((value, rationale)) => {
                        call.verdict = Some(value);
                        call.rationale = Some(rationale.clone());
                        (value, format!("{rationale} (judge {name}; answer: {text})"))
                    }
                    Err(why) => {
                        let message = format!("judge {name}: {why}; reward 0 (answer: {text})");
                        call.error = Some(why);
                        (0.0, message)
                    }
                }
            }
            Err(e) => {
                let message = format!("judge {name} failed: {e}; reward 0");
                call.error = Some(e);
                (0.0, message)
            }
        };
        RewardOutcome {
            ends_episode: false,
            value,
            rationale: Some(rationale),
            judge: Some(call),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::verdict;

    #[test]
    fn verdicts_are_read_from_the_last_object() {
        assert_eq!(
            verdict("ok {\"achieved\": 1, \"rationale\": \"cart shows 2\"}"),
            Ok((1.0, "cart shows 2".into()))
        );
        assert_eq!(verdict("{\"achieved\": false}").map(|v| v.0), Ok(0.0));
        assert!(verdict("{\"achieved\": 3}").is_err());
        assert!(verdict("no idea").is_err());
    }
}

/// Reward for authored curricula: 1 for the step whose state matches the
/// task's target state ([`crate::Task::target`]: the authored state at a
/// tagged branch's leaf), which ends the episode (`target_reached`); 0
/// otherwise. States are compared with `worldloom-obs`'s metrics
/// ([`worldloom_obs::metrics::evaluate`], the target as the real
/// observation): node F1 for trees, token F1 for text; a match is a score at
/// least the threshold (or an exact match). Tasks without a target get 0.
#[derive(Debug, Clone, Copy)]
pub struct TargetStateReward {
    /// Score from which a state counts as the target, in [0, 1].
    pub threshold: f64,
}

impl TargetStateReward {
    /// The score of `state` against `target` (node F1, else token F1; 1
    /// for an exact match), with the metric's name; `None` when the metrics
    /// cannot compare them.
    pub fn score(target: &worldloom_core::Observation, state: &str) -> Option<(f64, &'static str)> {
        let e = worldloom_obs::metrics::evaluate(
            Some(target.text.as_bytes()),
            Some(state.as_bytes()),
            None,
            target.representation,
        )
        .ok()?;
        if e.exact == Some(true) {
            return Some((1.0, "exact"));
        }
        e.node_f1
            .map(|f| (f, "node F1"))
            .or(e.text_f1.map(|f| (f, "text F1")))
    }
}

impl Reward for TargetStateReward {
    fn name(&self) -> String {
        format!("target-state(≥ {})", self.threshold)
    }

    fn reward(&self, episode: &Episode, _done: bool) -> RewardOutcome {
        use worldloom_core::ContextMode;
        use worldloom_core::prompt::context_observation;
        let zero = |why: Option<String>| RewardOutcome {
            value: 0.0,
            rationale: why,
            ends_episode: false,
            judge: None,
        };
        let Some(target) = &episode.task.target else {
            return zero(Some("the task has no target state".into()));
        };
        let Some(state) =
            context_observation(&episode.trajectory, episode.leaf, ContextMode::FreeRunning)
        else {
            return zero(None);
        };
        match Self::score(target, &state.text) {
            Some((score, metric)) if score >= self.threshold => RewardOutcome {
                value: 1.0,
                rationale: Some(format!(
                    "turn {} reached the target state ({metric} {score:.3} ≥ {})",
                    episode.step_count, self.threshold
                )),
                ends_episode: true,
                judge: None,
            },
            Some((score, metric)) => zero(Some(format!(
                "best so far below the target: {metric} {score:.3} at turn {}",
                episode.step_count
            ))),
            None => zero(Some("the state cannot be compared with the target".into())),
        }
    }
}
