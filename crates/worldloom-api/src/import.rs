//! Reading trajectory files for import and writing exports, on top of the
//! `worldloom-core` formats.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use worldloom_core as core;
use worldloom_core::{EdgeId, NodeId, Trajectory};

use crate::error::{ApiError, ErrorCode};
use crate::scoring::score_nodes;
use crate::types::{
    ChangeKind, ExportFormat, ImportFailure, ImportFilesResponse, ImportedRun, ImportedTrajectory,
};
use crate::{Studio, StudioEvent};

/// What reading one path gave.
pub(crate) struct ReadPath {
    pub trajectories: Vec<Trajectory>,
    pub warnings: Vec<String>,
    /// SHA-256 of the file's bytes (of the folder's files, for a folder).
    pub sha256: String,
}

/// The most bytes one imported path may hold (a file, or every file under a
/// folder together): 4 GiB. A larger one, or one that grows past it while
/// it is read, is refused with the path and this limit.
pub const IMPORT_MAX_BYTES: u64 = 4 << 30;

/// Folders nested deeper than this under an imported folder are refused
/// (a link back to a parent would otherwise be walked for ever).
const IMPORT_MAX_DEPTH: usize = 16;

/// A request's "abandoned" flag: a door (the HTTP server) sets it when the
/// client goes away; a command run under it ([`Abandoned::run`]) stops
/// reading imported files at the next 64 KiB and reports the import as
/// abandoned, instead of keeping a core busy for nobody.
#[derive(Debug, Clone, Default)]
pub struct Abandoned(Arc<AtomicBool>);

thread_local! {
    static CURRENT_REQUEST: RefCell<Option<Abandoned>> = const { RefCell::new(None) };
}

impl Abandoned {
    /// A flag not set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Marks the request abandoned (from any thread).
    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether the request was abandoned.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Runs `f` on this thread as the request this flag belongs to: the
    /// imports `f` makes (`import_files`, an upload's import) check it while
    /// reading.
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        struct Restore(Option<Abandoned>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                CURRENT_REQUEST.with(|c| *c.borrow_mut() = previous);
            }
        }
        let previous = CURRENT_REQUEST.with(|c| c.borrow_mut().replace(self.clone()));
        let _restore = Restore(previous);
        f()
    }
}

/// Whether the request this thread serves was abandoned.
fn abandoned() -> bool {
    CURRENT_REQUEST.with(|c| c.borrow().as_ref().is_some_and(Abandoned::is_set))
}

/// Why an import stopped when its request was abandoned.
const ABANDONED: &str = "the import was abandoned (the client went away); nothing was read further";

/// The message of an import stopped because its request was abandoned.
fn abandoned_message(path: &Path) -> String {
    format!("{}: {ABANDONED}", path.display())
}

/// Checks what an import would read under `path` before anything is read:
/// regular files only (a device such as `/dev/zero`, a FIFO or a socket
/// never ends or blocks), folders at most [`IMPORT_MAX_DEPTH`] deep, and at
/// most `limit` bytes in all. Returns the total size.
fn check_readable(path: &Path, limit: u64) -> Result<u64, String> {
    fn walk(p: &Path, depth: usize, limit: u64, total: &mut u64) -> Result<(), String> {
        if abandoned() {
            return Err(abandoned_message(p));
        }
        // Links are followed: a link to a regular file is that file.
        let meta = std::fs::metadata(p).map_err(|e| format!("{}: {e}", p.display()))?;
        if meta.is_dir() {
            if depth >= IMPORT_MAX_DEPTH {
                return Err(format!(
                    "{}: folders nested more than {IMPORT_MAX_DEPTH} deep are not imported",
                    p.display()
                ));
            }
            let entries = std::fs::read_dir(p).map_err(|e| format!("{}: {e}", p.display()))?;
            for entry in entries {
                let entry = entry.map_err(|e| format!("{}: {e}", p.display()))?;
                walk(&entry.path(), depth + 1, limit, total)?;
            }
            return Ok(());
        }
        if !meta.is_file() {
            return Err(format!(
                "{}: not a regular file ({}); only regular files and folders are imported",
                p.display(),
                kind_of(&meta)
            ));
        }
        *total = total.saturating_add(meta.len());
        if *total > limit {
            return Err(format!(
                "{}: over the import limit of {limit} bytes ({} GiB); split the file or import its parts",
                p.display(),
                limit >> 30
            ));
        }
        Ok(())
    }
    let mut total = 0;
    walk(path, 0, limit, &mut total)?;
    Ok(total)
}

/// What a path that is not a regular file or folder is, for messages.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    let _ = meta;
    "not a file"
}

/// Reads every trajectory in a file or folder. Errors are messages naming
/// the file and line or field; a path that is not a regular file or folder
/// (or holds one), over [`IMPORT_MAX_BYTES`], or whose request was
/// abandoned is refused before the importers read it.
///
/// Each file is read once, by the importers, and hashed in that same pass
/// (`worldloom_core::input`); the pass stops at the next 64 KiB when the
/// request is abandoned, or when the files grow past the limit while read.
/// The fingerprint is [`fingerprint`] of what was read; `sha256`, when
/// given, is the file's hash taken while it was written (an upload) and is
/// used as it is.
pub(crate) fn read_path(path: &Path, sha256: Option<&str>) -> Result<ReadPath, String> {
    if !path.exists() {
        return Err(format!("{}: no such file or folder", path.display()));
    }
    check_readable(path, IMPORT_MAX_BYTES)?;
    let request = CURRENT_REQUEST.with(|c| c.borrow().clone());
    let limits = core::input::ReadLimits {
        max_bytes: IMPORT_MAX_BYTES,
        cancel: request.map(|flag| -> core::input::CancelTest {
            Arc::new(move || flag.is_set().then(|| ABANDONED.to_owned()))
        }),
    };
    let (read, reads) = core::input::with_reads(limits, || read_trajectories(path));
    let (trajectories, warnings) = read?;
    let sha256 = match sha256 {
        Some(h) => h.to_owned(),
        None => fingerprint(path, &reads.files),
    };
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

/// The fingerprint an imported path is known by (a second import of the
/// same contents is recognised by it): for a file the importers read, the
/// SHA-256 of its bytes; for a folder, the SHA-256 of every file read under
/// it, in path order, each as its path relative to the folder, a zero byte,
/// its SHA-256 in hex and a zero byte.
pub(crate) fn fingerprint(path: &Path, files: &[core::input::FileRead]) -> String {
    if let Some(file) = files.iter().find(|f| f.path == path) {
        return file.sha256.clone();
    }
    let mut read: Vec<(String, &str)> = files
        .iter()
        .map(|f| {
            let rel = f.path.strip_prefix(path).unwrap_or(&f.path);
            (rel.to_string_lossy().into_owned(), f.sha256.as_str())
        })
        .collect();
    read.sort();
    read.dedup();
    let mut h = worldloom_store::Sha256Hex::default();
    for (rel, sha) in read {
        h.update(rel.as_bytes());
        h.update(&[0]);
        h.update(sha.as_bytes());
        h.update(&[0]);
    }
    h.finish()
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

/// Writes an export's `content` to `path` on the back end's machine when a
/// path is given; returns the path written.
///
/// # Errors
/// [`ErrorCode::ExportFailed`] naming the file when it cannot be written.
pub(crate) fn write_export_file(
    path: Option<&str>,
    content: &str,
) -> Result<Option<String>, ApiError> {
    let Some(p) = path else { return Ok(None) };
    std::fs::write(p, content)
        .map_err(|e| ApiError::new(ErrorCode::ExportFailed, format!("{p}: {e}")))?;
    Ok(Some(p.to_owned()))
}

/// Writes `t` in `format`: the text, the number of records and a file
/// extension.
pub(crate) fn export(
    t: &Trajectory,
    format: ExportFormat,
) -> Result<(String, u32, &'static str), ApiError> {
    let out = format
        .export(std::slice::from_ref(t))
        .map_err(|e| ApiError::new(ErrorCode::ExportFailed, e.to_string()))?;
    Ok((out.text, out.records as u32, out.extension))
}

/// Imports `paths`; with `strip`, that prefix is removed from every path
/// stored or reported (uploads written under a temporary folder).
pub(crate) fn import_paths(
    studio: &Studio,
    paths: &[String],
    strip: Option<&str>,
) -> Result<ImportFilesResponse, ApiError> {
    import_paths_hashed(studio, paths, strip, &BTreeMap::new())
}

/// [`import_paths`], with the SHA-256 of some of the files already known
/// (`hashes`, by path as given: taken while an upload was written), which
/// are then not read for it.
pub(crate) fn import_paths_hashed(
    studio: &Studio,
    paths: &[String],
    strip: Option<&str>,
    hashes: &BTreeMap<String, String>,
) -> Result<ImportFilesResponse, ApiError> {
    let shown = |s: &str| -> String {
        match strip {
            Some(prefix) => s.replace(prefix, ""),
            None => s.to_string(),
        }
    };
    let mut out = ImportFilesResponse {
        imported: Vec::new(),
        runs: Vec::new(),
        failed: Vec::new(),
        warnings: Vec::new(),
    };
    let mut runs_added = false;
    let mut items = Vec::with_capacity(paths.len());
    for full_path in paths {
        // A folder of trajectories (`samples/`, a results folder) is
        // imported item by item: each with its own hash, and one failure
        // line per item that does not import.
        let p = Path::new(full_path);
        // Checked before anything under it is opened to detect its format
        // (a FIFO among the dumps would block the detection); what does not
        // pass is reported by `read_path`.
        if !p.is_dir()
            || check_readable(p, IMPORT_MAX_BYTES).is_err()
            || !core::formats::collection::is_collection(p)
        {
            items.push(full_path.clone());
            continue;
        }
        match core::formats::collection::items(p) {
            Ok(listed) if !listed.trajectories.is_empty() => {
                items.extend(listed.trajectories.iter().map(|t| t.display().to_string()));
                out.failed.extend(listed.skipped.iter().map(|s| {
                    let item = shown(&s.path.display().to_string());
                    ImportFailure::new(&item, &shown(&s.reason))
                }));
            }
            // Nothing in it: the folder's own error says why.
            _ => items.push(full_path.clone()),
        }
    }
    for full_path in &items {
        let path = &shown(full_path);
        let read = match read_path(
            Path::new(full_path),
            hashes.get(full_path).map(String::as_str),
        ) {
            Ok(r) => r,
            Err(message) => {
                out.failed.push(ImportFailure::new(path, &shown(&message)));
                continue;
            }
        };
        out.warnings.extend(read.warnings.iter().map(|w| shown(w)));
        if read.trajectories.iter().any(core::formats::run::is_run) {
            match import_run(studio, read, path, &shown, &mut out)? {
                Ok(added) => runs_added |= added,
                Err(message) => out.failed.push(ImportFailure::new(path, &shown(&message))),
            }
            continue;
        }
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
            // The states with something to score, taken before the tree is
            // handed to the store, which releases it state by state as it
            // writes it (it can be hundreds of megabytes).
            let to_score = states_to_score(&t);
            let name = t.id.clone();
            match ws.import_trajectory_owned(t, Some(&read.sha256)) {
                Ok(key) => {
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
    if out.imported.iter().any(|i| i.added) && !runs_added {
        studio.emit(StudioEvent::WorkspaceChanged {
            trajectory_id: None,
            kind: ChangeKind::Import.into(),
        });
    }
    if runs_added {
        studio.emit(StudioEvent::WorkspaceChanged {
            trajectory_id: None,
            kind: ChangeKind::ImportRun.into(),
        });
    }
    Ok(out)
}

/// The name a run file is shown by: its file name, with its folder's for the
/// official script's fixed names (`run-a/judged.jsonl`).
fn run_name(path: &str) -> String {
    let p = Path::new(path);
    let file = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_owned());
    let fixed = matches!(file.as_str(), "predictions.jsonl" | "judged.jsonl");
    match p.parent().and_then(|d| d.file_name()) {
        Some(dir) if fixed => format!("{}/{file}", dir.to_string_lossy()),
        _ => file,
    }
}

/// Metrics of a row whose file has none (the official script's output):
/// computed as `worldloom eval` computes `wl_metrics`, against the state's
/// real observation and the previous one.
pub(crate) fn row_metrics(
    t: &Trajectory,
    row: &core::formats::run::RunRow,
) -> core::formats::run::RunMetrics {
    let Some(node) = t.node(row.node) else {
        return Default::default();
    };
    let Some(real) = node.real.as_ref().filter(|o| !o.is_error_step()) else {
        return Default::default();
    };
    let prev = node
        .parent_edge
        .and_then(|e| t.edge(e))
        .and_then(|e| t.node(e.from))
        .and_then(|n| n.real.as_ref())
        .map(|o| o.text.as_bytes());
    let pred = row.prediction.observation.as_deref().map(str::as_bytes);
    match worldloom_obs::metrics::evaluate(
        Some(real.text.as_bytes()),
        pred,
        prev,
        real.representation,
    ) {
        Ok(e) => core::formats::run::RunMetrics {
            exact: e.exact,
            text_f1: e.text_f1,
            node_f1: e.node_f1,
            attribute_accuracy: e.attribute_accuracy,
            transition_f1: e.transition_f1,
        },
        Err(_) => Default::default(),
    }
}

/// Imports a file of run rows as a run. The outer error is a storage
/// failure; the inner one a message for the file's `failed` entry. `Ok(true)`
/// when a run was added.
fn import_run(
    studio: &Studio,
    read: ReadPath,
    path: &str,
    shown: &dyn Fn(&str) -> String,
    out: &mut ImportFilesResponse,
) -> Result<Result<bool, String>, ApiError> {
    let mut ws = studio.lock()?;
    if let Some(existing) = ws.find_run(&read.sha256)? {
        let run = ws.run(existing)?;
        out.runs.push(ImportedRun {
            run_id: existing.0.to_string(),
            name: run.name,
            path: path.to_owned(),
            rows: run.row_count as u32,
            added: false,
        });
        return Ok(Ok(false));
    }
    let mut items = Vec::with_capacity(read.trajectories.len());
    let mut engine = None;
    for mut t in read.trajectories {
        if let Some(p) = &t.source.path {
            t.source.path = Some(shown(p));
        }
        let mut rows = core::formats::run::take_rows(&mut t);
        for row in &mut rows {
            if row.metrics.is_empty() && row.status != "error" {
                row.metrics = row_metrics(&t, row);
            }
            engine.get_or_insert_with(|| row.prediction.engine.clone());
        }
        items.push((t, rows));
    }
    let ids = items.iter().map(|(t, _)| t.id.clone()).collect();
    ws.fingerprint_trajectories(&ids)?;
    let run = worldloom_store::NewRun {
        name: run_name(path),
        engine: engine.unwrap_or_else(|| core::formats::run::OFFICIAL_ENGINE.to_owned()),
        source_path: Some(path.to_owned()),
        source_sha256: Some(read.sha256.clone()),
        mode: core::ContextMode::TeacherForced,
    };
    let imported = match ws.import_run(&run, &items) {
        Ok(i) => i,
        Err(worldloom_store::StoreError::Invalid(message)) => return Ok(Err(message)),
        Err(e) => return Err(e.into()),
    };
    for ((key, added), (t, rows)) in imported.trajectories.iter().zip(&items) {
        if *added {
            // The states with something to score: the rows' predictions and
            // whatever the file carried besides.
            let mut to_score = states_to_score(t);
            to_score.extend(rows.iter().map(|r| r.node));
            to_score.sort_unstable();
            to_score.dedup();
            score_nodes(&mut ws, *key, &to_score)?;
        }
        out.imported.push(ImportedTrajectory {
            trajectory_id: key.0.to_string(),
            name: t.id.clone(),
            path: path.to_owned(),
            added: *added,
        });
    }
    out.runs.push(ImportedRun {
        run_id: imported.run.0.to_string(),
        name: run.name,
        path: path.to_owned(),
        rows: imported.rows as u32,
        added: true,
    });
    Ok(Ok(true))
}

/// The states of `t` with something to score: a prediction or an authored
/// observation.
fn states_to_score(t: &core::Trajectory) -> Vec<NodeId> {
    t.nodes
        .iter()
        .filter(|n| !n.predictions.is_empty() || !n.authored.is_empty())
        .map(|n| n.id)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_abandoned_request_stops_the_importers_read_with_its_message() {
        let dir = tempfile::tempdir().expect("dir");
        let p = dir.path().join("t.json");
        std::fs::write(&p, "{}").expect("t");
        let flag = Abandoned::new();
        flag.set();
        let err = flag.run(|| read_path(&p, None)).err().expect("abandoned");
        assert_eq!(
            err,
            format!(
                "{}: the import was abandoned (the client went away); nothing was read further",
                p.display()
            )
        );
        // Outside `run` the flag is no longer this thread's request.
        assert!(!abandoned());
    }

    #[test]
    fn a_file_is_known_by_its_bytes_hash_and_a_folder_by_the_files_read_in_it() {
        let dir = tempfile::tempdir().expect("dir");
        let sample = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../samples/web/agentlab_larkmail-reply_6steps.json");
        let bytes = std::fs::read(&sample).expect("sample");
        let read = read_path(&sample, None).expect("read");
        assert_eq!(read.sha256, worldloom_store::sha256_hex(&bytes));
        let files = [
            core::input::FileRead {
                path: dir.path().join("b/step_1.xml"),
                sha256: "bb".into(),
                bytes: 2,
            },
            core::input::FileRead {
                path: dir.path().join("a.jsonl"),
                sha256: "aa".into(),
                bytes: 1,
            },
        ];
        assert_eq!(
            fingerprint(dir.path(), &files),
            worldloom_store::sha256_hex(b"a.jsonl\0aa\0b/step_1.xml\0bb\0")
        );
    }

    #[test]
    fn a_folder_over_the_limit_is_refused_before_anything_is_read() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("a.json"), [b'x'; 600]).expect("a");
        std::fs::write(dir.path().join("b.json"), [b'x'; 600]).expect("b");
        assert_eq!(check_readable(dir.path(), 1_200), Ok(1_200));
        let err = check_readable(dir.path(), 1_000).expect_err("over");
        assert!(err.contains("over the import limit of 1000 bytes"), "{err}");
    }
}
