//! Trajectory formats: import (with auto-detection) and export.
//!
//! Importers: AgentWorldBench JSONL ([`awb`]), BrowserGym/AgentLab step JSON
//! and AgentLab result folders of step pickles ([`agentlab`], read with the
//! restricted unpickler [`pickle`]), folders of Android uiautomator dumps and
//! OSWorld-style accessibility trees ([`folder`]), numbered Android trace
//! folders ([`android_trace`]), WebArena renders and JSON traces
//! ([`webarena`]), ATIF trajectories ([`atif`]), folders of any of these
//! ([`collection`]), the native file ([`crate::native`]), and
//! predictions sidecars ([`sidecar`]); rows of a run (predictions with
//! `gen`, judged or not) taken out of what the AgentWorldBench importer read
//! ([`run`]). Exporters: AgentWorldBench JSONL,
//! SFT chat JSONL ([`sft`]) and native, one [`ExportFormat`] list for all.
//!
//! Every importer reads files through [`crate::input::read_text`], so invalid
//! UTF-8 anywhere becomes U+FFFD with one warning per file.

pub mod agentlab;
pub mod android_trace;
pub mod atif;
pub mod awb;
pub mod collection;
mod export;
pub mod folder;
mod lines;
pub mod pickle;
pub mod run;
pub mod sft;
pub mod sidecar;
pub mod webarena;

use std::path::Path;

use serde::{Deserialize, Serialize};

pub use export::{ExportFormat, Exported};

use crate::error::{CoreError, ImportWarning, Result};
use crate::native::{NATIVE_FORMAT, TrajectoryFile};
use crate::trajectory::Trajectory;

/// The edge `extra` field holding the agent's reasoning for the action it
/// took (AgentLab's `think`; the prose around an executed code block; a
/// WebArena raw prediction; an ATIF step's message), shown beside the action.
pub const AGENT_REASONING: &str = "think";

/// The agent's reasoning recorded for `edge`'s action, when there is some
/// ([`AGENT_REASONING`]).
pub fn agent_reasoning(edge: &crate::trajectory::Edge) -> Option<&str> {
    edge.extra
        .get(AGENT_REASONING)
        .and_then(serde_json::Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// An input format, as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InputFormat {
    /// Detect from the file or folder contents.
    Auto,
    /// The native `worldloom-trajectory` JSON.
    Native,
    /// AgentWorldBench JSONL rows.
    Agentworldbench,
    /// BrowserGym / AgentLab step records (one JSON file per trajectory), or
    /// an AgentLab result folder of `step_N.pkl.gz` pickles.
    Agentlab,
    /// A folder of Android uiautomator dumps with `actions.jsonl`.
    AndroidDumps,
    /// An OSWorld-style folder of accessibility trees with `actions.jsonl`.
    Osworld,
    /// An Agent Trajectory Interchange Format file (Harbor / Terminal-Bench,
    /// OpenHands: terminal and SWE runs).
    Atif,
    /// A numbered Android trace folder (`0.xml`, `1.xml`, … with
    /// `eventStructs.txt` and `instruction.txt`, as LlamaTouch keeps them).
    AndroidTrace,
    /// A WebArena result trace: the `render_<task>.html` its runner writes,
    /// or the JSON trace derived from it.
    Webarena,
}

impl InputFormat {
    /// The kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            InputFormat::Auto => "auto",
            InputFormat::Native => "native",
            InputFormat::Agentworldbench => "agentworldbench",
            InputFormat::Agentlab => "agentlab",
            InputFormat::AndroidDumps => "android-dumps",
            InputFormat::Osworld => "osworld",
            InputFormat::AndroidTrace => "android-trace",
            InputFormat::Atif => "atif",
            InputFormat::Webarena => "webarena",
        }
    }
}

impl std::str::FromStr for InputFormat {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        [
            InputFormat::Auto,
            InputFormat::Native,
            InputFormat::Agentworldbench,
            InputFormat::Agentlab,
            InputFormat::AndroidDumps,
            InputFormat::Osworld,
            InputFormat::AndroidTrace,
            InputFormat::Atif,
            InputFormat::Webarena,
        ]
        .into_iter()
        .find(|f| f.as_str() == s.trim().to_ascii_lowercase())
        .ok_or_else(|| format!("unknown input format `{s}` (expected auto, native, agentworldbench, agentlab, android-dumps, android-trace, atif, osworld or webarena)"))
    }
}

/// Options of [`import_path`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportOptions {
    /// The format, or [`InputFormat::Auto`].
    pub format: InputFormat,
    /// Skip malformed JSONL rows with a warning instead of failing.
    pub skip_bad_rows: bool,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            format: InputFormat::Auto,
            skip_bad_rows: false,
        }
    }
}

/// The result of an import.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// The trajectories read.
    pub trajectories: Vec<Trajectory>,
    /// Problems that did not stop the import.
    pub warnings: Vec<ImportWarning>,
}

/// Guesses the format of a file or folder from its contents.
///
/// A folder with `step_N.pkl.gz` pickles (or `exp_args.pkl`) is an AgentLab
/// result folder (`agentlab`). A folder with `0.xml` and `eventStructs.txt`
/// or `instruction.txt` is a numbered Android trace (`android-trace`). A
/// folder with `step_NN.xml` dumps is `android-dumps` when the first dump is
/// a uiautomator `<hierarchy>`, else `osworld` (also when it holds
/// `step_NN.tsv` tables). A `.jsonl` file is AgentWorldBench. HTML with
/// `state_obv` blocks is a WebArena render. A JSON file is native when its
/// `format` is `worldloom-trajectory`, ATIF when its `schema_version` starts
/// `ATIF`, a WebArena JSON trace when it is a list of `{instruction, input,
/// output}` turns, else AgentLab.
///
/// # Errors
/// [`CoreError::Format`] when nothing matches; [`CoreError::Io`].
pub fn detect_format(path: &Path) -> Result<InputFormat> {
    if path.is_dir() {
        if agentlab::is_result_folder(path) {
            return Ok(InputFormat::Agentlab);
        }
        if android_trace::is_trace_folder(path) {
            return Ok(InputFormat::AndroidTrace);
        }
        return folder::detect(path).ok_or_else(|| CoreError::Format {
            path: path.to_path_buf(),
            message: "no step_NN.xml or step_NN.tsv files, so neither an Android dump folder nor an OSWorld folder; no 0.xml with eventStructs.txt, so not an Android trace folder; and no step_N.pkl.gz files, so not an AgentLab result folder".into(),
        });
    }
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    // Decided by the name alone: a large JSONL file is not read twice.
    if ext == "jsonl" {
        return Ok(InputFormat::Agentworldbench);
    }
    // Kept for the importer, which takes it instead of reading the file again.
    let decoded = crate::input::read_kept(path)?;
    let head = decoded.text.trim_start();
    if head.starts_with('{')
        && head
            .lines()
            .nth(1)
            .is_some_and(|l| l.trim_start().starts_with("{\""))
    {
        return Ok(InputFormat::Agentworldbench);
    }
    if head.is_empty() {
        return Err(CoreError::Format {
            path: path.to_path_buf(),
            message: "the file is empty (or only whitespace): no trajectory to read".into(),
        });
    }
    if webarena::looks_like_render(head) {
        return Ok(InputFormat::Webarena);
    }
    if head.starts_with('{') || head.starts_with('[') {
        // Parse the whole text (not the trimmed head) so that positions in a
        // JSON error are the file's own lines and columns.
        match serde_json::from_str::<serde_json::Value>(&decoded.text) {
            Ok(value) => {
                if value.get("format").and_then(|f| f.as_str()) == Some(NATIVE_FORMAT) {
                    return Ok(InputFormat::Native);
                }
                if atif::looks_like(&value) {
                    return Ok(InputFormat::Atif);
                }
                if webarena::looks_like_traces(&value) {
                    return Ok(InputFormat::Webarena);
                }
                if agentlab::looks_like(&value) {
                    return Ok(InputFormat::Agentlab);
                }
            }
            Err(_) if head.starts_with('{') && head.contains("\"prompt\"") => {
                return Ok(InputFormat::Agentworldbench);
            }
            Err(e) => {
                return Err(CoreError::Json {
                    path: path.to_path_buf(),
                    line: e.line(),
                    column: e.column(),
                    message: format!("the file looks like JSON but does not parse: {e}"),
                });
            }
        }
    }
    Err(CoreError::Format {
        path: path.to_path_buf(),
        message: "unrecognised input: expected an AgentWorldBench .jsonl file, an AgentLab step JSON file, a WebArena render or JSON trace, an ATIF trajectory, a native worldloom-trajectory file, or a trajectory folder".into(),
    })
}

/// Imports a file or folder. A folder that is not itself a trajectory folder
/// is imported entry by entry (files and sub-folders in name order; entries
/// that are not trajectories give warnings).
///
/// # Errors
/// The format's errors, each naming file, line or field;
/// [`CoreError::Format`] for a predictions sidecar given on its own
/// (`predictions.jsonl`, `X.predictions.jsonl` holding prediction lines: see
/// [`sidecar::refused_alone`]); a file of that name holding AgentWorldBench
/// rows, such as the official `eval.py`'s `predictions.jsonl`, is imported
/// as those rows.
pub fn import_path(path: &Path, options: &ImportOptions) -> Result<Imported> {
    // A text read to detect the format and not taken by its importer is dropped with the import.
    let _forget = crate::input::ForgetKept;
    if path.is_file()
        && let Some(owner) = sidecar::refused_alone(path)
    {
        return Err(CoreError::Format {
            path: path.to_path_buf(),
            message: format!(
                "a predictions sidecar, not a trajectory: it is read with its trajectory; import {owner}"
            ),
        });
    }
    let format = match options.format {
        InputFormat::Auto => match detect_format(path) {
            Ok(f) => f,
            Err(err) if path.is_dir() => return import_folder_of_trajectories(path, options, err),
            Err(err) => return Err(err),
        },
        f => f,
    };
    let mut warnings = Vec::new();
    let read = |warnings: &mut Vec<ImportWarning>| -> Result<Vec<Trajectory>> {
        let is_folder = matches!(
            format,
            InputFormat::AndroidDumps | InputFormat::AndroidTrace | InputFormat::Osworld
        );
        // AgentLab reads both: a step JSON file and a result folder.
        if path.exists() && path.is_dir() != is_folder && format != InputFormat::Agentlab {
            return Err(CoreError::Format {
                path: path.to_path_buf(),
                message: format!(
                    "`--format {}` reads {}, and this is {}",
                    format.as_str(),
                    if is_folder { "a folder" } else { "a file" },
                    if is_folder { "a file" } else { "a folder" }
                ),
            });
        }
        Ok(match format {
            InputFormat::Native => {
                let text = crate::input::read_text_into(path, warnings)?;
                let mut read = TrajectoryFile::from_json_str(path, &text)?.trajectories;
                crate::native::resolve_screenshots(path, &mut read, warnings);
                read
            }
            InputFormat::Agentworldbench => awb::import(path, options.skip_bad_rows, warnings)?,
            InputFormat::Agentlab if path.is_dir() => {
                vec![agentlab::import_results_folder(path, warnings)?]
            }
            InputFormat::Agentlab => vec![agentlab::import(path, warnings)?],
            InputFormat::AndroidDumps => {
                vec![folder::import(path, folder::FolderKind::Android, warnings)?]
            }
            InputFormat::Osworld => vec![folder::import(path, folder::FolderKind::Os, warnings)?],
            InputFormat::AndroidTrace => vec![android_trace::import(path, warnings)?],
            InputFormat::Atif => vec![atif::import(path, warnings)?],
            InputFormat::Webarena => vec![webarena::import(path, warnings)?],
            InputFormat::Auto => Vec::new(),
        })
    };
    let mut trajectories = match read(&mut warnings) {
        Ok(t) => t,
        // A format given by hand that does not fit: say which one does.
        Err(err) if options.format != InputFormat::Auto => {
            return Err(match detect_format(path) {
                Ok(detected)
                    if detected != format
                        && !err
                            .to_string()
                            .contains(&format!("--format {}", detected.as_str())) =>
                {
                    CoreError::Format {
                        path: path.to_path_buf(),
                        message: format!(
                            "{err} (this input reads as `--format {}`)",
                            detected.as_str()
                        ),
                    }
                }
                _ => err,
            });
        }
        Err(err) => return Err(err),
    };
    if format != InputFormat::Native {
        sidecar::attach_for(
            path,
            &mut trajectories,
            options.skip_bad_rows,
            &mut warnings,
        )?;
    }
    Ok(Imported {
        trajectories,
        warnings,
    })
}

/// Imports each trajectory a folder of trajectories holds
/// ([`collection::items`]); `not_one` is why the folder is not itself a
/// trajectory, the error when it holds nothing at all.
fn import_folder_of_trajectories(
    path: &Path,
    options: &ImportOptions,
    not_one: CoreError,
) -> Result<Imported> {
    let listed = collection::items(path)?;
    let mut out = Imported {
        trajectories: Vec::new(),
        warnings: Vec::new(),
    };
    let mut not_imported = Vec::new();
    for entry in &listed.trajectories {
        match import_path(entry, options) {
            Ok(imported) => {
                out.trajectories.extend(imported.trajectories);
                out.warnings.extend(imported.warnings);
            }
            Err(err) => not_imported.push(ImportWarning {
                path: entry.display().to_string(),
                line: None,
                byte_offset: None,
                message: format!("not imported: {err}"),
            }),
        }
    }
    not_imported.extend(listed.skipped.into_iter().map(|s| ImportWarning {
        path: s.path.display().to_string(),
        line: None,
        byte_offset: None,
        message: format!("skipped: {}", s.reason),
    }));
    if out.trajectories.is_empty() {
        if not_imported.is_empty() {
            return Err(not_one);
        }
        let why: Vec<String> = not_imported
            .iter()
            .take(5)
            .map(ToString::to_string)
            .collect();
        return Err(CoreError::Format {
            path: path.to_path_buf(),
            message: format!(
                "no trajectory in this folder imported: {}{}",
                why.join("; "),
                if not_imported.len() > 5 { "; …" } else { "" }
            ),
        });
    }
    out.warnings.extend(not_imported);
    dedupe_ids(&mut out.trajectories);
    Ok(out)
}

/// Makes trajectory ids unique by appending `-2`, `-3`… to repeats.
pub fn dedupe_ids(trajectories: &mut [Trajectory]) {
    let mut seen = std::collections::HashSet::new();
    for t in trajectories.iter_mut() {
        if !seen.insert(t.id.clone()) {
            let mut n = 2;
            while !seen.insert(format!("{}-{n}", t.id)) {
                n += 1;
            }
            t.id = format!("{}-{n}", t.id);
        }
    }
}

/// The file name of `path` as a string (for [`crate::trajectory::Source`]).
pub(crate) fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// The file stem of `path` (trajectory ids).
pub(crate) fn file_stem(path: &Path) -> String {
    path.file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trajectory".into())
}

/// Guesses the representation of an observation text in `domain`.
pub fn guess_representation(domain: crate::Domain, text: &str) -> crate::Representation {
    use crate::{Domain, Representation};
    let t = text.trim_start();
    match domain {
        Domain::Web if t.starts_with('<') => Representation::Html,
        Domain::Web => Representation::Axtree,
        Domain::Os if t.starts_with('<') => Representation::OsXml,
        Domain::Os => Representation::OsTable,
        Domain::Android => Representation::AndroidXml,
        _ if (t.starts_with('{') || t.starts_with('['))
            && serde_json::from_str::<serde_json::Value>(t).is_ok() =>
        {
            Representation::Json
        }
        _ => Representation::Text,
    }
}
