//! One turn: its prompt, its current observation, the engine run and the
//! prediction record.
//!
//! [`predict_turn`] is the use case every door calls ("predict the
//! observation after this turn's action"): [`Turn::of_trajectory`] lays out
//! the turn (the chat by `worldloom_core::prompt::build_messages` with the
//! turn's control instructions, the current observation by
//! [`current_observation`]), [`run_turn`] asks the engine and drains its
//! event stream (`worldloom_engine::collect`), and [`record`] makes the
//! prediction record (`worldloom_engine::record::prediction_record`, plus
//! the turn's control instruction). A door that must answer bad requests
//! before it starts work (the studio's Step) calls the three in turn; a chat
//! laid out elsewhere (an AgentWorldBench row as the official script builds
//! it, `eval`) enters through [`Turn::of_chat`].
//!
//! # The current observation
//!
//! One rule, on every path ([`current_observation`]): the observation of
//! the state the turn's action is taken from (the parent state of the
//! predicted one on its branch), as the turn's history shows it (its
//! context observation in the turn's mode: teacher-forced the real one,
//! free-running the authored or chosen prediction). It is the state's text,
//! without the AgentWorldBench `**Environment Observation:**` marker. The
//! `copy` baseline predicts exactly it; `None` when that state has none
//! (then `copy` refuses the turn: it has nothing to copy).

use std::collections::BTreeMap;
use std::time::Instant;

use worldloom_core::prompt::context_observation;
use worldloom_core::{
    ChatMessage, ContextMode, CoreError, EdgeId, NodeId, Prediction, PromptOptions, Trajectory,
    build_messages,
};
use worldloom_engine::record::prediction_record;
use worldloom_engine::{
    CancelToken, CollectError, Collected, EngineEvent, GenerationParams, PredictRequest,
    WorldModel, collect, collect_to_end,
};

/// The `Prediction::extra` field holding the turn's control instruction
/// (the perturbation the prompt carried), when it had one.
pub const PERTURBATION_FIELD: &str = "perturbation";

/// Why a turn was not predicted.
#[derive(Debug, thiserror::Error)]
pub enum PredictError {
    /// The prompt cannot be built: an unknown node, the initial state (it
    /// has no turn), a history state with no observation in the mode.
    #[error("cannot build the prompt: {0}")]
    Prompt(#[source] CoreError),
    /// The engine refused or failed, or the prediction was cancelled or ran
    /// past its deadline ([`CollectError`]).
    #[error(transparent)]
    Collect(#[from] CollectError),
}

/// A turn laid out for an engine.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The chat: system prompt, history, the turn's user prompt.
    pub messages: Vec<ChatMessage>,
    /// The observation of the state the action is taken from (see
    /// [`current_observation`]); `None` when that state has none.
    pub current_observation: Option<String>,
    /// Where the history comes from.
    pub mode: ContextMode,
    /// The turn's control instruction, when it has one.
    pub perturbation: Option<String>,
}

impl Turn {
    /// Lays out the turn into `node` (the state its action leads to) of
    /// `trajectory`: the messages with `perturbations` (control
    /// instructions by turn; the predicted turn's own, if any, is kept in
    /// [`Turn::perturbation`]) and the current observation.
    ///
    /// # Errors
    /// [`PredictError::Prompt`]: an unknown node, the initial state, a
    /// history state without an observation in `mode`.
    pub fn of_trajectory(
        trajectory: &Trajectory,
        node: NodeId,
        mode: ContextMode,
        perturbations: BTreeMap<EdgeId, String>,
    ) -> Result<Self, PredictError> {
        let perturbation = trajectory
            .node(node)
            .and_then(|n| n.parent_edge)
            .and_then(|e| perturbations.get(&e).cloned());
        let options = PromptOptions {
            mode,
            perturbations,
            ..PromptOptions::default()
        };
        let messages = build_messages(trajectory, node, &options).map_err(PredictError::Prompt)?;
        Ok(Self {
            messages,
            current_observation: current_observation(trajectory, node, mode),
            mode,
            perturbation,
        })
    }

    /// A turn whose chat was laid out elsewhere (an AgentWorldBench row as
    /// the official script sends it). `state` is the observation of the
    /// state the action is taken from, as that state's text (an
    /// AgentWorldBench `response` without its `**Environment
    /// Observation:**` marker, as the importer stores it): the same rule as
    /// [`current_observation`].
    pub fn of_chat(messages: Vec<ChatMessage>, state: Option<String>, mode: ContextMode) -> Self {
        Self {
            messages,
            current_observation: state,
            mode,
            perturbation: None,
        }
    }

    /// Runs this turn through `engine` ([`run_turn`]) and records the
    /// prediction of `node` of `trajectory` ([`record`], named by the
    /// engine's `name()`).
    ///
    /// # Errors
    /// As [`run_turn`].
    pub fn predict(
        self,
        engine: &dyn WorldModel,
        trajectory: &Trajectory,
        node: NodeId,
        params: &GenerationParams,
        stop: Stop<'_>,
        on_event: impl FnMut(&EngineEvent),
    ) -> Result<Predicted, CollectError> {
        let collected = run_turn(engine, &self, params, stop, on_event)?;
        let record = record(&engine.name(), trajectory, node, params, &self, &collected);
        Ok(Predicted {
            turn: self,
            collected,
            record,
        })
    }

    /// The engine request of this turn with `params`.
    pub fn request(&self, params: &GenerationParams) -> PredictRequest {
        let mut request = PredictRequest::new(self.messages.clone(), params.clone());
        request.current_observation = self.current_observation.clone();
        request
    }
}

/// The current observation of the turn into `node`: the observation of the
/// state its action is taken from (the parent state on the branch), as the
/// turn's history in `mode` shows it (`worldloom_core::prompt::
/// context_observation`); its text. `None` for the initial state, an
/// unknown node, or a parent state with no observation in `mode`.
pub fn current_observation(
    trajectory: &Trajectory,
    node: NodeId,
    mode: ContextMode,
) -> Option<String> {
    let edge = trajectory.node(node)?.parent_edge?;
    let from = trajectory.edge(edge)?.from;
    context_observation(trajectory, from, mode).map(|o| o.text)
}

/// How a prediction may be stopped.
#[derive(Debug, Clone, Copy)]
pub struct Stop<'a> {
    /// The caller's cancel token (checked at least every 10 ms).
    pub cancel: &'a CancelToken,
    /// When the prediction is given up.
    pub deadline: Option<Instant>,
    /// On a cancel or a passed deadline, wait for the engine's partial
    /// output (stop reason `cancelled`; `worldloom_engine::collect_to_end`)
    /// instead of ending at once with [`CollectError::Cancelled`] or
    /// [`CollectError::DeadlineExceeded`] (`worldloom_engine::collect`).
    pub keep_partial: bool,
}

impl<'a> Stop<'a> {
    /// Stopped by `cancel` only, ending at once.
    pub fn on(cancel: &'a CancelToken) -> Self {
        Self {
            cancel,
            deadline: None,
            keep_partial: false,
        }
    }
}

/// Asks `engine` for `turn` with `params` and drains the stream, handing
/// every event to `on_event` first (reasoning, observation deltas, tokens,
/// as they come).
///
/// # Errors
/// [`CollectError::Engine`] for a refusal or a failure;
/// [`CollectError::Cancelled`] / [`CollectError::DeadlineExceeded`] as
/// `stop` says.
pub fn run_turn(
    engine: &dyn WorldModel,
    turn: &Turn,
    params: &GenerationParams,
    stop: Stop<'_>,
    on_event: impl FnMut(&EngineEvent),
) -> Result<Collected, CollectError> {
    let stream = engine.predict(turn.request(params))?;
    if stop.keep_partial {
        collect_to_end(stream, stop.cancel, stop.deadline, on_event)
    } else {
        collect(stream, stop.cancel, stop.deadline, on_event)
    }
}

/// The prediction record of `collected`, the prediction of `node` made for
/// `turn` by the engine named `engine_name` with `params`
/// (`worldloom_engine::record::prediction_record`), with the turn's control
/// instruction under [`PERTURBATION_FIELD`].
pub fn record(
    engine_name: &str,
    trajectory: &Trajectory,
    node: NodeId,
    params: &GenerationParams,
    turn: &Turn,
    collected: &Collected,
) -> Prediction {
    let mut record = prediction_record(engine_name, trajectory, node, params, turn.mode, collected);
    if let Some(p) = &turn.perturbation {
        record.extra.insert(
            PERTURBATION_FIELD.into(),
            serde_json::Value::String(p.clone()),
        );
    }
    record
}

/// A predicted turn.
#[derive(Debug, Clone)]
pub struct Predicted {
    /// The turn as it was sent.
    pub turn: Turn,
    /// The drained prediction (output, tokens, statistics, timings).
    pub collected: Collected,
    /// The prediction record (engine, parameters, seed, mode, status…).
    pub record: Prediction,
}

/// Predicts the turn into `node` of `trajectory` with `engine`: lays it out
/// ([`Turn::of_trajectory`]), runs it ([`run_turn`]) and records it
/// ([`record`], named by the engine's `name()`): [`Turn::predict`].
///
/// # Errors
/// [`PredictError::Prompt`] before the engine is asked;
/// [`PredictError::Collect`] from the engine run.
pub fn predict_turn(
    engine: &dyn WorldModel,
    trajectory: &Trajectory,
    node: NodeId,
    mode: ContextMode,
    perturbations: BTreeMap<EdgeId, String>,
    params: &GenerationParams,
    stop: Stop<'_>,
    on_event: impl FnMut(&EngineEvent),
) -> Result<Predicted, PredictError> {
    let turn = Turn::of_trajectory(trajectory, node, mode, perturbations)?;
    Ok(turn.predict(engine, trajectory, node, params, stop, on_event)?)
}

#[cfg(test)]
mod tests {
    use worldloom_core::{Action, AuthoredObservation, Domain, Observation, Representation};
    use worldloom_engine::baseline::CopyEngine;

    use super::*;

    /// S0 --click(1)--> S1 --click(2)--> S2, real observations; S1 also has
    /// an authored observation `A1`.
    fn web() -> (Trajectory, NodeId, NodeId) {
        let mut t = Trajectory::new(
            "w",
            Domain::Web,
            Some(Observation::new(Representation::Axtree, "S0")),
        );
        let act = |raw: &str| Action::for_domain(Domain::Web, raw);
        let (_, n1) = t
            .add_step(
                t.root(),
                act("click('1')"),
                Some(Observation::new(Representation::Axtree, "S1")),
            )
            .expect("step");
        let (_, n2) = t
            .add_step(
                n1,
                act("click('2')"),
                Some(Observation::new(Representation::Axtree, "S2")),
            )
            .expect("step");
        t.set_authored(
            n1,
            AuthoredObservation::from(Observation::new(Representation::Axtree, "A1")),
        )
        .expect("authored");
        (t, n1, n2)
    }

    fn copy_of(t: &Trajectory, node: NodeId, mode: ContextMode) -> Option<String> {
        let cancel = CancelToken::new();
        let p = predict_turn(
            &CopyEngine,
            t,
            node,
            mode,
            BTreeMap::new(),
            &GenerationParams::default(),
            Stop::on(&cancel),
            |_| {},
        )
        .expect("copy predicts");
        p.record.observation
    }

    #[test]
    fn the_copy_baseline_predicts_the_parent_state_as_the_history_shows_it() {
        let (t, n1, n2) = web();
        assert_eq!(
            current_observation(&t, n2, ContextMode::TeacherForced).as_deref(),
            Some("S1")
        );
        assert_eq!(
            copy_of(&t, n2, ContextMode::TeacherForced).as_deref(),
            Some("S1")
        );
        // Free-running: the parent's authored observation.
        assert_eq!(
            copy_of(&t, n2, ContextMode::FreeRunning).as_deref(),
            Some("A1")
        );
        // The first turn copies the initial state (it has one here).
        assert_eq!(
            copy_of(&t, n1, ContextMode::TeacherForced).as_deref(),
            Some("S0")
        );
        assert_eq!(
            current_observation(&t, t.root(), ContextMode::TeacherForced),
            None
        );
    }

    #[test]
    fn a_turn_keeps_its_control_instruction_in_the_prompt_and_the_record() {
        let (t, _, n2) = web();
        let edge = t.node(n2).and_then(|n| n.parent_edge).expect("edge");
        let cancel = CancelToken::new();
        let p = predict_turn(
            &CopyEngine,
            &t,
            n2,
            ContextMode::TeacherForced,
            BTreeMap::from([(edge, "the page fails to load".to_owned())]),
            &GenerationParams::default(),
            Stop::on(&cancel),
            |_| {},
        )
        .expect("predicts");
        assert_eq!(
            p.turn.perturbation.as_deref(),
            Some("the page fails to load")
        );
        let last = p.turn.messages.last().expect("messages");
        assert!(
            last.content.ends_with("the page fails to load"),
            "{}",
            last.content
        );
        assert_eq!(
            p.record.extra.get(PERTURBATION_FIELD),
            Some(&serde_json::json!("the page fails to load"))
        );
        assert_eq!(p.record.engine, "copy");
    }

    #[test]
    fn the_initial_state_has_no_turn_and_a_stateless_first_turn_is_refused_by_copy() {
        let (t, ..) = web();
        let err = Turn::of_trajectory(&t, t.root(), ContextMode::TeacherForced, BTreeMap::new())
            .expect_err("root");
        assert!(
            err.to_string().starts_with("cannot build the prompt:"),
            "{err}"
        );
        // A trajectory whose first state lives only inside the prompt.
        let mut bare = Trajectory::new("b", Domain::Terminal, None);
        let (_, n1) = bare
            .add_step(
                bare.root(),
                Action::for_domain(Domain::Terminal, "ls"),
                None,
            )
            .expect("step");
        let turn = Turn::of_trajectory(&bare, n1, ContextMode::TeacherForced, BTreeMap::new())
            .expect("turn");
        assert_eq!(turn.current_observation, None);
        let cancel = CancelToken::new();
        let err = run_turn(
            &CopyEngine,
            &turn,
            &GenerationParams::default(),
            Stop::on(&cancel),
            |_| {},
        )
        .expect_err("nothing to copy");
        assert!(matches!(err, CollectError::Engine(_)), "{err}");
    }
}
