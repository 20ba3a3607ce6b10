//! `worldloom atlas` on runs made from the AgentWorldBench sample: a run
//! that copies the previous real observation (stale wherever the real state
//! changed) against one that predicts every real observation exactly.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_worldloom");

fn strip(obs: &str) -> String {
    obs.trim_start()
        .strip_prefix("**Environment Observation:**")
        .unwrap_or(obs)
        .trim()
        .to_owned()
}

/// A run file over the sample whose `gen` is `pick(responses, turn)`.
fn run_file(dir: &Path, name: &str, pick: impl Fn(&[Value], usize) -> String) -> PathBuf {
    let sample = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../samples/agentworldbench/agentworldbench_sample.jsonl");
    let mut text = String::new();
    for line in std::fs::read_to_string(sample)
        .expect("sample")
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        let mut row: serde_json::Map<String, Value> = serde_json::from_str(line).expect("row");
        let turn = row["turn_idx"].as_u64().expect("turn_idx") as usize;
        let responses = row["response"].as_array().expect("response").clone();
        let gen_text = pick(&responses, turn);
        row.insert(
            "gen".into(),
            json!(format!(
                "<predicted_observation>\n{gen_text}\n</predicted_observation>"
            )),
        );
        text.push_str(&serde_json::to_string(&row).expect("json"));
        text.push('\n');
    }
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}

fn atlas(args: &[&Path], json: bool) -> String {
    let mut cmd = Command::new(BIN);
    cmd.arg("atlas").args(args);
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().expect("run worldloom");
    assert!(
        out.status.success(),
        "worldloom atlas failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn a_stale_run_against_an_exact_one() {
    let dir = tempfile::tempdir().expect("tmp");
    let text = |v: &Value| strip(v.as_str().expect("a response"));
    // Turn k predicts response k − 1; the stale run repeats response k − 2
    // (turn 1 is predicted exactly: its previous state is not a response).
    let stale = run_file(dir.path(), "stale.jsonl", |r, turn| {
        text(&r[turn.saturating_sub(2)])
    });
    let exact = run_file(dir.path(), "exact.jsonl", |r, turn| text(&r[turn - 1]));
    let later_turns = {
        let sample = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../samples/agentworldbench/agentworldbench_sample.jsonl");
        std::fs::read_to_string(sample)
            .expect("sample")
            .lines()
            .filter(|l| l.contains("\"turn_idx\": ") && !l.contains("\"turn_idx\": 1,"))
            .count() as u64
    };

    let out: Value = serde_json::from_str(&atlas(&[&stale, &exact], true)).expect("json");
    assert_eq!(out["a"]["rows"], 17);
    assert_eq!(out["a"]["scored"], 17);
    assert_eq!(out["b"]["scored"], 17);
    // The exact run has no finding at all.
    assert_eq!(out["b"]["cells"], json!([]));
    let stale_cell = out["a"]["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .find(|c| c["table"] == "overall" && c["kind"] == "stale")
        .cloned()
        .expect("a stale cell");
    // Every later turn changed the real state; the copy kept it.
    assert_eq!(stale_cell["rows"].as_u64(), Some(later_turns));
    let delta = out["compare"]
        .as_array()
        .expect("compare")
        .iter()
        .find(|c| c["table"] == "overall" && c["kind"] == "stale")
        .cloned()
        .expect("a stale delta");
    assert_eq!(delta["rate_b"], 0.0);
    assert_eq!(delta["delta"], stale_cell["rate"]);

    let tables = atlas(&[&stale], false);
    assert!(
        tables.starts_with("run: 17 rows, 17 scored, 0 missing, 0 skipped"),
        "{tables}"
    );
    assert!(tables.contains("by action"), "{tables}");
}

#[test]
fn a_file_that_is_not_a_run_is_refused_by_name() {
    let sample = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../samples/agentworldbench/agentworldbench_sample.jsonl");
    let out = Command::new(BIN)
        .args(["atlas"])
        .arg(&sample)
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("agentworldbench_sample.jsonl") && err.contains("no row with a prediction"),
        "{err}"
    );
}
