//! Importing trajectory files and exporting a trajectory or branch.

use crate::Studio;
use crate::branches::{live_branches, live_tree};
use crate::error::{ApiError, ErrorCode};
use crate::ids::{parse_branch_id, parse_trajectory_id};
use crate::import;
use crate::types::*;

/// `import_files`: imports trajectory files or folders (every format
/// `worldloom-core` reads) into the workspace. A file already imported (same
/// bytes, same trajectory id) is reported, not added again.
///
/// # Errors
/// Never for a bad file (those are listed in `failed`); [`crate::ErrorCode::Storage`]
/// when the workspace cannot be written.
pub fn import_files(
    studio: &Studio,
    req: ImportFilesRequest,
) -> Result<ImportFilesResponse, ApiError> {
    import::import_paths(studio, &req.paths, None)
}

/// `export`: a trajectory, or one branch of it, as a native file,
/// AgentWorldBench JSONL or SFT JSONL. A native file written to `path`
/// gets its states' screenshots in the sidecar folder beside it
/// (`worldloom_core::native::write_screenshots`).
///
/// # Errors
/// [`crate::ErrorCode::NotFound`], [`crate::ErrorCode::BadRequest`],
/// [`crate::ErrorCode::Unsupported`] for a format this build cannot write,
/// [`crate::ErrorCode::ExportFailed`] when the file cannot be written.
pub fn export(studio: &Studio, req: ExportRequest) -> Result<ExportResponse, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let st = studio.lock()?.load_trajectory(key)?;
    let mut tree = live_tree(&st);
    if let Some(branch) = &req.branch_id {
        let leaf = parse_branch_id(branch)?;
        if !live_branches(&st)
            .iter()
            .any(|p| p.nodes.last() == Some(&leaf))
        {
            return Err(ApiError::not_found(format!(
                "trajectory {} has no branch ending at node {}",
                key.0, leaf.0
            )));
        }
        tree = import::only_path(&tree, leaf).map_err(|e| ApiError::internal(e.to_string()))?;
    }
    // A native file written to a path carries its screenshots in a sidecar
    // folder beside it; one sent back as content only names them.
    if let (ExportFormat::Native, Some(p)) = (req.format, &req.path) {
        let ws = studio.lock()?;
        worldloom_core::native::write_screenshots(
            std::path::Path::new(p),
            std::slice::from_mut(&mut tree),
            |shot| {
                ws.screenshot_bytes(&shot.sha256)
                    .ok()
                    .flatten()
                    .map(|b| b.bytes)
            },
        )
        .map_err(|e| ApiError::new(ErrorCode::ExportFailed, e.to_string()))?;
    }
    let (content, record_count, ext) = import::export(&tree, req.format)?;
    let stem: String = tree
        .id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let file_name = format!("{stem}{ext}");
    let written_to = match &req.path {
        Some(p) => {
            std::fs::write(p, &content)
                .map_err(|e| ApiError::new(ErrorCode::ExportFailed, format!("{p}: {e}")))?;
            Some(p.clone())
        }
        None => None,
    };
    Ok(ExportResponse {
        content,
        file_name,
        written_to,
        record_count,
    })
}

/// Every trajectory of the workspace as its live tree (what `export` writes
/// for each in the native format), in the order `list_trajectories` gives:
/// `worldloom export` of a workspace file, the Python package's `load`.
///
/// # Errors
/// [`crate::ErrorCode::Storage`] when the workspace cannot be read.
pub fn workspace_trajectories(
    studio: &Studio,
) -> Result<Vec<worldloom_core::Trajectory>, ApiError> {
    let ws = studio.lock()?;
    ws.list_trajectories()?
        .into_iter()
        .map(|row| Ok(live_tree(&ws.load_trajectory(row.key)?)))
        .collect()
}
