//! Aggregation behind `worldloom score`.
//!
//! Judged scores follow the official `eval.py score` step: per domain, rows
//! with `failed == 0.0` are valid; each dimension's mean over valid rows
//! (values of 0, the "invalid" marker, left out) is reported as
//! `(mean − 1) / 4 × 100`; `overall` pools every valid row's `total_score`
//! across domains. `macro_overall` (the plain mean of the domain scores) is
//! given beside it. Worldloom's deterministic metrics (`wl_metrics`, from
//! `worldloom eval`) are averaged over the rows where they were computed.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::EvalError;
use crate::bench::domain_of;
use crate::judge::{DIMENSIONS, read_jsonl};

/// Scores of one domain (or of everything).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DomainScore {
    /// Rows.
    pub rows: usize,
    /// Judged rows with `failed == 0.0`.
    pub valid: usize,
    /// Judged rows the judge marked failed (`failed != 0.0`).
    pub failed: usize,
    /// Rows with no judgement at all (no `failed` field: `worldloom judge`
    /// has not run on them).
    pub unjudged: usize,
    /// Normalised 0–100 score per dimension, in [`DIMENSIONS`] order, then
    /// `total_score`; `None` without valid rows.
    pub judged: BTreeMap<String, Option<f64>>,
    /// Rows per `wl_status` (`ok`, `truncated`, `no_observation`, `empty`,
    /// `error`).
    pub status_counts: BTreeMap<String, usize>,
    /// Rows with deterministic metrics computed (`wl_metrics.status ==
    /// "scored"`).
    pub metric_rows: usize,
    /// Share of those rows that match exactly, in [0, 1].
    pub exact_rate: Option<f64>,
    /// Mean visible-text F1, in [0, 1].
    pub text_f1: Option<f64>,
    /// Mean node F1 (tree observations), in [0, 1].
    pub node_f1: Option<f64>,
    /// Mean attribute accuracy, in [0, 1].
    pub attribute_accuracy: Option<f64>,
    /// Mean transition F1, in [0, 1].
    pub transition_f1: Option<f64>,
    /// Decoding figures summed over the rows whose engine counted its
    /// forward passes (`wl_decode_forwards` > 0); `None` when none did.
    pub decoding: Option<Decoding>,
}

/// Decoding figures of a set of predictions (the local engine's counts:
/// `wl_completion_tokens`, `wl_decode_forwards`, `wl_drafted_tokens`,
/// `wl_accepted_tokens`, `wl_decode_ms`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Decoding {
    /// Tokens generated.
    pub completion_tokens: u64,
    /// Forward passes while decoding.
    pub decode_forwards: u64,
    /// Tokens drafted (speculative decoding); 0 when drafting was off.
    pub drafted_tokens: u64,
    /// Drafted tokens kept.
    pub accepted_tokens: u64,
    /// Decode time, ms.
    pub decode_ms: f64,
}

impl Decoding {
    /// Generated tokens per forward pass (1 without drafting).
    pub fn tokens_per_forward(&self) -> f64 {
        self.completion_tokens as f64 / self.decode_forwards.max(1) as f64
    }
}

/// The whole report.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ScoreReport {
    /// Per domain, by name.
    pub domains: BTreeMap<String, DomainScore>,
    /// Pooled over all rows (the official overall for `total_score`).
    pub all: DomainScore,
    /// Mean of the domains' `total_score`, 0–100, over domains with valid rows.
    pub macro_overall: Option<f64>,
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

fn summarise(rows: &[&Map<String, Value>]) -> DomainScore {
    let mut s = DomainScore {
        rows: rows.len(),
        ..DomainScore::default()
    };
    let valid: Vec<&&Map<String, Value>> = rows
        .iter()
        .filter(|r| r.get("failed").and_then(Value::as_f64) == Some(0.0))
        .collect();
    s.valid = valid.len();
    s.unjudged = rows.iter().filter(|r| !r.contains_key("failed")).count();
    s.failed = rows.len() - valid.len() - s.unjudged;
    for dim in DIMENSIONS.iter().copied().chain(["total_score"]) {
        let values: Vec<f64> = valid
            .iter()
            .filter_map(|r| r.get(dim).and_then(Value::as_f64))
            .filter(|&v| v != 0.0)
            .collect();
        s.judged.insert(
            dim.to_owned(),
            mean(&values).map(worldloom_core::judge::scale),
        );
    }
    let mut exact = Vec::new();
    let (mut text, mut node, mut attr, mut trans) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut decoding = Decoding::default();
    for r in rows {
        if let Some(status) = r.get("wl_status").and_then(Value::as_str) {
            *s.status_counts.entry(status.to_owned()).or_default() += 1;
        }
        let count = |field: &str| r.get(field).and_then(Value::as_u64).unwrap_or(0);
        if count("wl_decode_forwards") > 0 {
            decoding.completion_tokens += count("wl_completion_tokens");
            decoding.decode_forwards += count("wl_decode_forwards");
            decoding.drafted_tokens += count("wl_drafted_tokens");
            decoding.accepted_tokens += count("wl_accepted_tokens");
            decoding.decode_ms += r.get("wl_decode_ms").and_then(Value::as_f64).unwrap_or(0.0);
        }
        let Some(m) = r
            .get("wl_metrics")
            .filter(|m| m.get("status").and_then(Value::as_str) == Some("scored"))
        else {
            continue;
        };
        s.metric_rows += 1;
        if let Some(e) = m.get("exact").and_then(Value::as_bool) {
            exact.push(if e { 1.0 } else { 0.0 });
        }
        for (field, bucket) in [
            ("text_f1", &mut text),
            ("node_f1", &mut node),
            ("attribute_accuracy", &mut attr),
            ("transition_f1", &mut trans),
        ] {
            if let Some(v) = m.get(field).and_then(Value::as_f64) {
                bucket.push(v);
            }
        }
    }
    s.exact_rate = mean(&exact);
    s.text_f1 = mean(&text);
    s.node_f1 = mean(&node);
    s.attribute_accuracy = mean(&attr);
    s.transition_f1 = mean(&trans);
    s.decoding = (decoding.decode_forwards > 0).then_some(decoding);
    s
}

/// Aggregates rows (judged or not).
pub fn score_rows(rows: &[Map<String, Value>]) -> ScoreReport {
    let mut by_domain: BTreeMap<String, Vec<&Map<String, Value>>> = BTreeMap::new();
    for r in rows {
        by_domain.entry(domain_of(r)).or_default().push(r);
    }
    let domains: BTreeMap<String, DomainScore> = by_domain
        .iter()
        .map(|(d, rs)| (d.clone(), summarise(rs)))
        .collect();
    let totals: Vec<f64> = domains
        .values()
        .filter_map(|d| d.judged.get("total_score").copied().flatten())
        .collect();
    let all_refs: Vec<&Map<String, Value>> = rows.iter().collect();
    ScoreReport {
        all: summarise(&all_refs),
        macro_overall: mean(&totals),
        domains,
    }
}

/// Reads and aggregates a predictions or judged file.
///
/// Errors: [`EvalError::Io`]; [`EvalError::Input`] naming a bad line, or
/// the file when it holds no rows.
pub fn score_file(path: &Path) -> Result<ScoreReport, EvalError> {
    let rows = read_jsonl(path)?;
    if rows.is_empty() {
        return Err(EvalError::Input(format!(
            "{}: no rows to score (an empty file; `worldloom eval` writes the predictions to score)",
            path.display()
        )));
    }
    Ok(score_rows(&rows))
}

fn cell(x: Option<f64>, scale: f64) -> String {
    x.map_or_else(|| "-".to_owned(), |v| format!("{:.2}", v * scale))
}

/// The report as a text table: one line per domain and one for all rows.
/// Judged columns are 0–100; metric columns are percentages.
pub fn render(report: &ScoreReport) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{:<10} {:>5} {:>6} {:>6} {:>8} | {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} | {:>6} {:>6} {:>7} {:>6} {:>6} {:>6}\n",
        "domain", "rows", "valid", "failed", "unjudged", "format", "fact", "consist", "realism", "quality", "total", "scored",
        "exact%", "textF1%", "nodeF1%", "attr%", "trans%"
    ));
    let line = |name: &str, d: &DomainScore| {
        let j = |k: &str| cell(d.judged.get(k).copied().flatten(), 1.0);
        format!(
            "{:<10} {:>5} {:>6} {:>6} {:>8} | {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} | {:>6} {:>6} {:>7} {:>6} {:>6} {:>6}\n",
            name,
            d.rows,
            d.valid,
            d.failed,
            d.unjudged,
            j(DIMENSIONS[0]),
            j(DIMENSIONS[1]),
            j(DIMENSIONS[2]),
            j(DIMENSIONS[3]),
            j(DIMENSIONS[4]),
            j("total_score"),
            d.metric_rows,
            cell(d.exact_rate, 100.0),
            cell(d.text_f1, 100.0),
            cell(d.node_f1, 100.0),
            cell(d.attribute_accuracy, 100.0),
            cell(d.transition_f1, 100.0),
        )
    };
    for (name, d) in &report.domains {
        out.push_str(&line(name, d));
    }
    out.push_str(&line("all", &report.all));
    out.push_str(&format!(
        "overall (pooled total_score, as eval.py): {}   macro (mean of domains): {}\n",
        cell(report.all.judged.get("total_score").copied().flatten(), 1.0),
        cell(report.macro_overall, 1.0)
    ));
    let statuses: Vec<String> = report
        .all
        .status_counts
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    if !statuses.is_empty() {
        out.push_str(&format!("prediction status: {}\n", statuses.join(", ")));
    }
    let decoding = report
        .domains
        .iter()
        .map(|(name, d)| (name.as_str(), d))
        .chain([("all", &report.all)]);
    for (name, d) in decoding {
        if let Some(x) = &d.decoding {
            out.push_str(&format!(
                "decoding {name}: {} tokens in {} forwards ({:.2} tokens/forward), drafts kept {} of {}, decode {:.1} s\n",
                x.completion_tokens,
                x.decode_forwards,
                x.tokens_per_forward(),
                x.accepted_tokens,
                x.drafted_tokens,
                x.decode_ms / 1e3,
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rows(values: Vec<Value>) -> Vec<Map<String, Value>> {
        values
            .into_iter()
            .map(|v| {
                if let Value::Object(m) = v {
                    m
                } else {
                    panic!()
                }
            })
            .collect()
    }

    #[test]
    fn official_normalisation_per_domain_and_pooled() {
        let r = rows(vec![
            json!({"task": "web", "failed": 0.0, "format": 5, "factuality": 3, "consistency": 3, "realism": 3, "quality": 3, "total_score": 3.4}),
            json!({"task": "web", "failed": 0.0, "format": 3, "factuality": 1, "consistency": 1, "realism": 1, "quality": 1, "total_score": 1.4}),
            json!({"task": "web", "failed": 1.0, "total_score": 0}),
            json!({"task": "agentworld/os", "failed": 0.0, "format": 5, "factuality": 5, "consistency": 5, "realism": 5, "quality": 5, "total_score": 5.0}),
        ]);
        let report = score_rows(&r);
        let web = &report.domains["web"];
        assert_eq!(
            (web.rows, web.valid, web.failed, web.unjudged),
            (3, 2, 1, 0)
        );
        assert_eq!(web.judged["format"], Some(75.0));
        assert!((web.judged["total_score"].unwrap() - 35.0).abs() < 1e-9);
        assert_eq!(report.domains["os"].judged["total_score"], Some(100.0));
        // Pooled: mean(3.4, 1.4, 5.0) = 3.2667 → 56.67; macro: (35 + 100) / 2.
        assert!((report.all.judged["total_score"].unwrap() - 56.666_666).abs() < 1e-3);
        assert!((report.macro_overall.unwrap() - 67.5).abs() < 1e-9);
    }

    #[test]
    fn an_empty_file_is_refused_by_name() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("empty.jsonl");
        std::fs::write(&path, "\n\n").expect("write");
        let err = score_file(&path).expect_err("nothing to score");
        assert!(
            err.to_string().contains("empty.jsonl: no rows to score"),
            "{err}"
        );
    }

    #[test]
    fn decoding_figures_are_summed_over_rows_that_counted_forwards() {
        let r = rows(vec![
            json!({"task": "android", "wl_completion_tokens": 120, "wl_decode_forwards": 30, "wl_drafted_tokens": 100, "wl_accepted_tokens": 90, "wl_decode_ms": 500.0}),
            json!({"task": "android", "wl_completion_tokens": 40, "wl_decode_forwards": 10, "wl_drafted_tokens": 40, "wl_accepted_tokens": 30, "wl_decode_ms": 250.0}),
            // A copy-baseline row: no forwards, not counted.
            json!({"task": "android", "wl_completion_tokens": 0, "wl_decode_forwards": 0}),
            json!({"task": "web", "wl_completion_tokens": 5}),
        ]);
        let report = score_rows(&r);
        let d = report.domains["android"].decoding.clone().expect("counted");
        assert_eq!(
            (
                d.completion_tokens,
                d.decode_forwards,
                d.drafted_tokens,
                d.accepted_tokens
            ),
            (160, 40, 140, 120)
        );
        assert!((d.tokens_per_forward() - 4.0).abs() < 1e-12);
        assert!((d.decode_ms - 750.0).abs() < 1e-9);
        assert_eq!(report.domains["web"].decoding, None);
        let table = render(&report);
        assert!(
            table.contains("decoding android: 160 tokens in 40 forwards (4.00 tokens/forward), drafts kept 120 of 140, decode 0.8 s"),
            "{table}"
        );
        assert!(!table.contains("decoding web"), "{table}");
    }

    #[test]
    fn deterministic_metrics_beside() {
        let r = rows(vec![
            json!({"task": "terminal", "wl_status": "ok", "wl_metrics": {"status": "scored", "exact": true, "text_f1": 1.0}}),
            json!({"task": "terminal", "wl_status": "ok", "wl_metrics": {"status": "scored", "exact": false, "text_f1": 0.5}}),
            json!({"task": "terminal", "wl_status": "error", "wl_metrics": null}),
        ]);
        let report = score_rows(&r);
        let t = &report.domains["terminal"];
        assert_eq!((t.rows, t.valid, t.metric_rows), (3, 0, 2));
        // Never judged: counted apart from rows the judge failed.
        assert_eq!((t.failed, t.unjudged), (0, 3));
        assert_eq!(t.exact_rate, Some(0.5));
        assert_eq!(t.text_f1, Some(0.75));
        assert_eq!(t.node_f1, None);
        assert_eq!(t.judged["total_score"], None);
        assert_eq!(t.status_counts["error"], 1);
        let text = render(&report);
        assert!(text.contains("terminal"), "{text}");
        assert!(text.contains("prediction status: error 1, ok 2"), "{text}");
    }
}
