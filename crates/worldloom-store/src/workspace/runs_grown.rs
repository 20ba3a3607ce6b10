//! Runs made in the studio: created empty, grown row by row as their
//! predictions finish, judged in place.
//!
//! A run started in the studio is one change of the undo log from its
//! start: [`Workspace::create_run`] records the run without rows, and each
//! finished prediction is added by [`Workspace::append_run_rows`] as part of
//! that same change (its prediction carries the run's change id). One undo
//! therefore removes the whole run, rows and predictions, as for an
//! imported run, and a run resumed later keeps growing the same change.
//! Appending adds predictions that are not chosen, so what a revision
//! ([`Workspace::revision`]) stands for is unchanged for every state and
//! prediction already there: a cache keyed by it stays right.
//!
//! [`Workspace::set_run_row_judge`] writes a judge's verdict on a live row,
//! and the judge's fields on the row's prediction (where the turn view reads
//! them), in place: like a metric result, derived data outside undo.

use rusqlite::{OptionalExtension, Transaction, params};
use serde_json::Value;
use worldloom_core::formats::run::{JudgeVerdict, RunRow};
use worldloom_core::judge::DIMENSIONS as JUDGE_DIMENSIONS;
use worldloom_core::{PredictionId, Trajectory};

use super::history::ChangeId;
use super::predictions::add_next_prediction;
use super::runs::{NewRun, RunId, insert_row, mode_str};
use super::{TrajectoryKey, Workspace, tx_err};
use crate::error::{Result, StoreError};

/// The change of a live run, or [`StoreError::NotFound`].
fn live_run_change(tx: &Transaction<'_>, run: RunId) -> rusqlite::Result<Option<i64>> {
    tx.query_row(
        "SELECT r.change_id FROM runs r JOIN changes c ON c.id = r.change_id
         WHERE r.id = ?1 AND c.state = 'applied'",
        params![run.0],
        |r| r.get(0),
    )
    .optional()
}

impl Workspace {
    /// Records a run without rows as one change (kind `import_run`: one
    /// undo removes it with every row appended later).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn create_run(&mut self, run: &NewRun) -> Result<RunId> {
        let summary = format!("start run `{}` ({})", run.name, run.engine);
        let path = self.path.clone();
        self.with_change("import_run", None, &summary, |tx, change| {
            tx.execute(
                "INSERT INTO runs (change_id, name, engine, source_path, source_sha256, mode) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![change.0, run.name, run.engine, run.source_path, run.source_sha256, mode_str(run.mode)],
            )
            .map_err(tx_err(&path, "starting a run"))?;
            Ok(RunId(tx.last_insert_rowid()))
        })
    }

    /// Appends `rows` of trajectory `key` (whose stored tree is `t`, as
    /// [`Workspace::load_trajectory`] read it; each row's `node` is a state
    /// of it) to the live run `run`, in one transaction, as part of the
    /// run's own change: each row's prediction becomes a new (not chosen)
    /// prediction of its state, and the row is indexed for
    /// [`Workspace::search_run_rows`]. Rows are numbered after the run's
    /// last. Returns each new row's id and its prediction's.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] when the run is unknown or undone, or a
    /// row's state is not live; [`StoreError::Sqlite`].
    pub fn append_run_rows(
        &mut self,
        run: RunId,
        key: TrajectoryKey,
        t: &Trajectory,
        rows: &[RunRow],
    ) -> Result<Vec<(i64, PredictionId)>> {
        let path = self.path.clone();
        self.in_transaction("appending run rows", |tx, err| {
            let change = live_run_change(tx, run).map_err(err)?.ok_or_else(|| {
                StoreError::NotFound(format!("no run {} in this workspace (undone?)", run.0))
            })?;
            let first: u32 = tx
                .query_row(
                    "SELECT coalesce(max(row_index) + 1, 0) FROM run_rows WHERE run_id = ?1",
                    params![run.0],
                    |r| r.get(0),
                )
                .map_err(err)?;
            let mut ids = Vec::with_capacity(rows.len());
            for (index, row) in (first..).zip(rows) {
                let prediction = add_next_prediction(
                    tx,
                    &path,
                    key,
                    row.node,
                    &row.prediction,
                    ChangeId(change),
                )?;
                insert_row(tx, run.0, index, key.0, row.node.0, prediction, t, row).map_err(err)?;
                ids.push((tx.last_insert_rowid(), prediction));
            }
            Ok(ids)
        })
    }

    /// Writes the judge's `verdict` on the live run row `row` (replacing an
    /// earlier one) and the judge's fields (`format` … `quality`,
    /// `total_score`, `failed`, `strengths`, `weaknesses`) on its
    /// prediction's `extra`, as an import of a judged file leaves them.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for a row that is not live;
    /// [`StoreError::Sqlite`].
    pub fn set_run_row_judge(&mut self, row: i64, verdict: &JudgeVerdict) -> Result<()> {
        self.in_transaction("storing a judge verdict", |tx, err| {
            let found: Option<(i64, u32, u32)> = tx
                .query_row(
                    "SELECT w.trajectory_id, w.node_id, w.prediction_id FROM run_rows w
                     JOIN runs r ON r.id = w.run_id JOIN changes c ON c.id = r.change_id
                     WHERE w.id = ?1 AND c.state = 'applied'",
                    params![row],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()
                .map_err(err)?;
            let Some((key, node, prediction)) = found else {
                return Err(StoreError::NotFound(format!(
                    "no run row {row} in this workspace"
                )));
            };
            let s = verdict.scores;
            tx.execute(
                "UPDATE run_rows SET judged = 1, judge_failed = ?2, format = ?3, factuality = ?4,
                    consistency = ?5, realism = ?6, quality = ?7, total_score = ?8, strengths = ?9,
                    weaknesses = ?10, judge_error = ?11 WHERE id = ?1",
                params![
                    row,
                    verdict.failed,
                    s[0],
                    s[1],
                    s[2],
                    s[3],
                    s[4],
                    verdict.total_score,
                    verdict.strengths,
                    verdict.weaknesses,
                    verdict.error
                ],
            )
            .map_err(err)?;
            let text: String = tx
                .query_row(
                    "SELECT prediction_json FROM predictions WHERE trajectory_id = ?1 AND node_id = ?2 AND prediction_id = ?3",
                    params![key, node, prediction],
                    |r| r.get(0),
                )
                .map_err(err)?;
            let mut record: worldloom_core::Prediction = serde_json::from_str(&text).map_err(|e| {
                StoreError::Invalid(format!(
                    "prediction {prediction} of state {node} (trajectory {key}): stored JSON unreadable: {e}"
                ))
            })?;
            let number = |v: Option<f64>| v.map_or(Value::Null, Value::from);
            for (dim, score) in JUDGE_DIMENSIONS.iter().zip(s) {
                record.extra.insert((*dim).to_owned(), number(score));
            }
            record
                .extra
                .insert("total_score".into(), number(verdict.total_score));
            record.extra.insert(
                "failed".into(),
                Value::from(if verdict.failed { 1.0 } else { 0.0 }),
            );
            for (field, value) in [
                ("strengths", &verdict.strengths),
                ("weaknesses", &verdict.weaknesses),
            ] {
                match value {
                    Some(v) => record.extra.insert(field.into(), Value::from(v.clone())),
                    None => record.extra.remove(field),
                };
            }
            record.extra.retain(|_, v| !v.is_null());
            tx.execute(
                "UPDATE predictions SET prediction_json = ?4 WHERE trajectory_id = ?1 AND node_id = ?2 AND prediction_id = ?3",
                params![key, node, prediction, Workspace::json(&record)],
            )
            .map_err(err)?;
            Ok(())
        })
    }
}
