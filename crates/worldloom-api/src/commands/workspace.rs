//! `workspace_info`: the open workspace file and its undo state.

use crate::Studio;
use crate::error::ApiError;
use crate::types::*;

/// `workspace_info`: the workspace file, schema version and undo state.
///
/// # Errors
/// [`crate::ErrorCode::Storage`].
pub fn workspace_info(
    studio: &Studio,
    _req: WorkspaceInfoRequest,
) -> Result<WorkspaceInfoResponse, ApiError> {
    let ws = studio.lock()?;
    let (can_undo, can_redo) = ws.can_undo_redo()?;
    Ok(WorkspaceInfoResponse {
        path: ws.path().display().to_string(),
        schema_version: ws.schema_version()?,
        trajectory_count: ws.list_trajectories()?.len() as u32,
        can_undo,
        can_redo,
        version: env!("CARGO_PKG_VERSION").to_string(),
    })
}
