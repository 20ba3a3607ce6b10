//! A run made in the studio, in the store: created empty, grown row by row
//! within its own change (one undo removes it all), judged in place.

use worldloom_core::formats::run::{JudgeVerdict, RunRow};
use worldloom_core::{ContextMode, ImportOptions, NodeId, Prediction, import_path};
use worldloom_store::{NewRun, SearchField, StoreError, TrajectoryKey, Workspace};

fn row(node: NodeId, turn: u32, text: &str) -> RunRow {
    RunRow {
        node,
        turn,
        row_index: None,
        prediction: Prediction::from_output(
            "copy",
            format!("<predicted_observation>\n{text}\n</predicted_observation>"),
        ),
        status: "ok".into(),
        error: None,
        metrics: Default::default(),
        judge: None,
        latency_ms: Some(2.5),
    }
}

#[test]
fn a_grown_run_is_one_change_and_its_verdicts_land_on_rows_and_predictions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut ws = Workspace::open(&dir.path().join("ws.worldloom")).expect("open");
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../samples/agentworldbench/agentworldbench_sample.jsonl");
    let imported = import_path(&sample, &ImportOptions::default()).expect("sample");
    let t0 = &imported.trajectories[0];
    let key: TrajectoryKey = ws.import_trajectory(t0, Some("sample")).expect("import");
    let stored = ws.load_trajectory(key).expect("load").trajectory;
    let path = stored.main_path();
    assert!(path.nodes.len() >= 3, "two turns at least");

    let run = ws
        .create_run(&NewRun {
            name: "studio run".into(),
            engine: "copy".into(),
            source_path: None,
            source_sha256: None,
            mode: ContextMode::FreeRunning,
        })
        .expect("create");
    let listed = ws.run(run).expect("listed");
    assert_eq!(
        (listed.row_count, listed.mode),
        (0, ContextMode::FreeRunning)
    );

    let first = ws
        .append_run_rows(
            run,
            key,
            &stored,
            &[row(path.nodes[1], 1, "zebra crossing")],
        )
        .expect("append");
    let second = ws
        .append_run_rows(run, key, &stored, &[row(path.nodes[2], 2, "okapi")])
        .expect("append");
    let rows = ws.run_rows(run).expect("rows");
    assert_eq!(rows.len(), 2);
    assert_eq!(
        rows.iter()
            .map(|r| (r.id, r.row_index, r.node, r.prediction))
            .collect::<Vec<_>>(),
        vec![
            (first[0].0, 0, path.nodes[1], first[0].1),
            (second[0].0, 1, path.nodes[2], second[0].1),
        ]
    );
    // The predictions are the states' own, not chosen; the rows are indexed.
    let t = ws.load_trajectory(key).expect("load").trajectory;
    let n1 = t.node(path.nodes[1]).expect("node");
    assert!(
        n1.predictions
            .iter()
            .any(|p| p.id == first[0].1 && p.observation.as_deref() == Some("zebra crossing"))
    );
    assert_eq!(n1.chosen_prediction, None);
    assert_eq!(
        ws.search_run_rows("zebra", SearchField::Predicted, Some(run), 10)
            .expect("search"),
        vec![first[0].0]
    );
    // Growing adds no change: the run's own is the newest.
    let history = ws.history(10).expect("history");
    assert_eq!(history[0].summary, "start run `studio run` (copy)");

    let verdict = JudgeVerdict {
        scores: [Some(5.0), Some(4.0), Some(4.0), Some(5.0), Some(3.0)],
        total_score: Some(4.2),
        failed: false,
        strengths: Some("same layout".into()),
        weaknesses: None,
        error: None,
    };
    ws.set_run_row_judge(second[0].0, &verdict).expect("judge");
    let rows = ws.run_rows(run).expect("rows");
    assert_eq!(rows[0].judge, None);
    assert_eq!(rows[1].judge.as_ref(), Some(&verdict));
    assert_eq!(ws.run(run).expect("run").judged_count, 1);
    let t = ws.load_trajectory(key).expect("load").trajectory;
    let p = t
        .node(path.nodes[2])
        .and_then(|n| n.predictions.iter().find(|p| p.id == second[0].1))
        .expect("prediction");
    assert_eq!(p.extra.get("quality"), Some(&serde_json::json!(3.0)));
    assert_eq!(p.extra.get("total_score"), Some(&serde_json::json!(4.2)));
    assert_eq!(
        p.extra.get("strengths"),
        Some(&serde_json::json!("same layout"))
    );
    assert_eq!(p.extra.get("weaknesses"), None);

    // One undo removes the run, its rows and their predictions.
    ws.undo().expect("undo");
    assert!(ws.list_runs().expect("runs").is_empty());
    let t = ws.load_trajectory(key).expect("load").trajectory;
    assert!(t.node(path.nodes[1]).expect("node").predictions.is_empty());
    assert!(matches!(
        ws.append_run_rows(run, key, &stored, &[row(path.nodes[1], 1, "late")]),
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        ws.set_run_row_judge(first[0].0, &verdict),
        Err(StoreError::NotFound(_))
    ));
    ws.redo().expect("redo");
    assert_eq!(ws.run(run).expect("run").row_count, 2);
}
