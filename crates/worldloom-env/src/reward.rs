//! Rewards: pluggable; none (`0`) by default.
//!
//! A [`Reward`] sees the episode after every step and answers the step's
//! reward and, at the end, an optional rationale kept with the recorded
//! episode. The default [`ZeroReward`] answers `0.0` everywhere, so a
//! trainer that computes its own reward (from the observations it got)
//! loses nothing.

use crate::episode::Episode;

/// The reward of one step.
#[derive(Debug, Clone, PartialEq)]
pub struct RewardOutcome {
    /// The reward.
    pub value: f64,
    /// Why, when the reward says (kept in the recorded episode's note).
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
            value: 0.0,
            rationale: None,
        }
    }
}
