//! A folder of trajectories: a folder that is not itself one trajectory
//! (no step dumps, pickles or numbered dumps of its own) but holds
//! trajectory files and folders, at any depth, such as `samples/` (its
//! `android/`, `os/` and `web/` folders each hold several trajectories) or a
//! benchmark's results folder with one sub-folder per task.
//!
//! [`items`] lists what such a folder holds: every entry whose format is
//! detected is an item; a folder whose format is not detected is walked in
//! turn (at most [`MAX_DEPTH`] deep); a file that is no trajectory is
//! skipped with one line naming it and why. Documentation, code and images
//! (`.md`, `.py`, `.png`…) and hidden entries are passed over without a
//! line, as are predictions sidecars that sit beside their trajectory (they
//! are read with it).

use std::path::{Path, PathBuf};

use crate::error::{CoreError, Result};

/// How deep [`items`] walks below the folder it is given.
pub const MAX_DEPTH: usize = 8;

/// File extensions passed over without a line: never a trajectory on their
/// own (screenshots are read with their trajectory folder).
const NOT_TRAJECTORIES: [&str; 16] = [
    "md", "rst", "py", "sh", "js", "ts", "png", "jpg", "jpeg", "gif", "webp", "svg", "pdf", "log",
    "toml", "lock",
];

/// An entry of a folder of trajectories that is not imported, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The file or folder.
    pub path: PathBuf,
    /// Why, in words (the detection error's message, naming the file).
    pub reason: String,
}

/// What a folder of trajectories holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Items {
    /// Files and folders whose format is detected, in name order, depth
    /// first.
    pub trajectories: Vec<PathBuf>,
    /// Entries that are not trajectories, one each.
    pub skipped: Vec<Skipped>,
}

/// Whether `path` is a folder that is not itself a trajectory (its format is
/// not detected), so [`items`] lists what it holds.
pub fn is_collection(path: &Path) -> bool {
    path.is_dir() && crate::formats::detect_format(path).is_err()
}

/// The trajectories a folder holds, walked in name order (see the module
/// documentation for what is an item and what is skipped).
///
/// # Errors
/// [`CoreError::Io`] when `dir` itself cannot be listed; entries below it
/// that cannot be listed are skipped with their error.
pub fn items(dir: &Path) -> Result<Items> {
    let mut out = Items::default();
    let entries = list(dir).map_err(|source| CoreError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    walk(entries, 0, &mut out);
    Ok(out)
}

fn list(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    Ok(entries)
}

fn walk(entries: Vec<PathBuf>, depth: usize, out: &mut Items) {
    use crate::formats::{detect_format, sidecar};
    for entry in entries {
        let name = entry.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') {
            continue;
        }
        if !entry.is_file() && !entry.is_dir() {
            // A device, FIFO or socket is never opened: it may never end.
            out.skipped.push(Skipped {
                reason: format!("{}: not a regular file or folder", entry.display()),
                path: entry,
            });
            continue;
        }
        if entry.is_file() {
            let ext = entry
                .extension()
                .and_then(|e| e.to_str())
                .unwrap_or("")
                .to_ascii_lowercase();
            if NOT_TRAJECTORIES.contains(&ext.as_str()) {
                continue;
            }
            if sidecar::refused_alone(&entry).is_some() {
                if sidecar::owner_beside(&entry).is_none() {
                    out.skipped.push(Skipped {
                        path: entry,
                        reason: "a predictions sidecar with no trajectory beside it".into(),
                    });
                }
                continue;
            }
        }
        match detect_format(&entry) {
            Ok(_) => out.trajectories.push(entry),
            Err(_) if entry.is_dir() && depth < MAX_DEPTH => match list(&entry) {
                Ok(inner) => walk(inner, depth + 1, out),
                Err(e) => out.skipped.push(Skipped {
                    reason: format!("{}: {e}", entry.display()),
                    path: entry,
                }),
            },
            Err(_) if entry.is_dir() => out.skipped.push(Skipped {
                reason: format!(
                    "{}: folders nested more than {MAX_DEPTH} deep are not walked",
                    entry.display()
                ),
                path: entry,
            }),
            Err(err) => out.skipped.push(Skipped {
                path: entry,
                reason: err.to_string(),
            }),
        }
    }
}
