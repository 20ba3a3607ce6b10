//! Recent workspaces: a small JSON file in the app's config folder
//! (`recent-workspaces.json`, `{"version": 1, "workspaces": ["/abs/a.worldloom", …]}`),
//! newest first, at most [`MAX_RECENT`] entries.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How many workspaces the list keeps.
pub const MAX_RECENT: usize = 10;

/// The file's name inside the app config folder.
pub const FILE_NAME: &str = "recent-workspaces.json";

#[derive(Debug, Default, Serialize, Deserialize)]
struct RecentFile {
    version: u32,
    workspaces: Vec<PathBuf>,
}

/// Reads the list. A missing file is an empty list; an unreadable or
/// malformed one is reported on stderr (naming the file) and read as empty,
/// so a broken list never stops the app from starting.
pub fn load(file: &Path) -> Vec<PathBuf> {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            eprintln!(
                "warning: {}: {e}; recent workspaces ignored",
                file.display()
            );
            return Vec::new();
        }
    };
    match serde_json::from_str::<RecentFile>(&text) {
        Ok(r) => r.workspaces,
        Err(e) => {
            eprintln!(
                "warning: {}: line {}, column {}: {e}; recent workspaces ignored",
                file.display(),
                e.line(),
                e.column()
            );
            Vec::new()
        }
    }
}

/// Puts `workspace` first in the list in `file` (removing an older entry
/// for the same path and entries past [`MAX_RECENT`]), writes it (through a
/// temporary file and a rename, so a crash leaves the old list), and
/// returns the new list.
///
/// # Errors
/// The I/O error of creating the folder or writing the file.
pub fn remember(file: &Path, workspace: &Path) -> io::Result<Vec<PathBuf>> {
    let mut list = load(file);
    list.retain(|p| p != workspace);
    list.insert(0, workspace.to_path_buf());
    list.truncate(MAX_RECENT);
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let json = serde_json::to_string_pretty(&RecentFile {
        version: 1,
        workspaces: list.clone(),
    })
    .map_err(io::Error::other)?;
    let tmp = file.with_extension("json.tmp");
    std::fs::write(&tmp, json + "\n")?;
    std::fs::rename(&tmp, file)?;
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remember_puts_newest_first_without_duplicates_and_caps_the_list() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("config").join(FILE_NAME);
        assert!(load(&file).is_empty());

        remember(&file, Path::new("/w/a.worldloom")).expect("write");
        remember(&file, Path::new("/w/b.worldloom")).expect("write");
        let list = remember(&file, Path::new("/w/a.worldloom")).expect("write");
        assert_eq!(
            list,
            vec![
                PathBuf::from("/w/a.worldloom"),
                PathBuf::from("/w/b.worldloom")
            ]
        );
        assert_eq!(load(&file), list);

        for i in 0..15 {
            remember(&file, &PathBuf::from(format!("/w/{i}.worldloom"))).expect("write");
        }
        let list = load(&file);
        assert_eq!(list.len(), MAX_RECENT);
        assert_eq!(list[0], PathBuf::from("/w/14.worldloom"));
        assert_eq!(list[MAX_RECENT - 1], PathBuf::from("/w/5.worldloom"));
    }

    #[test]
    fn a_malformed_file_reads_as_empty_and_is_replaced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join(FILE_NAME);
        std::fs::write(&file, "{\"version\": 1, \"workspaces\": [").expect("write");
        assert!(load(&file).is_empty());
        let list = remember(&file, Path::new("/w/a.worldloom")).expect("write");
        assert_eq!(list, vec![PathBuf::from("/w/a.worldloom")]);
        let text = std::fs::read_to_string(&file).expect("read");
        assert!(text.contains("\"version\": 1"), "{text}");
    }
}
