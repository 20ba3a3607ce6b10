//! Types of `workspace_info` (`commands/workspace.rs`).

use super::*;

/// `workspace_info` request (no fields).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct WorkspaceInfoRequest {}

/// `workspace_info` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct WorkspaceInfoResponse {
    /// The workspace file.
    pub path: String,
    /// Its schema version.
    pub schema_version: u32,
    /// Live trajectories.
    pub trajectory_count: u32,
    /// Whether `undo` would do something.
    pub can_undo: bool,
    /// Whether `redo` would do something.
    pub can_redo: bool,
    /// The Worldloom version serving it.
    pub version: String,
}
