//! Types of the undo log (`commands/history.rs`: undo, redo, history): change
//! kinds, states and records.

use super::*;

/// What a change of the undo log did (`worldloom-store` change kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Trajectories imported.
    Import,
    /// A prediction added to a state.
    AddPrediction,
    /// The prediction a state shows chosen or cleared.
    ChoosePrediction,
    /// A hand-written observation stored.
    SetAuthored,
    /// A sibling edge (an edited action) added.
    AddBranch,
    /// An action appended from a state.
    AddTurn,
    /// A turn's control instruction set or cleared.
    SetPerturbation,
    /// A note added.
    AddNote,
    /// A note edited.
    EditNote,
    /// A tag set or cleared.
    SetTag,
    /// A run (an eval output) imported: its rows' predictions and any
    /// trajectories it added.
    ImportRun,
    /// A label set on or cleared from a run's row.
    SetLabel,
    /// A run row's note written or cleared.
    SetRowNote,
    /// A screenshot given to a state.
    SetScreenshot,
}

impl ChangeKind {
    /// The kind of an undo-log record (`worldloom-store` `ChangeRecord::kind`).
    ///
    /// # Errors
    /// [`ApiError`](crate::ApiError) (internal) for a kind this build does
    /// not know.
    pub fn from_store(kind: &str) -> Result<Self, crate::ApiError> {
        serde_json::from_value(serde_json::Value::String(kind.to_owned()))
            .map_err(|_| crate::ApiError::internal(format!("unknown change kind `{kind}`")))
    }
}

/// A change of the workspace that is not an undo-log record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum StudioChangeKind {
    /// The newest change undone.
    Undo,
    /// The oldest undone change redone.
    Redo,
    /// The engine settings saved (not an undoable change).
    SetEngine,
    /// A slow event reader missed events and should refresh everything.
    Lagged,
}

/// What [`StudioEvent::WorkspaceChanged`] reports: a change of the undo log
/// or another change; on the wire the bare name (`add_turn`, `undo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(untagged)]
pub enum WorkspaceChangeKind {
    /// A change recorded in the undo log.
    Change(ChangeKind),
    /// Undo, redo, engine settings, a lagging reader.
    Studio(StudioChangeKind),
}

impl From<ChangeKind> for WorkspaceChangeKind {
    fn from(kind: ChangeKind) -> Self {
        Self::Change(kind)
    }
}

impl From<StudioChangeKind> for WorkspaceChangeKind {
    fn from(kind: StudioChangeKind) -> Self {
        Self::Studio(kind)
    }
}

/// Whether a change of the undo log is in effect (`worldloom-store`
/// `ChangeState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ChangeState {
    /// In effect.
    Applied,
    /// Undone; `redo` can apply it again.
    Undone,
    /// Undone and then superseded by a newer change.
    Abandoned,
}

/// A change of the undo log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ChangeSummary {
    /// Change id (decimal string).
    pub id: String,
    /// What the change did.
    pub kind: ChangeKind,
    /// Trajectory changed, if one.
    pub trajectory_id: Option<String>,
    /// Human description.
    pub summary: String,
    /// Whether it is in effect.
    pub state: ChangeState,
    /// When (UTC).
    pub created_at: String,
}

/// Response of commands that make one change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ChangeResponse {
    /// The change made, undone or redone; `null` when there was nothing to
    /// undo or redo.
    pub change: Option<ChangeSummary>,
}

/// `history` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct HistoryResponse {
    /// The newest 200 changes, newest first.
    pub changes: Vec<ChangeSummary>,
}
