//! Runs: one model's predictions over a dataset, as rows of AgentWorldBench
//! JSONL carrying a `gen` field.
//!
//! Three writers produce them, all read by [`crate::formats::awb`] as the
//! rows they hold:
//! - `worldloom eval`: each row plus `gen` and `wl_*` fields (`wl_engine`,
//!   `wl_status`, `wl_metrics`, `wl_latency_ms`, …; `docs/eval.md`), and
//!   after `worldloom judge` the judge's fields;
//! - the official AgentWorldBench `eval.py`: `predictions.jsonl` (each row
//!   plus `gen`) and `judged.jsonl` (plus `format`, `factuality`,
//!   `consistency`, `realism`, `quality`, `total_score`, `failed`,
//!   `strengths`, `weaknesses`, `error_message`, …).
//!
//! [`take_rows`] turns the `gen` predictions the AgentWorldBench importer
//! attached to a trajectory into [`RunRow`]s and removes every run field
//! from the rows kept on its edges, so the trajectory left is the dataset's
//! own and two runs of one dataset describe the same trajectory.

use serde_json::{Map, Value};

use crate::judge::DIMENSIONS;
use crate::trajectory::{NodeId, Prediction, Trajectory};

/// The engine label of a row without `wl_engine` (the official script's).
pub const OFFICIAL_ENGINE: &str = "agentworldbench:gen";

/// Fields the official judge adds to a row (besides [`DIMENSIONS`]).
const JUDGE_FIELDS: [&str; 7] = [
    "total_score",
    "failed",
    "strengths",
    "weaknesses",
    "extracted_output",
    "judge_raw_output",
    "error_message",
];

/// Worldloom's deterministic metrics of one row (`wl_metrics`), each in
/// [0, 1]; `None` when not computed for the row's representation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunMetrics {
    /// Whether the prediction matched exactly after normalisation.
    pub exact: Option<bool>,
    /// Token F1 of the texts.
    pub text_f1: Option<f64>,
    /// F1 of aligned UI-tree nodes.
    pub node_f1: Option<f64>,
    /// Share of aligned nodes whose attributes match.
    pub attribute_accuracy: Option<f64>,
    /// F1 of the changes from the previous state.
    pub transition_f1: Option<f64>,
}

impl RunMetrics {
    /// Whether no metric is known.
    pub fn is_empty(&self) -> bool {
        *self == RunMetrics::default()
    }
}

/// The judge's verdict on one row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JudgeVerdict {
    /// Scores 1–5 in the order of [`DIMENSIONS`]; `None` when absent.
    pub scores: [Option<f64>; 5],
    /// `total_score` (the mean of the five), when given.
    pub total_score: Option<f64>,
    /// `failed != 0`: the judge could not grade the row.
    pub failed: bool,
    /// The judge's strengths text.
    pub strengths: Option<String>,
    /// The judge's weaknesses text.
    pub weaknesses: Option<String>,
    /// `error_message` of a failed row.
    pub error: Option<String>,
}

/// One row of a run: the prediction of one turn with what the file says of
/// it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    /// The state predicted (the target of the turn's edge).
    pub node: NodeId,
    /// The 1-based turn (`turn_idx`).
    pub turn: u32,
    /// 0-based position of the row in its file.
    pub row_index: Option<usize>,
    /// The prediction (`gen` parsed; engine `wl_engine` or
    /// [`OFFICIAL_ENGINE`]).
    pub prediction: Prediction,
    /// `wl_status` when given, else the parse status of `gen` (`ok`,
    /// `truncated`, `no_observation`, `empty`).
    pub status: String,
    /// `wl_error`, when given.
    pub error: Option<String>,
    /// `wl_metrics`, when given.
    pub metrics: RunMetrics,
    /// The judge's verdict, when the row was judged.
    pub judge: Option<JudgeVerdict>,
    /// `wl_latency_ms`, when given.
    pub latency_ms: Option<f64>,
}

fn is_run_field(key: &str) -> bool {
    key == "gen"
        || key.starts_with("wl_")
        || DIMENSIONS.contains(&key)
        || JUDGE_FIELDS.contains(&key)
}

/// Whether the trajectory holds rows of a run (an edge row with `gen`).
pub fn is_run(t: &Trajectory) -> bool {
    t.edges.iter().any(|e| {
        e.awb_row
            .as_ref()
            .is_some_and(|r| r.fields.contains_key("gen"))
    })
}

fn number(fields: &Map<String, Value>, key: &str) -> Option<f64> {
    match fields.get(key)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn text(fields: &Map<String, Value>, key: &str) -> Option<String> {
    match fields.get(key)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Array(items) if !items.is_empty() => Some(
            items
                .iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    }
}

fn metrics(fields: &Map<String, Value>) -> RunMetrics {
    let Some(Value::Object(m)) = fields.get("wl_metrics") else {
        return RunMetrics::default();
    };
    RunMetrics {
        exact: m.get("exact").and_then(Value::as_bool),
        text_f1: number(m, "text_f1"),
        node_f1: number(m, "node_f1"),
        attribute_accuracy: number(m, "attribute_accuracy"),
        transition_f1: number(m, "transition_f1"),
    }
}

/// The judge's verdict in a row's fields (`format` … `quality`,
/// `total_score`, `failed`, `strengths`, `weaknesses`, `error_message`, as
/// the official judge and `worldloom judge` write them); `None` when the row
/// was not judged (neither `failed` nor a dimension present).
pub fn judge_verdict(fields: &Map<String, Value>) -> Option<JudgeVerdict> {
    let judged =
        fields.contains_key("failed") || DIMENSIONS.iter().any(|d| fields.contains_key(*d));
    if !judged {
        return None;
    }
    let scores = DIMENSIONS.map(|d| number(fields, d));
    Some(JudgeVerdict {
        scores,
        total_score: number(fields, "total_score"),
        failed: number(fields, "failed").is_some_and(|f| f != 0.0)
            || fields.get("failed").and_then(Value::as_bool) == Some(true),
        strengths: text(fields, "strengths"),
        weaknesses: text(fields, "weaknesses"),
        error: text(fields, "error_message"),
    })
}

/// Takes the run out of a trajectory read from a run file: one [`RunRow`]
/// per edge row carrying `gen`, in turn order. The `gen` predictions are
/// removed from the nodes and every run field (`gen`, `wl_*`, the judge's)
/// from the edges' rows, leaving the dataset's trajectory.
pub fn take_rows(t: &mut Trajectory) -> Vec<RunRow> {
    let mut out = Vec::new();
    for e in 0..t.edges.len() {
        let to = t.edges[e].to;
        let Some(info) = t.edges[e].awb_row.as_mut() else {
            continue;
        };
        let fields = std::mem::take(&mut info.fields);
        let row_index = info.row;
        let (run, kept): (Map<String, Value>, Map<String, Value>) =
            fields.into_iter().partition(|(k, _)| is_run_field(k));
        info.fields = kept;
        if !run.contains_key("gen") {
            continue;
        }
        let Some(node) = t.nodes.get_mut(to.0 as usize) else {
            continue;
        };
        let taken = node
            .predictions
            .iter()
            .position(|p| p.engine == OFFICIAL_ENGINE)
            .map(|i| node.predictions.remove(i));
        let mut prediction = taken.unwrap_or_else(|| {
            let generated = run.get("gen").and_then(Value::as_str).unwrap_or_default();
            Prediction::from_output(OFFICIAL_ENGINE, generated)
        });
        if let Some(engine) = text(&run, "wl_engine") {
            prediction.engine = engine;
        }
        // The judge's fields travel on the prediction, where the turn view
        // reads them (as `worldloom judge` leaves them on its rows).
        for key in DIMENSIONS
            .iter()
            .chain(&["total_score", "failed", "strengths", "weaknesses"])
        {
            if let Some(v) = run.get(*key).filter(|v| !v.is_null()) {
                prediction.extra.insert((*key).to_owned(), v.clone());
            }
        }
        if let Some(reasoning) = text(&run, "wl_reasoning") {
            prediction.reasoning_content = Some(reasoning);
        }
        if node.chosen_prediction.is_some() && node.predictions.is_empty() {
            node.chosen_prediction = None;
        }
        let turn = t.edges[e]
            .awb_row
            .as_ref()
            .and_then(|i| i.fields.get("turn_idx"))
            .and_then(Value::as_u64)
            .map_or(e as u32 + 1, |v| v.max(1) as u32);
        let status =
            text(&run, "wl_status").unwrap_or_else(|| prediction.status.as_str().to_owned());
        out.push(RunRow {
            node: to,
            turn,
            row_index,
            status,
            error: text(&run, "wl_error"),
            metrics: metrics(&run),
            judge: judge_verdict(&run),
            latency_ms: number(&run, "wl_latency_ms"),
            prediction,
        });
    }
    out.sort_by_key(|r| r.turn);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judged_fields_are_read_forgivingly() {
        let fields: Map<String, Value> = serde_json::from_str(
            r#"{"format": 5, "factuality": "4", "consistency": 3.0, "realism": 2, "quality": 1,
                "total_score": 3.0, "failed": 0.0, "strengths": ["a", "b"], "weaknesses": ""}"#,
        )
        .expect("json");
        let v = judge_verdict(&fields).expect("judged");
        assert_eq!(
            v.scores,
            [Some(5.0), Some(4.0), Some(3.0), Some(2.0), Some(1.0)]
        );
        assert_eq!(v.total_score, Some(3.0));
        assert!(!v.failed);
        assert_eq!(v.strengths.as_deref(), Some("a\nb"));
        assert_eq!(v.weaknesses, None);
        let unjudged: Map<String, Value> = serde_json::from_str(r#"{"gen": "x"}"#).expect("json");
        assert_eq!(judge_verdict(&unjudged), None);
        let failed: Map<String, Value> =
            serde_json::from_str(r#"{"failed": 1.0, "error_message": "No model generation"}"#)
                .expect("json");
        let v = judge_verdict(&failed).expect("judged");
        assert!(v.failed);
        assert_eq!(v.error.as_deref(), Some("No model generation"));
    }

    #[test]
    fn run_fields_are_told_from_dataset_fields() {
        for k in [
            "gen",
            "wl_metrics",
            "format",
            "total_score",
            "judge_raw_output",
        ] {
            assert!(is_run_field(k), "{k}");
        }
        for k in [
            "task",
            "id",
            "turn_idx",
            "prompt",
            "response",
            "total_turns",
        ] {
            assert!(!is_run_field(k), "{k}");
        }
    }
}
