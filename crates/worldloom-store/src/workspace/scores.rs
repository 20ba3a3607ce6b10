//! Metric results: derived data (fidelity metrics, judge scores), each
//! stored in its own transaction, outside the change log and undo.

use rusqlite::params;
use serde::{Deserialize, Serialize};
use worldloom_core::NodeId;

use super::{TrajectoryKey, Workspace};
use crate::error::{Result, StoreError};

/// A stored metric result (derived data: not part of undo).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricResult {
    /// The row id.
    pub id: i64,
    /// The trajectory.
    pub trajectory: TrajectoryKey,
    /// The node whose observation was scored.
    pub node: NodeId,
    /// What was scored against the real observation: `prediction:<id>` or
    /// `authored:<observation row id>`.
    pub subject: String,
    /// What produced it (`worldloom-obs 0.1.0`, `judge:<model>`).
    pub producer: String,
    /// The headline score in `[0, 1]`, when the producer gives one.
    pub score: Option<f64>,
    /// The full result as the producer wrote it.
    pub result: serde_json::Value,
    /// When it was stored (UTC).
    pub created_at: String,
}

impl Workspace {
    /// Stores a metric result for `node` (derived data: its own transaction,
    /// not a change, not undone). Returns the row id.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] for a score outside `[0, 1]`;
    /// [`StoreError::Sqlite`].
    pub fn record_metric_result(
        &mut self,
        key: TrajectoryKey,
        node: NodeId,
        subject: &str,
        producer: &str,
        score: Option<f64>,
        result: &serde_json::Value,
    ) -> Result<i64> {
        if let Some(s) = score
            && !(0.0..=1.0).contains(&s)
        {
            return Err(StoreError::Invalid(format!(
                "metric score {s} is outside [0, 1]"
            )));
        }
        self.conn
            .execute(
                "INSERT INTO metric_results (trajectory_id, node_id, subject, producer, score, result_json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![key.0, node.0, subject, producer, score, Self::json(result)],
            )
            .map_err(self.sql_err("storing a metric result"))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// The newest metric result per subject and producer for `node`.
    ///
    /// # Errors
    /// [`StoreError::Record`], [`StoreError::Sqlite`].
    pub fn metric_results(&self, key: TrajectoryKey, node: NodeId) -> Result<Vec<MetricResult>> {
        let rows = self.query_all(
            "SELECT id, subject, producer, score, result_json, created_at FROM metric_results
             WHERE id IN (SELECT max(id) FROM metric_results WHERE trajectory_id = ?1 AND node_id = ?2
                          GROUP BY subject, producer) ORDER BY id",
            params![key.0, node.0],
            "reading metric results",
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<f64>>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                ))
            },
        )?;
        rows.into_iter()
            .map(|(id, subject, producer, score, json, created_at)| {
                Ok(MetricResult {
                    id,
                    trajectory: key,
                    node,
                    subject,
                    producer,
                    score,
                    result: self.parse_json("metric_results", &id.to_string(), &json)?,
                    created_at,
                })
            })
            .collect()
    }
}
