//! `eval` → `judge` → `score` on a small invented AgentWorldBench folder, with
//! the copy baseline called directly and through `serve-model` over HTTP on
//! 127.0.0.1, and a scripted judge.

#![allow(clippy::unwrap_used)] // helpers outside #[test] functions unwrap too

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::Sender;

use serde_json::{Map, Value, json};
use worldloom_core::{ModelOutput, OutputParser};
use worldloom_engine::baseline::CopyEngine;
use worldloom_engine::openai::{OpenAiConfig, OpenAiEngine};
use worldloom_engine::{
    CancelToken, EngineError, EngineEvent, GenerationStats, PredictRequest, PredictionStream,
    StopReason, WorldModel,
};
use worldloom_eval::bench::{BenchRow, load_rows};
use worldloom_eval::judge::{JudgeOptions, JudgePrompts, read_jsonl, run_judge};
use worldloom_eval::run::{RunOptions, RunSummary, replay_engine, run_eval};
use worldloom_eval::score::score_file;
use worldloom_model_server::{ServerOptions, spawn};

const MARK: &str = "**Environment Observation:**\n";

/// Two domains, five rows: first turns (the copy baseline has no state to
/// copy), a repeated call with the same answer (copy is exact) and changes.
fn write_bench(dir: &Path) {
    let terminal_prompts = [
        "### Turn 1\n**Action:** `ls`",
        "### Turn 2\n**Action:** `cat a.txt`",
        "### Turn 3\n**Action:** `ls`",
    ];
    let terminal_responses = [
        format!("{MARK}a.txt"),
        format!("{MARK}hello"),
        format!("{MARK}a.txt"),
    ];
    let mut lines = Vec::new();
    for turn in 1..=3 {
        lines.push(json!({"task": "agentworld/terminal", "id": 11, "system_str": "You simulate a Linux shell.",
            "prompt": terminal_prompts, "response": terminal_responses,
            "current_prompt": terminal_prompts[turn - 1], "turn_idx": turn, "total_turns": 3, "extra_field": [turn]}));
    }
    std::fs::write(
        dir.join("terminal_test.jsonl"),
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    let mcp = [
        json!({"task": "mcp", "id": 5, "system_str": "You simulate a weather tool.", "prompt": ["call get_weather(city='Oslo')", "call get_weather(city='Oslo')"],
            "response": ["{\"temp_c\": 3}", "{\"temp_c\": 3}"], "turn_idx": 2, "total_turns": 2}),
        json!({"task": "mcp", "id": 6, "system_str": "You simulate a weather tool.", "prompt": ["call list_cities()"],
            "response": ["{\"cities\": [\"Oslo\"]}"], "turn_idx": 1, "total_turns": 1}),
    ];
    std::fs::write(
        dir.join("mcp_test.jsonl"),
        mcp.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    // Not a *_test.jsonl file: ignored when a folder is given.
    std::fs::write(dir.join("notes.jsonl"), "not json\n").unwrap();
}

fn quiet() -> RunOptions {
    RunOptions {
        concurrency: 3,
        progress: false,
        ..RunOptions::default()
    }
}

/// A temporary folder holding the bench of [`write_bench`], and its rows.
fn bench() -> (tempfile::TempDir, Vec<BenchRow>) {
    let dir = tempfile::tempdir().unwrap();
    write_bench(dir.path());
    let rows = load_rows(dir.path()).unwrap();
    (dir, rows)
}

/// `engine` run over `rows` into `out` with the [`quiet`] options, never
/// interrupted.
fn eval_quietly(rows: &[BenchRow], engine: impl WorldModel + 'static, out: &Path) -> RunSummary {
    run_eval(
        rows,
        Arc::new(engine),
        out,
        &quiet(),
        Arc::new(AtomicBool::new(false)),
    )
    .unwrap()
}

fn by_key(path: &Path) -> std::collections::BTreeMap<String, Map<String, Value>> {
    read_jsonl(path)
        .unwrap()
        .into_iter()
        .map(|r| (r["wl_key"].as_str().unwrap().to_owned(), r))
        .collect()
}

/// The copy baseline's rows. `served`: through `serve-model`, whose copy
/// sees only the chat and copies its last assistant message as the chat
/// shows it (with the `**Environment Observation:**` marker); run directly,
/// the copy predicts the observation of the state the action is taken from
/// (the use-case layer's one rule: `response[turn − 1]` without the
/// marker). The extracted observation is the same either way.
fn check_copy_output(path: &Path, served: bool) {
    let rows = by_key(path);
    assert_eq!(rows.len(), 5);
    let keys: Vec<&str> = rows.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        vec![
            "mcp|5|2",
            "mcp|6|1",
            "terminal|11|1",
            "terminal|11|2",
            "terminal|11|3"
        ]
    );
    // Official fields are kept unchanged and `gen` is added.
    let t2 = &rows["terminal|11|2"];
    assert_eq!(t2["extra_field"], json!([2]));
    assert_eq!(t2["total_turns"], json!(3));
    let copied = if served {
        format!("{MARK}a.txt")
    } else {
        "a.txt".to_owned()
    };
    assert_eq!(
        t2["gen"],
        json!(format!(
            "<predicted_observation>\n{copied}\n</predicted_observation>"
        ))
    );
    assert_eq!(t2["wl_status"], "ok");
    assert_eq!(t2["wl_observation"], "a.txt");
    assert_eq!(t2["wl_metrics"]["status"], "scored");
    assert_eq!(t2["wl_metrics"]["exact"], false);
    assert_eq!(t2["wl_metrics"]["text_f1"], 0.0);
    assert_eq!(t2["wl_metrics"]["representation"], "text");
    let t3 = &rows["terminal|11|3"];
    assert_eq!(t3["wl_observation"], "hello");
    assert_eq!(t3["wl_metrics"]["exact"], false);
    let m = &rows["mcp|5|2"];
    assert_eq!(m["wl_metrics"]["representation"], "json");
    assert_eq!(m["wl_metrics"]["exact"], true);
    // First turns: no state to copy; an error row with an empty generation.
    for key in ["mcp|6|1", "terminal|11|1"] {
        assert_eq!(rows[key]["wl_status"], "error", "{key}");
        assert_eq!(rows[key]["gen"], "", "{key}");
        assert!(
            rows[key]["wl_error"]
                .as_str()
                .unwrap()
                .contains("current_observation"),
            "{key}"
        );
    }
}

#[test]
fn copy_baseline_eval_resume_and_score() {
    let (dir, rows) = bench();
    assert_eq!(rows.len(), 5);
    let out = dir.path().join("predictions.jsonl");
    let stop = Arc::new(AtomicBool::new(false));
    let summary = run_eval(&rows, Arc::new(CopyEngine), &out, &quiet(), stop.clone()).unwrap();
    assert_eq!(
        (
            summary.total,
            summary.already_done,
            summary.written,
            summary.errors
        ),
        (5, 0, 5, 2)
    );
    check_copy_output(&out, false);

    // Resume: nothing left to do.
    let again = run_eval(&rows, Arc::new(CopyEngine), &out, &quiet(), stop.clone()).unwrap();
    assert_eq!((again.already_done, again.written), (5, 0));

    // A torn last line (killed mid-write) and a missing row: the torn line is
    // cut, the missing row is predicted again.
    let text = std::fs::read_to_string(&out).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let dropped = lines.pop().unwrap();
    let torn = format!("{}\n{}", lines.join("\n"), &dropped[..dropped.len() / 2]);
    std::fs::write(&out, torn).unwrap();
    let resumed = run_eval(&rows, Arc::new(CopyEngine), &out, &quiet(), stop).unwrap();
    assert_eq!((resumed.already_done, resumed.written), (4, 1));
    check_copy_output(&out, false);

    let report = score_file(&out).unwrap();
    assert_eq!(report.all.rows, 5);
    assert_eq!(report.all.valid, 0, "nothing is judged yet");
    assert_eq!(report.all.status_counts["error"], 2);
    assert_eq!(report.all.status_counts["ok"], 3);
    assert_eq!(report.domains["mcp"].exact_rate, Some(1.0));
    assert_eq!(report.domains["terminal"].exact_rate, Some(0.0));
}

#[test]
fn eval_through_serve_model_matches_the_direct_run() {
    let (dir, rows) = bench();
    let server = spawn(
        Arc::new(CopyEngine),
        ServerOptions {
            model_id: "copy".into(),
            max_concurrent: 1,
            ..ServerOptions::default()
        },
        "127.0.0.1:0".parse().unwrap(),
    )
    .unwrap();
    for stream in [true, false] {
        let client = OpenAiEngine::new(OpenAiConfig {
            base_url: server.base_url(),
            model: "copy".into(),
            stream,
            ..OpenAiConfig::default()
        })
        .unwrap();
        client.check_model().unwrap();
        let out = dir.path().join(format!("served-{stream}.jsonl"));
        let summary = eval_quietly(&rows, client, &out);
        assert_eq!((summary.written, summary.errors), (5, 2), "stream={stream}");
        check_copy_output(&out, true);
        let first_turn = &by_key(&out)["terminal|11|1"];
        let error = first_turn["wl_error"].as_str().unwrap();
        assert!(error.contains("400"), "stream={stream}: {error}");
    }
}

/// The events an engine sends for `text` generated in one piece (outside
/// reasoning at the start), then `Done` with `stats`.
fn answer_events(text: String, stats: GenerationStats) -> Vec<EngineEvent> {
    let mut parser = OutputParser::new(false);
    let mut delta = parser.push(&text);
    delta.extend(parser.flush());
    let mut events = vec![EngineEvent::Token(worldloom_engine::Token {
        text,
        id: None,
        logprob: None,
        top: Vec::new(),
    })];
    events.extend(EngineEvent::from_delta(delta));
    events.push(EngineEvent::Done {
        stats,
        output: parser.finish_output(),
    });
    events
}

/// A stream that already holds `events`, in order.
fn sent(events: Vec<EngineEvent>) -> PredictionStream {
    let (tx, rx) = std::sync::mpsc::channel();
    for event in events {
        tx.send(event).unwrap();
    }
    PredictionStream {
        events: rx,
        cancel: CancelToken::new(),
    }
}

/// A stream whose events `work` sends from a thread of its own, given the
/// sender and the stream's cancel token.
fn spawned(
    work: impl FnOnce(Sender<EngineEvent>, CancelToken) + Send + 'static,
) -> PredictionStream {
    let (tx, rx) = std::sync::mpsc::channel();
    let cancel = CancelToken::new();
    let token = cancel.clone();
    std::thread::spawn(move || work(tx, token));
    PredictionStream { events: rx, cancel }
}

/// The `Done` of a generation ended for `stop`, with `output` as it stands.
fn done(stop: Option<StopReason>, output: ModelOutput) -> EngineEvent {
    EngineEvent::Done {
        stats: GenerationStats {
            stop_reason: stop,
            ..GenerationStats::default()
        },
        output,
    }
}

/// A judge that gives fixed scores, in a reasoning-then-tag answer.
struct ScriptedJudge;

impl WorldModel for ScriptedJudge {
    fn name(&self) -> String {
        "scripted-judge".into()
    }

    fn predict(&self, request: PredictRequest) -> Result<PredictionStream, EngineError> {
        let user = &request.messages[1].content;
        let exact =
            user.contains("```\n{\"temp_c\": 3}\n```\n\n# Real observation\n```\n{\"temp_c\": 3}");
        let s = if exact { 5 } else { 2 };
        let text = format!(
            "Comparing both.</think>\n<final_evaluation>\n```json\n{{\"strengths\": [], \"weaknesses\": [\"x\"], \"scores\": {{\"format\": {s}, \"factuality\": {s}, \"consistency\": {s}, \"realism\": {s}, \"quality\": {s}}}}}\n```\n</final_evaluation>"
        );
        Ok(sent(answer_events(text, GenerationStats::default())))
    }
}

#[test]
fn judge_then_score() {
    let (dir, rows) = bench();
    let predictions = dir.path().join("predictions.jsonl");
    eval_quietly(&rows, CopyEngine, &predictions);
    let judged = dir.path().join("judged.jsonl");
    let options = JudgeOptions {
        progress: false,
        ..JudgeOptions::default()
    };
    let summary = run_judge(
        &predictions,
        Arc::new(ScriptedJudge),
        &JudgePrompts::builtin(),
        &judged,
        &options,
        Arc::new(AtomicBool::new(false)),
    )
    .unwrap();
    assert_eq!((summary.total, summary.written, summary.failed), (5, 5, 2));
    let rows = by_key(&judged);
    assert_eq!(rows["mcp|5|2"]["total_score"], json!(5.0));
    assert_eq!(rows["mcp|5|2"]["failed"], json!(0.0));
    assert_eq!(rows["mcp|5|2"]["extracted_output"], "{\"temp_c\": 3}");
    assert_eq!(rows["terminal|11|3"]["format"], json!(2));
    assert_eq!(
        rows["terminal|11|1"]["error_message"],
        "No model generation"
    );
    assert_eq!(rows["terminal|11|1"]["failed"], json!(1.0));

    let report = score_file(&judged).unwrap();
    assert_eq!(report.domains["mcp"].judged["total_score"], Some(100.0));
    assert_eq!(report.domains["terminal"].judged["total_score"], Some(25.0));
    assert_eq!((report.all.valid, report.all.failed), (3, 2));
    // Pooled over rows: mean(5, 2, 2) = 3 → 50.
    assert_eq!(report.all.judged["total_score"], Some(50.0));
}

/// An engine that answers after a delay, on its own thread, and honours
/// cancellation.
struct SlowCopy {
    delay_ms: u64,
}

impl WorldModel for SlowCopy {
    fn name(&self) -> String {
        "slow-copy".into()
    }

    fn predict(&self, request: PredictRequest) -> Result<PredictionStream, EngineError> {
        let delay = std::time::Duration::from_millis(self.delay_ms);
        Ok(spawned(move |tx, token| {
            let started = std::time::Instant::now();
            while started.elapsed() < delay {
                if token.is_cancelled() {
                    let output = OutputParser::new(false).finish_output();
                    let _ = tx.send(done(Some(StopReason::Cancelled), output));
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            let state = request.current_observation.unwrap_or_default();
            let text = format!("<predicted_observation>{state}</predicted_observation>");
            for event in answer_events(text, GenerationStats::default()) {
                let _ = tx.send(event);
            }
        }))
    }
}

#[test]
fn interrupt_leaves_a_valid_file_and_resume_finishes() {
    let (dir, rows) = bench();
    let out = dir.path().join("predictions.jsonl");
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    // One row at a time, 300 ms each; interrupt during the second row.
    let interrupter = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(450));
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    let options = RunOptions {
        concurrency: 1,
        progress: false,
        ..RunOptions::default()
    };
    let summary = run_eval(
        &rows,
        Arc::new(SlowCopy { delay_ms: 300 }),
        &out,
        &options,
        stop,
    )
    .unwrap();
    interrupter.join().unwrap();
    assert!(summary.interrupted);
    assert_eq!(summary.written, 1, "the cancelled row is not written");
    // Every line is a whole JSON row.
    let written = read_jsonl(&out).unwrap();
    assert_eq!(written.len(), 1);
    assert!(std::fs::read_to_string(&out).unwrap().ends_with('\n'));

    let resumed = run_eval(
        &rows,
        Arc::new(SlowCopy { delay_ms: 1 }),
        &out,
        &options,
        Arc::new(AtomicBool::new(false)),
    )
    .unwrap();
    assert_eq!(
        (resumed.already_done, resumed.written, resumed.interrupted),
        (1, 4, false)
    );
    assert_eq!(by_key(&out).len(), 5);
}

#[test]
fn replay_of_an_earlier_run_reproduces_it() {
    let (dir, rows) = bench();
    let first = dir.path().join("first.jsonl");
    eval_quietly(&rows, CopyEngine, &first);
    let replay = replay_engine(&first).unwrap();
    assert_eq!(replay.len(), 3, "error rows have no generation to replay");
    let second = dir.path().join("second.jsonl");
    let summary = eval_quietly(&rows, replay, &second);
    assert_eq!((summary.written, summary.errors), (5, 2));
    let (a, b) = (by_key(&first), by_key(&second));
    for (key, row) in &a {
        assert_eq!(row["gen"], b[key]["gen"], "{key}");
        assert_eq!(b[key]["wl_engine"], "replay");
    }
}

#[test]
fn eval_with_concurrency_3_waits_for_a_one_at_a_time_server() {
    // `serve-model` runs one prediction at a time; eval sends three. The
    // queued requests wait longer than the client's read timeout (each row
    // takes 300 ms, the timeout is 200 ms) and still finish, because the
    // server's stream sends keep-alive comments while they wait.
    let (dir, rows) = bench();
    let server = spawn(
        Arc::new(SlowCopy { delay_ms: 300 }),
        ServerOptions {
            model_id: "slow".into(),
            max_concurrent: 1,
            keepalive_ms: 50,
            ..ServerOptions::default()
        },
        "127.0.0.1:0".parse().unwrap(),
    )
    .unwrap();
    let client = OpenAiEngine::new(OpenAiConfig {
        base_url: server.base_url(),
        model: "slow".into(),
        stream: true,
        read_timeout_ms: 200,
        ..OpenAiConfig::default()
    })
    .unwrap();
    let out = dir.path().join("queued.jsonl");
    assert_eq!(quiet().concurrency, 3);
    let started = std::time::Instant::now();
    let summary = eval_quietly(&rows, client, &out);
    assert_eq!((summary.written, summary.errors), (5, 0), "{summary:?}");
    // One at a time: five rows of 300 ms.
    assert!(started.elapsed() >= std::time::Duration::from_millis(1500));
    for (key, row) in by_key(&out) {
        assert!(
            row.get("wl_error").is_none_or(Value::is_null),
            "{key}: {row:?}"
        );
        assert_ne!(row["wl_status"], "error", "{key}");
    }
}

/// An engine whose every answer is cut off inside reasoning, delivered
/// inline (an unclosed think block) or apart (`reasoning_content` with an
/// empty answer), ended for `stop`; it settles nothing itself.
struct CutInReasoning {
    inline: bool,
    stop: Option<StopReason>,
}

impl WorldModel for CutInReasoning {
    fn name(&self) -> String {
        "cut".into()
    }

    fn predict(&self, _request: PredictRequest) -> Result<PredictionStream, EngineError> {
        let reasoning = "The command lists the folder. <predicted_observation>draft";
        let mut parser = OutputParser::new(false);
        let delta = if self.inline {
            parser.push(&format!("<think>{reasoning}"))
        } else {
            parser.push_reasoning(reasoning)
        };
        let mut events: Vec<EngineEvent> = EngineEvent::from_delta(delta).collect();
        events.push(done(self.stop, parser.finish_output()));
        Ok(sent(events))
    }
}

#[test]
fn output_cut_inside_reasoning_has_one_status_in_eval_rows() {
    let (dir, rows) = bench();
    for (stop, status) in [
        (Some(StopReason::MaxTokens), "truncated"),
        (Some(StopReason::EndOfTurn), "no_observation"),
    ] {
        for inline in [true, false] {
            let out = dir.path().join(format!("cut-{inline}-{status}.jsonl"));
            let engine = CutInReasoning { inline, stop };
            eval_quietly(&rows, engine, &out);
            let written = read_jsonl(&out).unwrap();
            assert_eq!(written.len(), 5);
            for row in written {
                let at = format!("inline={inline} {stop:?}");
                assert_eq!(row["wl_status"], status, "{at}");
                assert_eq!(row["wl_observation"], Value::Null, "{at}");
                assert_eq!(row["gen"], "", "{at}");
                assert!(
                    row["wl_reasoning"]
                        .as_str()
                        .unwrap()
                        .starts_with("The command lists the folder."),
                    "{at}"
                );
                assert_eq!(row["wl_stop_reason"], json!(stop), "{at}");
            }
        }
    }
}
