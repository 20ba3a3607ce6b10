//! `get_turn` and `get_branch` on a large branch tree: a web trajectory of
//! 20,000 states (a 40-turn recorded path and branches off every state of
//! it), each with a ~1.5 KB accessibility tree, in a fresh workspace.
//!
//! Run: `cargo bench -p worldloom-api --bench get_turn` (add
//! `--profile dev` for the debug build). Prints the median of 10 calls of
//! each command, in milliseconds; results are in `docs/api.md` ("Large trees").

mod common;

use common::median_ms;

use std::time::Instant;

use worldloom_api::types::{GetBranchRequest, GetTurnRequest, ImportFilesRequest};
use worldloom_api::{Studio, commands};
use worldloom_core::action::ActionFormat;
use worldloom_core::{Action, Domain, Observation, Representation, Trajectory, TrajectoryFile};

const NODES: usize = 20_000;
const MAIN_TURNS: usize = 40;

fn page(n: usize) -> String {
    let mut s = format!("[1] RootWebArea 'Page {n}', focused\n");
    for i in 0..30 {
        s.push_str(&format!("\t[{}] button 'Item {i} of page {n}'\n", 100 + i));
    }
    s
}

fn tree() -> Trajectory {
    let mut t = Trajectory::new(
        "large",
        Domain::Web,
        Some(Observation::new(Representation::Axtree, page(0))),
    );
    let mut main = vec![t.root()];
    for k in 1..=MAIN_TURNS {
        let (_, n) = t
            .add_step(
                main[k - 1],
                Action::new(format!("click('{k}')"), ActionFormat::Browsergym),
                Some(Observation::new(Representation::Axtree, page(k))),
            )
            .expect("step");
        main.push(n);
    }
    let mut i = 0;
    while t.nodes.len() < NODES {
        let from = main[i % MAIN_TURNS];
        let n = t.nodes.len();
        t.add_step(
            from,
            Action::new(format!("click('{n}')"), ActionFormat::Browsergym),
            Some(Observation::new(Representation::Axtree, page(n))),
        )
        .expect("branch");
        i += 1;
    }
    t
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("large.worldloom.json");
    TrajectoryFile::new(vec![tree()])
        .write(&file)
        .expect("write");
    let studio = Studio::open(&dir.path().join("ws.worldloom")).expect("open");
    let start = Instant::now();
    let resp = commands::import_files(
        &studio,
        ImportFilesRequest {
            paths: vec![file.display().to_string()],
        },
    )
    .expect("import");
    println!(
        "import of {NODES} states: {:.0} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    let id = resp.imported[0].trajectory_id.clone();
    let key = worldloom_store::TrajectoryKey(id.parse().expect("key"));
    let load = median_ms(10, || {
        studio
            .lock()
            .expect("lock")
            .load_trajectory(key)
            .expect("load");
    });
    println!("load_trajectory (the whole tree from SQLite): {load:.1} ms (median of 10)");
    let path = median_ms(10, || {
        studio
            .lock()
            .expect("lock")
            .load_trajectory_path(key, worldloom_core::NodeId(MAIN_TURNS as u32))
            .expect("load");
    });
    println!("load_trajectory_path (records of one path only): {path:.1} ms (median of 10)");
    let turn = median_ms(10, || {
        commands::get_turn(
            &studio,
            GetTurnRequest {
                trajectory_id: id.clone(),
                node_id: MAIN_TURNS as u32,
                prediction_id: None,
            },
        )
        .expect("turn");
    });
    println!("get_turn (turn {MAIN_TURNS} of the recorded path): {turn:.1} ms (median of 10)");
    let branch = median_ms(10, || {
        commands::get_branch(
            &studio,
            GetBranchRequest {
                trajectory_id: id.clone(),
                branch_id: MAIN_TURNS.to_string(),
            },
        )
        .expect("branch");
    });
    println!("get_branch (the recorded path): {branch:.1} ms (median of 10)");
}
