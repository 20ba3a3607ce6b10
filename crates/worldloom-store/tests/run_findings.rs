//! Run row findings: stored once per row, replaced when stored again, read
//! back by run in row order, gone with their run when its import is undone.

use std::path::Path;

use serde_json::{Value, json};
use worldloom_core::formats::run::take_rows;
use worldloom_core::{ContextMode, ImportOptions, import_path};
use worldloom_store::{NewRun, RowFindings, StoreError, Workspace};

fn run_file(dir: &Path) -> std::path::PathBuf {
    let sample = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../samples/agentworldbench/agentworldbench_sample.jsonl");
    let mut text = String::new();
    for line in std::fs::read_to_string(&sample)
        .expect("sample")
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        let mut row: serde_json::Map<String, Value> = serde_json::from_str(line).expect("row");
        row.insert(
            "gen".into(),
            json!("<predicted_observation>x</predicted_observation>"),
        );
        text.push_str(&serde_json::to_string(&row).expect("json"));
        text.push('\n');
    }
    let path = dir.join("run.jsonl");
    std::fs::write(&path, text).expect("write");
    path
}

fn findings(row_id: i64, producer: &str, json: &str) -> RowFindings {
    RowFindings {
        row_id,
        producer: producer.into(),
        action_kind: "click".into(),
        status: "scored".into(),
        findings_json: json.into(),
    }
}

#[test]
fn findings_are_kept_per_row_and_live_with_their_run() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut ws = Workspace::open(&dir.path().join("f.worldloom")).expect("open");
    let items: Vec<_> = import_path(&run_file(dir.path()), &ImportOptions::default())
        .expect("run file")
        .trajectories
        .into_iter()
        .map(|mut t| {
            let rows = take_rows(&mut t);
            (t, rows)
        })
        .collect();
    let new = NewRun {
        name: "run".into(),
        engine: "gen".into(),
        source_path: None,
        source_sha256: None,
        mode: ContextMode::TeacherForced,
    };
    let run = ws.import_run(&new, &items).expect("import").run;
    let rows = ws.run_rows(run).expect("rows");
    assert!(rows.len() > 3);
    assert!(ws.run_row_findings(run).expect("none yet").is_empty());

    // Stored out of order: read back in row order.
    ws.store_row_findings(&[
        findings(rows[2].id, "obs 1", "[]"),
        findings(rows[0].id, "obs 1", r#"[{"kind":"stale"}]"#),
    ])
    .expect("store");
    let got = ws.run_row_findings(run).expect("read");
    assert_eq!(
        got.iter().map(|f| f.row_id).collect::<Vec<_>>(),
        vec![rows[0].id, rows[2].id]
    );
    assert_eq!(got[0].findings_json, r#"[{"kind":"stale"}]"#);

    // Stored again: replaced, not added.
    ws.store_row_findings(&[findings(rows[0].id, "obs 2", "[]")])
        .expect("replace");
    let got = ws.run_row_findings(run).expect("read");
    assert_eq!(got.len(), 2);
    assert_eq!(
        (got[0].producer.as_str(), got[0].findings_json.as_str()),
        ("obs 2", "[]")
    );

    // Undoing the import takes the run away, and its findings with it.
    ws.undo().expect("undo");
    assert!(matches!(
        ws.run_row_findings(run),
        Err(StoreError::NotFound(_))
    ));
    ws.redo().expect("redo");
    assert_eq!(ws.run_row_findings(run).expect("back").len(), 2);
}
