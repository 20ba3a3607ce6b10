//! Types of runs (`commands/runs.rs`): list, dashboard, rows, labels and
//! notes, comparison, search, drift, row exports. The run jobs' types are in
//! `run_job_types.rs`.

use super::*;

/// A run as listed: one model's predictions over a dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunSummary {
    /// Run id.
    pub run_id: String,
    /// The name shown (the file name).
    pub name: String,
    /// The engine or model label (`copy`, `openai:MODEL`, `agentworldbench:gen`).
    pub engine: String,
    /// The file it was imported from.
    pub source_path: Option<String>,
    /// Teacher-forced or free-running.
    pub mode: ContextMode,
    /// When it was imported (UTC).
    pub created_at: String,
    /// Rows.
    pub row_count: u32,
    /// Rows the judge graded (failed included).
    pub judged_count: u32,
    /// The official overall score: every valid row's total on
    /// `(mean − 1) / 4 × 100`, pooled; `null` when no row was judged.
    pub overall_score: Option<f64>,
    /// The mean text F1 over rows where it was computed, in `[0, 1]`.
    pub mean_text_f1: Option<f64>,
}

/// `list_runs` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ListRunsResponse {
    /// Every run, oldest first.
    pub runs: Vec<RunSummary>,
}

/// A request naming one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunRequest {
    /// Run id.
    pub run_id: String,
}

/// The scores of one domain (or of all rows) per judge dimension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct DomainScores {
    /// The domain; `null` for every row of the run.
    pub domain: Option<Domain>,
    /// Rows.
    pub rows: u32,
    /// Judged rows that did not fail.
    pub valid: u32,
    /// Per dimension of [`RunDashboard::dimensions`]: the mean over valid
    /// rows (scores of 0 left out) on `(mean − 1) / 4 × 100`, in `[0, 100]`;
    /// `null` without valid rows.
    pub scores: Vec<Option<f64>>,
}

/// A deterministic metric's distribution over a run's rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct MetricHistogram {
    /// `text_f1`, `node_f1`, `attribute_accuracy` or `transition_f1`.
    pub metric: String,
    /// Rows where it was computed.
    pub count: u32,
    /// Their mean, in `[0, 1]`.
    pub mean: Option<f64>,
    /// Counts in [`RunDashboard::bins`] equal-width bins over `[0, 1]` (the
    /// last closed: 1.0 falls in it).
    pub bins: Vec<u32>,
}

/// How many rows have one status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct StatusCount {
    /// `ok`, `truncated`, `no_observation`, `empty`, `error`, or the judge's
    /// `judge_failed`, `unjudged`.
    pub status: String,
    /// Rows.
    pub count: u32,
}

/// `get_run_dashboard` response: what the run dashboard charts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunDashboard {
    /// The run.
    pub run: RunSummary,
    /// The judge dimensions in column order: `format`, `factuality`,
    /// `consistency`, `realism`, `quality`, `total`.
    pub dimensions: Vec<String>,
    /// Per domain, in name order.
    pub domains: Vec<DomainScores>,
    /// All rows together (the official overall).
    pub overall: DomainScores,
    /// How many bins each histogram has.
    pub bins: u32,
    /// The deterministic metrics' distributions.
    pub metrics: Vec<MetricHistogram>,
    /// Rows per prediction status (`wl_status`), most first.
    pub statuses: Vec<StatusCount>,
    /// Rows per judge outcome: `judged`, `judge_failed`, `unjudged`.
    pub judge: Vec<StatusCount>,
    /// Rows per label, most first.
    pub labels: Vec<StatusCount>,
}

/// One row of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunRowView {
    /// Row id (unique in the workspace).
    pub row_id: String,
    /// Its run.
    pub run_id: String,
    /// 0-based position in the run's file.
    pub row_index: u32,
    /// The trajectory (workspace id) it belongs to.
    pub trajectory_id: String,
    /// That trajectory's own id.
    pub trajectory_name: String,
    /// The state predicted; open it with `get_turn`.
    pub node_id: u32,
    /// The prediction the row made (pass it to `get_turn`).
    pub prediction_id: u32,
    /// The 1-based turn.
    pub turn: u32,
    /// The domain.
    pub domain: Domain,
    /// `ok`, `truncated`, `no_observation`, `empty` or `error`.
    pub status: String,
    /// The engine's error of an `error` row.
    pub error: Option<String>,
    /// Whether the judge graded it (failed included).
    pub judged: bool,
    /// Whether the judge failed on it.
    pub judge_failed: bool,
    /// The judge's scores 1–5 per dimension (`format` … `quality`), when
    /// judged and not failed.
    pub judge_scores: Vec<Option<f64>>,
    /// The judge's total on `(total − 1) / 4 × 100`, in `[0, 100]`.
    pub score: Option<f64>,
    /// Exact match after normalisation.
    pub exact: Option<bool>,
    /// Text F1, `[0, 1]`.
    pub text_f1: Option<f64>,
    /// Node F1, `[0, 1]`.
    pub node_f1: Option<f64>,
    /// Attribute accuracy, `[0, 1]`.
    pub attribute_accuracy: Option<f64>,
    /// Transition F1, `[0, 1]`.
    pub transition_f1: Option<f64>,
    /// Wall time of the row, milliseconds.
    pub latency_ms: Option<f64>,
    /// The labels set on the row, in the order they were last set.
    pub labels: Vec<String>,
    /// The row's free-text note (`set_row_note`); `null` when none.
    pub note: Option<String>,
}

/// `set_row_label` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SetRowLabelRequest {
    /// The row.
    pub row_id: String,
    /// The label (any text; the label set only suggests).
    pub label: String,
    /// Set (true) or clear (false).
    pub present: bool,
}

/// `label_set` / `set_label_set` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct LabelSetResponse {
    /// The workspace's labels, in order.
    pub labels: Vec<String>,
}

/// `set_label_set` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SetLabelSetRequest {
    /// The labels (trimmed; blanks and repeats dropped).
    pub labels: Vec<String>,
}

/// Which texts a full-text search looks in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum SearchIn {
    /// Real and predicted observations and the action.
    #[default]
    All,
    /// The real observation.
    Real,
    /// The predicted observation.
    Predicted,
    /// The action.
    Action,
}

/// Orders of the row table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RunRowSort {
    /// File order (the default).
    Row,
    /// Trajectory name, then turn.
    Trajectory,
    /// Turn.
    Turn,
    /// Domain.
    Domain,
    /// Status.
    Status,
    /// Judge score (unscored last).
    Score,
    /// Text F1 (unscored last).
    TextF1,
    /// Node F1 (unscored last).
    NodeF1,
    /// Transition F1 (unscored last).
    TransitionF1,
    /// Search rank (with a `query`; else file order).
    Relevance,
}

/// `list_run_rows` request: filters combine; `offset`/`limit` page the
/// filtered, sorted rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ListRunRowsRequest {
    /// Run id.
    pub run_id: String,
    /// Full-text search in the rows' texts (words, the last also a prefix).
    #[serde(default)]
    pub query: Option<String>,
    /// Where the search looks.
    #[serde(default)]
    pub search_in: Option<SearchIn>,
    /// Only this domain.
    #[serde(default)]
    pub domain: Option<Domain>,
    /// Only this status.
    #[serde(default)]
    pub status: Option<String>,
    /// Only rows carrying this label.
    #[serde(default)]
    pub label: Option<String>,
    /// Only rows whose judge score (0–100) is at least this.
    #[serde(default)]
    pub min_score: Option<f64>,
    /// Only rows whose judge score (0–100) is at most this.
    #[serde(default)]
    pub max_score: Option<f64>,
    /// Order; `null` is file order.
    #[serde(default)]
    pub sort: Option<RunRowSort>,
    /// Reverse the order (unscored rows stay last).
    #[serde(default)]
    pub descending: bool,
    /// Rows to skip.
    #[serde(default)]
    pub offset: u32,
    /// At most this many rows; `null` for all.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// `list_run_rows` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ListRunRowsResponse {
    /// The page of rows.
    pub rows: Vec<RunRowView>,
    /// How many rows pass the filters.
    pub total: u32,
    /// The offset of the first row.
    pub offset: u32,
}

/// The value two runs are compared on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum CompareMetric {
    /// The judge score, 0–100.
    Score,
    /// Text F1 × 100.
    TextF1,
    /// Node F1 × 100.
    NodeF1,
    /// Transition F1 × 100.
    TransitionF1,
}

/// Which pairs a comparison lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum PairOutcome {
    /// A's value is higher by more than the tie margin.
    ABetter,
    /// B's value is higher by more than the tie margin.
    BBetter,
    /// Within the tie margin.
    Tie,
    /// One side (or both) has no value.
    Unscored,
}

/// `compare_runs` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CompareRunsRequest {
    /// Run A.
    pub run_a: String,
    /// Run B.
    pub run_b: String,
    /// The value compared; `null`: the judge score when both runs were
    /// judged, else text F1.
    #[serde(default)]
    pub metric: Option<CompareMetric>,
    /// Only pairs with this outcome.
    #[serde(default)]
    pub outcome: Option<PairOutcome>,
    /// Differences up to this (on the 0–100 scale) are ties; default 0.5.
    #[serde(default)]
    pub tie_margin: Option<f64>,
    /// Only this domain.
    #[serde(default)]
    pub domain: Option<Domain>,
    /// Pairs to skip.
    #[serde(default)]
    pub offset: u32,
    /// At most this many pairs; `null` for all.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// One state predicted by both runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunPair {
    /// A's row.
    pub a: RunRowView,
    /// B's row.
    pub b: RunRowView,
    /// A's value (0–100).
    pub a_value: Option<f64>,
    /// B's value (0–100).
    pub b_value: Option<f64>,
    /// `a_value − b_value`.
    pub delta: Option<f64>,
    /// Who did better.
    pub outcome: PairOutcome,
}

/// How many pairs have each outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CompareCounts {
    /// States both runs predicted.
    pub paired: u32,
    /// A better.
    pub a_better: u32,
    /// B better.
    pub b_better: u32,
    /// Ties.
    pub tie: u32,
    /// Pairs without a value on one side.
    pub unscored: u32,
    /// Rows of A with no row of B on their state.
    pub only_a: u32,
    /// Rows of B with no row of A on their state.
    pub only_b: u32,
}

/// One point of the A-vs-B scatter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ScatterPoint {
    /// A's value.
    pub a: f64,
    /// B's value.
    pub b: f64,
    /// A's row id (to open the pair).
    pub row_a: String,
}

/// `compare_runs` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CompareRunsResponse {
    /// Run A.
    pub run_a: RunSummary,
    /// Run B.
    pub run_b: RunSummary,
    /// The value compared.
    pub metric: CompareMetric,
    /// The tie margin used.
    pub tie_margin: f64,
    /// Outcome counts over every pair of the domain filter.
    pub counts: CompareCounts,
    /// Every pair with both values (the domain filter applied, not the outcome filter).
    pub scatter: Vec<ScatterPoint>,
    /// The page of pairs passing the filters, largest |delta| first.
    pub pairs: Vec<RunPair>,
    /// How many pairs pass the filters.
    pub total: u32,
}

/// `search_runs` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SearchRunsRequest {
    /// The words (the last also a prefix).
    pub query: String,
    /// Where to look.
    #[serde(default)]
    pub search_in: Option<SearchIn>,
    /// Only this run.
    #[serde(default)]
    pub run_id: Option<String>,
    /// At most this many hits; default 200.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// `search_runs` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SearchRunsResponse {
    /// Matching rows, best first.
    pub hits: Vec<RunRowView>,
    /// How long the index took, milliseconds.
    pub took_ms: f64,
}

/// `set_row_note` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SetRowNoteRequest {
    /// The row.
    pub row_id: String,
    /// The note (trimmed); empty clears it.
    pub text: String,
}

/// `run_drift` request: one run, or two (A and B: a teacher-forced and a
/// free-running run of one model, or any two runs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunDriftRequest {
    /// Run A.
    pub run_a: String,
    /// Run B, when comparing.
    #[serde(default)]
    pub run_b: Option<String>,
    /// The value averaged; `null`: the judge score when every run given was
    /// judged, else text F1 (as `compare_runs`).
    #[serde(default)]
    pub metric: Option<CompareMetric>,
}

/// One turn index of one run in [`RunDriftResponse`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct DriftPoint {
    /// The 1-based turn.
    pub turn: u32,
    /// The run's rows at this turn.
    pub rows: u32,
    /// How many of them have the metric.
    pub scored: u32,
    /// The metric's mean over those, on 0–100; `null` when none has it.
    pub mean: Option<f64>,
    /// The lowest and highest value, 0–100.
    pub min: Option<f64>,
    /// See `min`.
    pub max: Option<f64>,
}

/// One run's fidelity by turn index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct DriftSeries {
    /// The run.
    pub run: RunSummary,
    /// Per turn present in the run, in turn order.
    pub points: Vec<DriftPoint>,
}

/// `run_drift` response: fidelity by turn index (does free-running drift
/// after turn 3?).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunDriftResponse {
    /// The value averaged (0–100: the judge score, or an F1 × 100).
    pub metric: CompareMetric,
    /// A's series, then B's when given.
    pub series: Vec<DriftSeries>,
}

/// The file format of `export_run_rows`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RowsExportFormat {
    /// Comma-separated values with a header line (RFC 4180 quoting; labels
    /// joined by `; `).
    Csv,
    /// One JSON object per line.
    Jsonl,
}

/// `export_run_rows` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ExportRunRowsRequest {
    /// The run.
    pub run_id: String,
    /// The format.
    pub format: RowsExportFormat,
    /// Only rows with a label or a note (the default); `false`: every row.
    #[serde(default = "default_true")]
    pub annotated_only: bool,
    /// Write to this file on the back end's machine; `null` returns the
    /// text in `content`.
    #[serde(default)]
    pub path: Option<String>,
}

fn default_true() -> bool {
    true
}

/// `export_run_rows` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ExportRunRowsResponse {
    /// Rows written (the CSV header not counted).
    pub rows_total: u32,
    /// The file written, when a path was given.
    pub path: Option<String>,
    /// Size of the export, bytes.
    #[ts(type = "number")]
    pub bytes: u64,
    /// The whole text when no path was given.
    pub content: Option<String>,
    /// A file name to save it under.
    pub file_name: String,
}
