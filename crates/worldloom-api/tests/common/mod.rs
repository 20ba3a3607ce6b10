//! What the API test files share: the repository's samples and a studio on
//! a fresh workspace in a temporary folder, and the reads most tests make.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, channel};

use worldloom_api::types::{
    ExportFormat, ExportRequest, ExportResponse, GetTurnRequest, ListPredictionsRequest,
    ListPredictionsResponse, ListRunRowsRequest, TurnDetail,
};
use worldloom_api::{Studio, StudioEvent, commands};

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The path of a sample under `samples/`.
pub fn sample(rel: &str) -> String {
    repo().join("samples").join(rel).display().to_string()
}

/// A web trajectory sample (AgentLab, six steps).
pub const WEB: &str = "web/agentlab_larkmail-reply_6steps.json";
/// An OS trajectory sample folder.
pub const OS: &str = "os/thunar_rename_trajectory";

/// A studio on a new workspace file; the folder lives as long as the guard.
pub fn studio() -> (tempfile::TempDir, Studio) {
    let dir = tempfile::tempdir().expect("tempdir");
    let studio = Studio::open(&dir.path().join("ws.worldloom")).expect("open");
    (dir, studio)
}

/// The predictions of `node` of trajectory `id`.
pub fn predictions(studio: &Studio, id: &str, node: u32) -> ListPredictionsResponse {
    commands::list_predictions(
        studio,
        ListPredictionsRequest {
            trajectory_id: id.into(),
            node_id: node,
        },
    )
    .expect("list")
}

/// The turn of `node` of trajectory `id` with its chosen prediction.
pub fn get_turn(studio: &Studio, id: &str, node: u32) -> TurnDetail {
    commands::get_turn(
        studio,
        GetTurnRequest {
            trajectory_id: id.into(),
            node_id: node,
            prediction_id: None,
        },
    )
    .expect("turn")
}

/// Exports trajectory `id` (its main branch) as a native file at `out`.
pub fn export_native(studio: &Studio, id: &str, out: &Path) -> ExportResponse {
    commands::export(
        studio,
        ExportRequest {
            trajectory_id: id.into(),
            branch_id: None,
            format: ExportFormat::Native,
            path: Some(out.display().to_string()),
        },
    )
    .expect("export")
}

/// The studio's events, as they are sent.
pub fn events(studio: &Studio) -> Receiver<StudioEvent> {
    let (tx, rx) = channel();
    let tx = Mutex::new(tx);
    studio.add_event_sink(Box::new(move |e: &StudioEvent| {
        if let Ok(tx) = tx.lock() {
            let _ = tx.send(e.clone());
        }
    }));
    rx
}

/// Serves `app` on a free local port on a thread of its own.
pub fn serve(app: axum::Router) -> (std::net::SocketAddr, std::thread::JoinHandle<()>) {
    let (tx, rx) = channel();
    let handle = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let _ = tx.send(listener.local_addr().expect("addr"));
            let _ = axum::serve(listener, app).await;
        });
    });
    (rx.recv().expect("address"), handle)
}

/// A `list_run_rows` request for every row of run `run_id`, unfiltered, in
/// the stored order.
pub fn all_rows(run_id: &str) -> ListRunRowsRequest {
    ListRunRowsRequest {
        run_id: run_id.into(),
        query: None,
        search_in: None,
        domain: None,
        status: None,
        label: None,
        min_score: None,
        max_score: None,
        sort: None,
        descending: false,
        offset: 0,
        limit: None,
    }
}

/// The AgentWorldBench sample file.
pub const AWB: &str = "agentworldbench/agentworldbench_sample.jsonl";

/// Writes run files over the AgentWorldBench sample into `dir`, as the three
/// writers write them, with deterministic contents:
/// - `copy.jsonl`: `worldloom eval --engine copy` output (the previous real
///   observation as prediction; the first turn an `error` row), with
///   `wl_*` fields and no judge fields;
/// - `model-b/predictions.jsonl`: the official script's inference output
///   (`gen` only): the real observation itself for even rows, a wrong one
///   for odd rows;
/// - `model-b/judged.jsonl`: the same rows with the official judge's fields
///   (scores 5 for even rows, 2 for odd rows; the last row failed).
///
/// Returns the three paths.
pub fn write_run_files(dir: &Path) -> [PathBuf; 3] {
    use serde_json::{Map, Value, json};
    let text = std::fs::read_to_string(sample(AWB)).expect("sample");
    let rows: Vec<Map<String, Value>> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("row"))
        .collect();
    let response = |row: &Map<String, Value>, k: usize| -> Option<String> {
        let list = row["response"].as_array()?;
        let s = list.get(k)?.as_str()?;
        Some(
            s.strip_prefix("**Environment Observation:**")
                .unwrap_or(s)
                .trim_start()
                .to_owned(),
        )
    };
    let wrap = |s: &str| {
        format!("<think>thinking</think>\n<predicted_observation>\n{s}\n</predicted_observation>")
    };
    let mut copy = String::new();
    let mut predictions = String::new();
    let mut judged = String::new();
    let n = rows.len();
    for (i, row) in rows.iter().enumerate() {
        let turn = row["turn_idx"].as_u64().expect("turn") as usize;
        let mut a = row.clone();
        match turn.checked_sub(2).and_then(|k| response(row, k)) {
            Some(prev) => {
                a.insert("gen".into(), json!(wrap(&prev)));
                a.insert("wl_engine".into(), json!("copy"));
                a.insert("wl_status".into(), json!("ok"));
                a.insert("wl_error".into(), Value::Null);
                a.insert("wl_observation".into(), json!(prev));
            }
            None => {
                a.insert("gen".into(), json!(""));
                a.insert("wl_engine".into(), json!("copy"));
                a.insert("wl_status".into(), json!("error"));
                a.insert(
                    "wl_error".into(),
                    json!("invalid request: nothing to copy on the first turn"),
                );
                a.insert("wl_observation".into(), Value::Null);
            }
        }
        a.insert("wl_latency_ms".into(), json!(1.5));
        copy.push_str(&Value::Object(a).to_string());
        copy.push('\n');

        let real = response(row, turn - 1).unwrap_or_default();
        let mut b = row.clone();
        let guess = if i % 2 == 0 {
            real
        } else {
            format!(
                "{}\nan element that is not there",
                real.lines().next().unwrap_or("")
            )
        };
        b.insert("gen".into(), json!(wrap(&guess)));
        predictions.push_str(&Value::Object(b.clone()).to_string());
        predictions.push('\n');
        let s = if i % 2 == 0 { 5 } else { 2 };
        let failed = i + 1 == n;
        b.extend(
            json!({
                "format": s, "factuality": s, "consistency": s.min(4), "realism": s, "quality": s,
                "total_score": if failed { 0.0 } else { (4.0 * s as f64 + s.min(4) as f64) / 5.0 },
                "failed": if failed { 1.0 } else { 0.0 },
                "strengths": if failed { "" } else { "keeps the layout" },
                "weaknesses": if i % 2 == 0 { "" } else { "invents an element" },
                "error_message": if failed { "judge answer did not parse" } else { "" },
            })
            .as_object()
            .expect("object")
            .clone(),
        );
        judged.push_str(&Value::Object(b).to_string());
        judged.push('\n');
    }
    std::fs::create_dir_all(dir.join("model-b")).expect("dir");
    let paths = [
        dir.join("copy.jsonl"),
        dir.join("model-b/predictions.jsonl"),
        dir.join("model-b/judged.jsonl"),
    ];
    std::fs::write(&paths[0], copy).expect("write");
    std::fs::write(&paths[1], predictions).expect("write");
    std::fs::write(&paths[2], judged).expect("write");
    paths
}
