//! Notes on trajectories and states, and tags.

use worldloom_core::NodeId;

use crate::error::ApiError;
use crate::ids::parse_trajectory_id;
use crate::types::*;
use crate::views::change_summary;
use crate::{Studio, StudioEvent};

/// `add_note`: a note on a trajectory or one of its states (one change).
///
/// # Errors
/// [`crate::ErrorCode::NotFound`], [`crate::ErrorCode::BadRequest`], [`crate::ErrorCode::Storage`].
pub fn add_note(studio: &Studio, req: AddNoteRequest) -> Result<NoteView, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let note = {
        let mut ws = studio.lock()?;
        let id = ws.add_note(key, req.node_id.map(NodeId), &req.text)?;
        ws.notes(key)?.into_iter().find(|n| n.id == id)
    };
    studio.emit(StudioEvent::WorkspaceChanged {
        trajectory_id: Some(key.0.to_string()),
        kind: ChangeKind::AddNote.into(),
    });
    let note = note.ok_or_else(|| ApiError::bad_request("an empty note is not kept"))?;
    Ok(NoteView {
        id: note.id.0.to_string(),
        node_id: note.node.map(|n| n.0),
        text: note.text,
        updated_at: note.updated_at,
    })
}

/// `list_notes`: the current notes of a trajectory.
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`], [`crate::ErrorCode::Storage`].
pub fn list_notes(studio: &Studio, req: ListNotesRequest) -> Result<ListNotesResponse, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let notes = studio.lock()?.notes(key)?;
    Ok(ListNotesResponse {
        notes: notes
            .into_iter()
            .map(|n| NoteView {
                id: n.id.0.to_string(),
                node_id: n.node.map(|x| x.0),
                text: n.text,
                updated_at: n.updated_at,
            })
            .collect(),
    })
}

/// `set_tag`: sets or clears a tag on a trajectory or node (one change).
///
/// # Errors
/// [`crate::ErrorCode::NotFound`], [`crate::ErrorCode::BadRequest`], [`crate::ErrorCode::Storage`].
pub fn set_tag(studio: &Studio, req: SetTagRequest) -> Result<ChangeResponse, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let change = {
        let mut ws = studio.lock()?;
        let id = ws.set_tag(key, req.node_id.map(NodeId), &req.tag, req.present)?;
        ws.history(50)?.into_iter().find(|c| c.id == id)
    };
    studio.emit(StudioEvent::WorkspaceChanged {
        trajectory_id: Some(key.0.to_string()),
        kind: ChangeKind::SetTag.into(),
    });
    Ok(ChangeResponse {
        change: change.as_ref().map(change_summary).transpose()?,
    })
}
