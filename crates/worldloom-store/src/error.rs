//! Typed errors of the workspace store.

use std::path::PathBuf;

/// Everything that can go wrong in the store. Variants name the workspace
/// file, the table or the record involved.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite reported an error while working on `path`.
    #[error("{path}: {context}: {source}")]
    Sqlite {
        /// The workspace file.
        path: PathBuf,
        /// What the store was doing (`opening`, `migrating to version 2`,
        /// `reading trajectories`…).
        context: String,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The file exists but is not a Worldloom workspace (not SQLite, or an
    /// SQLite file written by another program).
    #[error("{path}: not a Worldloom workspace: {reason}")]
    NotAWorkspace {
        /// The file involved.
        path: PathBuf,
        /// Why it was rejected.
        reason: String,
    },
    /// The workspace was written by a newer Worldloom whose schema this build
    /// does not know.
    #[error(
        "{path}: workspace schema version {found} is newer than the newest this build knows ({supported}); upgrade Worldloom"
    )]
    NewerSchema {
        /// The file involved.
        path: PathBuf,
        /// The schema version in the file (`PRAGMA user_version`).
        found: u32,
        /// The newest version this build migrates to.
        supported: u32,
    },
    /// A record stored as JSON could not be read back (written by a build
    /// with an incompatible record layout).
    #[error("{path}: {table} row {row}: stored JSON does not parse: {source}")]
    Record {
        /// The workspace file.
        path: PathBuf,
        /// The table holding the record.
        table: &'static str,
        /// The row's key, as text.
        row: String,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// A trajectory, node, edge, prediction or note the caller named does not
    /// exist (or was undone).
    #[error("{0}")]
    NotFound(String),
    /// The request is inconsistent with what is stored (for example a
    /// trajectory whose tree does not validate).
    #[error("{0}")]
    Invalid(String),
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },
}

/// Result type of the store.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
