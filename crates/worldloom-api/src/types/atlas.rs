//! The fidelity atlas's requests and responses (`run_atlas`,
//! `atlas_rows`). The atlas itself travels as `worldloom-eval`'s types
//! (`Atlas`, `AtlasCell`, `AtlasDelta`, `AtlasTable`, `ActionKind`) and each
//! row's findings as `worldloom-obs`' (`Finding`, `ErrorKind`), re-exported
//! here; only the requests and the row list are the API's own.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::RunRowView;
pub use worldloom_eval::atlas::{ActionKind, Atlas, AtlasCell, AtlasDelta, AtlasTable};
pub use worldloom_obs::findings::{ErrorKind, Finding};

/// `run_atlas` request: one run's atlas (or a selection of its rows), with
/// a second run beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunAtlasRequest {
    /// Run A.
    pub run_id: String,
    /// Run B, counted over its own rows and compared cell by cell.
    #[serde(default)]
    pub run_b: Option<String>,
    /// Only these rows of A (`RunRowView.row_id`); empty: every row.
    #[serde(default)]
    pub row_ids: Vec<String>,
}

/// `branches_atlas` request: the atlas of what the workspace's branches
/// show.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct BranchesAtlasRequest {
    /// Only these trajectories (workspace ids); empty: every trajectory.
    #[serde(default)]
    pub trajectory_ids: Vec<String>,
}

/// `run_atlas` (and `branches_atlas`) response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunAtlasResponse {
    /// Run A's atlas.
    pub a: Atlas,
    /// Run B's, when asked.
    pub b: Option<Atlas>,
    /// Every cell of either with both rates and A − B (empty without B).
    pub compare: Vec<AtlasDelta>,
    /// The error kinds, in report order (the heat map's columns).
    pub kinds: Vec<ErrorKind>,
    /// The action types, in report order (the heat map's rows).
    pub actions: Vec<ActionKind>,
    /// Rows whose findings this call computed and stored (0 once every
    /// row's are stored: the atlas is then counted from the store alone).
    pub computed_rows: u32,
}

/// `atlas_rows` request: the rows behind one atlas cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct AtlasRowsRequest {
    /// The run whose cell it is.
    pub run_id: String,
    /// The cell's table.
    pub table: AtlasTable,
    /// The cell's group (`all`, a domain, role, field, action type or turn).
    pub group: String,
    /// The cell's error kind.
    pub kind: ErrorKind,
    /// A second run: each row comes with that run's row on the same state.
    #[serde(default)]
    pub run_b: Option<String>,
    /// Only these rows of the run (the selection the atlas was counted
    /// over); empty: every row.
    #[serde(default)]
    pub row_ids: Vec<String>,
    /// First row of the page.
    #[serde(default)]
    pub offset: u32,
    /// Most rows returned; 0: all.
    #[serde(default)]
    pub limit: u32,
}

/// One row of an atlas cell, with the findings that put it there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct AtlasRowView {
    /// The row (open it with `get_turn`).
    pub row: RunRowView,
    /// Its type of action.
    pub action: ActionKind,
    /// Its findings in the cell, with the lines of the nodes in question.
    pub findings: Vec<Finding>,
    /// Run B's row on the same state, when B was given and has one.
    pub b: Option<AtlasRowSide>,
}

/// Run B's row on the state of an [`AtlasRowView`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct AtlasRowSide {
    /// The row.
    pub row: RunRowView,
    /// Its findings of the same kind (any group).
    pub findings: Vec<Finding>,
}

/// `atlas_rows` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct AtlasRowsResponse {
    /// Rows in the cell, in row order (the page asked for).
    pub rows: Vec<AtlasRowView>,
    /// Rows in the cell in all.
    pub total: u32,
}
