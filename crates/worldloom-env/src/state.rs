//! [`Episode`]: what one episode is at a moment (its task, seed, trajectory so
//! far, current state, reward so far). Plain data read by the rewards and
//! advanced by [`crate::episode::Environment`].

use std::collections::BTreeMap;
use std::time::Instant;

use worldloom_core::{NodeId, Trajectory};
use worldloom_store::TrajectoryKey;

use crate::tasks::Task;

/// One episode: its task, its trajectory so far, where it is.
#[derive(Debug, Clone)]
pub struct Episode {
    /// The episode id.
    pub id: String,
    /// The task it started from.
    pub task: Task,
    /// Its seed.
    pub seed: u64,
    /// The trajectory: the task's first state and the turns so far (the
    /// chosen predictions are the states).
    pub trajectory: Trajectory,
    /// The current state.
    pub leaf: NodeId,
    /// Steps that produced a turn.
    pub step_count: usize,
    /// Whether the episode has ended.
    pub done: bool,
    /// Why it ended (`terminal_action`, `turn_limit`,
    /// `unparseable_prediction`, `target_reached`, `closed`, `reset`,
    /// `idle`).
    pub done_reason: Option<String>,
    /// Sum of the step rewards.
    pub total_reward: f64,
    /// The control instructions of the turns, by turn (1-based).
    pub perturbations: BTreeMap<usize, String>,
    /// Its trajectory in the workspace, when recorded.
    pub recorded: Option<TrajectoryKey>,
    /// The current state's node in the recorded trajectory (its ids may
    /// differ from [`Episode::trajectory`]'s when the studio grew the
    /// recorded tree meanwhile).
    pub recorded_leaf: Option<NodeId>,
    /// When it started.
    pub started: Instant,
}
