//! What a state shows besides its real observation: predictions (numbered
//! per node, never reused), the chosen prediction, and authored
//! observations.

use std::path::Path;

use rusqlite::{OptionalExtension, Transaction, params};
use worldloom_core::{AuthoredObservation, NodeId, Prediction, PredictionId};

use super::{ChangeId, TrajectoryKey, Workspace, check_live_node, tx_err};
use crate::error::{Result, StoreError};

impl Workspace {
    /// Adds a prediction of `node` as one change and returns its id (one more
    /// than the highest id the node ever had, so ids are never reused).
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown or undone node;
    /// [`StoreError::Sqlite`].
    pub fn add_prediction(
        &mut self,
        key: TrajectoryKey,
        node: NodeId,
        prediction: &Prediction,
    ) -> Result<PredictionId> {
        let summary = format!("prediction of node {} by `{}`", node.0, prediction.engine);
        let path = self.path.clone();
        self.with_change("add_prediction", Some(key), &summary, |tx, change| {
            add_next_prediction(tx, &path, key, node, prediction, change)
        })
    }

    /// Adds a prediction of `node` and makes it the chosen one, as one change
    /// (a studio step: one undo removes both). Returns its id.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown or undone node;
    /// [`StoreError::Sqlite`].
    pub fn add_chosen_prediction(
        &mut self,
        key: TrajectoryKey,
        node: NodeId,
        prediction: &Prediction,
    ) -> Result<PredictionId> {
        let summary = format!("step node {} with `{}`", node.0, prediction.engine);
        let path = self.path.clone();
        self.with_change("add_prediction", Some(key), &summary, |tx, change| {
            let id = add_next_prediction(tx, &path, key, node, prediction, change)?;
            insert_choice(
                tx,
                &path,
                key,
                node,
                Some(id),
                change,
                "choosing a prediction",
            )?;
            Ok(id)
        })
    }

    /// Chooses which prediction stands for `node` (shown in the predicted
    /// pane, used in free-running context); `None` clears the choice. One
    /// change.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown node or prediction.
    pub fn choose_prediction(
        &mut self,
        key: TrajectoryKey,
        node: NodeId,
        prediction: Option<PredictionId>,
    ) -> Result<ChangeId> {
        let summary = match prediction {
            Some(p) => format!("choose prediction {} of node {}", p.0, node.0),
            None => format!("clear the chosen prediction of node {}", node.0),
        };
        let path = self.path.clone();
        self.with_change("choose_prediction", Some(key), &summary, |tx, change| {
            check_live_node(tx, &path, key, node)?;
            if let Some(p) = prediction {
                let found: Option<i64> = tx
                    .query_row(
                        "SELECT 1 FROM predictions p JOIN changes c ON c.id = p.change_id
                         WHERE p.trajectory_id = ?1 AND p.node_id = ?2 AND p.prediction_id = ?3 AND c.state = 'applied'",
                        params![key.0, node.0, p.0],
                        |r| r.get(0),
                    )
                    .optional()
                    .map_err(tx_err(&path, "checking a prediction"))?;
                if found.is_none() {
                    return Err(StoreError::NotFound(format!(
                        "node {} of trajectory {} has no prediction {}",
                        node.0, key.0, p.0
                    )));
                }
            }
            insert_choice(tx, &path, key, node, prediction, change, "choosing a prediction")?;
            Ok(change)
        })
    }

    /// Adds an authored observation of `node` as one change. It becomes the
    /// current one: the node's chosen prediction, if any, is cleared in the
    /// same change, so the state shows what was written until a prediction
    /// is chosen again (a later step chooses its own).
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown node.
    pub fn set_authored(
        &mut self,
        key: TrajectoryKey,
        node: NodeId,
        authored: &AuthoredObservation,
    ) -> Result<ChangeId> {
        let summary = format!("author the observation of node {}", node.0);
        let path = self.path.clone();
        self.with_change("set_authored", Some(key), &summary, |tx, change| {
            check_live_node(tx, &path, key, node)?;
            insert_authored(tx, key.0, node, authored, change)
                .map_err(tx_err(&path, "authoring an observation"))?;
            // The state now shows what was written: a chosen prediction is
            // cleared in the same change (undo brings the choice back).
            insert_choice(
                tx,
                &path,
                key,
                node,
                None,
                change,
                "authoring an observation",
            )?;
            Ok(change)
        })
    }
}

/// Inserts `prediction` for a live `node` under the next free id (one more
/// than the highest the node ever had, so ids are never reused).
pub(super) fn add_next_prediction(
    tx: &Transaction<'_>,
    path: &Path,
    key: TrajectoryKey,
    node: NodeId,
    prediction: &Prediction,
    change: ChangeId,
) -> Result<PredictionId> {
    check_live_node(tx, path, key, node)?;
    let next: u32 = tx
        .query_row(
            "SELECT coalesce(max(prediction_id) + 1, 0) FROM predictions WHERE trajectory_id = ?1 AND node_id = ?2",
            params![key.0, node.0],
            |r| r.get(0),
        )
        .map_err(tx_err(path, "numbering a prediction"))?;
    let mut record = prediction.clone();
    record.id = PredictionId(next);
    insert_prediction(tx, key.0, node, &record, change)
        .map_err(tx_err(path, "adding a prediction"))?;
    Ok(PredictionId(next))
}

/// Records `prediction` (or, with `None`, no prediction) as the chosen one
/// of `node`, as part of `change`; SQLite errors name `context`.
pub(super) fn insert_choice(
    tx: &Transaction<'_>,
    path: &Path,
    key: TrajectoryKey,
    node: NodeId,
    prediction: Option<PredictionId>,
    change: ChangeId,
    context: &'static str,
) -> Result<()> {
    tx.execute(
        "INSERT INTO chosen_predictions (trajectory_id, node_id, prediction_id, change_id) VALUES (?1, ?2, ?3, ?4)",
        params![key.0, node.0, prediction.map(|p| p.0), change.0],
    )
    .map_err(tx_err(path, context))?;
    Ok(())
}

/// Inserts prediction `p` of `node` (under its own id) as part of `change`.
pub(super) fn insert_prediction(
    tx: &Transaction<'_>,
    key: i64,
    node: NodeId,
    p: &Prediction,
    change: ChangeId,
) -> rusqlite::Result<()> {
    let context = serde_json::to_value(p.context)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    tx.execute(
        "INSERT INTO predictions (trajectory_id, node_id, prediction_id, engine, seed, context, status, prediction_json, change_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            key,
            node.0,
            p.id.0,
            p.engine,
            p.seed.map(|s| s.to_string()),
            context,
            p.status.as_str(),
            Workspace::json(p),
            change.0
        ],
    )?;
    Ok(())
}

/// Inserts an authored observation of `node` as part of `change`.
pub(super) fn insert_authored(
    tx: &Transaction<'_>,
    key: i64,
    node: NodeId,
    authored: &AuthoredObservation,
    change: ChangeId,
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO observations (trajectory_id, node_id, kind, representation, observation_json, author, based_on, note, change_id)
         VALUES (?1, ?2, 'authored', ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            key,
            node.0,
            authored.observation.representation.as_str(),
            Workspace::json(&authored.observation),
            authored.author,
            authored.based_on.map(|p| p.0),
            authored.note,
            change.0
        ],
    )?;
    Ok(())
}
