//! The fidelity atlas of a large run: `run_atlas` the first time (each
//! row's findings computed from its observations and stored once), then
//! from the stored findings alone, and `atlas_rows` of one cell.
//!
//! The run is generated: web trajectories of 5 turns (an accessibility tree
//! of a 20-row list that changes each turn, ~1 KB), one row per turn, with
//! predictions that forget a row, invent a button, keep the previous state
//! or tick a box, by row number. Written into a fresh workspace with
//! `Workspace::import_run`, then read through `worldloom_api::dispatch` as
//! the studio does.
//!
//! Run: `cargo bench -p worldloom-api --bench atlas`; the row count from
//! `WORLDLOOM_BENCH_ROWS` (default 20,000). Prints the time of each phase,
//! the process's peak resident memory during it (Linux `VmHWM`, reset
//! before each phase through `/proc/self/clear_refs`) and its resident
//! memory before it.

mod common;

use std::time::Instant;

use common::median_ms;
use serde_json::json;
use worldloom_api::{Studio, dispatch};
use worldloom_core::action::ActionFormat;
use worldloom_core::formats::run::{RunMetrics, RunRow};
use worldloom_core::{
    Action, ContextMode, Domain, Observation, Prediction, Representation, Trajectory,
};
use worldloom_store::{NewRun, Workspace};

const TURNS: u32 = 5;

fn peak_reset() {
    // "5" resets the peak resident set size (Linux 4.0+).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn status_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// The list page after `k` actions: 20 rows, the first `k` of them done.
fn page(k: u32, forget: bool, invent: bool, tick: bool) -> String {
    let mut s = format!("RootWebArea 'Tasks ({k} done)', focused\n\t[10] heading 'Tasks'\n");
    for i in 0..20u32 {
        if forget && i == 7 {
            continue;
        }
        let done = i < k || (tick && i == k);
        s.push_str(&format!(
            "\t[{}] checkbox 'Task {i}', clickable, checked='{done}'\n\t\tStaticText 'Task {i}'\n",
            100 + i
        ));
    }
    if invent {
        s.push_str("\t[900] button 'Undo', clickable\n");
    }
    s
}

fn items(rows: u32) -> Vec<(Trajectory, Vec<RunRow>)> {
    let mut out = Vec::new();
    let mut row = 0u32;
    let mut t_index = 0u32;
    while row < rows {
        let mut t = Trajectory::new(
            format!("tasks-{t_index}"),
            Domain::Web,
            Some(Observation::new(
                Representation::Axtree,
                page(0, false, false, false),
            )),
        );
        let mut at = t.root();
        let mut rs = Vec::new();
        for k in 1..=TURNS {
            if row >= rows {
                break;
            }
            let (_, n) = t
                .add_step(
                    at,
                    Action::new(
                        format!("click('{}')", 100 + k - 1),
                        ActionFormat::Browsergym,
                    ),
                    Some(Observation::new(
                        Representation::Axtree,
                        page(k, false, false, false),
                    )),
                )
                .expect("step");
            let predicted = match row % 6 {
                0 => page(k, true, false, false),
                1 => page(k, false, true, false),
                2 => page(k - 1, false, false, false),
                3 => page(k, false, false, true),
                _ => page(k, false, false, false),
            };
            let mut p = Prediction::from_output(
                "bench",
                format!("<predicted_observation>\n{predicted}</predicted_observation>"),
            );
            p.representation = Representation::Axtree;
            rs.push(RunRow {
                node: n,
                turn: k,
                row_index: Some(row as usize),
                prediction: p,
                status: "ok".into(),
                error: None,
                metrics: RunMetrics::default(),
                judge: None,
                latency_ms: None,
            });
            at = n;
            row += 1;
        }
        out.push((t, rs));
        t_index += 1;
    }
    out
}

fn main() {
    let rows: u32 = std::env::var("WORLDLOOM_BENCH_ROWS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(20_000);
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("atlas.worldloom");
    let start = Instant::now();
    {
        let mut ws = Workspace::open(&path).expect("open");
        let new = NewRun {
            name: "bench".into(),
            engine: "bench".into(),
            source_path: None,
            source_sha256: None,
            mode: ContextMode::TeacherForced,
        };
        ws.import_run(&new, &items(rows)).expect("import");
    }
    let written = start.elapsed().as_secs_f64();
    let size_mb = std::fs::metadata(&path).map_or(0.0, |m| m.len() as f64 / 1e6);
    let studio = Studio::open(&path).expect("studio");
    let call = |command: &str, request: serde_json::Value| {
        dispatch(&studio, command, request).unwrap_or_else(|e| panic!("{command}: {e:?}"))
    };
    let run_id = call("list_runs", json!({}))["runs"][0]["run_id"]
        .as_str()
        .expect("run id")
        .to_owned();
    let request = json!({ "run_id": run_id });

    let base = status_mib("VmRSS:");
    peak_reset();
    let start = Instant::now();
    let first = call("run_atlas", request.clone());
    let first_s = start.elapsed().as_secs_f64();
    let first_peak = status_mib("VmHWM:");
    let first_base = base;
    assert_eq!(first["computed_rows"], rows);
    assert_eq!(first["a"]["scored"], rows);

    let base = status_mib("VmRSS:");
    peak_reset();
    let counted_ms = median_ms(5, || {
        let again = call("run_atlas", request.clone());
        assert_eq!(again["computed_rows"], 0);
    });
    let counted_peak = status_mib("VmHWM:");
    let counted_base = base;
    let cell = json!({ "run_id": run_id, "table": "overall", "group": "all", "kind": "forgotten", "limit": 200 });
    let cell_ms = median_ms(5, || {
        let r = call("atlas_rows", cell.clone());
        assert!(r["total"].as_u64().unwrap_or(0) > 0);
    });
    println!(
        "rows: {rows} ({} trajectories of {TURNS} turns), workspace {size_mb:.0} MB written in {written:.1} s",
        rows.div_ceil(TURNS)
    );
    println!(
        "run_atlas, first call (findings computed and stored): {first_s:.2} s, peak resident {first_peak:.0} MiB ({first_base:.0} MiB before)"
    );
    println!(
        "run_atlas, counted from the stored findings: {counted_ms:.0} ms (median of 5), peak resident {counted_peak:.0} MiB ({counted_base:.0} MiB before)"
    );
    println!("atlas_rows of one cell (first 200 rows): {cell_ms:.0} ms (median of 5)");
    let overall: Vec<String> = first["a"]["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .filter(|c| c["table"] == "overall")
        .map(|c| {
            format!(
                "{} {}/{}",
                c["kind"].as_str().unwrap_or(""),
                c["rows"],
                c["scored_rows"]
            )
        })
        .collect();
    println!("overall: {}", overall.join(", "));
}
