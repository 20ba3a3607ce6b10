//! Types of notes and tags (`commands/notes_tags.rs`).

use super::*;

/// `add_note` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct AddNoteRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// The node, for a note on one state.
    #[serde(default)]
    pub node_id: Option<u32>,
    /// The text.
    pub text: String,
}

/// A note.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct NoteView {
    /// Note id (decimal string).
    pub id: String,
    /// The node, if about one state.
    pub node_id: Option<u32>,
    /// Current text.
    pub text: String,
    /// When last written (UTC).
    pub updated_at: String,
}

/// `list_notes` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ListNotesRequest {
    /// Workspace id.
    pub trajectory_id: String,
}

/// `list_notes` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ListNotesResponse {
    /// Current notes, oldest first.
    pub notes: Vec<NoteView>,
}

/// `set_tag` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SetTagRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// The node (a branch's leaf), or `null` for the trajectory.
    #[serde(default)]
    pub node_id: Option<u32>,
    /// The tag.
    pub tag: String,
    /// Set (true) or clear (false).
    pub present: bool,
}
