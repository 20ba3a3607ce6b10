//! The Worldloom workspace store: one SQLite file holding trajectories, their
//! branch trees, observations (real, predicted, authored), predictions with
//! their provenance, metric results, notes and tags, and runs (predictions
//! over a dataset with judge scores and metrics, searchable by full text).
//!
//! - Every change is one SQLite transaction (WAL journal, `synchronous =
//!   FULL`); there is no "save". A process killed mid-change loses that change
//!   and nothing committed before it.
//! - Nothing is overwritten: a change adds rows and records itself in the
//!   change log; undo and redo move a change between `applied` and `undone`
//!   (see [`schema`]).
//! - Versioned migrations ([`schema::MIGRATIONS`]) upgrade workspaces written
//!   by older builds when they are opened.
//!
//! The store speaks `worldloom-core` types: [`Workspace::import_trajectory`]
//! takes a [`worldloom_core::Trajectory`] and
//! [`Workspace::load_trajectory`] gives one back.

mod error;
pub mod schema;
mod workspace;

pub use error::{Result, StoreError};
pub use rusqlite;
pub use schema::SCHEMA_VERSION;
pub use workspace::{
    AppendTurn, ChangeId, ChangeRecord, ChangeState, DEFAULT_LABELS, EdgeLink, MetricResult,
    NewRun, Note, NoteId, RowFindings, RunId, RunImport, RunRecord, ScreenshotBytes, SearchField,
    Sha256Hex, StatementLog, StoredRunRow, StoredTrajectory, TagRecord, TrajectoryKey,
    TrajectoryRow, Workspace, is_workspace_file, sha256_hex, trajectory_fingerprint,
};
