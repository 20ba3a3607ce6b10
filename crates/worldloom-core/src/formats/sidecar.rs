//! Predictions sidecars: `predictions.jsonl` inside a trajectory folder, or
//! `<file stem>.predictions.jsonl` beside a single-file trajectory.
//!
//! One line per prediction: `{"step": n, "engine": "<name>", "seed": 0,
//! "output": "<raw model output>"}`, where `n ≥ 1` is the index of the
//! predicted state along the main path (the state reached by the action taken
//! from state `n - 1`). An optional `trajectory` field names the trajectory
//! when a file holds several; an optional `representation` (`axtree`, `html`,
//! …) says how the predicted observation is written, defaulting to the real
//! state's representation. Other fields are kept in the prediction's
//! `extra`. The observation is extracted with
//! [`crate::output::parse_model_output`].
//!
//! A file is a sidecar by its rows, not only by its name: a
//! `predictions.jsonl` of AgentWorldBench rows (the official `eval.py`
//! writes the input rows plus a `gen` field under that name) is never
//! attached to a trajectory beside it and imports as those rows; a file of
//! prediction lines is read with its trajectory and refused on its own
//! ([`refused_alone`]).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::domain::Representation;
use crate::error::{CoreError, ImportWarning, Result};
use crate::trajectory::{Prediction, Trajectory};

/// The sidecar path for an imported file or folder.
pub fn sidecar_path(input: &Path) -> PathBuf {
    if input.is_dir() {
        input.join("predictions.jsonl")
    } else {
        let stem = input
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        input.with_file_name(format!("{stem}.predictions.jsonl"))
    }
}

/// Whether `name` is a sidecar's file name (`predictions.jsonl` or
/// `X.predictions.jsonl`).
pub fn is_sidecar_name(name: &str) -> bool {
    name == "predictions.jsonl" || name.ends_with(".predictions.jsonl")
}

/// Whether the first row of the JSON Lines file `path` is an
/// AgentWorldBench row (it has `prompt`, `response`, `current_prompt` or, as
/// an SFT chat line, `messages`) rather than a prediction line. Reads only
/// the first row, skipping its values without keeping them, so a huge row
/// costs no memory. A file that cannot be read or whose first row does not
/// parse counts as not AgentWorldBench.
pub fn rows_are_awb(path: &Path) -> bool {
    use std::io::BufRead;

    /// The keys that tell the two kinds of rows apart; every value skipped.
    #[derive(serde::Deserialize)]
    struct Keys {
        prompt: Option<serde::de::IgnoredAny>,
        response: Option<serde::de::IgnoredAny>,
        current_prompt: Option<serde::de::IgnoredAny>,
        messages: Option<serde::de::IgnoredAny>,
    }
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut reader = std::io::BufReader::new(file);
    if reader
        .fill_buf()
        .is_ok_and(|head| head.starts_with(b"\xEF\xBB\xBF"))
    {
        reader.consume(3);
    }
    match serde_json::Deserializer::from_reader(reader)
        .into_iter::<Keys>()
        .next()
    {
        Some(Ok(k)) => {
            k.prompt.is_some()
                || k.response.is_some()
                || k.current_prompt.is_some()
                || k.messages.is_some()
        }
        _ => false,
    }
}

/// The trajectory a sidecar-named file sits beside: for
/// `X.predictions.jsonl`, another file `X.<ext>` in the same folder; for
/// `predictions.jsonl`, its folder when that is a trajectory folder. `None`
/// for other names and when no such trajectory is there.
pub fn owner_beside(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if name == "predictions.jsonl" {
        let dir = parent.unwrap_or(Path::new("."));
        let is_trajectory = crate::formats::folder::detect(dir).is_some()
            || crate::formats::agentlab::is_result_folder(dir);
        return is_trajectory.then(|| dir.to_path_buf());
    }
    let stem = name.strip_suffix(".predictions.jsonl")?;
    let dir = parent.unwrap_or(Path::new("."));
    let mut owners: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.file_name().and_then(|n| n.to_str()) != Some(name)
                && p.file_stem().and_then(|s| s.to_str()) == Some(stem)
        })
        .collect();
    owners.sort();
    owners.into_iter().next()
}

/// When the file `path` is a predictions sidecar (a sidecar's name and rows
/// that are not AgentWorldBench rows), the trajectory to import instead, in
/// words: the one beside it when it is there (`` `X.json` beside it ``, ``
/// the folder that holds it (`dir`) ``), else the one it would belong to.
/// `None` for any other file, which is read as what its rows are.
pub fn refused_alone(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    if !is_sidecar_name(name) || rows_are_awb(path) {
        return None;
    }
    let owner = owner_beside(path);
    let shown = |p: &Path| crate::formats::file_name(p);
    Some(match (name.strip_suffix(".predictions.jsonl"), owner) {
        (Some(_), Some(file)) => format!("`{}` beside it", shown(&file)),
        (Some(stem), None) => format!("`{stem}.json` beside it"),
        (None, Some(dir)) => format!("the folder that holds it (`{}`)", shown(&dir)),
        (None, None) => "the folder that holds it".to_owned(),
    })
}

/// Attaches the sidecar of `input`, if there is one, to `trajectories`. A
/// file with the sidecar's name that holds AgentWorldBench rows is not a
/// sidecar: it is left alone with a warning.
///
/// # Errors
/// [`CoreError::Json`] / [`CoreError::Field`] with the line number for a bad
/// line, unless `skip_bad_rows`, which makes them warnings.
pub fn attach_for(
    input: &Path,
    trajectories: &mut [Trajectory],
    skip_bad_rows: bool,
    warnings: &mut Vec<ImportWarning>,
) -> Result<()> {
    let path = sidecar_path(input);
    if !path.is_file() {
        return Ok(());
    }
    if rows_are_awb(&path) {
        warnings.push(ImportWarning {
            path: path.display().to_string(),
            line: None,
            byte_offset: None,
            message: "named like a predictions sidecar but holds AgentWorldBench rows; not attached (import it on its own)".into(),
        });
        return Ok(());
    }
    attach(&path, trajectories, skip_bad_rows, warnings)
}

/// Attaches the predictions of sidecar file `path` to `trajectories`.
///
/// # Errors
/// As [`attach_for`].
pub fn attach(
    path: &Path,
    trajectories: &mut [Trajectory],
    skip_bad_rows: bool,
    warnings: &mut Vec<ImportWarning>,
) -> Result<()> {
    let text = crate::input::read_text_into(path, warnings)?;
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        match attach_line(path, line_no, line, trajectories) {
            Ok(None) => {}
            Ok(Some(message)) => warnings.push(ImportWarning {
                path: path.display().to_string(),
                line: Some(line_no),
                byte_offset: None,
                message,
            }),
            Err(err) if skip_bad_rows => warnings.push(ImportWarning {
                path: path.display().to_string(),
                line: Some(line_no),
                byte_offset: None,
                message: format!("prediction skipped: {err}"),
            }),
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// Attaches one line; `Ok(Some(message))` is a warning (no matching state).
fn attach_line(
    path: &Path,
    line: usize,
    text: &str,
    trajectories: &mut [Trajectory],
) -> Result<Option<String>> {
    let value: Value = serde_json::from_str(text).map_err(|e| CoreError::Json {
        path: path.to_path_buf(),
        line,
        column: e.column(),
        message: e.to_string(),
    })?;
    let field = |name: &str, message: &str| CoreError::Field {
        path: path.to_path_buf(),
        line: Some(line),
        field: name.into(),
        message: message.into(),
    };
    let Value::Object(mut obj) = value else {
        return Err(field("(line)", "expected a JSON object"));
    };
    let step = obj
        .remove("step")
        .and_then(|s| s.as_u64())
        .ok_or_else(|| field("step", "missing or not a non-negative integer"))?;
    let engine = match obj.remove("engine") {
        Some(Value::String(s)) => s,
        _ => return Err(field("engine", "missing or not a string")),
    };
    let output = match obj.remove("output") {
        Some(Value::String(s)) => s,
        _ => return Err(field("output", "missing or not a string")),
    };
    let seed = match obj.remove("seed") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .ok_or_else(|| field("seed", "not a non-negative integer"))?,
        ),
    };
    let representation = match obj.remove("representation") {
        None | Some(Value::Null) => None,
        Some(Value::String(r)) => Some(
            r.parse::<Representation>()
                .map_err(|message| field("representation", &message))?,
        ),
        Some(_) => return Err(field("representation", "not a string")),
    };
    let wanted = obj
        .remove("trajectory")
        .and_then(|v| v.as_str().map(str::to_owned));
    let trajectory = match &wanted {
        Some(id) => trajectories.iter_mut().find(|t| &t.id == id),
        None if trajectories.len() == 1 => trajectories.first_mut(),
        None => {
            return Ok(Some(
                "several trajectories and no `trajectory` field; prediction ignored".into(),
            ));
        }
    };
    let Some(t) = trajectory else {
        return Ok(Some(format!(
            "no trajectory `{}`; prediction ignored",
            wanted.unwrap_or_default()
        )));
    };
    if step == 0 {
        return Err(field(
            "step",
            "0 is the initial state, which is not predicted (steps start at 1)",
        ));
    }
    let main = t.main_path();
    let Some(&node) = main.nodes.get(step as usize) else {
        return Ok(Some(format!(
            "step {step} is past the last state ({}) of `{}`; prediction ignored",
            main.nodes.len() - 1,
            t.id
        )));
    };
    let mut prediction = Prediction::from_output(engine, output);
    prediction.seed = seed;
    // The line's own `representation` wins (a web state has both an
    // accessibility tree and HTML); otherwise the real state's.
    prediction.representation = representation
        .or_else(|| {
            t.node(node)
                .and_then(|n| n.real.as_ref())
                .map(|o| o.representation)
        })
        .unwrap_or_default();
    prediction.extra = obj;
    t.add_prediction(node, prediction)?;
    Ok(None)
}
