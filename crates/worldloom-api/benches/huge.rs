//! Huge observations and long trajectories: memory and time of reading,
//! importing and showing them. Inputs are generated under the system's
//! temporary folder (deleted at the end), never committed.
//!
//! - **Long trajectory**: a native file of 3,000 Android turns (a 60-node
//!   uiautomator dump per state); `get_turn` of turn 1 and of turn 3,000
//!   (median of 5 calls each).
//! - **Huge row**: one AgentWorldBench row whose turn holds a 200,000-node
//!   uiautomator dump (the prompt holds the state before it, another
//!   200,000 nodes). Peak resident memory (Linux `VmHWM`, reset before each
//!   phase through `/proc/self/clear_refs`) of reading it as `inspect` does
//!   (`import_path`), importing it into a workspace (`import_files`), and
//!   opening its turn (`get_turn`: time and JSON body size); then a window
//!   of 200 rows deep in the tree (`get_tree_rows`) and a search
//!   (`search_tree`).
//!
//! Run: `cargo bench -p worldloom-api --bench huge` (optionally
//! `-- --nodes 20000` for a smaller dump). Results: `docs/benchmarks.md`
//! ("Huge observations and long trajectories").

mod common;

use common::median_ms;

use std::path::Path;
use std::time::Instant;

use worldloom_api::types::*;
use worldloom_api::{Studio, commands};
use worldloom_core::action::ActionFormat;
use worldloom_core::{Action, Domain, Observation, Representation, Trajectory, TrajectoryFile};

const LONG_TURNS: usize = 3_000;

/// A uiautomator dump of `nodes` nodes: a frame, a list, and rows of a
/// container with three children; every node with the usual attributes.
fn dump(nodes: usize, tag: &str) -> String {
    let mut s = String::with_capacity(nodes * 520);
    s.push_str(
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">",
    );
    let node = |s: &mut String, i: usize, class: &str, text: &str, close: bool| {
        let top = i % 2400;
        s.push_str(&format!(
            "<node index=\"{}\" text=\"{text}\" resource-id=\"com.example.{tag}:id/item_{i}\" class=\"{class}\" package=\"com.example.{tag}\" content-desc=\"{text} description for accessibility\" checkable=\"false\" checked=\"false\" clickable=\"true\" enabled=\"true\" focusable=\"true\" focused=\"false\" scrollable=\"false\" long-clickable=\"false\" password=\"false\" selected=\"false\" bounds=\"[0,{top}][1080,{}]\"{}>",
            i % 4,
            top + 40,
            if close { "/" } else { "" }
        ));
    };
    node(&mut s, 0, "android.widget.FrameLayout", "", false);
    node(&mut s, 1, "android.widget.ListView", "", false);
    let mut i = 2;
    while i < nodes {
        let row = i;
        node(&mut s, i, "android.widget.LinearLayout", "", false);
        i += 1;
        for c in 0..3 {
            if i >= nodes {
                break;
            }
            let text = format!("Row {row} cell {c} ({tag})");
            node(&mut s, i, "android.widget.TextView", &text, true);
            i += 1;
        }
        s.push_str("</node>");
    }
    s.push_str("</node></node></hierarchy>");
    s
}

fn peak_reset() {
    // "5" resets the peak resident set size (Linux 4.0+).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn peak_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn import(studio: &Studio, file: &Path) -> String {
    let resp = commands::import_files(
        studio,
        ImportFilesRequest {
            paths: vec![file.display().to_string()],
        },
    )
    .expect("import");
    assert!(resp.failed.is_empty(), "{:?}", resp.failed);
    resp.imported[0].trajectory_id.clone()
}

fn long_trajectory(dir: &Path) {
    let small = |k: usize| dump(60, &format!("s{k}"));
    let mut t = Trajectory::new(
        "long",
        Domain::Android,
        Some(Observation::new(Representation::AndroidXml, small(0))),
    );
    let mut node = t.root();
    for k in 1..=LONG_TURNS {
        let (_, n) = t
            .add_step(
                node,
                Action::new(
                    format!("{{\"action_type\": \"click\", \"x\": {k}, \"y\": 10}}"),
                    ActionFormat::AndroidJson,
                ),
                Some(Observation::new(Representation::AndroidXml, small(k))),
            )
            .expect("step");
        node = n;
    }
    let file = dir.join("long.worldloom.json");
    TrajectoryFile::new(vec![t]).write(&file).expect("write");
    let studio = Studio::open(&dir.join("long.worldloom")).expect("open");
    let id = import(&studio, &file);
    for turn in [1, LONG_TURNS / 2, LONG_TURNS] {
        let ms = median_ms(5, || {
            commands::get_turn(
                &studio,
                GetTurnRequest {
                    trajectory_id: id.clone(),
                    node_id: turn as u32,
                    prediction_id: None,
                },
            )
            .expect("turn");
        });
        println!(
            "long trajectory ({LONG_TURNS} turns): get_turn of turn {turn}: {ms:.1} ms (median of 5)"
        );
    }
}

fn huge_row(dir: &Path, nodes: usize) {
    let before = dump(nodes, "before");
    let after = dump(nodes, "after");
    let row = serde_json::json!({
        "task": "android",
        "id": "huge-row",
        "system_str": "You are a world model of an Android phone.",
        "prompt": [format!("**Current Observation:**\n{before}\n\n**Action:**\n{{\"action_type\": \"scroll\", \"direction\": \"down\"}}")],
        "response": [format!("**Environment Observation:**\n{after}")],
        "current_prompt": null,
        "turn_idx": 1,
        "total_turns": 1,
    });
    drop((before, after));
    let file = dir.join("huge.jsonl");
    std::fs::write(&file, format!("{row}\n")).expect("write");
    drop(row);
    let file_mib = std::fs::metadata(&file).expect("size").len() as f64 / (1024.0 * 1024.0);
    println!("huge row: {nodes} nodes per dump, file {file_mib:.1} MiB");
    let base = rss_mib();
    println!("  resident before reading: {base:.1} MiB");

    peak_reset();
    let start = Instant::now();
    let imported = worldloom_core::import_path(&file, &worldloom_core::ImportOptions::default())
        .expect("read");
    let read_s = start.elapsed().as_secs_f64();
    let read_peak = peak_mib();
    drop(imported);
    println!(
        "  read (as `inspect`): {read_s:.1} s, peak {read_peak:.0} MiB = {:.2}× the file above the {base:.0} MiB base",
        (read_peak - base) / file_mib
    );

    let studio = Studio::open(&dir.join("huge.worldloom")).expect("open");
    let base = rss_mib();
    peak_reset();
    let start = Instant::now();
    let id = import(&studio, &file);
    let import_s = start.elapsed().as_secs_f64();
    let import_peak = peak_mib();
    println!(
        "  import into a workspace: {import_s:.1} s, peak {import_peak:.0} MiB = {:.2}× the file above the {base:.0} MiB base",
        (import_peak - base) / file_mib
    );

    let base = rss_mib();
    peak_reset();
    let start = Instant::now();
    let turn = commands::get_turn(
        &studio,
        GetTurnRequest {
            trajectory_id: id.clone(),
            node_id: 1,
            prediction_id: None,
        },
    )
    .expect("turn");
    let body = serde_json::to_vec(&turn).expect("json");
    let turn_s = start.elapsed().as_secs_f64();
    let turn_peak = peak_mib();
    let rows = turn.views[0].real.as_ref().and_then(|d| d.rows.as_ref());
    println!(
        "  get_turn: {turn_s:.2} s, JSON body {:.2} MiB, tree {} nodes ({} rows sent), peak {turn_peak:.0} MiB ({:.0} MiB above the {base:.0} MiB base); resident after {:.0} MiB",
        body.len() as f64 / (1024.0 * 1024.0),
        rows.map_or(0, |r| r.node_count),
        rows.map_or(0, |r| r.rows.len()),
        turn_peak - base,
        rss_mib()
    );
    drop((turn, body));

    let mut req = GetTreeRowsRequest {
        trajectory_id: id.clone(),
        node_id: 1,
        prediction_id: None,
        view_index: 0,
        side: PaneSide::Real,
        offset: (nodes / 2) as u32,
        limit: 200,
        collapsed: Vec::new(),
        reveal: None,
    };
    let mut bytes = 0;
    let ms = median_ms(5, || {
        let w = commands::get_tree_rows(&studio, req.clone()).expect("rows");
        bytes = serde_json::to_vec(&w).expect("json").len();
    });
    println!(
        "  get_tree_rows (200 rows at row {}): {ms:.1} ms, {:.1} KiB (median of 5)",
        nodes / 2,
        bytes as f64 / 1024.0
    );
    req.collapsed = vec![1];
    req.offset = 0;
    let ms = median_ms(5, || {
        commands::get_tree_rows(&studio, req.clone()).expect("rows");
    });
    println!("  get_tree_rows (the list collapsed): {ms:.1} ms (median of 5)");
    let mut total = 0;
    let ms = median_ms(5, || {
        total = commands::search_tree(
            &studio,
            SearchTreeRequest {
                trajectory_id: id.clone(),
                node_id: 1,
                prediction_id: None,
                view_index: 0,
                side: PaneSide::Real,
                query: "row 1999 cell".into(),
                limit: 1000,
            },
        )
        .expect("search")
        .total;
    });
    println!("  search_tree (\"row 1999 cell\", {total} matches): {ms:.1} ms (median of 5)");
    drop(studio);
    parse_profile(nodes);
}

/// Where parsing one dump spends memory: the dump parsed to a `UiTree`
/// against the compact form read straight from it (`parse_compact`, what
/// `get_turn` keeps for windows). Each is measured in a fresh child process
/// (this bench binary again), so that memory freed by earlier phases and
/// kept by the allocator does not hide its cost.
fn parse_profile(nodes: usize) {
    let text_mib = dump(nodes, "after").len() as f64 / (1024.0 * 1024.0);
    println!("profile: one {nodes}-node dump ({text_mib:.1} MiB of text), each in a fresh process");
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    for form in ["tree", "compact"] {
        match std::process::Command::new(&exe)
            .args(["--parse-profile", form, "--nodes", &nodes.to_string()])
            .output()
        {
            Ok(out) => print!("{}", String::from_utf8_lossy(&out.stdout)),
            Err(e) => println!("  {form}: could not run: {e}"),
        }
    }
}

/// One measurement of [`parse_profile`], in this (fresh) process.
fn parse_profile_child(nodes: usize, form: &str) {
    let text = dump(nodes, "after");
    let base = rss_mib();
    peak_reset();
    let repr = worldloom_core::Representation::AndroidXml;
    if form == "compact" {
        let (tree, _) = worldloom_obs::parse_compact(text.as_bytes(), repr).expect("parse");
        println!(
            "  parse_compact: peak {:.0} MiB above the text, {:.0} MiB resident after; the compact tree holds {:.0} MiB",
            peak_mib() - base,
            rss_mib() - base,
            tree.heap_bytes() as f64 / (1024.0 * 1024.0)
        );
    } else {
        let parsed = worldloom_obs::parse(&text, repr).expect("parse");
        println!(
            "  parse to a UiTree: peak {:.0} MiB above the text, {:.0} MiB resident after (the tree, {} nodes)",
            peak_mib() - base,
            rss_mib() - base,
            parsed.tree.nodes.len()
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let nodes = args
        .iter()
        .position(|a| a == "--nodes")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(200_000);
    if let Some(i) = args.iter().position(|a| a == "--parse-profile") {
        parse_profile_child(nodes, args.get(i + 1).map_or("tree", String::as_str));
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    // The huge row first, while the process is small.
    huge_row(dir.path(), nodes);
    long_trajectory(dir.path());
}
