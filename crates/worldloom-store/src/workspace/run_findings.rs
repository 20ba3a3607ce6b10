//! What the alignment of each run row found (the error taxonomy behind the
//! fidelity atlas), stored once per row so that a run's atlas is counted
//! from the stored findings without parsing an observation again.
//!
//! Derived data, outside the change log and undo (like metric results): a
//! row's findings live while its run lives, and are replaced when computed
//! again (by a newer producer). The findings themselves are the JSON the
//! producer wrote (`worldloom-obs` `findings::Finding` list); the store
//! does not read inside it.

use rusqlite::params;

use super::Workspace;
use super::runs::RunId;
use crate::error::Result;

/// The stored findings of one run row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowFindings {
    /// The run row ([`super::StoredRunRow::id`]).
    pub row_id: i64,
    /// What computed them (`worldloom-obs <version>`): findings of another
    /// producer are computed again.
    pub producer: String,
    /// The type of the action into the row's state (`click`, `type`,
    /// `scroll`, `navigate`, `key`, `tool_call`, `other`).
    pub action_kind: String,
    /// Whether the row was `scored`, `missing` (no prediction) or
    /// `skipped` (the real observation could not be scored).
    pub status: String,
    /// The findings as a JSON array (empty unless scored).
    pub findings_json: String,
}

impl Workspace {
    /// Stores the findings of run rows, replacing what was stored for them,
    /// in one transaction (derived data: not a change, not undone).
    ///
    /// # Errors
    /// [`crate::StoreError::Sqlite`].
    pub fn store_row_findings(&mut self, rows: &[RowFindings]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        self.in_transaction("storing run row findings", |tx, err| {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO run_row_findings (row_id, producer, action_kind, status, findings_json)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(err)?;
            for r in rows {
                stmt.execute(params![r.row_id, r.producer, r.action_kind, r.status, r.findings_json])
                    .map_err(err)?;
            }
            Ok(())
        })
    }

    /// The stored findings of the rows of `run` (any producer), in row
    /// order; rows without findings are left out. One indexed read: the
    /// run's rows by `run_id`, each row's findings by its key.
    ///
    /// # Errors
    /// [`crate::StoreError::NotFound`] for an unknown or undone run;
    /// [`crate::StoreError::Sqlite`].
    pub fn run_row_findings(&self, run: RunId) -> Result<Vec<RowFindings>> {
        self.run(run)?;
        self.query_all(
            "SELECT f.row_id, f.producer, f.action_kind, f.status, f.findings_json
             FROM run_rows w JOIN run_row_findings f ON f.row_id = w.id
             WHERE w.run_id = ?1 ORDER BY w.row_index",
            params![run.0],
            "reading run row findings",
            |r| {
                Ok(RowFindings {
                    row_id: r.get(0)?,
                    producer: r.get(1)?,
                    action_kind: r.get(2)?,
                    status: r.get(3)?,
                    findings_json: r.get(4)?,
                })
            },
        )
    }
}
