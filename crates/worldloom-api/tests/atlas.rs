//! `run_atlas` and `atlas_rows` over the run files of `common`: the copy
//! baseline (stale wherever a later turn changed the real state, missing on
//! first turns) against the official script's run (exact on even rows).

#[allow(dead_code)] // the shared helpers this file does not call
mod common;

use common::{all_rows, studio, write_run_files};
use worldloom_api::commands;
use worldloom_api::types::*;

fn import(studio: &worldloom_api::Studio, paths: &[&std::path::Path]) {
    let out = commands::import_files(
        studio,
        ImportFilesRequest {
            paths: paths.iter().map(|p| p.display().to_string()).collect(),
        },
    )
    .expect("import");
    assert!(out.failed.is_empty(), "{:?}", out.failed);
}

fn atlas(
    studio: &worldloom_api::Studio,
    a: &str,
    b: Option<&str>,
    rows: &[String],
) -> RunAtlasResponse {
    commands::run_atlas(
        studio,
        RunAtlasRequest {
            run_id: a.into(),
            run_b: b.map(str::to_owned),
            row_ids: rows.to_vec(),
        },
    )
    .expect("atlas")
}

/// `atlas_rows` of run `a`'s overall `kind` cell (beside run `b` when given),
/// over `row_ids` (empty: every row), the first `limit` rows (0: all).
fn overall_rows(
    studio: &worldloom_api::Studio,
    a: &str,
    kind: ErrorKind,
    b: Option<&str>,
    row_ids: &[String],
    limit: u32,
) -> AtlasRowsResponse {
    commands::atlas_rows(
        studio,
        AtlasRowsRequest {
            run_id: a.into(),
            table: AtlasTable::Overall,
            group: "all".into(),
            kind,
            run_b: b.map(str::to_owned),
            row_ids: row_ids.to_vec(),
            offset: 0,
            limit,
        },
    )
    .expect("cell rows")
}

#[test]
fn a_runs_atlas_is_computed_once_and_opens_its_rows() {
    let (dir, studio) = studio();
    let [copy, predictions, _judged] = write_run_files(dir.path());
    import(&studio, &[&copy, &predictions]);
    let runs = commands::list_runs(&studio, EmptyRequest::default())
        .expect("runs")
        .runs;
    let (a, b) = (runs[0].run_id.clone(), runs[1].run_id.clone());

    let first = atlas(&studio, &a, Some(&b), &[]);
    assert_eq!(first.computed_rows, 34, "both runs' 17 rows computed");
    // The copy run: first turns have nothing to copy (7 missing); each of
    // the 10 later turns changed the real state and the copy kept it.
    assert_eq!((first.a.rows, first.a.scored, first.a.missing), (17, 10, 7));
    let stale = first
        .a
        .cell(AtlasTable::Overall, "all", ErrorKind::Stale)
        .expect("stale");
    assert_eq!((stale.rows, stale.scored_rows, stale.rate), (10, 10, 1.0));
    let b_atlas = first.b.as_ref().expect("b");
    assert_eq!(b_atlas.scored, 17);
    assert!(
        b_atlas
            .cell(AtlasTable::Overall, "all", ErrorKind::Stale)
            .is_none()
    );
    let d = first
        .compare
        .iter()
        .find(|c| c.table == AtlasTable::Overall && c.kind == ErrorKind::Stale)
        .expect("stale delta");
    assert_eq!((d.rate_a, d.rate_b, d.delta), (1.0, 0.0, 1.0));
    assert_eq!(first.kinds.len(), 9);
    assert_eq!(first.actions.first(), Some(&ActionKind::Click));

    // Counted again from the store: nothing computed, the same atlas.
    let again = atlas(&studio, &a, Some(&b), &[]);
    assert_eq!(again.computed_rows, 0);
    assert_eq!(
        (again.a.clone(), again.b.clone()),
        (first.a.clone(), first.b.clone())
    );

    // A selection of rows: the atlas of those only.
    let rows = commands::list_run_rows(&studio, all_rows(&a))
        .expect("rows")
        .rows;
    let later: Vec<String> = rows
        .iter()
        .filter(|r| r.turn >= 2)
        .take(3)
        .map(|r| r.row_id.clone())
        .collect();
    let some = atlas(&studio, &a, None, &later);
    assert_eq!((some.a.rows, some.a.scored), (3, 3));
    assert_eq!(
        some.a
            .cell(AtlasTable::Overall, "all", ErrorKind::Stale)
            .map(|c| c.rows),
        Some(3)
    );
    assert!(some.b.is_none() && some.compare.is_empty());
    let some_rows = overall_rows(&studio, &a, ErrorKind::Stale, None, &later, 0);
    let ids: Vec<String> = some_rows
        .rows
        .iter()
        .map(|r| r.row.row_id.clone())
        .collect();
    assert_eq!((some_rows.total, ids), (3, later.clone()));

    // The cell's rows, each with B's row on the same state.
    let cell = overall_rows(&studio, &a, ErrorKind::Stale, Some(&b), &[], 0);
    assert_eq!(cell.total, 10);
    for r in &cell.rows {
        assert!(r.row.turn >= 2);
        assert_eq!(r.findings.len(), 1);
        assert_eq!(r.findings[0].kind, ErrorKind::Stale);
        let side = r.b.as_ref().expect("B's row on the same state");
        assert_eq!(
            (side.row.trajectory_id.as_str(), side.row.node_id),
            (r.row.trajectory_id.as_str(), r.row.node_id)
        );
        assert_eq!(side.row.run_id, b);
    }
    // A node-level cell carries the lines of the nodes in question.
    let forgotten = overall_rows(&studio, &a, ErrorKind::Forgotten, None, &[], 1);
    let fg = first
        .a
        .cell(AtlasTable::Overall, "all", ErrorKind::Forgotten)
        .expect("forgotten");
    assert_eq!(forgotten.total, fg.rows);
    assert_eq!(forgotten.rows.len(), 1);
    assert!(!forgotten.rows[0].findings[0].real_lines.is_empty());

    // The workspace's branches: every state shows its newest prediction
    // (run B's, imported last), so their atlas is B's.
    let branches =
        commands::branches_atlas(&studio, BranchesAtlasRequest::default()).expect("branches atlas");
    assert_eq!(branches.computed_rows, 17);
    assert_eq!(Some(branches.a), first.b);
    assert!(branches.b.is_none());

    // Bad ids are refused by name.
    let err = commands::run_atlas(
        &studio,
        RunAtlasRequest {
            run_id: "x".into(),
            run_b: None,
            row_ids: Vec::new(),
        },
    )
    .expect_err("bad id");
    assert!(
        err.message.contains("`x` is not a run id"),
        "{}",
        err.message
    );
}
