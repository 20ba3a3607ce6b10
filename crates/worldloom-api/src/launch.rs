//! What `worldloom serve [PATH…] [--workspace FILE]` and the desktop app
//! (`worldloom-studio [PATH…] [--workspace FILE]`) do with their paths, in
//! one place: split them into the workspace to open and the trajectory files
//! to import ([`plan_paths`]), open the workspace ([`Studio::open`]) and
//! import the files ([`import_paths`]).
//!
//! Each path is either a workspace file (an SQLite file carrying the
//! Worldloom application id, see `worldloom_store::is_workspace_file`) or a
//! trajectory file or folder in any format `worldloom import` reads.
//! Importing the same file twice adds nothing.
//!
//! It lives in the API crate so that both shells use it: the HTTP server
//! (`worldloom-cli` `serve`) and the desktop app, which knows nothing of
//! HTTP.

use std::path::{Path, PathBuf};

use crate::Studio;
use crate::types::ImportFilesRequest;

/// Why the paths given on a command line cannot be opened.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// A path does not exist.
    #[error("{}: no such file or folder", .0.display())]
    Missing(PathBuf),
    /// `--workspace` and a workspace among the paths were both given.
    #[error(
        "{}: a workspace was given with --workspace ({}); name one workspace only",
        .path.display(),
        .flag.display()
    )]
    WorkspaceTwice {
        /// The workspace among the paths.
        path: PathBuf,
        /// The `--workspace` value.
        flag: PathBuf,
    },
    /// Two workspaces among the paths.
    #[error("{} and {} are both workspaces; open one at a time", .0.display(), .1.display())]
    TwoWorkspaces(PathBuf, PathBuf),
    /// The workspace file could not be opened or created.
    #[error("{}: {message}", .path.display())]
    Open {
        /// The workspace file.
        path: PathBuf,
        /// The store's message (not a workspace, from a newer build, I/O).
        message: String,
    },
    /// The import command itself failed (the workspace could not be
    /// written).
    #[error("import: {0}")]
    Import(String),
}

/// The workspace to open and the files or folders to import into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchPlan {
    /// The workspace file (created when missing).
    pub workspace: PathBuf,
    /// Trajectory files and folders, in command-line order.
    pub imports: Vec<PathBuf>,
}

/// Splits `paths` into the workspace to open and the files to import. The
/// workspace is `workspace` (`--workspace`), else the one workspace file
/// among `paths`, else `default_workspace`.
///
/// # Errors
/// [`LaunchError::Missing`] for a path that does not exist (checked first,
/// in order); [`LaunchError::WorkspaceTwice`] / [`LaunchError::TwoWorkspaces`]
/// when more than one workspace is named.
pub fn plan_paths(
    paths: &[PathBuf],
    workspace: Option<&Path>,
    default_workspace: &Path,
) -> Result<LaunchPlan, LaunchError> {
    let mut workspaces = Vec::new();
    let mut imports = Vec::new();
    for p in paths {
        if !p.exists() {
            return Err(LaunchError::Missing(p.clone()));
        }
        if is_workspace_file(p) {
            workspaces.push(p.clone());
        } else {
            imports.push(p.clone());
        }
    }
    let workspace = match (workspace, workspaces.as_slice()) {
        (Some(w), []) => w.to_path_buf(),
        (Some(w), [other, ..]) => {
            return Err(LaunchError::WorkspaceTwice {
                path: other.clone(),
                flag: w.to_path_buf(),
            });
        }
        (None, [one]) => one.clone(),
        (None, []) => default_workspace.to_path_buf(),
        (None, [first, second, ..]) => {
            return Err(LaunchError::TwoWorkspaces(first.clone(), second.clone()));
        }
    };
    Ok(LaunchPlan { workspace, imports })
}

/// Opens (or creates) the plan's workspace.
///
/// # Errors
/// [`LaunchError::Open`] naming the file.
pub fn open_workspace(path: &Path) -> Result<Studio, LaunchError> {
    Studio::open(path).map_err(|e| LaunchError::Open {
        path: path.to_path_buf(),
        message: e.message,
    })
}

/// What importing the command-line paths gave.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportSummary {
    /// Trajectories added to the workspace.
    pub added: usize,
    /// Trajectories found already imported (same file, nothing added), a
    /// run's trajectories already in the workspace included.
    pub kept: usize,
    /// Runs (eval outputs) imported, as `NAME (N rows)`, with
    /// ` (already imported)` for a file imported before.
    pub runs: Vec<String>,
    /// Problems that did not stop an import (`path:line: message`).
    pub warnings: Vec<String>,
    /// Files that did not import, one message each naming the file and the
    /// line or field.
    pub failures: Vec<String>,
}

/// Imports `paths` into the studio's workspace (the `import_files` command,
/// which also tells event listeners). Files that fail are listed in
/// [`ImportSummary::failures`]; the others are imported all the same.
///
/// # Errors
/// [`LaunchError::Import`] when the command itself fails (storage).
pub fn import_paths(studio: &Studio, paths: &[PathBuf]) -> Result<ImportSummary, LaunchError> {
    if paths.is_empty() {
        return Ok(ImportSummary::default());
    }
    let request = ImportFilesRequest {
        paths: paths.iter().map(|p| p.display().to_string()).collect(),
    };
    let resp = crate::commands::import_files(studio, request)
        .map_err(|e| LaunchError::Import(e.to_string()))?;
    let added = resp.imported.iter().filter(|i| i.added).count();
    Ok(ImportSummary {
        added,
        kept: resp.imported.len() - added,
        runs: resp
            .runs
            .iter()
            .map(|r| {
                format!(
                    "{} ({} rows){}",
                    r.name,
                    r.rows,
                    if r.added { "" } else { " (already imported)" }
                )
            })
            .collect(),
        warnings: resp.warnings,
        failures: resp
            .failed
            .into_iter()
            .map(|f| {
                if f.message.contains(&f.path) {
                    f.message
                } else {
                    format!("{}: {}", f.path, f.message)
                }
            })
            .collect(),
    })
}

/// Whether `path` is a Worldloom workspace (an SQLite file with the
/// Worldloom application id), not a trajectory file to import.
pub fn is_workspace_file(path: &Path) -> bool {
    path.is_file() && worldloom_store::is_workspace_file(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_splits_workspaces_and_imports() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("a.worldloom");
        drop(worldloom_store::Workspace::open(&ws).expect("create"));
        let traj = dir.path().join("t.json");
        std::fs::write(&traj, "{}").expect("write");
        let default = PathBuf::from("default.worldloom");

        let plan = plan_paths(&[ws.clone(), traj.clone()], None, &default).expect("plan");
        assert_eq!(plan.workspace, ws);
        assert_eq!(plan.imports, vec![traj.clone()]);

        let plan = plan_paths(std::slice::from_ref(&traj), None, &default).expect("plan");
        assert_eq!(plan.workspace, default);
        assert_eq!(plan.imports, vec![traj.clone()]);

        let other = dir.path().join("b.worldloom");
        let plan = plan_paths(std::slice::from_ref(&traj), Some(&other), &default).expect("plan");
        assert_eq!(plan.workspace, other);

        let err = plan_paths(std::slice::from_ref(&ws), Some(&other), &default)
            .expect_err("two workspaces");
        assert!(err.to_string().contains("a.worldloom"), "{err}");
        let ws2 = dir.path().join("c.worldloom");
        drop(worldloom_store::Workspace::open(&ws2).expect("create"));
        let err = plan_paths(&[ws.clone(), ws2], None, &default).expect_err("two workspaces");
        assert!(err.to_string().contains("both workspaces"), "{err}");

        let missing = dir.path().join("missing.json");
        let err = plan_paths(&[missing], None, &default).expect_err("missing");
        assert!(
            err.to_string().contains("missing.json: no such file"),
            "{err}"
        );
    }

    #[test]
    fn import_reports_added_kept_and_failures() {
        let dir = tempfile::tempdir().expect("tempdir");
        let studio = open_workspace(&dir.path().join("w.worldloom")).expect("open");
        let sample = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../samples/android/harbor-messenger_send_trajectory");
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{\"format\": 7").expect("write");

        let first = import_paths(&studio, std::slice::from_ref(&sample)).expect("import");
        assert_eq!((first.added, first.kept), (1, 0), "{first:?}");
        assert!(first.failures.is_empty(), "{first:?}");
        let again = import_paths(&studio, &[sample, bad]).expect("import");
        assert_eq!((again.added, again.kept), (0, 1), "{again:?}");
        assert_eq!(again.failures.len(), 1, "{again:?}");
        assert!(again.failures[0].contains("bad.json"), "{again:?}");
    }

    #[test]
    fn a_folder_of_trajectories_imports_each_with_one_line_per_failure() {
        let dir = tempfile::tempdir().expect("tempdir");
        let studio = open_workspace(&dir.path().join("w.worldloom")).expect("open");
        let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples");
        let all = import_paths(&studio, std::slice::from_ref(&samples)).expect("import");
        assert_eq!((all.added, all.kept), (16, 0), "{all:?}");
        assert!(all.failures.is_empty(), "{all:?}");

        let runs = dir.path().join("runs");
        std::fs::create_dir_all(runs.join("task-2")).expect("runs");
        std::fs::copy(
            samples.join("web/agentlab_larkmail-reply_6steps.json"),
            runs.join("task-1.json"),
        )
        .expect("copy");
        std::fs::write(runs.join("task-2/steps.json"), "{\"format\": 7").expect("bad");
        let some = import_paths(&studio, &[runs]).expect("import");
        assert_eq!((some.added, some.kept), (1, 0), "{some:?}");
        assert_eq!(some.failures.len(), 1, "{some:?}");
        assert!(some.failures[0].contains("task-2/steps.json"), "{some:?}");
    }

    #[test]
    fn open_names_a_file_that_is_not_a_workspace() {
        let dir = tempfile::tempdir().expect("tempdir");
        let not_ws = dir.path().join("notes.worldloom");
        std::fs::write(&not_ws, "plain text, not SQLite").expect("write");
        let err = open_workspace(&not_ws).expect_err("not a workspace");
        assert!(err.to_string().contains("notes.worldloom"), "{err}");
    }
}
