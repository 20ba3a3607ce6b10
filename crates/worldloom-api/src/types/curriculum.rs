//! Types of curricula and browser uploads (`curriculum.rs`).

use super::*;

/// A branch of a trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct BranchRef {
    /// Workspace id.
    pub trajectory_id: String,
    /// Branch id (leaf node id).
    pub branch_id: String,
}

/// Curriculum formats: the JSONL ones of [`ExportFormat`] (a curriculum is
/// rows of turns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum CurriculumFormat {
    /// AgentWorldBench JSONL rows (for evaluation).
    Agentworldbench,
    /// SFT chat JSONL (for fine-tuning).
    Sft,
}

impl From<CurriculumFormat> for ExportFormat {
    fn from(format: CurriculumFormat) -> Self {
        match format {
            CurriculumFormat::Agentworldbench => ExportFormat::Agentworldbench,
            CurriculumFormat::Sft => ExportFormat::Sft,
        }
    }
}

/// `export_curriculum` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ExportCurriculumRequest {
    /// The branches to export.
    #[serde(default)]
    pub selection: Vec<BranchRef>,
    /// Also every branch whose leaf (or trajectory) carries this tag.
    #[serde(default)]
    pub tag: Option<String>,
    /// The format.
    pub format: CurriculumFormat,
    /// How many rows `preview` holds.
    #[serde(default)]
    pub preview_limit: u32,
    /// Write to this file on the back end's machine; `null` returns the
    /// text in `content`.
    #[serde(default)]
    pub path: Option<String>,
}

/// `export_curriculum` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ExportCurriculumResponse {
    /// JSONL rows written.
    pub rows_total: u32,
    /// The first `preview_limit` lines.
    pub preview: Vec<String>,
    /// The file written, when a path was given.
    pub path: Option<String>,
    /// Size of the export, bytes.
    #[ts(type = "number")]
    pub bytes: u64,
    /// Turns left out because their state has no observation (nor any turn
    /// after them on the branch).
    pub skipped: u32,
    /// The whole text when no path was given.
    pub content: Option<String>,
    /// A file name to save it under.
    pub file_name: String,
}
