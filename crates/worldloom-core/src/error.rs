//! Typed errors and import warnings of the core crate.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Everything that can go wrong in the core crate. Every variant names the
/// file, line or field involved so that callers can show it unchanged.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// A file or folder could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },
    /// A JSON document (or one JSONL line) did not parse.
    #[error("{path}:{line}:{column}: invalid JSON: {message}")]
    Json {
        /// The file involved.
        path: PathBuf,
        /// 1-based line number in the file.
        line: usize,
        /// 1-based column (0 when unknown).
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// The input parsed, but a field is missing or has the wrong shape.
    #[error("{path}{}: field `{field}`: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Field {
        /// The file involved.
        path: PathBuf,
        /// 1-based line number for line-oriented files.
        line: Option<usize>,
        /// The field name (a dotted path such as `steps[3].action`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// The input's format is not one Worldloom reads, or auto-detection failed.
    #[error("{path}: {message}")]
    Format {
        /// The file or folder involved.
        path: PathBuf,
        /// What was expected and what was found.
        message: String,
    },
    /// A native file declares a version newer than this build understands.
    #[error(
        "{path}: worldloom-trajectory version {found} is newer than the newest this build reads ({supported})"
    )]
    UnsupportedVersion {
        /// The file involved.
        path: PathBuf,
        /// The version in the file.
        found: u64,
        /// The newest version this build reads.
        supported: u64,
    },
    /// A node id does not exist in the trajectory.
    #[error("trajectory `{trajectory}` has no node {node}")]
    NoSuchNode {
        /// The trajectory's id.
        trajectory: String,
        /// The missing node id.
        node: u32,
    },
    /// An edge id does not exist in the trajectory.
    #[error("trajectory `{trajectory}` has no edge {edge}")]
    NoSuchEdge {
        /// The trajectory's id.
        trajectory: String,
        /// The missing edge id.
        edge: u32,
    },
    /// A prediction id does not exist on the node.
    #[error("node {node} of trajectory `{trajectory}` has no prediction {prediction}")]
    NoSuchPrediction {
        /// The trajectory's id.
        trajectory: String,
        /// The node id.
        node: u32,
        /// The missing prediction id.
        prediction: u32,
    },
    /// A prompt could not be built (for example the root node has no turn).
    #[error("prompt for node {node} of trajectory `{trajectory}`: {message}")]
    Prompt {
        /// The trajectory's id.
        trajectory: String,
        /// The node whose observation was to be predicted.
        node: u32,
        /// What is missing.
        message: String,
    },
}

/// Result type of the core crate.
pub type Result<T, E = CoreError> = std::result::Result<T, E>;

/// A problem found during import that did not stop it (a replaced invalid
/// byte sequence, a skipped malformed row, an unmatched sidecar line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportWarning {
    /// The file the warning is about.
    pub path: String,
    /// 1-based line number, for line-oriented files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// 0-based byte offset in the file, where meaningful.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub byte_offset: Option<u64>,
    /// What happened.
    pub message: String,
}

impl std::fmt::Display for ImportWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.path)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(offset) = self.byte_offset {
            write!(f, " (byte {offset})")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Converts a `serde_json` error on `path` into [`CoreError::Json`].
pub(crate) fn json_error(path: &std::path::Path, err: &serde_json::Error) -> CoreError {
    CoreError::Json {
        path: path.to_path_buf(),
        line: err.line(),
        column: err.column(),
        message: err.to_string(),
    }
}
