//! Types of lessons, captions and the lesson export (`lesson.rs`).
//!
//! A lesson is the tag `lesson:NAME` set on branch leaves, in the order the
//! tag was set; a turn's caption is the newest note on the state the turn
//! reaches (the initial state's note captions the branch's first screen).

use super::*;

/// One lesson in [`ListLessonsResponse`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct LessonSummary {
    /// The lesson's name (the tag without its `lesson:` prefix).
    pub name: String,
    /// Places carrying its tag: branch leaves (live or not), a trajectory
    /// tagged as a whole counted once.
    pub branch_count: u32,
}

/// `list_lessons` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ListLessonsResponse {
    /// Every lesson of the workspace, by name.
    pub lessons: Vec<LessonSummary>,
}

/// `get_lesson` request: a lesson by name, or, with `lesson` `null`, one
/// branch shown as a lesson of its own (captions are its notes).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct LessonRequest {
    /// The lesson's name.
    pub lesson: Option<String>,
    /// Without a lesson: the trajectory (workspace id).
    pub trajectory_id: Option<String>,
    /// Without a lesson: the branch (leaf node id); `null` is the recorded
    /// path.
    pub branch_id: Option<String>,
}

/// One branch of a lesson, with its turns and their captions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct LessonBranch {
    /// Workspace id of the trajectory.
    pub trajectory_id: String,
    /// The trajectory's display name.
    pub trajectory_name: String,
    /// Its task instruction.
    pub goal: Option<String>,
    /// Its domain.
    pub domain: Domain,
    /// The branch.
    pub branch: BranchSummary,
    /// Its turns, first to last (the timeline's rows).
    pub turns: Vec<TurnSummary>,
    /// The caption of each step: index 0 the initial state, `i + 1` the
    /// state `turns[i]` reaches; `null` where the state has no note.
    pub captions: Vec<Option<String>>,
}

/// `get_lesson` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct LessonView {
    /// The title: the lesson's name, or the trajectory and branch shown.
    pub title: String,
    /// The lesson's name; `null` for one branch shown without a lesson.
    pub lesson: Option<String>,
    /// Its live branches in lesson order (branches undone since they were
    /// added are left out).
    pub branches: Vec<LessonBranch>,
}

/// `add_to_lesson` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct AddToLessonRequest {
    /// The lesson's name (not empty; no line breaks).
    pub lesson: String,
    /// Workspace id of the trajectory.
    pub trajectory_id: String,
    /// The branch (leaf node id).
    pub branch_id: String,
    /// Add (true, at the end) or take out (false).
    pub present: bool,
}

/// `set_caption` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SetCaptionRequest {
    /// Workspace id of the trajectory.
    pub trajectory_id: String,
    /// The state the caption is on (a turn's node; 0 the initial state).
    pub node_id: u32,
    /// The caption; empty removes it.
    pub text: String,
}

/// `export_lesson` request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct ExportLessonRequest {
    /// The lesson's name.
    pub lesson: Option<String>,
    /// Without a lesson: the trajectory (workspace id).
    pub trajectory_id: Option<String>,
    /// Without a lesson: the branch (leaf node id); `null` is the recorded
    /// path.
    pub branch_id: Option<String>,
    /// Write to this file on the back end's machine; `null` returns the
    /// HTML in `content`.
    pub path: Option<String>,
}

/// `export_lesson` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ExportLessonResponse {
    /// Sections written (one per state shown: each branch's initial state
    /// and every turn).
    pub sections: u32,
    /// Size of the file, bytes.
    #[ts(type = "number")]
    pub bytes: u64,
    /// The file written, when a path was given.
    pub path: Option<String>,
    /// The whole HTML when no path was given.
    pub content: Option<String>,
    /// A file name to save it under.
    pub file_name: String,
}
