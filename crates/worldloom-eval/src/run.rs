//! The prediction run behind `worldloom eval`: every benchmark row through a
//! [`WorldModel`], one output line per row.
//!
//! Output rows keep every input field in order, then add `gen` (the answer
//! text, reasoning excluded, exactly what the official script stores from
//! `message.content`), so the official judge step reads the file unchanged.
//! Worldloom's own fields follow, all prefixed `wl_`:
//!
//! | field | meaning |
//! |---|---|
//! | `wl_key` | row identity for resuming (see [`BenchRow::key`]) |
//! | `wl_engine` | engine name |
//! | `wl_status` | `ok`, `truncated`, `no_observation`, `empty` (output parsing, settled with the stop reason: `worldloom_core::output::output_status`) or `error` |
//! | `wl_error` | the engine error, for `error` rows |
//! | `wl_observation` | the extracted observation, or `null` |
//! | `wl_reasoning` | reasoning text (separate field or inline think block) |
//! | `wl_prompt_tokens`, `wl_completion_tokens` | token counts reported by the engine |
//! | `wl_decode_forwards`, `wl_drafted_tokens`, `wl_accepted_tokens` | forward passes while decoding, tokens drafted and kept (speculative decoding; 0 where the engine cannot say or drafting is off) |
//! | `wl_latency_ms`, `wl_prefill_ms`, `wl_decode_ms` | wall time of the whole request; engine-reported prefill and decode time |
//! | `wl_stop_reason` | why generation ended |
//! | `wl_metrics` | deterministic fidelity metrics against `response[turn]`, or `null` |
//!
//! Rows are written in completion order, each as one `write` of a whole line
//! followed by a flush, so an interrupted run leaves a valid JSON Lines file
//! (a torn last line, possible only if the process is killed mid-write, is
//! cut off when the run is resumed). Rows whose key is already in the output
//! are skipped. Engine failures are written as `error` rows with `gen: ""`
//! (as the official script does); a prediction cancelled by an interrupt is
//! not written, so resuming runs it again.
//!
//! Each row goes through the use-case layer the studio and the other
//! commands share (`worldloom_predict::turn`): the row's chat as the
//! official script builds it ([`BenchRow::messages`]) enters as
//! `Turn::of_chat`, with the current observation by the layer's one rule
//! (the observation of the state the action is taken from, `response[turn −
//! 1]` without its `**Environment Observation:**` marker); rows are worked
//! on by the layer's worker pool (`worldloom_predict::workers`).

use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use worldloom_core::{ContextMode, ModelOutput, OutputStatus};
use worldloom_engine::{CancelToken, CollectError, GenerationParams, GenerationStats, WorldModel};
use worldloom_predict::turn::{Stop, Turn, run_turn};
use worldloom_predict::workers;

use crate::EvalError;
use crate::bench::{BenchRow, sniff_representation, strip_response_marker};

/// Settings of a prediction run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Predictions in flight at once (at least 1).
    pub concurrency: usize,
    /// Generation parameters for every row.
    pub params: GenerationParams,
    /// Draw a progress bar on stderr (hidden when stderr is not a terminal).
    pub progress: bool,
    /// Give up on one prediction after this long, in milliseconds (the
    /// prediction is cancelled and written as an `error` row).
    pub row_timeout_ms: u64,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            concurrency: 1,
            // The official script's defaults: 32768 tokens, temperature 0.6,
            // and the whole answer kept (no stop after the observation).
            params: GenerationParams {
                max_new_tokens: 32_768,
                temperature: 0.6,
                stop_after_observation: false,
                ..GenerationParams::default()
            },
            progress: true,
            row_timeout_ms: 3_600_000,
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunSummary {
    /// Rows in the input.
    pub total: usize,
    /// Rows skipped because the output already had them.
    pub already_done: usize,
    /// Rows written by this run.
    pub written: usize,
    /// Of those, rows whose prediction failed (`wl_status: "error"`).
    pub errors: usize,
    /// Whether the run stopped early on an interrupt.
    pub interrupted: bool,
}

/// Reads the `wl_key`s already in `output`, cutting off a torn last line.
///
/// Errors: [`EvalError::Io`]; [`EvalError::Input`] for a complete line that
/// is not a JSON object with `wl_key` (not a Worldloom eval output).
pub fn existing_keys(output: &Path) -> Result<HashSet<String>, EvalError> {
    let mut keys = HashSet::new();
    let mut file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(output)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(keys),
        Err(e) => return Err(EvalError::io(output, e)),
    };
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(|e| EvalError::io(output, e))?;
    let complete_len = if text.ends_with('\n') || text.is_empty() {
        text.len()
    } else {
        text.rfind('\n').map_or(0, |i| i + 1)
    };
    for (i, line) in text[..complete_len].lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let key = serde_json::from_str::<Value>(line)
            .ok()
            .and_then(|v| v.get("wl_key").and_then(Value::as_str).map(str::to_owned))
            .ok_or_else(|| {
                EvalError::Input(format!(
                    "{}:{}: not a row written by `worldloom eval` (no `wl_key`); refusing to append to it",
                    output.display(),
                    i + 1
                ))
            })?;
        keys.insert(key);
    }
    if complete_len < text.len() {
        let torn = &text[complete_len..];
        // A complete row without its newline is kept; anything else is cut.
        if let Some(key) = serde_json::from_str::<Value>(torn)
            .ok()
            .and_then(|v| v.get("wl_key").and_then(Value::as_str).map(str::to_owned))
        {
            keys.insert(key);
            file.seek(SeekFrom::End(0))
                .map_err(|e| EvalError::io(output, e))?;
            file.write_all(b"\n")
                .map_err(|e| EvalError::io(output, e))?;
        } else {
            file.set_len(complete_len as u64)
                .map_err(|e| EvalError::io(output, e))?;
        }
    }
    Ok(keys)
}

/// The result of one row's prediction.
struct Prediction {
    /// The finished output; `None` when the prediction failed.
    output: Option<ModelOutput>,
    stats: Option<GenerationStats>,
    error: Option<String>,
    interrupted: bool,
    latency_ms: f64,
}

fn predict_row(
    engine: &dyn WorldModel,
    turn: &Turn,
    params: &GenerationParams,
    stop: &CancelToken,
    timeout: Duration,
) -> Prediction {
    let started = Instant::now();
    let mut p = Prediction {
        output: None,
        stats: None,
        error: None,
        interrupted: false,
        latency_ms: 0.0,
    };
    let stop = Stop {
        cancel: stop,
        deadline: Some(started + timeout),
        keep_partial: false,
    };
    match run_turn(engine, turn, params, stop, |_| {}) {
        Ok(c) => {
            p.output = Some(c.output);
            p.stats = Some(c.stats);
        }
        Err(CollectError::Cancelled) => p.interrupted = true,
        Err(CollectError::DeadlineExceeded) => {
            p.error = Some(format!(
                "no answer within {} ms (row timeout)",
                timeout.as_millis()
            ));
        }
        Err(CollectError::Engine(e)) => p.error = Some(e.to_string()),
    }
    p.latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    p
}

/// Deterministic fidelity metrics of `observation` against the row's real
/// observation, as a JSON summary (the fields of
/// `worldloom_obs::metrics::Evaluation` without the per-node detail);
/// `null` when there is no real observation.
pub fn metrics_json(row: &BenchRow, observation: Option<&str>) -> Value {
    let Ok(Some(real_raw)) = row.ground_truth() else {
        return Value::Null;
    };
    let real = strip_response_marker(&real_raw);
    let domain = row.domain();
    let representation = sniff_representation(&domain, real);
    let prev = row.previous_observation().ok().flatten();
    let prev = prev.as_deref().map(strip_response_marker);
    let pred = observation.map(strip_response_marker);
    match worldloom_obs::metrics::evaluate(
        Some(real.as_bytes()),
        pred.map(str::as_bytes),
        prev.map(str::as_bytes),
        representation,
    ) {
        Ok(e) => json!({
            "status": e.status,
            "reason": e.reason,
            "representation": representation.as_str(),
            "exact": e.exact,
            "text_f1": e.text_f1,
            "node_f1": e.node_f1,
            "attribute_accuracy": e.attribute_accuracy,
            "transition_f1": e.transition_f1,
        }),
        Err(e) => {
            json!({"status": "skipped", "reason": e.to_string(), "representation": representation.as_str()})
        }
    }
}

fn output_row(row: &BenchRow, engine_name: &str, p: &Prediction) -> Map<String, Value> {
    let mut out = row.fields.clone();
    let empty = worldloom_core::OutputParser::new(false).finish_output();
    let output = p.output.as_ref().unwrap_or(&empty);
    let parsed = &output.parsed;
    let status = if p.error.is_some() {
        "error".to_owned()
    } else {
        parsed.status.as_str().to_owned()
    };
    let observation = match parsed.status {
        OutputStatus::Ok | OutputStatus::Truncated => parsed.observation.clone(),
        _ => None,
    };
    out.insert("gen".into(), json!(output.answer));
    out.insert("wl_key".into(), json!(row.key()));
    out.insert("wl_engine".into(), json!(engine_name));
    out.insert("wl_status".into(), json!(status));
    out.insert("wl_error".into(), json!(p.error));
    out.insert("wl_observation".into(), json!(observation));
    out.insert("wl_reasoning".into(), json!(parsed.reasoning));
    let stats = p.stats.clone().unwrap_or_default();
    out.insert("wl_prompt_tokens".into(), json!(stats.prompt_tokens));
    out.insert(
        "wl_completion_tokens".into(),
        json!(stats.completion_tokens),
    );
    out.insert("wl_decode_forwards".into(), json!(stats.decode_forwards));
    out.insert("wl_drafted_tokens".into(), json!(stats.drafted_tokens));
    out.insert("wl_accepted_tokens".into(), json!(stats.accepted_tokens));
    out.insert("wl_latency_ms".into(), json!(round3(p.latency_ms)));
    out.insert("wl_prefill_ms".into(), json!(round3(stats.prefill_ms)));
    out.insert("wl_decode_ms".into(), json!(round3(stats.decode_ms)));
    out.insert("wl_stop_reason".into(), json!(stats.stop_reason));
    out.insert(
        "wl_metrics".into(),
        if p.error.is_some() {
            Value::Null
        } else {
            metrics_json(row, observation.as_deref())
        },
    );
    out
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn progress_bar(len: u64, visible: bool) -> indicatif::ProgressBar {
    if !visible {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{elapsed_precise} [{wide_bar}] {pos}/{len} rows  {per_sec}  ETA {eta}  {msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// Runs every row not yet in `output` through `engine` and appends the
/// results to `output` (created when absent). `stop` ends the run early:
/// no new rows start, predictions in flight are cancelled and not written.
///
/// Errors: [`EvalError::Io`] when the output cannot be opened or written;
/// [`EvalError::Input`] when the output holds lines that are not Worldloom
/// eval rows, or a row's fields have the wrong types.
pub fn run_eval(
    rows: &[BenchRow],
    engine: Arc<dyn WorldModel>,
    output: &Path,
    options: &RunOptions,
    stop: Arc<AtomicBool>,
) -> Result<RunSummary, EvalError> {
    let done = existing_keys(output)?;
    let mut seen = HashSet::new();
    let mut todo: Vec<&BenchRow> = Vec::new();
    let mut summary = RunSummary {
        total: rows.len(),
        ..RunSummary::default()
    };
    for row in rows {
        let key = row.key();
        if !seen.insert(key.clone()) {
            return Err(EvalError::Input(format!(
                "{}:{}: duplicate row `{key}` (same task, id and turn_idx as an earlier row)",
                row.source.display(),
                row.line
            )));
        }
        if done.contains(&key) {
            summary.already_done += 1;
        } else {
            // Fail on malformed rows before any request is sent.
            row.messages()?;
            todo.push(row);
        }
    }
    let resuming = (summary.already_done > 0).then(|| {
        format!(
            "resuming: {} of {} rows already in {}",
            summary.already_done,
            rows.len(),
            output.display()
        )
    });
    let engine_name = engine.name();
    let timeout = Duration::from_millis(options.row_timeout_ms);
    let stop_token = CancelToken::from(Arc::clone(&stop));
    let (written, errors) = write_parallel(
        &todo,
        options.concurrency,
        &stop,
        output,
        options.progress,
        resuming,
        |row: &&BenchRow| {
            let turn = row_turn(row).ok()?;
            let p = predict_row(
                engine.as_ref(),
                &turn,
                &options.params,
                &stop_token,
                timeout,
            );
            if p.interrupted {
                return None;
            }
            Some((output_row(row, &engine_name, &p), p.error.is_some()))
        },
    )?;
    summary.written = written;
    summary.errors = errors;
    summary.interrupted =
        stop.load(Ordering::SeqCst) && summary.already_done + summary.written < summary.total;
    Ok(summary)
}

/// Runs `work` on every item with up to `concurrency` threads (the
/// use-case layer's worker pool, `worldloom_predict::workers`) and appends
/// each returned row to `output` (opened for appending, created if missing)
/// as one whole line, flushed. `work` returns `None` to write nothing
/// (interrupted); the flag says the row is a failure. A progress bar of
/// `items.len()` rows shows when `progress` is set, with `note` printed above
/// it, and is cleared at the end. Stops starting new items once `stop` is set
/// (a failed write sets it). Returns (rows written, failures written).
///
/// Errors: [`EvalError::Io`] when `output` cannot be opened or writing fails
/// (the run stops).
pub(crate) fn write_parallel<T: Sync>(
    items: &[T],
    concurrency: usize,
    stop: &AtomicBool,
    output: &Path,
    progress: bool,
    note: Option<String>,
    work: impl Fn(&T) -> Option<(Map<String, Value>, bool)> + Sync,
) -> Result<(usize, usize), EvalError> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(output)
        .map_err(|e| EvalError::io(output, e))?;
    let bar = progress_bar(items.len() as u64, progress);
    if let Some(note) = note {
        bar.println(note);
    }
    let mut write_error = None;
    let (mut written, mut errors) = (0, 0);
    workers::for_each(items, concurrency, stop, work, |(row, failed)| {
        if write_error.is_some() {
            return;
        }
        let mut line = Value::Object(row).to_string();
        line.push('\n');
        if let Err(e) = file.write_all(line.as_bytes()).and_then(|()| file.flush()) {
            write_error = Some(EvalError::io(output, e));
            stop.store(true, Ordering::SeqCst);
            return;
        }
        written += 1;
        if failed {
            errors += 1;
            bar.set_message(format!("{errors} failed"));
        }
        bar.inc(1);
    });
    bar.finish_and_clear();
    match write_error {
        Some(e) => Err(e),
        None => Ok((written, errors)),
    }
}

/// The turn of a benchmark row for the use-case layer: its chat as the
/// official script builds it, and the observation of the state the action
/// is taken from (`response[turn − 1]`, without its `**Environment
/// Observation:**` marker, as the importer stores that state; `None` on the
/// first turn, whose state lives inside the prompt).
///
/// Errors: [`EvalError::Input`] for a field of the wrong type.
pub fn row_turn(row: &BenchRow) -> Result<Turn, EvalError> {
    let state = row
        .previous_observation()?
        .map(|o| strip_response_marker(&o).to_owned());
    Ok(Turn::of_chat(
        row.messages()?,
        state,
        ContextMode::TeacherForced,
    ))
}

/// A replay engine answering each benchmark chat with the `gen` recorded for
/// it in an earlier output of [`run_eval`] (or of the official `infer` step):
/// re-scoring an old run, or comparing runs, without a model. The chat is
/// rebuilt from each row as [`BenchRow::messages`] builds it; rows with an
/// empty `gen` are left out.
///
/// Errors: [`EvalError`] when the file cannot be read or a row is malformed.
pub fn replay_engine(
    predictions: &Path,
) -> Result<worldloom_engine::baseline::ReplayEngine, EvalError> {
    let mut engine = worldloom_engine::baseline::ReplayEngine::new();
    let text = std::fs::read_to_string(predictions).map_err(|e| EvalError::io(predictions, e))?;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(line) else {
            return Err(EvalError::Input(format!(
                "{}:{}: not a JSON object",
                predictions.display(),
                i + 1
            )));
        };
        let generation = fields
            .get("gen")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if generation.is_empty() {
            continue;
        }
        let row = BenchRow {
            fields,
            source: predictions.to_path_buf(),
            line: i + 1,
        };
        engine.insert(&row.messages()?, generation);
    }
    Ok(engine)
}
