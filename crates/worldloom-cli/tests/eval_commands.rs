//! `worldloom eval`, `score`, `serve-model` and `serve-env` as a user runs
//! them: the copy baseline directly and through `serve-model` over HTTP on
//! 127.0.0.1, the tiny random checkpoint in `assets/tiny-world-model` served
//! by the local engine, and `serve-env` with the copy baseline.

#![allow(clippy::unwrap_used)] // helpers outside #[test] functions unwrap too

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

#[path = "../../worldloom-env/tests/common/openenv.rs"]
mod openenv;

const BIN: &str = env!("CARGO_BIN_EXE_worldloom");

/// Two domains, four rows; the first turns have no state for the copy
/// baseline to copy.
fn write_bench(dir: &Path) {
    let mark = "**Environment Observation:**\n";
    let prompts = [
        "### Turn 1\n**Action:** `ls`",
        "### Turn 2\n**Action:** `cat a.txt`",
    ];
    let responses = [format!("{mark}a.txt"), format!("{mark}hello")];
    let terminal: String = (1..=2)
        .map(|t| {
            json!({"task": "agentworld/terminal", "id": 1, "system_str": "You simulate a Linux shell.",
                "prompt": prompts, "response": responses, "turn_idx": t, "total_turns": 2})
            .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(dir.join("terminal_test.jsonl"), terminal).unwrap();
    let mcp: String = (1..=2)
        .map(|t| {
            json!({"task": "mcp", "id": 2, "system_str": "You simulate a weather tool.",
                "prompt": ["get_weather('Oslo')", "get_weather('Oslo')"],
                "response": ["{\"temp_c\": 3}", "{\"temp_c\": 3}"], "turn_idx": t, "total_turns": 2})
            .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(dir.join("mcp_test.jsonl"), mcp).unwrap();
}

fn read_rows(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn worldloom(args: &[&str]) -> std::process::Output {
    Command::new(BIN).args(args).output().unwrap()
}

/// `worldloom eval --data <data> <engine…> -o <out>`.
fn eval(data: &Path, engine: &[&str], out: &Path) -> std::process::Output {
    let mut args = vec!["eval", "--data", data.to_str().unwrap()];
    args.extend(engine);
    args.extend(["-o", out.to_str().unwrap()]);
    worldloom(&args)
}

/// [`eval`], which must succeed.
fn eval_ok(data: &Path, engine: &[&str], out: &Path) {
    let o = eval(data, engine, out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `worldloom score <out> --json`, which must succeed.
fn score_json(out: &Path) -> Value {
    let s = worldloom(&["score", out.to_str().unwrap(), "--json"]);
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    serde_json::from_slice(&s.stdout).unwrap()
}

/// The fields of the official format, which eval writes back unchanged.
const OFFICIAL_FIELDS: [&str; 7] = [
    "task",
    "id",
    "prompt",
    "response",
    "system_str",
    "turn_idx",
    "total_turns",
];

/// A `serve-model` child process and its base URL; killed on drop.
struct Served {
    child: Child,
    base_url: String,
}

impl Served {
    /// The engine arguments of `eval` for this server: `openai` at its URL,
    /// then `model` (the model name and options), then `--no-stream` unless
    /// `stream`.
    fn engine<'a>(&'a self, model: &[&'a str], stream: bool) -> Vec<&'a str> {
        let mut args = vec!["--engine", "openai", "--base-url", self.base_url.as_str()];
        args.extend(model);
        if !stream {
            args.push("--no-stream");
        }
        args
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve_model(args: &[&str]) -> Served {
    let mut child = Command::new(BIN)
        .arg("serve-model")
        .args(args)
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let line = first_line(&mut child);
    let base_url = line
        .split_whitespace()
        .last()
        .unwrap_or_default()
        .to_owned();
    assert!(
        base_url.starts_with("http://127.0.0.1:") && base_url.ends_with("/v1"),
        "first line: {line:?}"
    );
    Served { child, base_url }
}

fn check_rows(path: &Path) -> Vec<Value> {
    let mut rows = read_rows(path);
    rows.sort_by_key(|r| r["wl_key"].as_str().unwrap().to_owned());
    let keys: Vec<&str> = rows.iter().map(|r| r["wl_key"].as_str().unwrap()).collect();
    assert_eq!(
        keys,
        vec!["mcp|2|1", "mcp|2|2", "terminal|1|1", "terminal|1|2"]
    );
    for r in &rows {
        for field in OFFICIAL_FIELDS.iter().chain(&["gen"]) {
            assert!(r.get(field).is_some(), "{field} missing in {r}");
        }
    }
    rows
}

#[test]
fn eval_copy_then_score() {
    let dir = tempfile::tempdir().unwrap();
    write_bench(dir.path());
    let out = dir.path().join("predictions.jsonl");
    eval_ok(dir.path(), &["--engine", "copy"], &out);
    let rows = check_rows(&out);
    assert_eq!(
        rows[1]["gen"],
        "<predicted_observation>\n{\"temp_c\": 3}\n</predicted_observation>"
    );
    assert_eq!(rows[1]["wl_metrics"]["exact"], true);
    assert_eq!(rows[3]["wl_observation"], "a.txt");
    // The copy is the observation of the state the action is taken from
    // (`response[turn − 1]`), without the AgentWorldBench marker.
    assert_eq!(
        rows[3]["gen"],
        "<predicted_observation>\na.txt\n</predicted_observation>"
    );
    assert_eq!(rows[0]["wl_status"], "error");

    let s = worldloom(&["score", out.to_str().unwrap()]);
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    let table = String::from_utf8_lossy(&s.stdout);
    assert!(
        table.contains("prediction status: error 2, ok 2"),
        "{table}"
    );
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[1].starts_with("mcp") && lines[2].starts_with("terminal"),
        "{table}"
    );
    let report = score_json(&out);
    assert_eq!(report["domains"]["mcp"]["exact_rate"], 1.0);
    assert_eq!(report["all"]["rows"], 4);
}

#[test]
fn eval_through_serve_model_copy() {
    let dir = tempfile::tempdir().unwrap();
    write_bench(dir.path());
    let served = serve_model(&["--engine", "copy"]);
    for (stream, file) in [(true, "stream.jsonl"), (false, "plain.jsonl")] {
        let out = dir.path().join(file);
        eval_ok(
            dir.path(),
            &served.engine(&["--model", "copy", "--concurrency", "3"], stream),
            &out,
        );
        let rows = check_rows(&out);
        assert_eq!(rows[3]["wl_observation"], "a.txt", "stream={stream}");
        assert_eq!(rows[3]["wl_engine"], "openai:copy");
    }
    // A model the server does not serve is refused before any row runs.
    let out = dir.path().join("none.jsonl");
    let o = eval(dir.path(), &served.engine(&["--model", "qwen"], true), &out);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("model `qwen` is not served") && err.contains("it serves: copy"),
        "{err}"
    );
    assert!(!out.exists());
}

/// The local engine on the tiny random checkpoint in `assets/tiny-world-model`.
fn local_engine() -> Vec<&'static str> {
    static DIR: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../assets/tiny-world-model")
            .display()
            .to_string()
    });
    vec!["--engine", "local", "--model-dir", DIR.as_str()]
}

#[test]
fn eval_through_serve_model_tiny_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    write_bench(dir.path());
    let served = serve_model(&local_engine());
    for (stream, file) in [(true, "stream.jsonl"), (false, "plain.jsonl")] {
        let out = dir.path().join(file);
        let model = ["--model", "tiny-world-model", "--max-tokens", "8"];
        eval_ok(dir.path(), &served.engine(&model, stream), &out);
        for r in check_rows(&out) {
            // Random weights: gibberish, but a real generation of ≤ 8 tokens.
            assert_ne!(
                r["wl_status"], "error",
                "stream={stream}: {}",
                r["wl_error"]
            );
            let n = r["wl_completion_tokens"].as_u64().unwrap();
            assert!((1..=8).contains(&n), "stream={stream}: {n} tokens");
            assert!(
                r["wl_prompt_tokens"].as_u64().unwrap() > 10,
                "stream={stream}"
            );
        }
    }
}

#[test]
fn eval_names_the_bad_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("web_test.jsonl"),
        "{\"task\": \"web\"}\n{\"task\": \n",
    )
    .unwrap();
    let out = dir.path().join("p.jsonl");
    let o = eval(dir.path(), &["--engine", "copy"], &out);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("web_test.jsonl:2: not JSON"), "{err}");
    let o = eval(dir.path(), &["--engine", "openai"], &out);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--base-url"));
}

#[test]
fn eval_local_engine_directly() {
    let dir = tempfile::tempdir().unwrap();
    write_bench(dir.path());
    let out = dir.path().join("local.jsonl");
    let mut engine = local_engine();
    engine.extend(["--max-tokens", "4"]);
    eval_ok(dir.path(), &engine, &out);
    for r in check_rows(&out) {
        assert_ne!(r["wl_status"], "error", "{}", r["wl_error"]);
        assert!(
            r["wl_engine"].as_str().unwrap().starts_with("qwen3_5_moe@"),
            "{}",
            r["wl_engine"]
        );
        assert!((1..=4).contains(&r["wl_completion_tokens"].as_u64().unwrap()));
    }
}

fn sample_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../samples/agentworldbench/agentworldbench_sample.jsonl")
}

/// The repository's AgentWorldBench sample (all seven domains): the copy
/// baseline directly, then the tiny checkpoint through `serve-model`; both
/// outputs keep every row and the official fields, and `score` summarises
/// them.
#[test]
fn samples_with_copy_and_through_serve_model() {
    let dir = tempfile::tempdir().unwrap();
    let sample = sample_file();
    let input: Vec<Value> = read_rows(&sample);
    assert!(input.len() >= 7, "the sample has a row per domain");

    let copy_out = dir.path().join("copy.jsonl");
    eval_ok(&sample, &["--engine", "copy"], &copy_out);

    let served = serve_model(&local_engine());
    let served_out = dir.path().join("served.jsonl");
    let model = ["--model", "tiny-world-model", "--max-tokens", "4"];
    eval_ok(&sample, &served.engine(&model, true), &served_out);

    for out in [&copy_out, &served_out] {
        let rows = read_rows(out);
        assert_eq!(rows.len(), input.len(), "{}", out.display());
        for row in &rows {
            let source = input
                .iter()
                .find(|i| i["id"] == row["id"] && i["turn_idx"] == row["turn_idx"])
                .unwrap();
            for field in OFFICIAL_FIELDS {
                assert_eq!(
                    row[field],
                    source[field],
                    "{field} changed in {}",
                    out.display()
                );
            }
            assert!(row["gen"].is_string());
        }
        let report = score_json(out);
        let domains: Vec<&str> = report["domains"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            domains,
            vec!["android", "mcp", "os", "search", "swe", "terminal", "web"]
        );
        assert_eq!(report["all"]["rows"], json!(input.len()));
    }
    // The copy baseline has a state to copy from the second turn on, and is
    // never exact on this sample (every action changes something).
    let copy_report = score_json(&copy_out);
    let first_turns = input.iter().filter(|r| r["turn_idx"] == 1).count();
    assert_eq!(
        copy_report["all"]["status_counts"]["error"],
        json!(first_turns)
    );
    assert_eq!(
        copy_report["all"]["status_counts"]["ok"],
        json!(input.len() - first_turns)
    );
    assert_eq!(copy_report["all"]["exact_rate"], json!(0.0));
}

#[test]
fn serve_model_logs_each_request_and_needs_a_key_beyond_loopback() {
    use std::io::{Read, Write};
    let refused = Command::new(BIN)
        .args([
            "serve-model",
            "--engine",
            "copy",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
        ])
        .env_remove("WORLDLOOM_API_KEY")
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("an API key is required"), "{err}");

    let mut child = Command::new(BIN)
        .args(["serve-model", "--engine", "copy", "--port", "0"])
        .env("WORLDLOOM_API_KEY", "sesame")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let line = first_line(&mut child);
    let addr = line
        .split_whitespace()
        .last()
        .unwrap()
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned();
    let get = |auth: &str| {
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        write!(
            s,
            "GET /v1/models HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n"
        )
        .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        reply
    };
    assert!(get("").starts_with("HTTP/1.1 401"));
    assert!(get("Authorization: Bearer sesame\r\n").starts_with("HTTP/1.1 200"));
    let _ = child.kill();
    let _ = child.wait();
    let mut log = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    assert!(log.contains("serve-model: GET /v1/models 401 "), "{log}");
    assert!(log.contains("serve-model: GET /v1/models 200 "), "{log}");
}

/// A listener on 127.0.0.1 that accepts connections and never answers; its
/// base URL. The accepting thread ends with the test process.
fn silent_endpoint() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().take(64) {
            held.push(stream);
        }
    });
    format!("http://{addr}/v1")
}

/// Asserts that `o` exited with `code` and its stderr contains `needle`.
fn assert_fails_with(o: &std::process::Output, code: i32, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{err}");
    assert!(err.contains(needle), "{err}");
}

#[test]
fn silent_models_endpoint_ends_at_the_read_timeout_flags() {
    let dir = tempfile::tempdir().unwrap();
    write_bench(dir.path());
    let base_url = silent_endpoint();
    let out = dir.path().join("p.jsonl");
    let eval = |extra: &[&str]| {
        let mut args = vec![
            "eval",
            "--data",
            dir.path().to_str().unwrap(),
            "--engine",
            "openai",
            "--base-url",
            &base_url,
            "--model",
            "m",
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        worldloom(&args)
    };
    let o = eval(&["--read-timeout-s", "0.3", "--retries", "0"]);
    assert_fails_with(
        &o,
        1,
        &format!("no answer from {base_url}/models within 300 ms (read timeout)"),
    );
    // the row timeout caps the read timeout
    let o = eval(&["--row-timeout-s", "1"]);
    assert_fails_with(
        &o,
        1,
        &format!("no answer from {base_url}/models within 1000 ms (read timeout)"),
    );
    let o = eval(&["--read-timeout-s", "0"]);
    assert_fails_with(&o, 2, "seconds must be positive");
    let o = worldloom(&[
        "judge",
        "--predictions",
        out.to_str().unwrap(),
        "--judge-base-url",
        &base_url,
        "--judge-model",
        "m",
        "--read-timeout-s",
        "0.3",
        "--connect-timeout-s",
        "2",
    ]);
    assert_fails_with(
        &o,
        1,
        &format!("no answer from {base_url}/models within 300 ms (read timeout)"),
    );
}

/// `worldloom import --workspace` of two eval outputs of the sample (the
/// copy baseline, and a replay of it) makes two runs on the same
/// trajectories; the same file again adds nothing.
#[test]
fn eval_outputs_import_into_a_workspace_as_runs() {
    let dir = tempfile::tempdir().unwrap();
    let sample = sample_file();
    let copy_out = dir.path().join("copy.jsonl");
    eval_ok(&sample, &["--engine", "copy"], &copy_out);
    let replay_out = dir.path().join("replay.jsonl");
    let replay = copy_out.display().to_string();
    eval_ok(
        &sample,
        &["--engine", "replay", "--replay", &replay],
        &replay_out,
    );
    let ws = dir.path().join("runs.worldloom");
    let ws_arg = ws.display().to_string();
    let import = |file: &Path| {
        let o = worldloom(&[
            "import",
            &file.display().to_string(),
            "--workspace",
            &ws_arg,
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let first = import(&copy_out);
    assert!(first.contains("imported 7 trajectories"), "{first}");
    assert!(first.contains("run: copy.jsonl (17 rows)"), "{first}");
    let second = import(&replay_out);
    assert!(
        second.contains("imported 0 trajectories") && second.contains("(7 already there)"),
        "{second}"
    );
    assert!(second.contains("run: replay.jsonl (17 rows)"), "{second}");
    let again = import(&copy_out);
    assert!(
        again.contains("run: copy.jsonl (17 rows) (already imported)"),
        "{again}"
    );
    let both = worldloom(&[
        "import",
        &replay_out.display().to_string(),
        "-o",
        "x.json",
        "--workspace",
        &ws_arg,
    ]);
    assert!(
        !both.status.success(),
        "-o and --workspace exclude each other"
    );
}

/// `serve-env` as a user starts it: the address on the first line, the
/// OpenEnv routes, a reset and a step with the copy baseline, the episode
/// recorded beside the tasks file; off loopback without a token it refuses
/// to start.
#[test]
fn serve_env_copy_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks.jsonl");
    std::fs::copy(sample_file(), &tasks).unwrap();
    let refused = Command::new(BIN)
        .args(["serve-env", "--tasks"])
        .arg(&tasks)
        .args(["--host", "0.0.0.0", "--port", "0"])
        .env_remove("WORLDLOOM_ENV_TOKEN")
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("a token is required"));
    let unknown = Command::new(BIN)
        .args(["serve-env", "--port", "0", "--domain", "moon", "--tasks"])
        .arg(&tasks)
        .output()
        .unwrap();
    assert!(!unknown.status.success());
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("moon"),
        "{}",
        String::from_utf8_lossy(&unknown.stderr)
    );

    let mut child = Killed(
        Command::new(BIN)
            .args(["serve-env", "--engine", "copy", "--port", "0", "--tasks"])
            .arg(&tasks)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let line = first_line(&mut child.0);
    assert!(line.contains("serving 7 task(s) with `copy`"), "{line}");
    let addr = addr_of(&line);
    let call = |method: &str, path: &str, body: &str| http_json(&addr, method, path, body);
    let (head, health) = call("GET", "/health", "");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(health["status"], "healthy");
    let (_, reset) = call("POST", "/reset", r#"{"domain": "os", "seed": 2}"#);
    let id = episode_id(&reset);
    assert_eq!(reset["observation"]["representation"], "os-table");
    let (head, step) = call(
        "POST",
        "/step",
        &format!(
            r#"{{"episode_id": "{id}", "action": {{"action": "pyautogui.click(1455, 206)"}}}}"#
        ),
    );
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(step["observation"]["text"], reset["observation"]["text"]);
    drop(child);

    // The studio's API lists the recorded episode (its tag), opens it with
    // its step, branches it and exports it.
    use worldloom_api::commands;
    use worldloom_api::types::EditActionRequest;
    use worldloom_core::Representation;
    let studio =
        worldloom_api::launch::open_workspace(&dir.path().join("tasks.episodes.worldloom"))
            .unwrap();
    let list = live_episodes(&studio);
    assert_eq!(list.trajectories.len(), 1);
    let episode = &list.trajectories[0];
    assert_eq!(episode.name, id);
    assert_eq!(episode.source_format, "openenv-episode");
    assert_eq!((episode.turn_count, episode.prediction_count), (1, 1));
    let tree = tree_of(&studio, &episode.id);
    assert_eq!((tree.nodes.len(), tree.edges.len()), (2, 1));
    let branch = commands::edit_action(
        &studio,
        EditActionRequest {
            trajectory_id: episode.id.clone(),
            edge_id: 0,
            raw: "pyautogui.doubleClick(560, 300)".into(),
        },
    )
    .unwrap();
    author(
        &studio,
        &episode.id,
        branch.node_id,
        Representation::OsTable,
        "tag\tname\nframe\tReceipts",
        None,
        Some("the folder opens"),
    );
    let exported = export_branch(&studio, &episode.id, &branch.branch_id);
    assert!(
        exported.content.contains("doubleClick(560, 300)")
            && exported.content.contains("frame\\tReceipts"),
        "{}",
        exported.content
    );
}

/// One HTTP/1.1 request to `addr` with a JSON body; the head and the JSON
/// answer.
fn http_json(addr: &str, method: &str, path: &str, body: &str) -> (String, Value) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap();
    (
        head.to_owned(),
        serde_json::from_str::<Value>(body).unwrap(),
    )
}

/// A mock OpenAI-compatible endpoint on 127.0.0.1: `/v1/models` lists
/// `mock`; `/v1/chat/completions` (non-streaming) answers `observation` in
/// an observation block. It stops accepting (connections are refused) when
/// dropped.
struct MockEndpoint {
    base_url: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for MockEndpoint {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn mock_endpoint(observation: &str) -> MockEndpoint {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicBool, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let completion = json!({
        "id": "chatcmpl-mock", "object": "chat.completion", "created": 0, "model": "mock",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
            "content": format!("<predicted_observation>\n{observation}\n</predicted_observation>")}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    })
    .to_string();
    let models = json!({"object": "list", "data": [{"id": "mock", "object": "model"}]}).to_string();
    let thread = std::thread::spawn(move || {
        while !flag.load(Ordering::SeqCst) {
            let Ok((mut s, _)) = listener.accept() else {
                std::thread::sleep(std::time::Duration::from_millis(2));
                continue;
            };
            let _ = s.set_nonblocking(false);
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            // Read the head, then the body by its length.
            let body_len = loop {
                let Ok(n) = s.read(&mut chunk) else {
                    break None;
                };
                if n == 0 {
                    break None;
                }
                buf.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&buf).into_owned();
                if let Some(end) = text.find("\r\n\r\n") {
                    let len = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    break Some((end + 4, len));
                }
            };
            let Some((head_len, len)) = body_len else {
                continue;
            };
            while buf.len() < head_len + len {
                match s.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let head = String::from_utf8_lossy(&buf[..head_len]).into_owned();
            let body = if head.starts_with("GET /v1/models") {
                &models
            } else {
                &completion
            };
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    MockEndpoint {
        base_url,
        stop,
        thread: Some(thread),
    }
}

/// A child process killed when dropped (a failing test leaves none behind).
struct Killed(Child);

/// `worldloom serve-env ARGS --port 0 --record RECORD --tasks <the sample>`,
/// its stdout piped (the first line names the address), stderr to `stderr`.
fn serve_env(args: &[&str], record: &Path, stderr: Stdio) -> Killed {
    Killed(
        Command::new(BIN)
            .arg("serve-env")
            .args(args)
            .args(["--port", "0", "--record"])
            .arg(record)
            .arg("--tasks")
            .arg(sample_file())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap(),
    )
}

/// The first line `child` prints on stdout (where a server says it listens).
fn first_line(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    line
}

/// The `host:port` at the end of a serve line (`... http://HOST:PORT`).
fn addr_of(line: &str) -> String {
    line.split_whitespace()
        .last()
        .unwrap()
        .trim_start_matches("http://")
        .to_owned()
}

/// The episode id in a `/reset` answer.
fn episode_id(reset: &Value) -> String {
    reset["observation"]["episode_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Author observation `text` at node `node_id` of trajectory `id`.
fn author(
    studio: &worldloom_api::Studio,
    id: &str,
    node_id: u32,
    representation: worldloom_core::Representation,
    text: &str,
    based_on_prediction: Option<u32>,
    note: Option<&str>,
) {
    worldloom_api::commands::author_observation(
        studio,
        worldloom_api::types::AuthorObservationRequest {
            trajectory_id: id.to_owned(),
            node_id,
            representation,
            text: text.into(),
            based_on_prediction,
            note: note.map(Into::into),
        },
    )
    .unwrap();
}

/// The live episodes (`serve-env` recordings) in the studio's workspace.
fn live_episodes(studio: &worldloom_api::Studio) -> worldloom_api::types::ListTrajectoriesResponse {
    worldloom_api::commands::list_trajectories(
        studio,
        worldloom_api::types::ListTrajectoriesRequest {
            query: Some("live-episode".into()),
            ..Default::default()
        },
    )
    .unwrap()
}

/// The tree of trajectory `id` as the studio opens it.
fn tree_of(
    studio: &worldloom_api::Studio,
    id: &str,
) -> worldloom_api::types::GetTrajectoryResponse {
    worldloom_api::commands::get_trajectory(
        studio,
        worldloom_api::types::GetTrajectoryRequest {
            trajectory_id: id.to_owned(),
        },
    )
    .unwrap()
}

/// Branch `branch_id` of trajectory `id` exported as AgentWorldBench rows.
fn export_branch(
    studio: &worldloom_api::Studio,
    id: &str,
    branch_id: &str,
) -> worldloom_api::types::ExportResponse {
    worldloom_api::commands::export(
        studio,
        worldloom_api::types::ExportRequest {
            trajectory_id: id.to_owned(),
            branch_id: Some(branch_id.to_owned()),
            format: worldloom_api::types::ExportFormat::Agentworldbench,
            path: None,
        },
    )
    .unwrap()
}

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `serve-env --engine openai` over two mock endpoints: steps keep working
/// when one goes away (retried on the other), and fail with a clear answer,
/// the server still serving, when both have.
#[test]
fn serve_env_over_a_pool_of_endpoints_survives_one_going_down() {
    let first = mock_endpoint("MOCK STATE");
    let second = mock_endpoint("MOCK STATE");
    let dir = tempfile::tempdir().unwrap();
    let mut child = serve_env(
        &[
            "--engine",
            "openai",
            "--model",
            "mock",
            "--no-stream",
            "--retries",
            "0",
            "--connect-timeout-s",
            "2",
            "--base-url",
            &first.base_url,
            "--base-url",
            &second.base_url,
        ],
        &dir.path().join("e.worldloom"),
        Stdio::null(),
    );
    let line = first_line(&mut child.0);
    assert!(
        line.contains("with `pool(openai:mock, openai:mock)`"),
        "{line}"
    );
    let addr = addr_of(&line);
    let (_, reset) = http_json(&addr, "POST", "/reset", r#"{"domain": "web", "seed": 4}"#);
    let id = episode_id(&reset);
    let step = format!(r#"{{"episode_id": "{id}", "action": {{"action": "click('21')"}}}}"#);
    let (head, answer) = http_json(&addr, "POST", "/step", &step);
    assert!(head.starts_with("HTTP/1.1 200"), "{head} {answer}");
    assert_eq!(answer["observation"]["text"], "MOCK STATE");
    drop(first);
    for _ in 0..3 {
        let (head, answer) = http_json(&addr, "POST", "/step", &step);
        assert!(head.starts_with("HTTP/1.1 200"), "{head} {answer}");
        assert_eq!(answer["observation"]["text"], "MOCK STATE");
    }
    drop(second);
    let (head, answer) = http_json(&addr, "POST", "/step", &step);
    assert!(head.starts_with("HTTP/1.1 502"), "{head} {answer}");
    assert_eq!(answer["code"], "EXECUTION_ERROR");
    let (head, _) = http_json(&addr, "GET", "/health", "");
    assert!(head.starts_with("HTTP/1.1 200"), "the server keeps serving");
    let (_, state) = http_json(&addr, "GET", &format!("/state?episode_id={id}"), "");
    assert_eq!(state["step_count"], 4);
}

/// `serve-env --reward judge`: the judge endpoint's verdict is the reward of
/// the episode's last step.
#[test]
fn serve_env_rewards_with_a_judge_endpoint() {
    let judge = mock_endpoint(r#"{"achieved": 1, "rationale": "two mugs in the cart"}"#);
    let dir = tempfile::tempdir().unwrap();
    let mut child = serve_env(
        &[
            "--engine",
            "copy",
            "--reward",
            "judge",
            "--no-stream",
            "--judge-base-url",
            &judge.base_url,
            "--judge-model",
            "mock",
        ],
        &dir.path().join("e.worldloom"),
        Stdio::null(),
    );
    let line = first_line(&mut child.0);
    let addr = addr_of(&line);
    let (_, reset) = http_json(&addr, "POST", "/reset", r#"{"domain": "web"}"#);
    let id = episode_id(&reset);
    let step = |action: &str| {
        http_json(
            &addr,
            "POST",
            "/step",
            &json!({"episode_id": id, "action": {"action": action}}).to_string(),
        )
        .1
    };
    assert_eq!(step("fill('33', '2')")["reward"], 0.0);
    let last = step("send_msg_to_user('done')");
    assert_eq!(
        (last["reward"].as_f64(), last["done"].as_bool()),
        (Some(1.0), Some(true))
    );
    assert!(
        last["observation"]["reward_rationale"]
            .as_str()
            .is_some_and(|r| r.starts_with("two mugs in the cart")),
        "{last}"
    );
    drop(child);

    // The recorded episode opens in the studio's API with its steps, its
    // reward, and the judge's call: the messages sent and the answer.
    use worldloom_api::commands;
    use worldloom_api::types::ListNotesRequest;
    let studio = worldloom_api::launch::open_workspace(&dir.path().join("e.worldloom")).unwrap();
    let list = live_episodes(&studio);
    assert_eq!(list.trajectories.len(), 1);
    let episode = &list.trajectories[0];
    assert_eq!(episode.name, id);
    let tree = tree_of(&studio, &episode.id);
    let actions: Vec<&str> = tree.edges.iter().map(|e| e.action.raw.as_str()).collect();
    assert_eq!(actions, ["fill('33', '2')", "send_msg_to_user('done')"]);
    let notes = commands::list_notes(
        &studio,
        ListNotesRequest {
            trajectory_id: episode.id.clone(),
        },
    )
    .unwrap()
    .notes;
    assert!(
        notes.iter().any(
            |n| n.text.contains("ended: terminal_action after 2 step(s)")
                && n.text.contains("reward 1 (llm-judge(openai:mock))")
        ),
        "{notes:?}"
    );
    let kept = notes
        .iter()
        .find_map(|n| n.text.strip_prefix(worldloom_env::JUDGE_NOTE_HEADER))
        .expect("the judge's call is kept");
    let call: worldloom_env::JudgeCall = serde_json::from_str(kept.trim()).unwrap();
    assert_eq!(call.judge, "openai:mock");
    assert_eq!(call.messages.len(), 2);
    assert_eq!(
        call.messages[0].content,
        worldloom_env::reward::JUDGE_RUBRIC
    );
    assert!(
        call.messages[1]
            .content
            .starts_with("## Task\nBuy two stoneware mugs.")
            && call.messages[1]
                .content
                .contains("## Step 2\nAction:\nsend_msg_to_user('done')"),
        "{}",
        call.messages[1].content
    );
    assert!(
        call.answer
            .as_deref()
            .is_some_and(|a| a.contains(r#""rationale": "two mugs in the cart""#)),
        "{call:?}"
    );
    assert_eq!(call.verdict, Some(1.0));
}

/// The real `openenv-core` client (`GenericEnvClient`, installed by
/// `scripts/setup.sh`) runs episodes against `worldloom serve-env`; the
/// episode it ran over `/ws` then appears in the studio's API (the live
/// episodes filter), opens with its steps, is branched and corrected, and
/// exports as curriculum JSONL (AgentWorldBench rows); the progress line on
/// stderr counts the client's episodes, steps and errors.
#[test]
fn serve_env_openenv_client_episode_is_branched_and_exported() {
    let Some(python) = openenv::openenv_python(
        "serve_env_openenv_client_episode_is_branched_and_exported",
        "scripts/setup.sh installs it",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("episodes.worldloom");
    let mut child = serve_env(
        &["--engine", "copy", "--progress-s", "1"],
        &record,
        Stdio::piped(),
    );
    let (lines_tx, lines) = std::sync::mpsc::channel::<String>();
    let stderr = child.0.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let line = first_line(&mut child.0);
    let base = line.split_whitespace().last().unwrap().to_owned();
    let client = Command::new(&python)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../worldloom-env/tests/openenv_client.py"
        ))
        .arg(&base)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&client.stdout);
    assert!(
        client.status.success() && stdout.contains("openenv client: OK"),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&client.stderr)
    );
    // The progress line on the terminal catches up with the client's work:
    // two episodes, three steps (the copy baseline refused the terminal
    // task's first step: nothing to copy), the two malformed actions and
    // that refusal among the errors.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let Ok(line) = lines.recv_timeout(left) else {
            panic!("no progress line with the client's steps: {seen:#?}");
        };
        if line.starts_with("serve-env: ")
            && line.contains("2 episode(s) started, 3 step(s)")
            && line.contains(r#""invalid_actions":2"#)
            && line.contains(r#""engine":1"#)
        {
            break;
        }
        seen.push(line);
    }
    drop(child);

    use worldloom_api::commands;
    use worldloom_api::types::EditActionRequest;
    let studio = worldloom_api::launch::open_workspace(&record).unwrap();
    let list = live_episodes(&studio);
    assert_eq!(list.trajectories.len(), 2, "one over /ws, one over HTTP");
    let episode = list
        .trajectories
        .iter()
        .find(|t| t.goal.as_deref() == Some("Buy two stoneware mugs."))
        .expect("the client's web episode");
    assert_eq!(episode.source_format, "openenv-episode");
    assert_eq!((episode.turn_count, episode.prediction_count), (2, 1));
    let tree = tree_of(&studio, &episode.id);
    let actions: Vec<&str> = tree.edges.iter().map(|e| e.action.raw.as_str()).collect();
    assert_eq!(actions, ["fill('33', '2')", "send_msg_to_user('done')"]);
    // Correct what the model predicted after the first step (an exported
    // curriculum carries real or authored states), then branch: instead of
    // ending, the agent should have added to the cart.
    author(
        &studio,
        &episode.id,
        tree.edges[0].to,
        worldloom_core::Representation::Axtree,
        "RootWebArea 'Mugs', focused\n\t[33] spinbutton 'Quantity', value='2'",
        Some(0),
        None,
    );
    let branch = commands::edit_action(
        &studio,
        EditActionRequest {
            trajectory_id: episode.id.clone(),
            edge_id: 1,
            raw: "click('35')".into(),
        },
    )
    .unwrap();
    author(
        &studio,
        &episode.id,
        branch.node_id,
        worldloom_core::Representation::Axtree,
        "RootWebArea 'Mugs', focused\n\t[21] link 'Cart (2)', clickable",
        None,
        Some("two mugs in the cart"),
    );
    let exported = export_branch(&studio, &episode.id, &branch.branch_id);
    let rows: Vec<Value> = exported
        .content
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!rows.is_empty(), "{}", exported.content);
    assert_eq!(rows.len() as u32, exported.record_count);
    let last = rows.last().unwrap();
    assert_eq!(last["task"], "web", "{last}");
    assert_eq!(
        last["id"],
        format!("{}#2", episode.name),
        "the branch's turn 2"
    );
    assert_eq!(last["prompt"].as_array().map(Vec::len), Some(2));
    assert_eq!(last["response"].as_array().map(Vec::len), Some(2), "{last}");
    assert!(
        exported.content.contains("fill('33', '2')")
            && exported.content.contains("value='2'")
            && exported.content.contains("click('35')")
            && exported.content.contains("Cart (2)"),
        "{}",
        exported.content
    );
}

/// `serve-env --engine local` on the tiny random checkpoint, over HTTP: two sessions step at once (the engine thread
/// serialises them); the random output has no observation block, so each
/// episode ends as `unparseable_prediction`, reported with the parser's
/// status.
#[test]
fn serve_env_with_the_tiny_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = serve_env(
        &[
            "--engine",
            "local",
            "--max-tokens",
            "8",
            "--model-dir",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../assets/tiny-world-model"),
        ],
        &dir.path().join("e.worldloom"),
        Stdio::null(),
    );
    let line = first_line(&mut child.0);
    assert!(line.contains("with `qwen3_5_moe@"), "{line}");
    let addr = addr_of(&line);
    let threads: Vec<_> = ["web", "terminal"]
        .into_iter()
        .map(|domain| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let (_, reset) = http_json(
                    &addr,
                    "POST",
                    "/reset",
                    &json!({"domain": domain, "seed": 1}).to_string(),
                );
                let id = episode_id(&reset);
                let action = if domain == "web" { "click('21')" } else { "ls" };
                http_json(
                    &addr,
                    "POST",
                    "/step",
                    &json!({"episode_id": id, "action": {"action": action}}).to_string(),
                )
            })
        })
        .collect();
    for t in threads {
        let (head, answer) = t.join().unwrap();
        assert!(head.starts_with("HTTP/1.1 200"), "{head} {answer}");
        assert_eq!(answer["done"], true, "{answer}");
        assert_eq!(
            answer["observation"]["done_reason"],
            "unparseable_prediction"
        );
        assert!(answer["observation"]["status"].is_string());
    }
}
