//! Types of importing files and exporting a trajectory
//! (`commands/import_export.rs`).

use super::*;

/// `import_files` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ImportFilesRequest {
    /// Files or folders on the machine running the back end.
    pub paths: Vec<String>,
}

/// One trajectory an import added or found already imported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ImportedTrajectory {
    /// Workspace id.
    pub trajectory_id: String,
    /// The trajectory's own id.
    pub name: String,
    /// The file it came from.
    pub path: String,
    /// False when the same file was imported before (nothing added).
    pub added: bool,
}

/// A file that could not be imported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ImportFailure {
    /// The file.
    pub path: String,
    /// Why, naming the line or field.
    pub message: String,
}

impl ImportFailure {
    /// A failure of `path`; a leading `path: ` in `message` (errors name
    /// their file) is dropped so the path is not shown twice.
    pub fn new(path: &str, message: &str) -> Self {
        let message = message
            .strip_prefix(path)
            .and_then(|rest| rest.strip_prefix(": "))
            .unwrap_or(message);
        Self {
            path: path.to_owned(),
            message: message.to_owned(),
        }
    }
}

/// A run an import added or found already imported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ImportedRun {
    /// Run id.
    pub run_id: String,
    /// Its name.
    pub name: String,
    /// The file it came from.
    pub path: String,
    /// How many rows it has.
    pub rows: u32,
    /// False when the same file was imported before (nothing added).
    pub added: bool,
}

/// `import_files` response. Files are independent: one failing does not stop
/// the others.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ImportFilesResponse {
    /// Trajectories added or already present (a run's included).
    pub imported: Vec<ImportedTrajectory>,
    /// Runs added or already present: files whose rows carry predictions
    /// (`gen`: `worldloom eval` output, the official `predictions.jsonl` and
    /// `judged.jsonl`).
    #[serde(default)]
    pub runs: Vec<ImportedRun>,
    /// Files that failed.
    pub failed: Vec<ImportFailure>,
    /// Problems that did not stop an import (`path:line: message`).
    pub warnings: Vec<String>,
}

/// `export` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ExportRequest {
    /// Workspace id.
    pub trajectory_id: String,
    /// Only this branch (leaf node id); `null` exports the whole tree
    /// (native) or the recorded path (JSONL formats).
    #[serde(default)]
    pub branch_id: Option<String>,
    /// The format.
    pub format: ExportFormat,
    /// Write to this file on the back end's machine; `null` returns the
    /// content only.
    #[serde(default)]
    pub path: Option<String>,
}

/// `export` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ExportResponse {
    /// The exported text.
    pub content: String,
    /// A file name to save it under.
    pub file_name: String,
    /// The file written, when a path was given.
    pub written_to: Option<String>,
    /// JSONL rows (or trajectories, for native).
    pub record_count: u32,
}
