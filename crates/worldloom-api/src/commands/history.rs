//! The undo log: undo, redo and the newest changes.

use crate::error::ApiError;
use crate::types::*;
use crate::views::change_summary;
use crate::{Studio, StudioEvent};

/// `undo`: undoes the newest change.
///
/// # Errors
/// [`crate::ErrorCode::Storage`].
pub fn undo(studio: &Studio, _req: EmptyRequest) -> Result<ChangeResponse, ApiError> {
    let change = studio.lock()?.undo()?;
    if let Some(c) = &change {
        studio.emit(StudioEvent::WorkspaceChanged {
            trajectory_id: c.trajectory.map(|t| t.0.to_string()),
            kind: StudioChangeKind::Undo.into(),
        });
    }
    Ok(ChangeResponse {
        change: change.as_ref().map(change_summary).transpose()?,
    })
}

/// `redo`: re-applies the oldest undone change.
///
/// # Errors
/// [`crate::ErrorCode::Storage`].
pub fn redo(studio: &Studio, _req: EmptyRequest) -> Result<ChangeResponse, ApiError> {
    let change = studio.lock()?.redo()?;
    if let Some(c) = &change {
        studio.emit(StudioEvent::WorkspaceChanged {
            trajectory_id: c.trajectory.map(|t| t.0.to_string()),
            kind: StudioChangeKind::Redo.into(),
        });
    }
    Ok(ChangeResponse {
        change: change.as_ref().map(change_summary).transpose()?,
    })
}

/// `history`: the newest 200 changes.
///
/// # Errors
/// [`crate::ErrorCode::Storage`].
pub fn history(studio: &Studio, _req: EmptyRequest) -> Result<HistoryResponse, ApiError> {
    let changes = studio.lock()?.history(200)?;
    Ok(HistoryResponse {
        changes: changes
            .iter()
            .map(change_summary)
            .collect::<Result<_, _>>()?,
    })
}
