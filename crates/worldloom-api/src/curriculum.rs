//! Curriculum export (selected or tagged branches as AgentWorldBench or SFT
//! JSONL) and browser uploads.
//!
//! A curriculum row's target observation for a turn is the state's current
//! authored observation when there is one, else the real one, else the
//! chosen (or newest) prediction's. A branch is cut at the first turn with
//! none: that turn and the rest of the branch are left out and counted in
//! `skipped` (later turns would need its observation in their history).
//!
//! The export is deterministic: branches are written in (trajectory id,
//! leaf node) order, each at most once, rows by `worldloom-core`'s writers
//! (`formats::awb::export`, `formats::sft::export`). The recorded branch
//! of a trajectory imported from AgentWorldBench keeps its rows' original
//! fields; other branches are named `<trajectory id>@<leaf node>` and their
//! rows are rebuilt, so that they are read back as trajectories of their own.
//! AgentWorldBench exports round-trip through import.
//!
//! A turn whose state a run's row predicted, and that row carries labels or
//! a note, gets a `wl_annotations` field: one `{run, engine, labels, note}`
//! per such row, oldest run first (rows without either add nothing, so
//! exports of unlabelled workspaces are unchanged).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Component, Path};

use worldloom_core as core;
use worldloom_core::NodeId;

use crate::Studio;
use crate::branches::{live_branches, live_tree};
use crate::error::{ApiError, ErrorCode};
use crate::ids::{parse_branch_id, parse_trajectory_id};
use crate::import;
use crate::types::*;

/// One branch cut to its exportable turns.
fn branch_trajectory(
    st: &worldloom_store::StoredTrajectory,
    leaf: NodeId,
    recorded: bool,
) -> Result<(core::Trajectory, u32), ApiError> {
    // Work on the live tree (renumbered) so that ids match what exports of
    // the same workspace always give.
    let tree = live_tree(st);
    let live_leaf = st
        .live_nodes
        .iter()
        .position(|n| *n == leaf)
        .map(|i| NodeId(i as u32))
        .unwrap_or(leaf);
    let mut t =
        import::only_path(&tree, live_leaf).map_err(|e| ApiError::internal(e.to_string()))?;
    if !recorded {
        t.id = format!("{}@{}", t.id, leaf.0);
        for e in &mut t.edges {
            e.awb_row = None;
        }
    }
    let mut keep = t.nodes.len();
    for (i, node) in t.nodes.iter_mut().enumerate().skip(1) {
        let target = node
            .current_authored()
            .map(|a| a.observation.clone())
            .or_else(|| node.real.clone())
            .or_else(|| {
                node.preferred_prediction().and_then(|p| {
                    p.observation
                        .as_ref()
                        .map(|text| core::Observation::new(p.representation, text.clone()))
                })
            });
        node.predictions.clear();
        node.authored.clear();
        node.chosen_prediction = None;
        match target {
            Some(o) => node.real = Some(o),
            None => {
                keep = i;
                break;
            }
        }
    }
    let skipped = (t.nodes.len() - keep) as u32;
    t.nodes.truncate(keep);
    t.edges.truncate(keep.saturating_sub(1));
    Ok((t, skipped))
}

/// Per 1-based turn of one exported branch, the annotations of the run rows
/// on its state.
type Annotations = std::collections::BTreeMap<u64, Vec<serde_json::Value>>;

/// The turn a curriculum line stands for: AgentWorldBench's `turn_idx`, or
/// the `<trajectory>#<turn>` of an SFT line's `id`.
fn line_turn(row: &serde_json::Value, format: CurriculumFormat) -> Option<u64> {
    match format {
        CurriculumFormat::Agentworldbench => row.get("turn_idx")?.as_u64(),
        CurriculumFormat::Sft => row.get("id")?.as_str()?.rsplit_once('#')?.1.parse().ok(),
    }
}

/// Adds `wl_annotations` to the lines of `content` whose turn has
/// annotations: each annotated trajectory is exported alone to learn its
/// lines (the whole export may order rows across trajectories), and those
/// lines are rewritten where they appear.
fn annotate(
    content: String,
    trajectories: &[core::Trajectory],
    annotations: &[Annotations],
    format: CurriculumFormat,
) -> Result<String, ApiError> {
    let mut rewritten: std::collections::HashMap<String, String> = Default::default();
    for (t, notes) in trajectories.iter().zip(annotations) {
        if notes.is_empty() {
            continue;
        }
        let alone = ExportFormat::from(format)
            .export(std::slice::from_ref(t))
            .map_err(|e| ApiError::new(ErrorCode::ExportFailed, e.to_string()))?
            .text;
        for line in alone.lines() {
            let Ok(mut row) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let Some(items) = line_turn(&row, format).and_then(|turn| notes.get(&turn)) else {
                continue;
            };
            if let Some(obj) = row.as_object_mut() {
                obj.insert(
                    "wl_annotations".into(),
                    serde_json::Value::from(items.clone()),
                );
                rewritten.insert(line.to_owned(), row.to_string());
            }
        }
    }
    if rewritten.is_empty() {
        return Ok(content);
    }
    let mut out = String::with_capacity(content.len());
    for line in content.lines() {
        out.push_str(rewritten.get(line).map_or(line, String::as_str));
        out.push('\n');
    }
    Ok(out)
}

/// `export_curriculum`: selected (and tagged) branches as JSONL.
///
/// # Errors
/// [`ErrorCode::BadRequest`] for an empty selection, bad ids or a blank
/// tag; [`ErrorCode::NotFound`] for an unknown branch;
/// [`ErrorCode::ExportFailed`] when the file cannot be written.
pub fn export_curriculum(
    studio: &Studio,
    req: ExportCurriculumRequest,
) -> Result<ExportCurriculumResponse, ApiError> {
    let mut wanted: BTreeSet<(i64, u32)> = BTreeSet::new();
    for b in &req.selection {
        let key = parse_trajectory_id(&b.trajectory_id)?;
        let leaf = parse_branch_id(&b.branch_id)?;
        wanted.insert((key.0, leaf.0));
    }
    let ws = studio.lock()?;
    if let Some(tag) = &req.tag {
        let tag = tag.trim();
        if tag.is_empty() {
            return Err(ApiError::bad_request("tag: empty"));
        }
        for t in ws.tags()?.into_iter().filter(|t| t.tag == tag) {
            match t.node {
                Some(n) => {
                    wanted.insert((t.trajectory.0, n.0));
                }
                None => {
                    // A tagged trajectory: every branch.
                    let st = ws.load_trajectory(t.trajectory)?;
                    for p in live_branches(&st) {
                        if let Some(leaf) = p.nodes.last() {
                            wanted.insert((t.trajectory.0, leaf.0));
                        }
                    }
                }
            }
        }
    }
    if wanted.is_empty() {
        return Err(ApiError::bad_request(
            "selection: no branch selected (and no branch carries the tag)",
        ));
    }
    let mut trajectories = Vec::new();
    let mut annotations: Vec<Annotations> = Vec::new();
    let labels = ws.row_labels(None)?;
    let notes = ws.row_notes(None)?;
    let run_names: std::collections::HashMap<i64, (String, String)> = ws
        .list_runs()?
        .into_iter()
        .map(|r| (r.id.0, (r.name, r.engine)))
        .collect();
    let mut skipped = 0u32;
    let mut loaded: Option<worldloom_store::StoredTrajectory> = None;
    for (key, leaf) in &wanted {
        if loaded.as_ref().map(|s| s.key.0) != Some(*key) {
            loaded = Some(ws.load_trajectory(worldloom_store::TrajectoryKey(*key))?);
        }
        let Some(st) = loaded.as_ref() else { continue };
        let paths = live_branches(st);
        let index = paths
            .iter()
            .position(|p| p.nodes.last() == Some(&NodeId(*leaf)))
            .ok_or_else(|| {
                ApiError::not_found(format!(
                    "trajectory {key} has no branch ending at node {leaf}"
                ))
            })?;
        let (t, s) = branch_trajectory(st, NodeId(*leaf), index == 0)?;
        skipped += s;
        if !t.edges.is_empty() {
            let mut notes_of_turns = Annotations::new();
            for (turn, node) in paths[index]
                .nodes
                .iter()
                .enumerate()
                .take(t.nodes.len())
                .skip(1)
            {
                let mut items = Vec::new();
                for row in ws.run_rows_of_node(st.key, *node)? {
                    let l = labels.get(&row.id).cloned().unwrap_or_default();
                    let n = notes.get(&row.id).cloned();
                    if l.is_empty() && n.is_none() {
                        continue;
                    }
                    let (name, engine) = run_names.get(&row.run.0).cloned().unwrap_or_default();
                    items.push(
                        serde_json::json!({"run": name, "engine": engine, "labels": l, "note": n}),
                    );
                }
                if !items.is_empty() {
                    notes_of_turns.insert(turn as u64, items);
                }
            }
            annotations.push(notes_of_turns);
            trajectories.push(t);
        }
    }
    drop(ws);
    let exported = ExportFormat::from(req.format)
        .export(&trajectories)
        .map_err(|e| ApiError::new(ErrorCode::ExportFailed, e.to_string()))?;
    let (content, ext) = (exported.text, exported.extension);
    let content = annotate(content, &trajectories, &annotations, req.format)?;
    let rows_total = content.lines().count() as u32;
    let preview = content
        .lines()
        .take(req.preview_limit as usize)
        .map(str::to_owned)
        .collect();
    let bytes = content.len() as u64;
    let path = crate::import::write_export_file(req.path.as_deref(), &content)?;
    Ok(ExportCurriculumResponse {
        rows_total,
        preview,
        content: path.is_none().then_some(content),
        path,
        bytes,
        skipped,
        file_name: format!("curriculum{ext}"),
    })
}

/// A relative upload path as safe components, or why it is refused.
fn safe_relative(path: &str) -> Result<std::path::PathBuf, String> {
    let normalised = path.replace('\\', "/");
    if normalised.trim().is_empty() {
        return Err("empty path".into());
    }
    if normalised.starts_with('/') || normalised.contains(':') {
        return Err("absolute paths are refused".into());
    }
    let p = Path::new(&normalised);
    let mut out = std::path::PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            _ => return Err("`..` and absolute components are refused".into()),
        }
    }
    if out.as_os_str().is_empty() {
        return Err("empty path".into());
    }
    Ok(out)
}

/// A browser upload as it arrives: each file written once, under a private
/// temporary folder, at its relative path (`..` and absolute paths refused),
/// and hashed as it is written, then imported from there
/// ([`UploadFolder::import`]: the importers read each file once, the hash
/// is not read again) and removed. The HTTP server streams a request body
/// into one (`POST /api/upload`).
#[derive(Debug)]
pub struct UploadFolder {
    dir: tempfile::TempDir,
    tops: BTreeSet<String>,
    /// The SHA-256 of each top-level file, by its path in the folder.
    hashes: BTreeMap<String, String>,
}

/// One uploaded file being written ([`UploadFolder::create`]): what is
/// written is hashed on the way.
#[derive(Debug)]
pub struct UploadFile {
    file: std::fs::File,
    hash: worldloom_store::Sha256Hex,
    relative_path: String,
    /// Its path in the folder, when it is a top-level file.
    top: Option<String>,
}

impl UploadFile {
    /// The path it was created under, as the client gave it.
    pub fn relative_path(&self) -> &str {
        &self.relative_path
    }

    /// Writes (and hashes) the next bytes of the file.
    ///
    /// # Errors
    /// [`ErrorCode::ImportFailed`] when the file cannot be written.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), ApiError> {
        self.hash.update(bytes);
        self.file.write_all(bytes).map_err(|e| {
            ApiError::new(
                ErrorCode::ImportFailed,
                format!("{}: {e}", self.relative_path),
            )
        })
    }
}

impl UploadFolder {
    /// A new, empty upload folder.
    ///
    /// # Errors
    /// [`ErrorCode::ImportFailed`] when the temporary folder cannot be made.
    pub fn new() -> Result<Self, ApiError> {
        let dir = tempfile::Builder::new()
            .prefix("worldloom-upload-")
            .tempdir()
            .map_err(|e| {
                ApiError::new(ErrorCode::ImportFailed, format!("temporary folder: {e}"))
            })?;
        Ok(UploadFolder {
            dir,
            tops: BTreeSet::new(),
            hashes: BTreeMap::new(),
        })
    }

    /// Creates (or truncates) the file of `relative_path` (`/`- or
    /// `\`-separated), with its folders; write its bytes with
    /// [`UploadFile::write`], then hand it to [`UploadFolder::finish`].
    ///
    /// # Errors
    /// [`ErrorCode::BadRequest`] for an empty, absolute or `..` path;
    /// [`ErrorCode::ImportFailed`] when the file cannot be created.
    pub fn create(&mut self, relative_path: &str) -> Result<UploadFile, ApiError> {
        let rel = safe_relative(relative_path)
            .map_err(|m| ApiError::bad_request(format!("`{relative_path}`: {m}")))?;
        let target = self.dir.path().join(&rel);
        let failed = |e: std::io::Error| {
            ApiError::new(ErrorCode::ImportFailed, format!("{relative_path}: {e}"))
        };
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(failed)?;
        }
        let file = std::fs::File::create(&target).map_err(failed)?;
        if let Some(first) = rel.components().next() {
            self.tops
                .insert(first.as_os_str().to_string_lossy().into_owned());
        }
        Ok(UploadFile {
            file,
            hash: worldloom_store::Sha256Hex::default(),
            relative_path: relative_path.to_owned(),
            top: (rel.components().count() == 1).then(|| target.display().to_string()),
        })
    }

    /// Ends a file written with [`UploadFile::write`]: its bytes are flushed
    /// and, for a top-level file, its hash is kept for the import.
    ///
    /// # Errors
    /// [`ErrorCode::ImportFailed`] when the file cannot be flushed.
    pub fn finish(&mut self, mut file: UploadFile) -> Result<(), ApiError> {
        file.file.flush().map_err(|e| {
            ApiError::new(
                ErrorCode::ImportFailed,
                format!("{}: {e}", file.relative_path),
            )
        })?;
        // A file inside a folder: the folder is hashed when imported.
        if let Some(top) = file.top {
            self.hashes.insert(top, file.hash.finish());
        }
        Ok(())
    }

    /// Imports each top-level entry (a file, or a folder such as an Android
    /// or OSWorld trajectory) as `import_files` does, with the uploaded
    /// relative paths as source paths; the folder is removed afterwards.
    ///
    /// # Errors
    /// [`ErrorCode::BadRequest`] when nothing was uploaded; as
    /// `import_files` otherwise (a file that does not import is listed in
    /// `failed`).
    pub fn import(self, studio: &Studio) -> Result<ImportFilesResponse, ApiError> {
        if self.tops.is_empty() {
            return Err(ApiError::bad_request("files: nothing uploaded"));
        }
        // A predictions sidecar beside an uploaded trajectory is read with it
        // (the importer looks for it there); one uploaded alone goes to the
        // importer, which refuses it by name, and AgentWorldBench rows under a
        // sidecar's name (the official `eval.py` output) import as rows.
        let paths: Vec<String> = self
            .tops
            .iter()
            .map(|t| self.dir.path().join(t))
            .filter(|p| {
                !(p.is_file()
                    && worldloom_core::formats::sidecar::refused_alone(p).is_some()
                    && worldloom_core::formats::sidecar::owner_beside(p).is_some())
            })
            .map(|p| p.display().to_string())
            .collect();
        let prefix = format!("{}/", self.dir.path().display());
        import::import_paths_hashed(studio, &paths, Some(&prefix), &self.hashes)
    }
}
