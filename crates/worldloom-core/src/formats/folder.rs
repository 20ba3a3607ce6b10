//! Trajectory folders: Android uiautomator dumps and OSWorld-style
//! accessibility trees.
//!
//! Layout (both kinds): `step_NN.xml` (NN from 00; uiautomator XML for
//! Android, AT-SPI XML in the OSWorld style for OS) and, for OS, optionally
//! `step_NN.tsv` (OSWorld's linearized accessibility table); `actions.jsonl`
//! with `{"step": n, "action": …, "note": …}` lines, the action taken FROM
//! state n (a JSON object for Android, `pyautogui` code for OS; `null` on the
//! last line); optional `task.json` (`goal`, `screen` `{width, height}`,
//! `package`) and, for OS, optional `capture_meta.json` (a list of per-step
//! capture records with a `step` field); optional `step_NN.png` (or
//! `.jpg`) screenshots, each given to its state
//! ([`crate::screenshot::attach`]).
//!
//! A dump that does not start with `<` (such as `ERROR: could not get idle
//! state.`) is a failed capture: an observation with empty text and a
//! [`StepError`] holding the file's exact text.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::action::{Action, ActionFormat};
use crate::domain::{Domain, Representation};
use crate::error::{CoreError, ImportWarning, Result, json_error};
use crate::formats::{file_name, file_stem};
use crate::observation::{Observation, ObservationView, ScreenSize, StepError, StepErrorKind};
use crate::trajectory::{Source, Trajectory};

/// Which kind of folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FolderKind {
    /// Android uiautomator dumps.
    Android,
    /// OSWorld-style accessibility trees.
    Os,
}

/// `step_NN<suffix>` files of a folder by step number; `suffixes` are tried
/// in order (`[".pkl.gz", ".pkl"]`: a step's first matching suffix).
pub(crate) fn step_files(dir: &Path, suffixes: &[&str]) -> Result<BTreeMap<usize, PathBuf>> {
    let mut out = BTreeMap::new();
    let entries = std::fs::read_dir(dir).map_err(|source| CoreError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if let Some(number) = name
            .strip_prefix("step_")
            .and_then(|r| suffixes.iter().find_map(|x| r.strip_suffix(x)))
            && let Ok(n) = number.parse::<usize>()
        {
            out.insert(n, path);
        }
    }
    Ok(out)
}

/// Detects the kind of a trajectory folder (see [`crate::formats::detect_format`]).
pub fn detect(dir: &Path) -> Option<crate::formats::InputFormat> {
    use crate::formats::InputFormat;
    let xml = step_files(dir, &[".xml"]).ok()?;
    let tsv = step_files(dir, &[".tsv"]).ok()?;
    if let Some(first) = xml.values().next() {
        let bytes = crate::input::read_prefix(first, 4096).ok()?;
        let head = String::from_utf8_lossy(&bytes).into_owned();
        if head.contains("<hierarchy") {
            return Some(InputFormat::AndroidDumps);
        }
        if !tsv.is_empty() || head.contains("desktop-frame") || head.contains("accessibility") {
            return Some(InputFormat::Osworld);
        }
        // Fall back on the actions: objects are Android, strings are pyautogui.
        // Kept for the importer, which reads the same file next.
        if let Ok(text) = crate::input::read_kept(&dir.join("actions.jsonl")) {
            for line in text.text.lines() {
                if let Ok(v) = serde_json::from_str::<Value>(line) {
                    match v.get("action") {
                        Some(Value::Object(_)) => return Some(InputFormat::AndroidDumps),
                        Some(Value::String(_)) => return Some(InputFormat::Osworld),
                        _ => {}
                    }
                }
            }
        }
        return Some(InputFormat::AndroidDumps);
    }
    (!tsv.is_empty()).then_some(InputFormat::Osworld)
}

fn read_json_file(path: &Path, warnings: &mut Vec<ImportWarning>) -> Result<Option<Value>> {
    if !path.exists() {
        return Ok(None);
    }
    let text = crate::input::read_text_into(path, warnings)?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| json_error(path, &e))
}

pub(crate) fn observation_from_file(
    path: &Path,
    representation: Representation,
    warnings: &mut Vec<ImportWarning>,
) -> Result<Observation> {
    let text = crate::input::read_text_into(path, warnings)?;
    let is_tree_text = match representation {
        Representation::OsTable => true,
        _ => text.trim_start().starts_with('<'),
    };
    if is_tree_text || text.trim().is_empty() && representation == Representation::OsTable {
        if matches!(
            representation,
            Representation::AndroidXml | Representation::OsXml
        ) {
            check_xml(path, &text, representation, warnings)?;
        }
        Ok(Observation::new(representation, text))
    } else {
        let mut obs = Observation::new(representation, String::new());
        obs.error = Some(StepError {
            kind: StepErrorKind::Capture,
            message: text,
        });
        Ok(obs)
    }
}

/// Checks a step's XML before it is kept: a document whose root element
/// belongs to the other GUI format (a uiautomator `<hierarchy>` read as an
/// OS accessibility tree, or the reverse) is refused, since the folder was
/// then imported with the wrong `--format`; XML that is not well-formed (a
/// capture cut short) is kept as is, with a warning naming line and column.
///
/// # Errors
/// [`CoreError::Format`] naming the file, the root element found and the
/// format that reads it.
fn check_xml(
    path: &Path,
    text: &str,
    representation: Representation,
    warnings: &mut Vec<ImportWarning>,
) -> Result<()> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    match roxmltree::Document::parse_with_options(text, options) {
        Ok(doc) => {
            let root = doc.root_element().tag_name().name();
            let android = root == "hierarchy";
            let (expected, other_format) = match representation {
                Representation::AndroidXml => ("a uiautomator dump (`<hierarchy>`)", "osworld"),
                _ => ("an OS accessibility tree", "android-dumps"),
            };
            if android != (representation == Representation::AndroidXml) {
                return Err(CoreError::Format {
                    path: path.to_path_buf(),
                    message: format!(
                        "root element `<{root}>` is not {expected}; this folder reads as `--format {other_format}`"
                    ),
                });
            }
        }
        Err(e) => {
            // A document cut short ends early: say where the text ends (the
            // parser reports that error at the start).
            let (row, col, what) = if matches!(e, roxmltree::Error::UnexpectedEndOfStream) {
                let body = text.trim_end();
                let row = body.lines().count().max(1);
                let col = body.lines().last().map_or(0, |l| l.chars().count()) + 1;
                let what =
                    "the document ends before its elements are closed (a capture cut short?)";
                (row as u32, col as u32, what.to_owned())
            } else {
                (e.pos().row, e.pos().col, e.to_string())
            };
            warnings.push(ImportWarning {
                path: path.display().to_string(),
                line: Some(row as usize),
                byte_offset: None,
                message: format!(
                    "XML is not well-formed (line {row}, column {col}: {what}); the observation is kept as captured, and its tree shows only what parses"
                ),
            });
        }
    }
    Ok(())
}

/// Imports a trajectory folder.
///
/// # Errors
/// [`CoreError::Json`] with the line number for a malformed `actions.jsonl`
/// line; [`CoreError::Field`] for a wrong `step` or `action`;
/// [`CoreError::Format`] for a folder with no steps.
pub fn import(
    dir: &Path,
    kind: FolderKind,
    warnings: &mut Vec<ImportWarning>,
) -> Result<Trajectory> {
    let domain = match kind {
        FolderKind::Android => Domain::Android,
        FolderKind::Os => Domain::Os,
    };
    let xml_repr = match kind {
        FolderKind::Android => Representation::AndroidXml,
        FolderKind::Os => Representation::OsXml,
    };
    let xml = step_files(dir, &[".xml"])?;
    let screenshots = step_files(dir, &[".png", ".jpg", ".jpeg"])?;
    let tsv = if kind == FolderKind::Os {
        step_files(dir, &[".tsv"])?
    } else {
        BTreeMap::new()
    };
    let actions_path = dir.join("actions.jsonl");
    let mut actions: BTreeMap<usize, Map<String, Value>> = BTreeMap::new();
    if actions_path.exists() {
        let text = crate::input::read_text_into(&actions_path, warnings)?;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let value: Value = serde_json::from_str(line).map_err(|e| CoreError::Json {
                path: actions_path.clone(),
                line: i + 1,
                column: e.column(),
                message: e.to_string(),
            })?;
            let field = |message: String| CoreError::Field {
                path: actions_path.clone(),
                line: Some(i + 1),
                field: "step".into(),
                message,
            };
            let Value::Object(obj) = value else {
                return Err(field("expected a JSON object per line".into()));
            };
            let step = obj
                .get("step")
                .and_then(Value::as_u64)
                .ok_or_else(|| field("missing or not a non-negative integer".into()))?;
            actions.insert(step as usize, obj);
        }
    }
    let last_state = xml.keys().chain(tsv.keys()).copied().max();
    let last_action = actions
        .iter()
        .filter(|(_, a)| a.get("action").is_some_and(|v| !v.is_null()))
        .map(|(s, _)| *s + 1)
        .max();
    let Some(last) = last_state.max(last_action) else {
        return Err(CoreError::Format {
            path: dir.to_path_buf(),
            message: "no step_NN.xml / step_NN.tsv files and no actions".into(),
        });
    };
    let task = read_json_file(&dir.join("task.json"), warnings)?;
    let screen = task.as_ref().and_then(|t| t.get("screen")).and_then(|s| {
        Some(ScreenSize {
            width_px: s.get("width")?.as_u64()? as u32,
            height_px: s.get("height")?.as_u64()? as u32,
        })
    });
    let capture_meta = if kind == FolderKind::Os {
        read_json_file(&dir.join("capture_meta.json"), warnings)?
    } else {
        None
    };

    let mut t = Trajectory::new(file_stem(dir), domain, None);
    t.source = Source {
        format: match kind {
            FolderKind::Android => "android-dumps".into(),
            FolderKind::Os => "osworld".into(),
        },
        path: Some(file_name(dir)),
    };
    if let Some(Value::Object(task)) = &task {
        let mut task = task.clone();
        t.goal = task
            .remove("goal")
            .and_then(|g| g.as_str().map(str::to_owned));
        task.remove("screen");
        t.extra = task;
    }
    let mut node = t.root();
    for step in 0..=last {
        let mut obs = match (xml.get(&step), tsv.get(&step)) {
            (Some(x), table) => {
                let mut obs = observation_from_file(x, xml_repr, warnings)?;
                if let Some(table) = table {
                    let text = crate::input::read_text_into(table, warnings)?;
                    obs.views.push(ObservationView {
                        name: file_name(table),
                        representation: Representation::OsTable,
                        text,
                    });
                }
                Some(obs)
            }
            (None, Some(table)) => Some(observation_from_file(
                table,
                Representation::OsTable,
                warnings,
            )?),
            (None, None) => {
                warnings.push(ImportWarning {
                    path: dir.display().to_string(),
                    line: None,
                    byte_offset: None,
                    message: format!("no observation file for step {step}"),
                });
                None
            }
        };
        if let Some(o) = obs.as_mut() {
            o.metadata.screen = screen;
            if let Some(Value::Array(records)) = &capture_meta
                && let Some(record) = records
                    .iter()
                    .find(|r| r.get("step").and_then(Value::as_u64) == Some(step as u64))
            {
                o.metadata.extra.insert("capture".into(), record.clone());
            }
        }
        let target = if step == 0 {
            t.nodes[0].real = obs;
            t.root()
        } else {
            let mut record = actions.remove(&(step - 1)).unwrap_or_default();
            let action = action_from_record(&mut record, kind);
            let (edge, next) = t.add_step(node, action, obs)?;
            let e = &mut t.edges[edge.0 as usize];
            e.note = record
                .remove("note")
                .and_then(|n| n.as_str().map(str::to_owned));
            record.remove("step");
            e.extra = record;
            next
        };
        if let Some(file) = screenshots.get(&step) {
            crate::screenshot::attach(&mut t.nodes[target.0 as usize].screenshot, file, warnings);
        }
        node = target;
    }
    // The record of the final state (action null) keeps its note on the node.
    if let Some(mut record) = actions.remove(&last) {
        record.remove("step");
        if record.get("action").is_some_and(Value::is_null) {
            record.remove("action");
        }
        t.nodes[node.0 as usize].extra = record;
    }
    for (step, _) in actions {
        warnings.push(ImportWarning {
            path: actions_path.display().to_string(),
            line: None,
            byte_offset: None,
            message: format!("action for step {step} has no state to start from; ignored"),
        });
    }
    Ok(t)
}

fn action_from_record(record: &mut Map<String, Value>, kind: FolderKind) -> Action {
    match record.remove("action") {
        Some(Value::String(s)) => Action::new(
            s,
            match kind {
                FolderKind::Android => ActionFormat::AndroidJson,
                FolderKind::Os => ActionFormat::Pyautogui,
            },
        ),
        Some(Value::Null) | None => Action::new("", ActionFormat::Text),
        Some(v) => Action::new(v.to_string(), ActionFormat::AndroidJson),
    }
}
