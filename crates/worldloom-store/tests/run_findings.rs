//! Run row findings: stored once per row, replaced when stored again, read
//! back by run in row order, gone with their run when its import is undone.

mod common;

use worldloom_store::{RowFindings, StoreError, Workspace};

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
    let run = common::import_sample_run(&mut ws, dir.path(), "run", "gen", |_| "x".into());
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
