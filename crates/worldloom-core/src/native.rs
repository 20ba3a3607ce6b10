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
//!
//! States' screenshots are named in the file and their bytes kept beside
//! it, in a sidecar folder ([`write_screenshots`], [`resolve_screenshots`];
//! `docs/formats.md`, "Screenshots").

use std::path::Path;

use serde::{Deserialize, Serialize};

use std::path::Component;

use crate::error::{CoreError, ImportWarning, Result, json_error};
use crate::screenshot::{Screenshot, attach, sidecar_dir};
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

/// Checks the screenshots named by a native file read from `native_file`:
/// each `file` must be a relative path inside the file's folder (no `..`,
/// not absolute), and is read again with [`crate::screenshot::probe`] (the header and hash in
/// the JSON are not trusted). A screenshot without a `file` is kept as a
/// reference (a workspace that holds its bytes restores it). One that does
/// not check is dropped with a warning naming the file.
pub fn resolve_screenshots(
    native_file: &Path,
    trajectories: &mut [Trajectory],
    warnings: &mut Vec<ImportWarning>,
) {
    let base = native_file.parent().unwrap_or(Path::new(""));
    for t in trajectories {
        for node in &mut t.nodes {
            let Some(file) = node.screenshot.as_ref().and_then(|s| s.file.clone()) else {
                continue;
            };
            let rel = Path::new(&file);
            let inside = rel
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
            if !inside {
                node.screenshot = None;
                warnings.push(ImportWarning {
                    path: native_file.display().to_string(),
                    line: None,
                    byte_offset: None,
                    message: format!(
                        "trajectory `{}` state {}: screenshot not kept: `{file}` is not a path inside the file's folder",
                        t.id, node.id
                    ),
                });
                continue;
            }
            node.screenshot = None;
            attach(&mut node.screenshot, &base.join(rel), warnings);
        }
    }
}

/// Writes the screenshots of `trajectories` into the sidecar folder of the
/// native file `native_file` ([`sidecar_dir`]), one file per distinct hash
/// (`<sha256>.png` / `.jpg`), and points each screenshot's `file` at it,
/// relative to the native file's folder. `bytes` gives a screenshot's bytes
/// (from its current `file`, or from a workspace); a screenshot it has no
/// bytes for is kept as a reference without `file`. The folder is made only
/// when there is a screenshot.
///
/// # Errors
/// [`CoreError::Io`] naming the folder or file that could not be written.
pub fn write_screenshots(
    native_file: &Path,
    trajectories: &mut [Trajectory],
    mut bytes: impl FnMut(&Screenshot) -> Option<Vec<u8>>,
) -> Result<()> {
    let dir = sidecar_dir(native_file);
    let dir_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for t in trajectories {
        for node in &mut t.nodes {
            let Some(shot) = node.screenshot.as_mut() else {
                continue;
            };
            let name = format!("{}{}", shot.sha256, shot.media_type.extension());
            let dest = dir.join(&name);
            if !dest.exists() {
                let Some(data) = bytes(shot) else {
                    shot.file = None;
                    continue;
                };
                std::fs::create_dir_all(&dir).map_err(|source| CoreError::Io {
                    path: dir.clone(),
                    source,
                })?;
                std::fs::write(&dest, data).map_err(|source| CoreError::Io {
                    path: dest.clone(),
                    source,
                })?;
            }
            shot.file = Some(format!("{dir_name}/{name}"));
        }
    }
    Ok(())
}
