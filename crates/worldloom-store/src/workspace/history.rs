//! The change log: every change is one transaction recorded in `changes`
//! ([`Workspace::with_change`]); undo and redo move a change between
//! `applied` and `undone`.

use rusqlite::{OptionalExtension, Transaction, params};
use serde::{Deserialize, Serialize};

use super::{TrajectoryKey, Workspace};
use crate::error::Result;

/// A change's id in the change log (`changes.id`), increasing with time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ChangeId(pub i64);

/// Where a change stands in the undo history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeState {
    /// In effect: its records are live.
    Applied,
    /// Undone; the next redo re-applies the oldest undone change.
    Undone,
    /// Undone and then passed by a new change: it can no longer be redone.
    /// Its records stay in the file.
    Abandoned,
}

impl ChangeState {
    fn parse(s: &str) -> Self {
        match s {
            "applied" => ChangeState::Applied,
            "undone" => ChangeState::Undone,
            _ => ChangeState::Abandoned,
        }
    }
}

/// One entry of the change log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeRecord {
    /// The change's id.
    pub id: ChangeId,
    /// What kind of change (`import`, `add_prediction`, `choose_prediction`,
    /// `set_authored`, `add_branch`, `add_turn`, `set_perturbation`,
    /// `add_note`, `edit_note`, `set_tag`).
    pub kind: String,
    /// The trajectory it changed, if one.
    pub trajectory: Option<TrajectoryKey>,
    /// A one-line human description.
    pub summary: String,
    /// Its undo state.
    pub state: ChangeState,
    /// When it was made (UTC, `YYYY-MM-DDTHH:MM:SS.sssZ`).
    pub created_at: String,
}

/// Records a new `changes` row of `kind` inside `tx` (abandoning the redo
/// history, as every new change does) and returns its id.
pub(super) fn insert_change(
    tx: &Transaction<'_>,
    kind: &str,
    trajectory: Option<TrajectoryKey>,
    summary: &str,
) -> rusqlite::Result<ChangeId> {
    tx.execute(
        "UPDATE changes SET state = 'abandoned' WHERE state = 'undone'",
        [],
    )?;
    tx.execute(
        "INSERT INTO changes (kind, trajectory_id, summary) VALUES (?1, ?2, ?3)",
        params![kind, trajectory.map(|t| t.0), summary],
    )?;
    Ok(ChangeId(tx.last_insert_rowid()))
}

impl Workspace {
    /// Runs `f` as one change: one immediate SQLite transaction that first
    /// records a `changes` row of `kind` (returning its id to `f`), and
    /// abandons the redo history. Everything `f` writes commits together or
    /// not at all. Rows `f` adds must carry the given change id to take part
    /// in undo.
    ///
    /// This is the building block of every change method; it is public for
    /// tools that add their own records.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`], or whatever `f` returns (the transaction is
    /// then rolled back).
    pub fn with_change<T>(
        &mut self,
        kind: &str,
        trajectory: Option<TrajectoryKey>,
        summary: &str,
        f: impl FnOnce(&Transaction<'_>, ChangeId) -> Result<T>,
    ) -> Result<T> {
        self.in_transaction(&format!("writing change `{kind}`"), |tx, err| {
            let change = insert_change(tx, kind, trajectory, summary).map_err(err)?;
            f(tx, change)
        })
    }

    /// Undoes the newest applied change. Returns it, or `None` when there is
    /// nothing to undo.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn undo(&mut self) -> Result<Option<ChangeRecord>> {
        self.move_change(
            "SELECT id FROM changes WHERE state = 'applied' ORDER BY id DESC LIMIT 1",
            "undone",
        )
    }

    /// Re-applies the oldest undone change. Returns it, or `None` when there
    /// is nothing to redo.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn redo(&mut self) -> Result<Option<ChangeRecord>> {
        self.move_change(
            "SELECT id FROM changes WHERE state = 'undone' ORDER BY id ASC LIMIT 1",
            "applied",
        )
    }

    /// Moves the change `pick` selects to state `to`, in one transaction.
    fn move_change(&mut self, pick: &str, to: &str) -> Result<Option<ChangeRecord>> {
        self.in_transaction(&format!("moving a change to `{to}`"), |tx, err| {
            let id: Option<i64> = tx
                .query_row(pick, [], |r| r.get(0))
                .optional()
                .map_err(err)?;
            let Some(id) = id else { return Ok(None) };
            tx.execute(
                "UPDATE changes SET state = ?1 WHERE id = ?2",
                params![to, id],
            )
            .map_err(err)?;
            read_change(tx, id).map(Some).map_err(err)
        })
    }

    /// The newest `limit` changes of the log, newest first.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn history(&self, limit: u32) -> Result<Vec<ChangeRecord>> {
        self.query_all(
            "SELECT id, kind, trajectory_id, summary, state, created_at FROM changes ORDER BY id DESC LIMIT ?1",
            params![limit],
            "reading the change log",
            change_from_row,
        )
    }

    /// Where the change log stands: the newest change's id (0 for none) and
    /// how many changes are undone. Undo and redo only ever move the newest
    /// applied or the oldest undone change and a new change abandons the
    /// undone ones, so two equal revisions mean the same live records: a
    /// cache of derived data (parsed trees) keyed by it is never stale.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn revision(&self) -> Result<(i64, i64)> {
        self.conn
            .query_row(
                // Both through indexes (the row id, `changes_state`): the
                // log grows with every recorded turn, so no scan of it.
                "SELECT coalesce((SELECT max(id) FROM changes), 0),
                        (SELECT count(*) FROM changes WHERE state = 'undone')",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(self.sql_err("reading the change log"))
    }

    /// Whether an undo / a redo is possible now.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn can_undo_redo(&self) -> Result<(bool, bool)> {
        self.conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM changes WHERE state = 'applied'),
                        EXISTS (SELECT 1 FROM changes WHERE state = 'undone')",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(self.sql_err("reading the change log"))
    }
}

fn change_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ChangeRecord> {
    Ok(ChangeRecord {
        id: ChangeId(r.get(0)?),
        kind: r.get(1)?,
        trajectory: r.get::<_, Option<i64>>(2)?.map(TrajectoryKey),
        summary: r.get(3)?,
        state: ChangeState::parse(&r.get::<_, String>(4)?),
        created_at: r.get(5)?,
    })
}

fn read_change(tx: &Transaction<'_>, id: i64) -> rusqlite::Result<ChangeRecord> {
    tx.query_row(
        "SELECT id, kind, trajectory_id, summary, state, created_at FROM changes WHERE id = ?1",
        params![id],
        change_from_row,
    )
}
