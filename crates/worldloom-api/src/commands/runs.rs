//! Runs: the list, a run's dashboard, its row table, two runs compared row
//! by row, and full-text search in the rows' texts.
//!
//! Rows are read whole from the store (a run of 20,000 rows is a few
//! megabytes) and filtered, sorted and paged here; search goes through the
//! store's full-text index.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet};

use worldloom_core::judge::{DIMENSIONS as JUDGE_DIMENSIONS, scale as judge_scale};
use worldloom_store::{RunId, RunRecord, SearchField, StoredRunRow, Workspace};

use crate::error::ApiError;
use crate::types::*;
use crate::views::{change_summary, run_row_view};
use crate::{Studio, StudioEvent};

/// Histogram bins of the dashboard's metric distributions.
const BINS: u32 = 10;

/// How a metric is read from a row.
type ReadMetric = fn(&RunRowView) -> Option<f64>;

/// The metrics the dashboard charts, with how each is read from a row.
const METRICS: [(&str, ReadMetric); 4] = [
    ("text_f1", |r| r.text_f1),
    ("node_f1", |r| r.node_f1),
    ("attribute_accuracy", |r| r.attribute_accuracy),
    ("transition_f1", |r| r.transition_f1),
];

pub(super) fn parse_run_id(id: &str) -> Result<RunId, ApiError> {
    id.trim()
        .parse::<i64>()
        .map(RunId)
        .map_err(|_| ApiError::bad_request(format!("`{id}` is not a run id")))
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0u32), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / f64::from(n))
}

fn summary(run: &RunRecord, rows: &[RunRowView]) -> RunSummary {
    RunSummary {
        run_id: run.id.0.to_string(),
        name: run.name.clone(),
        engine: run.engine.clone(),
        source_path: run.source_path.clone(),
        mode: run.mode,
        created_at: run.created_at.clone(),
        row_count: run.row_count as u32,
        judged_count: run.judged_count as u32,
        overall_score: mean(rows.iter().filter_map(|r| r.score)),
        mean_text_f1: mean(rows.iter().filter_map(|r| r.text_f1)),
    }
}

/// Row views with their labels and notes.
pub(super) fn views_of(
    ws: &Workspace,
    rows: &[StoredRunRow],
    run: Option<RunId>,
) -> Result<Vec<RunRowView>, ApiError> {
    let mut labels = ws.row_labels(run)?;
    let mut notes = ws.row_notes(run)?;
    Ok(rows
        .iter()
        .map(|r| {
            let mut v = run_row_view(r);
            v.labels = labels.remove(&r.id).unwrap_or_default();
            v.note = notes.remove(&r.id);
            v
        })
        .collect())
}

fn rows_of(ws: &Workspace, run: RunId) -> Result<Vec<RunRowView>, ApiError> {
    views_of(ws, &ws.run_rows(run)?, Some(run))
}

/// `list_runs`: every run in the workspace with its headline numbers.
///
/// # Errors
/// [`crate::ErrorCode::Storage`] when the workspace cannot be read.
pub fn list_runs(studio: &Studio, _req: EmptyRequest) -> Result<ListRunsResponse, ApiError> {
    let ws = studio.lock()?;
    let mut runs = Vec::new();
    for run in ws.list_runs()? {
        let rows = rows_of(&ws, run.id)?;
        runs.push(summary(&run, &rows));
    }
    Ok(ListRunsResponse { runs })
}

/// The judge scores of `rows` per dimension (and the total), as the
/// official `eval.py score` computes them: over valid rows, zeros left out,
/// on `(mean − 1) / 4 × 100`.
fn domain_scores(domain: Option<Domain>, rows: &[&RunRowView]) -> DomainScores {
    let valid: Vec<&&RunRowView> = rows
        .iter()
        .filter(|r| r.judged && !r.judge_failed)
        .collect();
    let mut scores = Vec::with_capacity(JUDGE_DIMENSIONS.len() + 1);
    for d in 0..JUDGE_DIMENSIONS.len() {
        let m = mean(
            valid
                .iter()
                .filter_map(|r| r.judge_scores.get(d).copied().flatten())
                .filter(|v| *v > 0.0),
        );
        scores.push(m.map(judge_scale));
    }
    scores.push(mean(valid.iter().filter_map(|r| r.score)));
    DomainScores {
        domain,
        rows: rows.len() as u32,
        valid: valid.len() as u32,
        scores,
    }
}

fn histogram(
    name: &str,
    rows: &[RunRowView],
    read: fn(&RunRowView) -> Option<f64>,
) -> MetricHistogram {
    let values: Vec<f64> = rows.iter().filter_map(read).collect();
    let mut bins = vec![0u32; BINS as usize];
    for v in &values {
        let i = ((v.clamp(0.0, 1.0) * f64::from(BINS)) as usize).min(BINS as usize - 1);
        bins[i] += 1;
    }
    MetricHistogram {
        metric: name.to_owned(),
        count: values.len() as u32,
        mean: mean(values.iter().copied()),
        bins,
    }
}

fn counts(items: impl Iterator<Item = String>) -> Vec<StatusCount> {
    let mut map: BTreeMap<String, u32> = BTreeMap::new();
    for s in items {
        *map.entry(s).or_default() += 1;
    }
    let mut out: Vec<StatusCount> = map
        .into_iter()
        .map(|(status, count)| StatusCount { status, count })
        .collect();
    out.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.status.cmp(&b.status)));
    out
}

/// `get_run_dashboard`: a run's scores per domain and judge dimension, its
/// metric distributions and status counts.
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`] for a malformed id,
/// [`crate::ErrorCode::NotFound`] for an unknown run.
pub fn get_run_dashboard(studio: &Studio, req: RunRequest) -> Result<RunDashboard, ApiError> {
    let id = parse_run_id(&req.run_id)?;
    let ws = studio.lock()?;
    let run = ws.run(id)?;
    let rows = rows_of(&ws, id)?;
    drop(ws);
    let mut by_domain: BTreeMap<&str, (Domain, Vec<&RunRowView>)> = BTreeMap::new();
    for r in &rows {
        by_domain
            .entry(r.domain.as_str())
            .or_insert_with(|| (r.domain, Vec::new()))
            .1
            .push(r);
    }
    let all: Vec<&RunRowView> = rows.iter().collect();
    let mut dimensions: Vec<String> = JUDGE_DIMENSIONS.iter().map(|d| (*d).to_owned()).collect();
    dimensions.push("total".into());
    Ok(RunDashboard {
        run: summary(&run, &rows),
        dimensions,
        domains: by_domain
            .into_values()
            .map(|(d, rs)| domain_scores(Some(d), &rs))
            .collect(),
        overall: domain_scores(None, &all),
        bins: BINS,
        metrics: METRICS
            .iter()
            .map(|(name, read)| histogram(name, &rows, *read))
            .collect(),
        statuses: counts(rows.iter().map(|r| r.status.clone())),
        judge: counts(rows.iter().map(|r| {
            match (r.judged, r.judge_failed) {
                (false, _) => "unjudged",
                (true, true) => "judge_failed",
                (true, false) => "judged",
            }
            .to_owned()
        })),
        labels: counts(rows.iter().flat_map(|r| r.labels.iter().cloned())),
    })
}

fn search_field(s: Option<SearchIn>) -> SearchField {
    match s.unwrap_or_default() {
        SearchIn::All => SearchField::All,
        SearchIn::Real => SearchField::Real,
        SearchIn::Predicted => SearchField::Predicted,
        SearchIn::Action => SearchField::Action,
    }
}

/// `None` values sort last whatever the direction.
fn by_option(a: Option<f64>, b: Option<f64>, descending: bool) -> Ordering {
    match (a, b) {
        (Some(x), Some(y)) => {
            let o = x.partial_cmp(&y).unwrap_or(Ordering::Equal);
            if descending { o.reverse() } else { o }
        }
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// Sorts rows in place (stable; ties keep file order).
pub(crate) fn sort_rows(rows: &mut [RunRowView], sort: RunRowSort, descending: bool) {
    let flip = |o: Ordering| if descending { o.reverse() } else { o };
    match sort {
        RunRowSort::Row | RunRowSort::Relevance => {
            if descending {
                rows.reverse();
            }
        }
        RunRowSort::Trajectory => rows.sort_by(|a, b| {
            flip(
                a.trajectory_name
                    .cmp(&b.trajectory_name)
                    .then(a.turn.cmp(&b.turn)),
            )
        }),
        RunRowSort::Turn => rows.sort_by(|a, b| flip(a.turn.cmp(&b.turn))),
        RunRowSort::Domain => rows.sort_by(|a, b| flip(a.domain.as_str().cmp(b.domain.as_str()))),
        RunRowSort::Status => rows.sort_by(|a, b| flip(a.status.cmp(&b.status))),
        RunRowSort::Score => rows.sort_by(|a, b| by_option(a.score, b.score, descending)),
        RunRowSort::TextF1 => rows.sort_by(|a, b| by_option(a.text_f1, b.text_f1, descending)),
        RunRowSort::NodeF1 => rows.sort_by(|a, b| by_option(a.node_f1, b.node_f1, descending)),
        RunRowSort::TransitionF1 => {
            rows.sort_by(|a, b| by_option(a.transition_f1, b.transition_f1, descending))
        }
    }
}

fn page<T>(items: Vec<T>, offset: u32, limit: Option<u32>) -> Vec<T> {
    let take = limit.map_or(usize::MAX, |l| l as usize);
    items.into_iter().skip(offset as usize).take(take).collect()
}

/// `list_run_rows`: a run's rows filtered (full-text query, domain, status,
/// score range), sorted and paged, with the filtered total.
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`], [`crate::ErrorCode::NotFound`].
pub fn list_run_rows(
    studio: &Studio,
    req: ListRunRowsRequest,
) -> Result<ListRunRowsResponse, ApiError> {
    let id = parse_run_id(&req.run_id)?;
    let ws = studio.lock()?;
    let mut rows = rows_of(&ws, id)?;
    let query = req
        .query
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty());
    if let Some(q) = query {
        let hits = ws.search_run_rows(q, search_field(req.search_in), Some(id), u32::MAX)?;
        let rank: HashMap<String, usize> = hits
            .iter()
            .enumerate()
            .map(|(i, h)| (h.to_string(), i))
            .collect();
        rows.retain(|r| rank.contains_key(&r.row_id));
        if req.sort == Some(RunRowSort::Relevance) {
            rows.sort_by_key(|r| rank.get(&r.row_id).copied().unwrap_or(usize::MAX));
        }
    }
    drop(ws);
    rows.retain(|r| {
        req.domain.is_none_or(|d| r.domain == d)
            && req.status.as_ref().is_none_or(|s| &r.status == s)
            && req.label.as_ref().is_none_or(|l| r.labels.contains(l))
            && req
                .min_score
                .is_none_or(|m| r.score.is_some_and(|s| s >= m))
            && req
                .max_score
                .is_none_or(|m| r.score.is_some_and(|s| s <= m))
    });
    let sort = req.sort.unwrap_or(RunRowSort::Row);
    // Relevance: the rows are already in rank order (file order without a
    // query); sorting by it only reverses.
    sort_rows(&mut rows, sort, req.descending);
    let total = rows.len() as u32;
    Ok(ListRunRowsResponse {
        rows: page(rows, req.offset, req.limit),
        total,
        offset: req.offset,
    })
}

fn value_of(row: &RunRowView, metric: CompareMetric) -> Option<f64> {
    match metric {
        CompareMetric::Score => row.score,
        CompareMetric::TextF1 => row.text_f1.map(|v| v * 100.0),
        CompareMetric::NodeF1 => row.node_f1.map(|v| v * 100.0),
        CompareMetric::TransitionF1 => row.transition_f1.map(|v| v * 100.0),
    }
}

/// A pair's two values: a row whose prediction failed (status other than
/// `ok`: no observation, empty, an engine error) and so has no value counts
/// 0 when the other row has one, so a model that outputs nothing loses to
/// one that predicts instead of leaving the pair unscored.
fn paired_values(
    a: &RunRowView,
    b: &RunRowView,
    metric: CompareMetric,
) -> (Option<f64>, Option<f64>) {
    let (av, bv) = (value_of(a, metric), value_of(b, metric));
    let failed = |r: &RunRowView, v: Option<f64>| v.is_none() && r.status != "ok";
    match (av, bv) {
        (Some(_), None) if failed(b, bv) => (av, Some(0.0)),
        (None, Some(_)) if failed(a, av) => (Some(0.0), bv),
        _ => (av, bv),
    }
}

/// The outcome of one pair: `a − b` beyond `margin` either way, else a tie.
pub(crate) fn outcome(a: Option<f64>, b: Option<f64>, margin: f64) -> PairOutcome {
    match (a, b) {
        (Some(x), Some(y)) if x - y > margin => PairOutcome::ABetter,
        (Some(x), Some(y)) if y - x > margin => PairOutcome::BBetter,
        (Some(_), Some(_)) => PairOutcome::Tie,
        _ => PairOutcome::Unscored,
    }
}

/// `compare_runs`: two runs paired on the states both predicted (rows of one
/// dataset attach to the same trajectories), with per-pair deltas, outcome
/// counts, the A-vs-B scatter and a filtered page of pairs.
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`], [`crate::ErrorCode::NotFound`].
pub fn compare_runs(
    studio: &Studio,
    req: CompareRunsRequest,
) -> Result<CompareRunsResponse, ApiError> {
    let (ia, ib) = (parse_run_id(&req.run_a)?, parse_run_id(&req.run_b)?);
    let ws = studio.lock()?;
    let (run_a, run_b) = (ws.run(ia)?, ws.run(ib)?);
    let rows_a = rows_of(&ws, ia)?;
    let rows_b = rows_of(&ws, ib)?;
    drop(ws);
    let metric = req
        .metric
        .unwrap_or(if run_a.judged_count > 0 && run_b.judged_count > 0 {
            CompareMetric::Score
        } else {
            CompareMetric::TextF1
        });
    let margin = req.tie_margin.unwrap_or(0.5).max(0.0);
    let state = |r: &RunRowView| (r.trajectory_id.clone(), r.node_id);
    let mut b_by_state: HashMap<(String, u32), &RunRowView> = HashMap::new();
    for r in &rows_b {
        b_by_state.entry(state(r)).or_insert(r);
    }
    let a_states: HashSet<(String, u32)> = rows_a.iter().map(state).collect();
    let mut counts = CompareCounts {
        paired: 0,
        a_better: 0,
        b_better: 0,
        tie: 0,
        unscored: 0,
        only_a: 0,
        only_b: rows_b
            .iter()
            .filter(|r| !a_states.contains(&state(r)))
            .count() as u32,
    };
    let mut scatter = Vec::new();
    let mut pairs = Vec::new();
    for a in &rows_a {
        let Some(b) = b_by_state.get(&state(a)) else {
            counts.only_a += 1;
            continue;
        };
        if req.domain.is_some_and(|d| a.domain != d) {
            continue;
        }
        let (av, bv) = paired_values(a, b, metric);
        let o = outcome(av, bv, margin);
        counts.paired += 1;
        match o {
            PairOutcome::ABetter => counts.a_better += 1,
            PairOutcome::BBetter => counts.b_better += 1,
            PairOutcome::Tie => counts.tie += 1,
            PairOutcome::Unscored => counts.unscored += 1,
        }
        if let (Some(x), Some(y)) = (av, bv) {
            scatter.push(ScatterPoint {
                a: x,
                b: y,
                row_a: a.row_id.clone(),
            });
        }
        if req.outcome.is_none_or(|want| want == o) {
            pairs.push(RunPair {
                a: a.clone(),
                b: (*b).clone(),
                a_value: av,
                b_value: bv,
                delta: av.zip(bv).map(|(x, y)| x - y),
                outcome: o,
            });
        }
    }
    pairs.sort_by(|x, y| by_option(x.delta.map(f64::abs), y.delta.map(f64::abs), true));
    let total = pairs.len() as u32;
    Ok(CompareRunsResponse {
        run_a: summary(&run_a, &rows_a),
        run_b: summary(&run_b, &rows_b),
        metric,
        tie_margin: margin,
        counts,
        scatter,
        pairs: page(pairs, req.offset, req.limit),
        total,
    })
}

/// `search_runs`: full-text search in the real and predicted observations
/// and actions of every run's rows (or one run's), best match first.
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`] for a malformed run id;
/// [`crate::ErrorCode::Storage`].
pub fn search_runs(
    studio: &Studio,
    req: SearchRunsRequest,
) -> Result<SearchRunsResponse, ApiError> {
    let run = req.run_id.as_deref().map(parse_run_id).transpose()?;
    let ws = studio.lock()?;
    let started = std::time::Instant::now();
    let hits = ws.search_run_rows(
        &req.query,
        search_field(req.search_in),
        run,
        req.limit.unwrap_or(200),
    )?;
    let took_ms = started.elapsed().as_secs_f64() * 1000.0;
    let mut by_id: HashMap<i64, StoredRunRow> = HashMap::new();
    let runs: HashSet<RunId> = match run {
        Some(r) => HashSet::from([r]),
        None => ws.list_runs()?.into_iter().map(|r| r.id).collect(),
    };
    if !hits.is_empty() {
        for r in runs {
            for row in ws.run_rows(r)? {
                by_id.insert(row.id, row);
            }
        }
    }
    let found: Vec<StoredRunRow> = hits.iter().filter_map(|h| by_id.remove(h)).collect();
    Ok(SearchRunsResponse {
        hits: views_of(&ws, &found, run)?,
        took_ms,
    })
}

fn parse_row_id(id: &str) -> Result<i64, ApiError> {
    id.trim()
        .parse::<i64>()
        .map_err(|_| ApiError::bad_request(format!("`{id}` is not a run row id")))
}

/// `set_row_label`: sets or clears a label on a run's row (one undoable
/// change).
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`] for a malformed id or an empty label,
/// [`crate::ErrorCode::NotFound`] for an unknown row.
pub fn set_row_label(studio: &Studio, req: SetRowLabelRequest) -> Result<ChangeResponse, ApiError> {
    let row = parse_row_id(&req.row_id)?;
    let change = {
        let mut ws = studio.lock()?;
        let id = ws.set_row_label(row, &req.label, req.present)?;
        ws.history(50)?.into_iter().find(|c| c.id == id)
    };
    studio.emit(StudioEvent::WorkspaceChanged {
        trajectory_id: None,
        kind: ChangeKind::SetLabel.into(),
    });
    Ok(ChangeResponse {
        change: change.as_ref().map(change_summary).transpose()?,
    })
}

/// `label_set`: the workspace's labels (defaults until saved).
///
/// # Errors
/// [`crate::ErrorCode::Storage`].
pub fn label_set(studio: &Studio, _req: EmptyRequest) -> Result<LabelSetResponse, ApiError> {
    Ok(LabelSetResponse {
        labels: studio.lock()?.label_set()?,
    })
}

/// `set_label_set`: saves the workspace's labels (a setting, not undone).
///
/// # Errors
/// [`crate::ErrorCode::Storage`].
pub fn set_label_set(
    studio: &Studio,
    req: SetLabelSetRequest,
) -> Result<LabelSetResponse, ApiError> {
    Ok(LabelSetResponse {
        labels: studio.lock()?.set_label_set(&req.labels)?,
    })
}

/// `set_row_note`: writes or clears (empty text) the note of a run's row
/// (one undoable change).
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`] for a malformed id,
/// [`crate::ErrorCode::NotFound`] for an unknown row.
pub fn set_row_note(studio: &Studio, req: SetRowNoteRequest) -> Result<ChangeResponse, ApiError> {
    let row = parse_row_id(&req.row_id)?;
    let change = {
        let mut ws = studio.lock()?;
        let id = ws.set_row_note(row, &req.text)?;
        ws.history(50)?.into_iter().find(|c| c.id == id)
    };
    studio.emit(StudioEvent::WorkspaceChanged {
        trajectory_id: None,
        kind: ChangeKind::SetRowNote.into(),
    });
    Ok(ChangeResponse {
        change: change.as_ref().map(change_summary).transpose()?,
    })
}

/// One run's values of `metric` grouped by turn, in turn order.
pub(crate) fn drift_points(rows: &[RunRowView], metric: CompareMetric) -> Vec<DriftPoint> {
    let mut by_turn: BTreeMap<u32, (u32, Vec<f64>)> = BTreeMap::new();
    for r in rows {
        let e = by_turn.entry(r.turn).or_default();
        e.0 += 1;
        if let Some(v) = value_of(r, metric) {
            e.1.push(v);
        }
    }
    by_turn
        .into_iter()
        .map(|(turn, (n, values))| DriftPoint {
            turn,
            rows: n,
            scored: values.len() as u32,
            mean: mean(values.iter().copied()),
            min: values.iter().copied().reduce(f64::min),
            max: values.iter().copied().reduce(f64::max),
        })
        .collect()
}

/// `run_drift`: fidelity by turn index of run A (and B): per turn, the
/// rows and the metric's mean, min and max on 0–100.
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`], [`crate::ErrorCode::NotFound`].
pub fn run_drift(studio: &Studio, req: RunDriftRequest) -> Result<RunDriftResponse, ApiError> {
    let mut ids = vec![parse_run_id(&req.run_a)?];
    if let Some(b) = &req.run_b {
        ids.push(parse_run_id(b)?);
    }
    let ws = studio.lock()?;
    let mut runs = Vec::new();
    for id in ids {
        runs.push((ws.run(id)?, rows_of(&ws, id)?));
    }
    drop(ws);
    let metric = req
        .metric
        .unwrap_or(if runs.iter().all(|(r, _)| r.judged_count > 0) {
            CompareMetric::Score
        } else {
            CompareMetric::TextF1
        });
    Ok(RunDriftResponse {
        metric,
        series: runs
            .iter()
            .map(|(run, rows)| DriftSeries {
                run: summary(run, rows),
                points: drift_points(rows, metric),
            })
            .collect(),
    })
}

/// The columns of `export_run_rows`, in order.
const EXPORT_COLUMNS: [&str; 18] = [
    "run",
    "engine",
    "row",
    "trajectory",
    "turn",
    "domain",
    "status",
    "score",
    "text_f1",
    "node_f1",
    "attribute_accuracy",
    "transition_f1",
    "labels",
    "note",
    "trajectory_id",
    "node_id",
    "prediction_id",
    "row_id",
];

/// A CSV field, quoted when it holds a comma, a quote or a line break
/// (RFC 4180: quotes doubled). Text a spreadsheet would read as a formula
/// (starting with `=`, `+`, `-`, `@`, a tab or a carriage return, and not a
/// number) gets a leading `'`, so opening the file runs nothing (OWASP's
/// advice against CSV injection).
fn csv_field(text: &str) -> String {
    let formula =
        text.starts_with(['=', '+', '-', '@', '\t', '\r']) && text.parse::<f64>().is_err();
    let text = if formula {
        format!("'{text}")
    } else {
        text.to_owned()
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

/// One row as the export's JSON object (the columns of [`EXPORT_COLUMNS`];
/// `row` 1-based, labels a list).
fn export_object(run: &RunSummary, r: &RunRowView) -> serde_json::Value {
    serde_json::json!({
        "run": run.name,
        "engine": run.engine,
        "row": r.row_index + 1,
        "trajectory": r.trajectory_name,
        "turn": r.turn,
        "domain": r.domain,
        "status": r.status,
        "score": r.score,
        "text_f1": r.text_f1,
        "node_f1": r.node_f1,
        "attribute_accuracy": r.attribute_accuracy,
        "transition_f1": r.transition_f1,
        "labels": r.labels,
        "note": r.note,
        "trajectory_id": r.trajectory_id,
        "node_id": r.node_id,
        "prediction_id": r.prediction_id,
        "row_id": r.row_id,
    })
}

/// The export's text: a CSV with a header line or JSON Lines, in file order.
pub(crate) fn rows_export(
    run: &RunSummary,
    rows: &[RunRowView],
    format: RowsExportFormat,
) -> String {
    let mut out = String::new();
    if format == RowsExportFormat::Csv {
        // A byte-order mark, so spreadsheet programs read the file as UTF-8.
        out.push('\u{feff}');
        out.push_str(&EXPORT_COLUMNS.join(","));
        out.push_str("\r\n");
    }
    for r in rows {
        let obj = export_object(run, r);
        match format {
            RowsExportFormat::Jsonl => {
                out.push_str(&obj.to_string());
                out.push('\n');
            }
            RowsExportFormat::Csv => {
                let fields: Vec<String> = EXPORT_COLUMNS
                    .iter()
                    .map(|c| match &obj[*c] {
                        serde_json::Value::Null => String::new(),
                        serde_json::Value::String(s) => csv_field(s),
                        serde_json::Value::Array(a) => csv_field(
                            &a.iter()
                                .filter_map(|v| v.as_str())
                                .collect::<Vec<_>>()
                                .join("; "),
                        ),
                        other => other.to_string(),
                    })
                    .collect();
                out.push_str(&fields.join(","));
                out.push_str("\r\n");
            }
        }
    }
    out
}

/// `export_run_rows`: a run's annotated rows (a label or a note; or every
/// row) as CSV or JSON Lines with their labels, notes, scores and the ids
/// that open each row in the studio.
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`], [`crate::ErrorCode::NotFound`];
/// [`crate::ErrorCode::ExportFailed`] when the file cannot be written.
pub fn export_run_rows(
    studio: &Studio,
    req: ExportRunRowsRequest,
) -> Result<ExportRunRowsResponse, ApiError> {
    let id = parse_run_id(&req.run_id)?;
    let ws = studio.lock()?;
    let run = ws.run(id)?;
    let mut rows = rows_of(&ws, id)?;
    drop(ws);
    let head = summary(&run, &rows);
    if req.annotated_only {
        rows.retain(|r| !r.labels.is_empty() || r.note.is_some());
    }
    let content = rows_export(&head, &rows, req.format);
    let bytes = content.len() as u64;
    let path = match &req.path {
        Some(p) => {
            std::fs::write(p, &content).map_err(|e| {
                ApiError::new(crate::error::ErrorCode::ExportFailed, format!("{p}: {e}"))
            })?;
            Some(p.clone())
        }
        None => None,
    };
    let stem: String = run
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    Ok(ExportRunRowsResponse {
        rows_total: rows.len() as u32,
        content: path.is_none().then_some(content),
        path,
        bytes,
        file_name: format!(
            "{}-{stem}.{}",
            if req.annotated_only {
                "labelled"
            } else {
                "rows"
            },
            match req.format {
                RowsExportFormat::Csv => "csv",
                RowsExportFormat::Jsonl => "jsonl",
            }
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A web row of text F1 1.0, the fields tests change set after.
    fn test_row() -> RunRowView {
        RunRowView {
            row_id: "1".into(),
            run_id: "1".into(),
            row_index: 0,
            trajectory_id: "1".into(),
            trajectory_name: "t".into(),
            node_id: 1,
            prediction_id: 0,
            turn: 1,
            domain: Domain::Web,
            status: "ok".into(),
            error: None,
            judged: false,
            judge_failed: false,
            judge_scores: Vec::new(),
            score: None,
            exact: None,
            text_f1: Some(1.0),
            node_f1: None,
            attribute_accuracy: None,
            transition_f1: None,
            latency_ms: None,
            labels: Vec::new(),
            note: None,
        }
    }

    #[test]
    fn outcomes_use_the_tie_margin() {
        assert_eq!(outcome(Some(80.0), Some(70.0), 0.5), PairOutcome::ABetter);
        assert_eq!(outcome(Some(70.0), Some(80.0), 0.5), PairOutcome::BBetter);
        assert_eq!(outcome(Some(70.2), Some(70.0), 0.5), PairOutcome::Tie);
        assert_eq!(outcome(None, Some(70.0), 0.5), PairOutcome::Unscored);
    }

    #[test]
    fn a_failed_prediction_counts_zero_against_a_scored_one() {
        let row = |status: &str, f1: Option<f64>| RunRowView {
            status: status.into(),
            text_f1: f1,
            ..test_row()
        };
        let m = CompareMetric::TextF1;
        let got = paired_values(&row("ok", Some(0.4)), &row("no_observation", None), m);
        assert_eq!(got, (Some(40.0), Some(0.0)));
        assert_eq!(outcome(got.0, got.1, 0.5), PairOutcome::ABetter);
        let got = paired_values(&row("error", None), &row("ok", Some(0.5)), m);
        assert_eq!(got, (Some(0.0), Some(50.0)));
        // No value on an ok row (nothing to score against): still unscored.
        let got = paired_values(&row("ok", Some(0.4)), &row("ok", None), m);
        assert_eq!(got, (Some(40.0), None));
        // Both failed: nothing to compare.
        let got = paired_values(&row("empty", None), &row("error", None), m);
        assert_eq!(got, (None, None));
    }

    #[test]
    fn csv_fields_are_quoted_only_when_they_must_be() {
        assert_eq!(csv_field("plain note"), "plain note");
        assert_eq!(csv_field("a, b"), "\"a, b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_field(""), "");
        assert_eq!(csv_field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(csv_field("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(csv_field("-5"), "-5");
        assert_eq!(csv_field("+cmd|' /C calc'!A0"), "'+cmd|' /C calc'!A0");
        assert_eq!(csv_field("a-b"), "a-b");
    }

    #[test]
    fn histograms_put_one_in_the_last_bin() {
        let mut row = test_row();
        let mut rows = vec![row.clone()];
        row.text_f1 = Some(0.05);
        rows.push(row.clone());
        row.text_f1 = Some(0.55);
        rows.push(row);
        let h = histogram("text_f1", &rows, |r| r.text_f1);
        assert_eq!(h.bins, vec![1, 0, 0, 0, 0, 1, 0, 0, 0, 1]);
        assert_eq!(h.count, 3);
        assert!((h.mean.expect("mean") - 1.6 / 3.0).abs() < 1e-12);
    }
}
