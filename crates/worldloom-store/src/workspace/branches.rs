//! Growing the tree: a new branch from an edited action, a new turn from a
//! state, and the control instruction (perturbation) of a turn.

use std::collections::BTreeMap;

use rusqlite::params;
use serde_json::Map;
use worldloom_core::{Action, Edge, EdgeId, Node, NodeId, Observation, Prediction, PredictionId};

use super::history::insert_change;
use super::predictions::{insert_choice, insert_prediction};
use super::trajectory_rows::{insert_edge, insert_node};
use super::{
    ChangeId, StoredTrajectory, TrajectoryKey, Workspace, check_live_edge, check_live_node,
    no_edge, tx_err,
};
use crate::error::{Result, StoreError};

/// A turn for [`Workspace::append_turns`]: an action from a live state of a
/// stored trajectory, with its control instruction and the prediction
/// chosen for the state it leads to (both optional).
#[derive(Debug, Clone, PartialEq)]
pub struct AppendTurn {
    /// The trajectory.
    pub key: TrajectoryKey,
    /// The state the action is taken from.
    pub from: NodeId,
    /// The action.
    pub action: Action,
    /// The observation the action really led to, when the turn was
    /// observed (an agent loop recording its steps); `None` for a turn whose
    /// new state is only predicted.
    pub real: Option<Observation>,
    /// The turn's control instruction (perturbation), if any.
    pub perturbation: Option<String>,
    /// The prediction of the new state, stored as its chosen prediction
    /// (its `id` is replaced by 0, the new node's first).
    pub prediction: Option<Prediction>,
}

impl Workspace {
    /// Edits the action of turn `edge`: adds a sibling edge from the same
    /// state with `action`, leading to a new node with no real observation
    /// (see [`worldloom_core::Trajectory::add_branch`]). One change; the
    /// original stays.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown or undone edge.
    pub fn add_branch(
        &mut self,
        key: TrajectoryKey,
        edge: EdgeId,
        action: Action,
    ) -> Result<(EdgeId, NodeId)> {
        let summary = format!("branch at edge {}: {}", edge.0, action.summary());
        self.grow_tree(key, "add_branch", &summary, "adding a branch", |stored| {
            if !stored.live_edges.contains(&edge) {
                return Err(no_edge(key, edge));
            }
            stored
                .trajectory
                .add_branch(edge, action)
                .map_err(|e| StoreError::NotFound(e.to_string()))
        })
    }

    /// Adds an action from state `from` (a leaf continues its branch; an
    /// inner state gets a new branch), leading to a new node with no
    /// observation (see [`worldloom_core::Trajectory::add_step`]). One
    /// change.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown or undone node.
    pub fn add_turn(
        &mut self,
        key: TrajectoryKey,
        from: NodeId,
        action: Action,
    ) -> Result<(EdgeId, NodeId)> {
        let summary = format!("new turn from node {}: {}", from.0, action.summary());
        self.grow_tree(key, "add_turn", &summary, "adding a turn", |stored| {
            if !stored.live_nodes.contains(&from) {
                return Err(StoreError::NotFound(format!(
                    "trajectory {} has no node {}",
                    key.0, from.0
                )));
            }
            stored
                .trajectory
                .add_step(from, action, None)
                .map_err(|e| StoreError::NotFound(e.to_string()))
        })
    }

    /// Appends `turns` in one SQLite transaction (one commit for all, so a
    /// writer with many turns waiting pays one disk sync), each turn its own
    /// change in the undo log (kind `add_turn`: the edge, the node, the
    /// turn's perturbation and the chosen prediction; one undo removes one
    /// turn). Unlike [`Workspace::add_turn`] nothing is read back: the new
    /// ids are the next free ones of each trajectory (undone ids are never
    /// reused), so the cost of a turn does not grow with the trajectory.
    /// Returns each turn's new edge and node, in order. A turn may start
    /// from a node an earlier turn of the same call made.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] when a `from` state is unknown or undone;
    /// [`StoreError::Sqlite`]. Either way nothing is written.
    pub fn append_turns(&mut self, turns: &[AppendTurn]) -> Result<Vec<(EdgeId, NodeId)>> {
        let path = self.path.clone();
        self.in_transaction("appending turns", |tx, err| {
            let mut out = Vec::with_capacity(turns.len());
            for turn in turns {
                let key = turn.key;
                let summary = format!(
                    "new turn from node {}: {}",
                    turn.from.0,
                    turn.action.summary()
                );
                let change = insert_change(tx, "add_turn", Some(key), &summary).map_err(err)?;
                check_live_node(tx, &path, key, turn.from)?;
                let next = |table: &str, column: &str| -> rusqlite::Result<u32> {
                    tx.query_row(
                        &format!(
                            "SELECT coalesce(max({column}) + 1, 0) FROM {table} WHERE trajectory_id = ?1"
                        ),
                        params![key.0],
                        |r| r.get(0),
                    )
                };
                let edge_id = EdgeId(next("edges", "edge_id").map_err(err)?);
                let node_id = NodeId(next("nodes", "node_id").map_err(err)?);
                let node = Node {
                    id: node_id,
                    parent_edge: Some(edge_id),
                    real: turn.real.clone(),
                    predictions: Vec::new(),
                    authored: Vec::new(),
                    chosen_prediction: None,
                    screenshot: None,
                    extra: Map::new(),
                };
                let edge = Edge {
                    id: edge_id,
                    from: turn.from,
                    to: node_id,
                    action: turn.action.clone(),
                    prompt: None,
                    edited_from: None,
                    note: None,
                    awb_row: None,
                    extra: Map::new(),
                };
                insert_node(tx, key.0, &node, change).map_err(err)?;
                insert_edge(tx, key.0, &edge, change).map_err(err)?;
                if let Some(text) = turn
                    .perturbation
                    .as_deref()
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                {
                    tx.execute(
                        "INSERT INTO perturbations (trajectory_id, edge_id, instruction, change_id) VALUES (?1, ?2, ?3, ?4)",
                        params![key.0, edge_id.0, text, change.0],
                    )
                    .map_err(err)?;
                }
                if let Some(p) = &turn.prediction {
                    let mut record = p.clone();
                    record.id = PredictionId(0);
                    insert_prediction(tx, key.0, node_id, &record, change).map_err(err)?;
                    insert_choice(
                        tx,
                        &path,
                        key,
                        node_id,
                        Some(record.id),
                        change,
                        "choosing a prediction",
                    )?;
                }
                out.push((edge_id, node_id));
            }
            Ok(out)
        })
    }

    /// Adds the one edge and the one node `grow` makes on the live tree of
    /// `key`, as one change of `kind`; SQLite errors name `context`.
    fn grow_tree(
        &mut self,
        key: TrajectoryKey,
        kind: &str,
        summary: &str,
        context: &'static str,
        grow: impl FnOnce(&mut StoredTrajectory) -> Result<(EdgeId, NodeId)>,
    ) -> Result<(EdgeId, NodeId)> {
        let mut stored = self.load_trajectory(key)?;
        let (new_edge, new_node) = grow(&mut stored)?;
        let edge_record = stored.trajectory.edges[new_edge.0 as usize].clone();
        let node_record = stored.trajectory.nodes[new_node.0 as usize].clone();
        let path = self.path.clone();
        self.with_change(kind, Some(key), summary, |tx, change| {
            insert_node(tx, key.0, &node_record, change).map_err(tx_err(&path, context))?;
            insert_edge(tx, key.0, &edge_record, change).map_err(tx_err(&path, context))?;
            Ok((new_edge, new_node))
        })
    }

    /// Sets (or, with `None` or a blank text, clears) the control instruction
    /// of turn `edge`: a perturbation added to the world model's prompt for
    /// that turn (`worldloom_core::prompt`). One change.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown or undone edge.
    pub fn set_perturbation(
        &mut self,
        key: TrajectoryKey,
        edge: EdgeId,
        instruction: Option<&str>,
    ) -> Result<ChangeId> {
        let instruction = instruction.map(str::trim).filter(|i| !i.is_empty());
        let summary = match instruction {
            Some(i) => {
                let short: String = i.chars().take(60).collect();
                format!("perturb turn at edge {}: {short}", edge.0)
            }
            None => format!("clear the perturbation of edge {}", edge.0),
        };
        let path = self.path.clone();
        self.with_change("set_perturbation", Some(key), &summary, |tx, change| {
            check_live_edge(tx, &path, key, edge)?;
            tx.execute(
                "INSERT INTO perturbations (trajectory_id, edge_id, instruction, change_id) VALUES (?1, ?2, ?3, ?4)",
                params![key.0, edge.0, instruction, change.0],
            )
            .map_err(tx_err(&path, "setting a perturbation"))?;
            Ok(change)
        })
    }

    /// The current control instructions of a trajectory's turns, by edge.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn perturbations(&self, key: TrajectoryKey) -> Result<BTreeMap<EdgeId, String>> {
        let rows = self.query_all(
            "SELECT p.edge_id, p.instruction FROM perturbations p JOIN changes c ON c.id = p.change_id
             WHERE p.trajectory_id = ?1 AND c.state = 'applied' ORDER BY p.id",
            params![key.0],
            "reading perturbations",
            |r| Ok((r.get::<_, u32>(0)?, r.get::<_, Option<String>>(1)?)),
        )?;
        // The newest row per edge holds its current instruction (or none).
        let current: BTreeMap<EdgeId, Option<String>> = rows
            .into_iter()
            .map(|(edge, instruction)| (EdgeId(edge), instruction))
            .collect();
        Ok(current
            .into_iter()
            .filter_map(|(e, i)| i.map(|i| (e, i)))
            .collect())
    }
}
