//! Predicting turns: the use case every door of Worldloom shares (the
//! studio's Step and runs, `worldloom step` / `rollout`, `serve-env`,
//! `eval`), written once below all of them.
//!
//! - [`turn`]: one turn of a trajectory (or of a chat laid out elsewhere)
//!   → the prompt messages, the current observation by one rule
//!   ([`turn::current_observation`]), the engine request, the drained event
//!   stream, the prediction record ([`turn::predict_turn`]).
//! - [`rollout`]: turns predicted one after another, each prediction the
//!   chosen one of its state, so that the next turn's free-running history
//!   holds it.
//! - [`engines`]: the one engine builder: an [`engines::EngineSpec`] (the
//!   copy or replay baseline, a local model directory or GGUF file, one or
//!   several OpenAI-compatible endpoints) → a [`worldloom_engine::WorldModel`].
//! - [`workers`]: the one bounded worker pool (studio runs and judging,
//!   `eval`, `judge`).
//!
//! Depends on `worldloom-core` (prompts, trajectories) and
//! `worldloom-engine` (engines, `collect`, the record) only: no storage,
//! HTTP server or UI type appears here.

pub mod engines;
pub mod rollout;
pub mod turn;
pub mod workers;

pub use engines::{BuiltEngine, EngineBuildError, EngineSpec, OpenAiSpec, build_engine};
pub use rollout::{RolloutEnd, RolloutTree, rollout};
pub use turn::{
    PERTURBATION_FIELD, PredictError, Predicted, Stop, Turn, current_observation, predict_turn,
    run_turn,
};
pub use workers::for_each;
