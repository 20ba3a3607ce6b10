//! The official AgentWorldBench `eval.py` outputs (`predictions.jsonl`,
//! `judged.jsonl`) import as the rows they hold; a predictions sidecar is
//! read with the trajectory beside it and refused on its own.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use worldloom_core::{ImportOptions, import_path};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The sample rows, each with `gen` (and `extra` fields merged in).
fn rows_with(extra: &dyn Fn(usize) -> Value) -> (String, Vec<String>) {
    let text = std::fs::read_to_string(
        repo().join("samples/agentworldbench/agentworldbench_sample.jsonl"),
    )
    .expect("sample");
    let mut gens = Vec::new();
    let mut out = String::new();
    for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let mut row: serde_json::Map<String, Value> = serde_json::from_str(line).expect("row");
        let generated = format!(
            "<think>row {i}</think>\n<predicted_observation>\nobservation {i}\n</predicted_observation>"
        );
        row.insert("gen".into(), json!(generated));
        if let Value::Object(more) = extra(i) {
            row.extend(more);
        }
        gens.push(format!("observation {i}"));
        out.push_str(&serde_json::to_string(&row).expect("json"));
        out.push('\n');
    }
    (out, gens)
}

/// Every `agentworldbench:gen` prediction's observation, in file order of
/// the trajectories.
fn gen_observations(trajectories: &[worldloom_core::Trajectory]) -> Vec<String> {
    let mut out = Vec::new();
    for t in trajectories {
        for n in &t.nodes {
            for p in &n.predictions {
                assert_eq!(p.engine, "agentworldbench:gen");
                out.push(p.observation.clone().expect("observation"));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_lone_official_predictions_file_imports_as_rows_with_their_predictions() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("predictions.jsonl");
    let (text, mut gens) = rows_with(&|_| Value::Null);
    std::fs::write(&path, text).expect("write");
    let imported = import_path(&path, &ImportOptions::default()).expect("imports");
    assert_eq!(imported.trajectories.len(), 7);
    gens.sort();
    assert_eq!(gen_observations(&imported.trajectories), gens);
    assert_eq!(imported.trajectories[0].source.format, "agentworldbench");

    // The same rows named like a single file's sidecar import too.
    let named = dir.path().join("run.predictions.jsonl");
    std::fs::rename(&path, &named).expect("rename");
    let imported = import_path(&named, &ImportOptions::default()).expect("imports");
    assert_eq!(gen_observations(&imported.trajectories), gens);
}

#[test]
fn the_official_judged_file_imports_with_its_scores_kept_on_the_rows() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("judged.jsonl");
    let (text, gens) = rows_with(&|i| {
        json!({"format": 5, "factuality": 4, "consistency": 4, "realism": 3, "quality": 4,
               "total_score": 4.0 - i as f64 / 10.0, "failed": 0.0})
    });
    std::fs::write(&path, text).expect("write");
    let imported = import_path(&path, &ImportOptions::default()).expect("imports");
    assert_eq!(gen_observations(&imported.trajectories).len(), gens.len());
    let mut totals: Vec<f64> = imported
        .trajectories
        .iter()
        .flat_map(|t| t.edges.iter())
        .filter_map(|e| e.awb_row.as_ref())
        .map(|r| r.fields["total_score"].as_f64().expect("score"))
        .collect();
    totals.sort_by(f64::total_cmp);
    let mut expected: Vec<f64> = (0..gens.len()).map(|i| 4.0 - i as f64 / 10.0).collect();
    expected.sort_by(f64::total_cmp);
    assert_eq!(totals, expected);
}

#[test]
fn a_sidecar_beside_its_trajectory_attaches_and_is_refused_on_its_own_naming_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let stem = "agentlab_larkmail-reply_6steps";
    for ext in ["json", "predictions.jsonl"] {
        std::fs::copy(
            repo().join(format!("samples/web/{stem}.{ext}")),
            dir.path().join(format!("{stem}.{ext}")),
        )
        .expect("copy");
    }
    let imported = import_path(
        &dir.path().join(format!("{stem}.json")),
        &ImportOptions::default(),
    )
    .expect("imports");
    let sidecar = std::fs::read_to_string(dir.path().join(format!("{stem}.predictions.jsonl")))
        .expect("read");
    let lines = sidecar.lines().filter(|l| !l.trim().is_empty()).count();
    let attached: usize = imported.trajectories[0]
        .nodes
        .iter()
        .map(|n| n.predictions.len())
        .sum();
    assert_eq!(attached, lines);
    let err = import_path(
        &dir.path().join(format!("{stem}.predictions.jsonl")),
        &ImportOptions::default(),
    )
    .expect_err("a sidecar on its own");
    let msg = err.to_string();
    assert!(
        msg.contains("a predictions sidecar, not a trajectory")
            && msg.contains(&format!("import `{stem}.json` beside it")),
        "{msg}"
    );

    // A folder of trajectories reads the pair once, the sidecar attached.
    let folder = import_path(dir.path(), &ImportOptions::default()).expect("imports");
    assert_eq!(folder.trajectories.len(), 1);
    assert!(folder.warnings.is_empty(), "{:?}", folder.warnings);
}

#[test]
fn a_trajectory_folders_sidecar_is_refused_naming_the_folder_and_awb_rows_beside_a_file_are_not_attached()
 {
    let dir = tempfile::tempdir().expect("tmp");
    let src = repo().join("samples/android/settings_airplane-mode_trajectory");
    let folder = dir.path().join("airplane");
    std::fs::create_dir(&folder).expect("mkdir");
    for e in std::fs::read_dir(&src).expect("sample") {
        let p = e.expect("entry").path();
        std::fs::copy(&p, folder.join(p.file_name().expect("name"))).expect("copy");
    }
    let err = import_path(&folder.join("predictions.jsonl"), &ImportOptions::default())
        .expect_err("a sidecar on its own");
    assert!(
        err.to_string()
            .contains("import the folder that holds it (`airplane`)"),
        "{err}"
    );
    assert!(
        import_path(&folder, &ImportOptions::default())
            .expect("imports")
            .trajectories[0]
            .nodes
            .iter()
            .any(|n| !n.predictions.is_empty())
    );

    // AgentWorldBench rows named `X.predictions.jsonl` beside `X.jsonl`
    // are rows of their own: not attached to X, and they import as rows.
    let (text, gens) = rows_with(&|_| Value::Null);
    let plain = std::fs::read_to_string(
        repo().join("samples/agentworldbench/agentworldbench_sample.jsonl"),
    )
    .expect("sample");
    std::fs::write(dir.path().join("bench.jsonl"), plain).expect("write");
    std::fs::write(dir.path().join("bench.predictions.jsonl"), text).expect("write");
    let bench =
        import_path(&dir.path().join("bench.jsonl"), &ImportOptions::default()).expect("imports");
    assert!(gen_observations(&bench.trajectories).is_empty());
    assert_eq!(bench.warnings.len(), 1, "{:?}", bench.warnings);
    assert!(
        bench.warnings[0]
            .message
            .contains("holds AgentWorldBench rows; not attached")
    );
    let rows = import_path(
        &dir.path().join("bench.predictions.jsonl"),
        &ImportOptions::default(),
    )
    .expect("imports");
    assert_eq!(gen_observations(&rows.trajectories).len(), gens.len());
}
