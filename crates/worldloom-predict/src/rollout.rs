//! Rollouts: turns predicted one after another from a state, each
//! prediction kept as its state's chosen one, so that the next turn's
//! free-running history holds it (errors compound as in a simulated
//! episode).
//!
//! [`rollout`] is the loop; a [`RolloutTree`] says where the next state
//! comes from (an action appended to a branch in the studio, the next state
//! of the main path in `worldloom rollout`) and how a prediction is kept
//! (stored in the workspace, written to the trajectory file). Both predict
//! with [`crate::turn`]. [`keep_chosen`] keeps a prediction in a trajectory
//! held in memory (`worldloom rollout`, `serve-env` episodes, free-running
//! studio runs).

use worldloom_core::{CoreError, NodeId, Prediction, PredictionId, Trajectory};

/// What a rollout grows.
pub trait RolloutTree {
    /// Why a turn could not be added or predicted.
    type Error;

    /// The state of the rollout's turn `index` (0-based), reached from
    /// `from` (the start, then the state the previous turn predicted).
    ///
    /// # Errors
    /// The tree's own (an action that cannot be appended, a path that ends).
    fn next_state(&mut self, index: usize, from: NodeId) -> Result<NodeId, Self::Error>;

    /// Predicts `node` (through [`crate::turn`]) and keeps the prediction
    /// as its chosen one. `Ok(false)` ends the rollout after this turn
    /// (cancelled, or a failure already reported; whether a partial
    /// prediction is kept is the tree's to say).
    ///
    /// # Errors
    /// The tree's own; the rollout ends.
    fn predict_and_keep(&mut self, index: usize, node: NodeId) -> Result<bool, Self::Error>;
}

/// How a rollout ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RolloutEnd {
    /// Turns predicted (the last one perhaps cancelled or failed).
    pub done: usize,
    /// The state the rollout ended at (the last turn's).
    pub at: NodeId,
    /// Whether a turn ended it before all were done.
    pub stopped: bool,
}

/// Predicts up to `turns` turns of `tree` from `start`, each from the
/// state the previous one reached, each prediction kept as its state's
/// chosen one; stops after the first turn that says so.
///
/// # Errors
/// The first error of the tree (nothing further is done).
pub fn rollout<T: RolloutTree + ?Sized>(
    tree: &mut T,
    start: NodeId,
    turns: usize,
) -> Result<RolloutEnd, T::Error> {
    let mut at = start;
    for index in 0..turns {
        let node = tree.next_state(index, at)?;
        at = node;
        if !tree.predict_and_keep(index, node)? {
            return Ok(RolloutEnd {
                done: index + 1,
                at,
                stopped: true,
            });
        }
    }
    Ok(RolloutEnd {
        done: turns,
        at,
        stopped: false,
    })
}

/// Adds `prediction` to `node` of a trajectory held in memory and makes it
/// the node's chosen one; returns its id (the node's next).
///
/// # Errors
/// [`CoreError::NoSuchNode`] for an unknown node.
pub fn keep_chosen(
    trajectory: &mut Trajectory,
    node: NodeId,
    prediction: Prediction,
) -> Result<PredictionId, CoreError> {
    let id = trajectory.add_prediction(node, prediction)?;
    trajectory.choose_prediction(node, Some(id))?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use worldloom_core::{Action, ContextMode, Domain, Observation, Representation};
    use worldloom_engine::baseline::CopyEngine;
    use worldloom_engine::{CancelToken, GenerationParams};

    use super::*;
    use crate::turn::{Stop, predict_turn};

    /// Appends `actions` from the start and predicts each free-running
    /// with the copy baseline.
    struct Appending {
        trajectory: Trajectory,
        actions: Vec<&'static str>,
        copied: Vec<Option<String>>,
    }

    impl RolloutTree for Appending {
        type Error = CoreError;

        fn next_state(&mut self, index: usize, from: NodeId) -> Result<NodeId, CoreError> {
            let action = Action::for_domain(Domain::Terminal, self.actions[index]);
            Ok(self.trajectory.add_step(from, action, None)?.1)
        }

        fn predict_and_keep(&mut self, _: usize, node: NodeId) -> Result<bool, CoreError> {
            let cancel = CancelToken::new();
            let Ok(p) = predict_turn(
                &CopyEngine,
                &self.trajectory,
                node,
                ContextMode::FreeRunning,
                BTreeMap::new(),
                &GenerationParams::default(),
                Stop::on(&cancel),
                |_| {},
            ) else {
                return Ok(false);
            };
            self.copied.push(p.turn.current_observation.clone());
            keep_chosen(&mut self.trajectory, node, p.record)?;
            Ok(true)
        }
    }

    #[test]
    fn each_turn_starts_from_the_kept_prediction() {
        let mut tree = Appending {
            trajectory: Trajectory::new(
                "t",
                Domain::Terminal,
                Some(Observation::new(Representation::Text, "$")),
            ),
            actions: vec!["ls", "pwd", "whoami"],
            copied: Vec::new(),
        };
        let root = tree.trajectory.root();
        let end = rollout(&mut tree, root, 3).expect("rollout");
        assert_eq!((end.done, end.stopped), (3, false));
        // Every turn copied the state before it: the initial one, then the
        // chosen copies.
        assert_eq!(tree.copied, vec![Some("$".to_owned()); 3]);
        let leaf = tree.trajectory.node(end.at).expect("leaf");
        assert!(leaf.chosen_prediction.is_some());
        assert_eq!(
            tree.trajectory.path_to(end.at).expect("path").edges.len(),
            3
        );
    }

    #[test]
    fn a_turn_not_kept_ends_the_rollout() {
        let mut tree = Appending {
            trajectory: Trajectory::new("t", Domain::Terminal, None),
            actions: vec!["ls", "pwd"],
            copied: Vec::new(),
        };
        let root = tree.trajectory.root();
        // Nothing to copy on the first turn: the copy baseline refuses it.
        let end = rollout(&mut tree, root, 2).expect("rollout");
        assert_eq!((end.done, end.stopped), (1, true));
        assert!(tree.copied.is_empty());
    }
}
