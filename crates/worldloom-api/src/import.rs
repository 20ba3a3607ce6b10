//! Reading trajectory files for import and writing exports, on top of the
//! `worldloom-core` formats.

use std::path::Path;

use worldloom_core as core;
use worldloom_core::{EdgeId, NodeId, Trajectory, TrajectoryFile};

use crate::error::{ApiError, ErrorCode};
use crate::scoring::score_nodes;
use crate::types::{
    ChangeKind, ExportFormat, ImportFailure, ImportFilesResponse, ImportedTrajectory,
};
use crate::{Studio, StudioEvent};

/// What reading one path gave.
pub(crate) struct ReadPath {
    pub trajectories: Vec<Trajectory>,
    pub warnings: Vec<String>,
    /// SHA-256 of the file's bytes (of the folder's files, for a folder).
    pub sha256: String,
}

/// Hashes a file, or every file of a folder in name order (each file's
/// name, a zero byte, its bytes, a zero byte), reading each file in pieces
/// rather than whole.
fn hash_path(path: &Path) -> Result<String, String> {
    fn feed(h: &mut worldloom_store::Sha256Hex, p: &Path) -> Result<(), String> {
        let file = std::fs::File::open(p).map_err(|e| format!("{}: {e}", p.display()))?;
        h.update_reader(file)
            .map_err(|e| format!("{}: {e}", p.display()))
    }
    let mut h = worldloom_store::Sha256Hex::default();
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect();
        entries.sort();
        for p in entries {
            h.update(
                p.file_name()
                    .map(|n| n.as_encoded_bytes())
                    .unwrap_or_default(),
            );
            h.update(&[0]);
            feed(&mut h, &p)?;
            h.update(&[0]);
        }
    } else {
        feed(&mut h, path)?;
    }
    Ok(h.finish())
}

/// Reads every trajectory in a file or folder. Errors are messages naming
/// the file and line or field.
pub(crate) fn read_path(path: &Path) -> Result<ReadPath, String> {
    if !path.exists() {
        return Err(format!("{}: no such file or folder", path.display()));
    }
    let sha256 = hash_path(path)?;
    let (trajectories, warnings) = read_trajectories(path)?;
    Ok(ReadPath {
        trajectories,
        warnings,
        sha256,
    })
}

/// Reads a path with the `worldloom-core` importers (format detected from
/// the contents; predictions sidecars attached).
fn read_trajectories(path: &Path) -> Result<(Vec<Trajectory>, Vec<String>), String> {
    let imported =
        core::import_path(path, &core::ImportOptions::default()).map_err(|e| e.to_string())?;
    Ok((
        imported.trajectories,
        imported.warnings.iter().map(ToString::to_string).collect(),
    ))
}

/// The tree cut down to the path from the root to `leaf`, renumbered.
pub(crate) fn only_path(t: &Trajectory, leaf: NodeId) -> core::error::Result<Trajectory> {
    let path = t.path_to(leaf)?;
    let mut out = t.clone();
    out.nodes = path
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| {
            let mut node = t.node(*n)?.clone();
            node.id = NodeId(i as u32);
            node.parent_edge = (i > 0).then(|| EdgeId(i as u32 - 1));
            Some(node)
        })
        .collect();
    out.edges = path
        .edges
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let mut edge = t.edge(*e)?.clone();
            edge.id = EdgeId(i as u32);
            edge.from = NodeId(i as u32);
            edge.to = NodeId(i as u32 + 1);
            edge.edited_from = None;
            Some(edge)
        })
        .collect();
    Ok(out)
}

/// Writes `t` in `format`: the text, the number of records and a file
/// extension.
pub(crate) fn export(
    t: &Trajectory,
    format: ExportFormat,
) -> Result<(String, u32, &'static str), ApiError> {
    match format {
        ExportFormat::Native => Ok((
            TrajectoryFile::new(vec![t.clone()]).to_json_string(),
            1,
            ".worldloom.json",
        )),
        ExportFormat::Agentworldbench => {
            let text = core::formats::awb::export(std::slice::from_ref(t));
            let rows = text.lines().count() as u32;
            Ok((text, rows, ".awb.jsonl"))
        }
        ExportFormat::Sft => {
            let text = core::formats::sft::export(
                std::slice::from_ref(t),
                &core::prompt::PromptOptions::default(),
            )
            .map_err(|e| ApiError::new(ErrorCode::ExportFailed, e.to_string()))?;
            let rows = text.lines().count() as u32;
            Ok((text, rows, ".sft.jsonl"))
        }
    }
}

/// Imports `paths`; with `strip`, that prefix is removed from every path
/// stored or reported (uploads written under a temporary folder).
pub(crate) fn import_paths(
    studio: &Studio,
    paths: &[String],
    strip: Option<&str>,
) -> Result<ImportFilesResponse, ApiError> {
    let shown = |s: &str| -> String {
        match strip {
            Some(prefix) => s.replace(prefix, ""),
            None => s.to_string(),
        }
    };
    let mut out = ImportFilesResponse {
        imported: Vec::new(),
        failed: Vec::new(),
        warnings: Vec::new(),
    };
    for full_path in paths {
        let path = &shown(full_path);
        let read = match read_path(Path::new(full_path)) {
            Ok(r) => r,
            Err(message) => {
                out.failed.push(ImportFailure::new(path, &shown(&message)));
                continue;
            }
        };
        out.warnings.extend(read.warnings.iter().map(|w| shown(w)));
        let mut ws = studio.lock()?;
        for mut t in read.trajectories {
            if let Some(p) = &t.source.path {
                t.source.path = Some(shown(p));
            }
            if let Some(existing) = ws.find_imported(&read.sha256, &t.id)? {
                out.imported.push(ImportedTrajectory {
                    trajectory_id: existing.0.to_string(),
                    name: t.id.clone(),
                    path: path.clone(),
                    added: false,
                });
                continue;
            }
            match ws.import_trajectory(&t, Some(&read.sha256)) {
                Ok(key) => {
                    // The states with something to score; the tree itself
                    // is dropped first (it can be hundreds of megabytes).
                    let to_score: Vec<NodeId> = t
                        .nodes
                        .iter()
                        .filter(|n| !n.predictions.is_empty() || !n.authored.is_empty())
                        .map(|n| n.id)
                        .collect();
                    let name = std::mem::take(&mut t.id);
                    drop(t);
                    score_nodes(&mut ws, key, &to_score)?;
                    out.imported.push(ImportedTrajectory {
                        trajectory_id: key.0.to_string(),
                        name,
                        path: path.clone(),
                        added: true,
                    });
                }
                Err(worldloom_store::StoreError::Invalid(message)) => {
                    out.failed.push(ImportFailure::new(path, &shown(&message)));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    if out.imported.iter().any(|i| i.added) {
        studio.emit(StudioEvent::WorkspaceChanged {
            trajectory_id: None,
            kind: ChangeKind::Import.into(),
        });
    }
    Ok(out)
}
