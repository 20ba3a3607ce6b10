//! The native Worldloom trajectory file: versioned JSON.
//!
//! ```json
//! {
//!   "format": "worldloom-trajectory",
//!   "version": 1,
//!   "trajectories": [ … ]
//! }
//! ```
//!
//! Files are written deterministically: pretty JSON (two-space indent), fields
//! in declaration order, maps in insertion order, a trailing newline. Reading
//! a file this build wrote and writing it again gives the same bytes. Readers
//! accept every version up to [`NATIVE_VERSION`]; version 1 is the first.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{CoreError, Result, json_error};
use crate::trajectory::Trajectory;

/// The `format` value of a native file.
pub const NATIVE_FORMAT: &str = "worldloom-trajectory";
/// The newest native version this build writes and reads.
pub const NATIVE_VERSION: u64 = 1;

/// A native file: any number of trajectories.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrajectoryFile {
    /// Always [`NATIVE_FORMAT`].
    pub format: String,
    /// The format version the file was written with.
    pub version: u64,
    /// The trajectories.
    pub trajectories: Vec<Trajectory>,
}

impl TrajectoryFile {
    /// A file of the current version holding `trajectories`.
    pub fn new(trajectories: Vec<Trajectory>) -> Self {
        Self {
            format: NATIVE_FORMAT.into(),
            version: NATIVE_VERSION,
            trajectories,
        }
    }

    /// Serializes deterministically: pretty JSON and a trailing newline.
    pub fn to_json_string(&self) -> String {
        // Serializing these types cannot fail: every map key is a string.
        let mut out = serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        out.push('\n');
        out
    }

    /// Parses a native file's text; `path` is used in errors only.
    ///
    /// # Errors
    /// [`CoreError::Json`] for invalid JSON (with line and column),
    /// [`CoreError::Format`] when `format` is not `worldloom-trajectory` or a
    /// tree is inconsistent, [`CoreError::UnsupportedVersion`] for files from
    /// a newer version.
    pub fn from_json_str(path: &Path, text: &str) -> Result<Self> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| json_error(path, &e))?;
        let format = value.get("format").and_then(|v| v.as_str());
        if format != Some(NATIVE_FORMAT) {
            return Err(CoreError::Field {
                path: path.to_path_buf(),
                line: None,
                field: "format".into(),
                message: format!(
                    "expected \"{NATIVE_FORMAT}\", found {}",
                    value
                        .get("format")
                        .map_or("nothing".into(), |v| v.to_string())
                ),
            });
        }
        let version = value
            .get("version")
            .and_then(|v| v.as_u64())
            .ok_or_else(|| CoreError::Field {
                path: path.to_path_buf(),
                line: None,
                field: "version".into(),
                message: "missing or not a non-negative integer".into(),
            })?;
        if version > NATIVE_VERSION {
            return Err(CoreError::UnsupportedVersion {
                path: path.to_path_buf(),
                found: version,
                supported: NATIVE_VERSION,
            });
        }
        // Version 1 is the only layout so far; later versions migrate here.
        let file: TrajectoryFile = serde_json::from_str(text).map_err(|e| json_error(path, &e))?;
        for (i, t) in file.trajectories.iter().enumerate() {
            t.validate().map_err(|message| CoreError::Format {
                path: path.to_path_buf(),
                message: format!("trajectories[{i}] (`{}`): {message}", t.id),
            })?;
        }
        Ok(file)
    }

    /// Reads a native file.
    ///
    /// # Errors
    /// As [`TrajectoryFile::from_json_str`], plus [`CoreError::Io`].
    pub fn read(path: &Path) -> Result<Self> {
        let decoded = crate::input::read_text(path)?;
        Self::from_json_str(path, &decoded.text)
    }

    /// Writes the file (see [`TrajectoryFile::to_json_string`]).
    ///
    /// # Errors
    /// [`CoreError::Io`].
    pub fn write(&self, path: &Path) -> Result<()> {
        use std::io::Write;
        // Written as it is serialised (the same bytes as
        // [`TrajectoryFile::to_json_string`]), never held whole in memory.
        let io = |source| CoreError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::create(path).map_err(io)?;
        let mut out = std::io::BufWriter::new(file);
        serde_json::to_writer_pretty(&mut out, self).map_err(|e| io(std::io::Error::other(e)))?;
        out.write_all(b"\n").map_err(io)?;
        out.flush().map_err(io)
    }
}
