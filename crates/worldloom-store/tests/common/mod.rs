//! What the store's tests share (the API's `workspace_size` bench includes
//! this file too): the AgentWorldBench sample written out as a run file and
//! imported as a run.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use worldloom_core::formats::run::take_rows;
use worldloom_core::{ContextMode, ImportOptions, import_path};
use worldloom_store::{NewRun, RunId, Workspace};

/// The AgentWorldBench sample, `samples/agentworldbench/agentworldbench_sample.jsonl`.
pub fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../samples/agentworldbench/agentworldbench_sample.jsonl")
}

/// Writes the sample as a run file, `dir/run.jsonl`, whose row `i` (0-based,
/// in file order) predicts `<predicted_observation>{predicted(i)}</predicted_observation>`
/// in `gen`, and imports it into `ws` as a teacher-forced run called `name`
/// made by `engine`. Returns the run's id.
pub fn import_sample_run(
    ws: &mut Workspace,
    dir: &Path,
    name: &str,
    engine: &str,
    predicted: impl Fn(usize) -> String,
) -> RunId {
    let mut text = String::new();
    for (i, line) in std::fs::read_to_string(sample())
        .expect("sample")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
    {
        let mut row: serde_json::Map<String, Value> = serde_json::from_str(line).expect("row");
        row.insert(
            "gen".into(),
            json!(format!(
                "<predicted_observation>{}</predicted_observation>",
                predicted(i)
            )),
        );
        text.push_str(&serde_json::to_string(&row).expect("json"));
        text.push('\n');
    }
    let run_file = dir.join("run.jsonl");
    std::fs::write(&run_file, text).expect("write");
    let items: Vec<_> = import_path(&run_file, &ImportOptions::default())
        .expect("run file")
        .trajectories
        .into_iter()
        .map(|mut t| {
            let rows = take_rows(&mut t);
            (t, rows)
        })
        .collect();
    let new = NewRun {
        name: name.into(),
        engine: engine.into(),
        source_path: None,
        source_sha256: None,
        mode: ContextMode::TeacherForced,
    };
    ws.import_run(&new, &items).expect("import run").run
}
