//! Every query that reads one trajectory, state, turn or run reaches its
//! rows through a key or an index, never by scanning a table, so that
//! `get_trajectory`, `get_turn` and the run views cost the same in a
//! workspace of 100 episodes as in one of 100,000 (`docs/benchmarks.md`,
//! "Workspace size"). Each read the studio's API makes for those views is
//! run with SQLite's statement trace on, and each statement it ran is
//! explained (`EXPLAIN QUERY PLAN`).

mod common;

use std::path::Path;

use serde_json::json;
use worldloom_core::{EdgeId, ImportOptions, NodeId, Prediction, import_path};
use worldloom_store::{RunId, SearchField, TrajectoryKey, Workspace};

/// A workspace with the sample's trajectories imported twice over (so
/// that every table has rows of several trajectories), a run over them
/// with labels and notes, and the records a studio session adds: tags,
/// notes, a prediction, a perturbation, a metric result.
fn workspace(dir: &Path) -> (Workspace, TrajectoryKey, RunId, i64) {
    let mut ws = Workspace::open(&dir.join("plans.worldloom")).expect("open");
    let dataset = import_path(&common::sample(), &ImportOptions::default()).expect("sample");
    for _ in 0..2 {
        for t in &dataset.trajectories {
            ws.import_trajectory(t, Some("dataset")).expect("import");
        }
    }
    let run = common::import_sample_run(&mut ws, dir, "run", "agentworldbench:gen", |i| {
        format!("seen {i}")
    });
    let rows = ws.run_rows(run).expect("rows");
    let row = rows[0].id;
    ws.set_row_label(row, "wrong page", true).expect("label");
    ws.set_row_note(row, "look again").expect("note");
    // The web trajectory (two turns) of the second import.
    let key = ws
        .list_trajectories()
        .expect("list")
        .into_iter()
        .rev()
        .find(|t| t.ext_id.contains("web") || t.domain == worldloom_core::Domain::Web)
        .expect("a web trajectory")
        .key;
    ws.set_tag(key, None, "live-episode", true).expect("tag");
    ws.add_note(key, Some(NodeId(1)), "a note").expect("note");
    ws.add_chosen_prediction(key, NodeId(1), &Prediction::from_output("copy", "same"))
        .expect("prediction");
    ws.set_perturbation(key, EdgeId(0), Some("slow network"))
        .expect("perturbation");
    ws.record_metric_result(
        key,
        NodeId(1),
        "prediction:0",
        "worldloom-obs",
        Some(0.5),
        &json!({}),
    )
    .expect("metric");
    (ws, key, run, row)
}

/// The statements `read` ran, each with the lines of its plan that scan
/// a table.
fn scans_of(
    ws: &mut Workspace,
    log: &worldloom_store::StatementLog,
    read: impl FnOnce(&mut Workspace),
) -> Vec<(String, Vec<String>)> {
    log.take();
    read(ws);
    let statements = log.take();
    assert!(!statements.is_empty(), "the read ran no statement");
    statements
        .into_iter()
        .map(|sql| {
            let scans = ws
                .full_scans(&sql)
                .unwrap_or_else(|e| panic!("explaining {sql}: {e}"));
            (sql, scans)
        })
        .collect()
}

#[test]
fn reads_of_one_trajectory_turn_or_run_use_indexes_only() {
    let dir = tempfile::tempdir().expect("tmp");
    let (mut ws, key, run, row) = workspace(dir.path());
    let log = ws.log_statements().expect("trace");
    let node = NodeId(1);

    type Read = Box<dyn FnOnce(&mut Workspace)>;
    let reads: Vec<(&str, Read)> = vec![
        // get_trajectory
        (
            "load_trajectory",
            Box::new(move |ws| drop(ws.load_trajectory(key).expect("load"))),
        ),
        (
            "trajectory_row",
            Box::new(move |ws| assert!(ws.trajectory_row(key).expect("row").is_some())),
        ),
        (
            "live_edge_links_of",
            Box::new(move |ws| assert_eq!(ws.live_edge_links_of(key).expect("links").len(), 2)),
        ),
        (
            "tags_of",
            Box::new(move |ws| assert_eq!(ws.tags_of(key).expect("tags").len(), 1)),
        ),
        (
            "perturbations",
            Box::new(move |ws| assert_eq!(ws.perturbations(key).expect("p").len(), 1)),
        ),
        (
            "notes",
            Box::new(move |ws| assert_eq!(ws.notes(key).expect("notes").len(), 1)),
        ),
        // get_turn, get_branch
        (
            "load_trajectory_states_without_prompts",
            Box::new(move |ws| {
                drop(
                    ws.load_trajectory_states_without_prompts(key, &[node])
                        .expect("states"),
                )
            }),
        ),
        (
            "load_trajectory_states",
            Box::new(move |ws| {
                drop(
                    ws.load_trajectory_states(key, &[NodeId(0), node])
                        .expect("states"),
                )
            }),
        ),
        (
            "load_trajectory_path",
            Box::new(move |ws| drop(ws.load_trajectory_path(key, node).expect("path"))),
        ),
        (
            "parent_state",
            Box::new(move |ws| {
                assert_eq!(ws.parent_state(key, node).expect("parent"), Some(NodeId(0)))
            }),
        ),
        (
            "real_observation",
            Box::new(move |ws| assert!(ws.real_observation(key, node).expect("real").is_some())),
        ),
        (
            "node_screenshot",
            Box::new(move |ws| assert!(ws.node_screenshot(key, node).expect("shot").is_none())),
        ),
        (
            "screenshot_bytes",
            Box::new(move |ws| assert!(ws.screenshot_bytes("00").expect("bytes").is_none())),
        ),
        (
            "metric_results",
            Box::new(move |ws| assert_eq!(ws.metric_results(key, node).expect("m").len(), 1)),
        ),
        (
            "revision",
            Box::new(move |ws| assert!(ws.revision().expect("revision").0 > 0)),
        ),
        (
            "can_undo_redo",
            Box::new(move |ws| assert_eq!(ws.can_undo_redo().expect("undo state"), (true, false))),
        ),
        (
            "run_rows_of_node",
            Box::new(move |ws| drop(ws.run_rows_of_node(key, node).expect("rows"))),
        ),
        // the run views (dashboard, rows, comparison, drift, search in a run)
        (
            "run",
            Box::new(move |ws| assert_eq!(ws.run(run).expect("run").row_count, 17)),
        ),
        (
            "run_rows",
            Box::new(move |ws| assert_eq!(ws.run_rows(run).expect("rows").len(), 17)),
        ),
        (
            "row_labels of a run",
            Box::new(move |ws| {
                assert_eq!(
                    ws.row_labels(Some(run))
                        .expect("labels")
                        .get(&row)
                        .map(Vec::len),
                    Some(1)
                )
            }),
        ),
        (
            "row_notes of a run",
            Box::new(move |ws| assert_eq!(ws.row_notes(Some(run)).expect("notes").len(), 1)),
        ),
        (
            "run_row_findings",
            Box::new(move |ws| assert!(ws.run_row_findings(run).expect("findings").is_empty())),
        ),
        (
            "search_run_rows in a run",
            Box::new(move |ws| {
                assert!(
                    !ws.search_run_rows("seen", SearchField::All, Some(run), 10)
                        .expect("search")
                        .is_empty()
                )
            }),
        ),
    ];
    let mut failures = Vec::new();
    for (name, read) in reads {
        for (sql, scans) in scans_of(&mut ws, &log, read) {
            if !scans.is_empty() {
                failures.push(format!("{name}: {scans:?} in\n  {sql}"));
            }
        }
    }
    assert!(failures.is_empty(), "full scans:\n{}", failures.join("\n"));
}

#[test]
fn the_plan_check_sees_a_scan() {
    // The check itself: the lists that read every row do scan, and so did
    // the run-filtered label read before it was split in two.
    let dir = tempfile::tempdir().expect("tmp");
    let (ws, _, _, _) = workspace(dir.path());
    let scans = ws
        .full_scans(
            "SELECT l.row_id FROM run_row_labels l JOIN changes c ON c.id = l.change_id
             JOIN run_rows w ON w.id = l.row_id
             WHERE c.state = 'applied' AND (?1 IS NULL OR w.run_id = ?1) ORDER BY l.id",
        )
        .expect("explain");
    assert_eq!(scans, ["SCAN l"]);
    let scans = ws
        .full_scans("SELECT coalesce(max(id), 0), coalesce(sum(state = 'undone'), 0) FROM changes")
        .expect("explain");
    assert_eq!(scans.len(), 1, "{scans:?}");
    assert!(ws.full_scans("SELECT 1").expect("explain").is_empty());
}

#[test]
fn a_version_5_workspace_gains_the_edge_index() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("v5.worldloom");
    drop(Workspace::open_to_version(&path, 5).expect("v5"));
    let plan = "SELECT from_node FROM edges WHERE trajectory_id = ?1 AND to_node = ?2";
    let has_index = |path: &Path| {
        let conn = worldloom_store::rusqlite::Connection::open(path).expect("raw");
        conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'edges_to_node'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .expect("index list")
    };
    assert_eq!(has_index(&path), 0);
    let ws = Workspace::open(&path).expect("migrate");
    assert_eq!(
        ws.schema_version().expect("version"),
        worldloom_store::SCHEMA_VERSION
    );
    assert_eq!(has_index(&path), 1);
    let conn = worldloom_store::rusqlite::Connection::open(&path).expect("raw");
    let detail: String = conn
        .query_row(&format!("EXPLAIN QUERY PLAN {plan}"), [1, 1], |r| r.get(3))
        .expect("plan");
    assert!(detail.contains("edges_to_node"), "{detail}");
}
