//! The views of one trajectory, turn or run in a small and in a large
//! workspace: `get_trajectory`, `get_turn`, `get_run_dashboard` and
//! `list_run_rows` must cost the same with 100 recorded episodes as with
//! 100,000 (every query they make reaches its rows through an index:
//! `crates/worldloom-store/tests/query_plans.rs`).
//!
//! Each size is a fresh workspace of recorded `serve-env` episodes as the
//! recorder writes them (an import change with its `live-episode` tag,
//! then one `add_turn` change per step with its chosen prediction), 6
//! steps each, a ~1 KB first state and ~1 KB predictions, written in one
//! transaction; plus the AgentWorldBench sample and a run over it (17
//! rows, one labelled, one with a note).
//!
//! Run: `cargo bench -p worldloom-api --bench workspace_size`; sizes from
//! `WORLDLOOM_BENCH_EPISODES` (default `100,20000`; `100,100000` for the
//! figure in `docs/benchmarks.md`, "Workspace size"). Prints, per size, the
//! file's size, the time to write it and the median of 20 calls of each
//! command in milliseconds; and of `list_trajectories`, which reads every
//! trajectory (what `get_trajectory` did before it read its own by key).

mod common;
// The sample run the store's tests import, shared with them.
#[path = "../../worldloom-store/tests/common/mod.rs"]
mod store_common;

use common::median_ms;

use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};
use worldloom_api::{Studio, dispatch};
use worldloom_core::action::ActionFormat;
use worldloom_core::{Action, Domain, Observation, Prediction, Representation, Trajectory};
use worldloom_store::Workspace;
use worldloom_store::rusqlite::params;

const STEPS: u32 = 6;

fn page(n: u32) -> String {
    let mut s = format!("RootWebArea 'Page {n}', focused\n");
    for i in 0..25 {
        s.push_str(&format!("\t[{}] button 'Item {i}'\n", 100 + i));
    }
    s
}

/// The records of one episode as JSON, the same for every episode (its
/// ids are per trajectory): the first state, each edge, each prediction.
struct Templates {
    first: String,
    edges: Vec<String>,
    predictions: Vec<String>,
}

fn templates() -> Templates {
    let mut t = Trajectory::new(
        "episode",
        Domain::Web,
        Some(Observation::new(Representation::Axtree, page(0))),
    );
    let mut edges = Vec::new();
    let mut predictions = Vec::new();
    let mut at = t.root();
    for k in 1..=STEPS {
        let (e, n) = t
            .add_step(
                at,
                Action::new(format!("click('{}')", 100 + k), ActionFormat::Browsergym),
                None,
            )
            .expect("step");
        edges.push(serde_json::to_string(t.edge(e).expect("edge")).expect("json"));
        let p = Prediction::from_output(
            "copy",
            format!("<predicted_observation>{}</predicted_observation>", page(k)),
        );
        predictions.push(serde_json::to_string(&p).expect("json"));
        at = n;
    }
    let first = serde_json::to_string(t.nodes[0].real.as_ref().expect("first")).expect("json");
    Templates {
        first,
        edges,
        predictions,
    }
}

/// Writes `episodes` recorded episodes into `ws` in one transaction.
fn write_episodes(ws: &mut Workspace, episodes: u32, tpl: &Templates) {
    ws.with_change("bench", None, "bench episodes", |tx, _| {
        let err = |e: worldloom_store::rusqlite::Error| {
            worldloom_store::StoreError::Invalid(e.to_string())
        };
        let mut change = tx
            .prepare("INSERT INTO changes (kind, trajectory_id, summary) VALUES (?1, ?2, 'bench')")
            .map_err(err)?;
        let mut trajectory = tx
            .prepare(
                "INSERT INTO trajectories (change_id, ext_id, domain, source_format, goal) VALUES (?1, ?2, 'web', 'openenv-episode', 'Buy two mugs.')",
            )
            .map_err(err)?;
        let mut tag = tx
            .prepare("INSERT INTO tags (trajectory_id, tag, present, change_id) VALUES (?1, 'live-episode', 1, ?2)")
            .map_err(err)?;
        let mut node = tx
            .prepare("INSERT INTO nodes (trajectory_id, node_id, parent_edge, change_id) VALUES (?1, ?2, ?3, ?4)")
            .map_err(err)?;
        let mut edge = tx
            .prepare("INSERT INTO edges (trajectory_id, edge_id, from_node, to_node, edge_json, change_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
            .map_err(err)?;
        let mut real = tx
            .prepare("INSERT INTO observations (trajectory_id, node_id, kind, representation, observation_json, change_id) VALUES (?1, 0, 'real', 'axtree', ?2, ?3)")
            .map_err(err)?;
        let mut prediction = tx
            .prepare("INSERT INTO predictions (trajectory_id, node_id, prediction_id, engine, context, status, prediction_json, change_id) VALUES (?1, ?2, 0, 'copy', 'free-running', 'ok', ?3, ?4)")
            .map_err(err)?;
        let mut chosen = tx
            .prepare("INSERT INTO chosen_predictions (trajectory_id, node_id, prediction_id, change_id) VALUES (?1, ?2, 0, ?3)")
            .map_err(err)?;
        for i in 0..episodes {
            change.execute(params!["import", None::<i64>]).map_err(err)?;
            let import = tx.last_insert_rowid();
            trajectory
                .execute(params![import, format!("episode-{i}")])
                .map_err(err)?;
            let key = tx.last_insert_rowid();
            tag.execute(params![key, import]).map_err(err)?;
            node.execute(params![key, 0, None::<u32>, import])
                .map_err(err)?;
            real.execute(params![key, tpl.first, import]).map_err(err)?;
            for k in 1..=STEPS {
                change.execute(params!["add_turn", key]).map_err(err)?;
                let c = tx.last_insert_rowid();
                node.execute(params![key, k, k - 1, c]).map_err(err)?;
                edge.execute(params![key, k - 1, k - 1, k, tpl.edges[k as usize - 1], c])
                    .map_err(err)?;
                prediction
                    .execute(params![key, k, tpl.predictions[k as usize - 1], c])
                    .map_err(err)?;
                chosen.execute(params![key, k, c]).map_err(err)?;
            }
        }
        Ok(())
    })
    .expect("episodes");
}

/// Imports the AgentWorldBench sample and a run over it; returns the run id.
fn add_run(ws: &mut Workspace, dir: &Path) -> String {
    let run = store_common::import_sample_run(ws, dir, "sample run", "agentworldbench:gen", |i| {
        format!("seen {i}")
    });
    let rows = ws.run_rows(run).expect("rows");
    ws.set_row_label(rows[0].id, "wrong page", true)
        .expect("label");
    ws.set_row_note(rows[1].id, "look again").expect("note");
    run.0.to_string()
}

fn main() {
    let sizes: Vec<u32> = std::env::var("WORLDLOOM_BENCH_EPISODES")
        .unwrap_or_else(|_| "100,20000".into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .expect("WORLDLOOM_BENCH_EPISODES: numbers, comma-separated")
        })
        .collect();
    let tpl = templates();
    for episodes in sizes {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("ws.worldloom");
        let mut ws = Workspace::open(&path).expect("open");
        let start = Instant::now();
        write_episodes(&mut ws, episodes, &tpl);
        let written = start.elapsed().as_secs_f64();
        let run = add_run(&mut ws, dir.path());
        // A middle episode, so that neither end of a table is favoured.
        let key = (episodes / 2 + 1).to_string();
        // The file's size once the write-ahead log is folded in.
        worldloom_store::rusqlite::Connection::open(&path)
            .and_then(|c| c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)"))
            .expect("checkpoint");
        let size_mb = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
        let studio = Studio::new(ws);
        let call = |command: &str, request: Value| {
            dispatch(&studio, command, request).unwrap_or_else(|e| panic!("{command}: {e:?}"));
        };
        let trajectory = median_ms(20, || call("get_trajectory", json!({"trajectory_id": key})));
        let turn = median_ms(20, || {
            call(
                "get_turn",
                json!({"trajectory_id": key, "node_id": STEPS / 2}),
            )
        });
        let dashboard = median_ms(20, || call("get_run_dashboard", json!({"run_id": run})));
        let rows = median_ms(20, || call("list_run_rows", json!({"run_id": run})));
        // What get_trajectory paid before it read its own row by key: the
        // whole list, which does grow with the workspace.
        let list = median_ms(20, || call("list_trajectories", json!({})));
        println!(
            "{episodes} episodes ({size_mb:.0} MB, written in {written:.1} s): get_trajectory {trajectory:.2} ms, get_turn {turn:.2} ms, get_run_dashboard {dashboard:.2} ms, list_run_rows {rows:.2} ms; list_trajectories {list:.1} ms (medians of 20)"
        );
    }
}
