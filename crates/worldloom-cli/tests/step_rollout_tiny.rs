//! `worldloom step` and `worldloom rollout` end to end on the tiny
//! checkpoint of `assets/tiny-world-model` (random weights, real tokenizer
//! and chat template): the whole path from a trajectory file to a parsed
//! prediction runs, and rollout writes its predictions into the file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use worldloom_core::{
    Action, ContextMode, Domain, NodeId, Observation, Representation, Trajectory, TrajectoryFile,
};

fn tiny_model() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/tiny-world-model")
}

/// A three-turn terminal trajectory in the native format.
fn write_trajectory(dir: &Path) -> PathBuf {
    let mut t = Trajectory::new(
        "shell-demo",
        Domain::Terminal,
        Some(Observation::new(Representation::Text, "user@box:~$")),
    );
    t.goal = Some("Find the notes file.".into());
    let mut node = t.root();
    for (action, output) in [
        ("ls", "notes.txt  src"),
        ("cat notes.txt", "buy milk"),
        ("pwd", "/home/user"),
    ] {
        let (_, next) = t
            .add_step(
                node,
                Action::for_domain(Domain::Terminal, action),
                Some(Observation::new(Representation::Text, output)),
            )
            .expect("step");
        node = next;
    }
    let path = dir.join("shell.json");
    TrajectoryFile::new(vec![t]).write(&path).expect("write");
    path
}

fn worldloom(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_worldloom"))
        .args(args)
        .output()
        .expect("runs")
}

/// `worldloom <command> <file> <args…> --model <the tiny checkpoint>`.
fn with_tiny_model(command: &str, file: &Path, args: &[&str]) -> Output {
    let model = tiny_model();
    let mut all = vec![command, file.to_str().expect("utf-8")];
    all.extend(args);
    all.extend(["--model", model.to_str().expect("utf-8")]);
    worldloom(&all)
}

/// The one JSON object `out` printed, which must be a success.
fn json_of(out: Output) -> serde_json::Value {
    serde_json::from_slice(&succeeded(out).stdout).expect("one JSON object")
}

/// `step --json` on turn 1 of the sample web trajectory with `model`:
/// 8 new tokens, seed 7.
fn step_sample(model: &Path) -> serde_json::Value {
    let file = sample("web/agentlab_larkmail-reply_6steps.json");
    json_of(worldloom(&[
        "step",
        file.to_str().expect("utf-8"),
        "--turn",
        "1",
        "--max-new-tokens",
        "8",
        "--seed",
        "7",
        "--json",
        "--model",
        model.to_str().expect("utf-8"),
    ]))
}

/// `step --json` on turn 2 of `file` with `model`, greedy, 16 new tokens.
fn greedy_step(file: &Path, model: &Path) -> serde_json::Value {
    json_of(worldloom(&[
        "step",
        file.to_str().expect("utf-8"),
        "--turn",
        "2",
        "--temperature",
        "0",
        "--max-new-tokens",
        "16",
        "--json",
        "--model",
        model.to_str().expect("utf-8"),
    ]))
}

/// `out`, which must be a success.
fn succeeded(out: Output) -> Output {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The error output of `out`, which must be a failure.
fn failed(out: Output) -> String {
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The JSON lines of `out`'s output.
fn json_lines(out: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

#[test]
fn step_predicts_a_turn_end_to_end() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write_trajectory(dir.path());
    let args = [
        "--turn",
        "2",
        "--temperature",
        "0",
        "--max-new-tokens",
        "24",
    ];
    let json_args = [&args[..], &["--json"]].concat();
    let out = succeeded(with_tiny_model("step", &file, &json_args));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["trajectory"], "shell-demo");
    assert_eq!(v["turn"], 2);
    assert_eq!(v["context"], "teacher-forced");
    assert_eq!(v["real_observation"], "buy milk");
    assert_eq!(v["engine"], "local:tiny-world-model");
    let stats = &v["stats"];
    let prompt_tokens = stats["prompt_tokens"].as_u64().expect("count");
    assert!(prompt_tokens > 50, "{stats}");
    assert_eq!(
        stats["prompt_tokens_computed"].as_u64(),
        Some(prompt_tokens)
    );
    let generated = stats["completion_tokens"].as_u64().expect("count");
    assert!((1..=24).contains(&generated), "{stats}");
    // random weights: the status is whatever the gibberish gives, but it is a known one
    let status = v["status"].as_str().expect("status");
    assert!(
        ["ok", "truncated", "no_observation", "empty"].contains(&status),
        "{status}"
    );
    // the raw output is the generated text as is (the prompt opened the think
    // block); reasoning, observation and status are its parse, settled with
    // the stop reason (the token limit makes output without a block truncated)
    let reasoning = v["reasoning"].as_str().expect("reasoning");
    let raw = v["raw_output"].as_str().expect("raw");
    let mut parser = worldloom_core::OutputParser::new(true);
    parser.push(raw);
    let mut parsed = parser.finish();
    let stop: worldloom_core::output::StopReason =
        serde_json::from_value(stats["stop_reason"].clone()).expect("a stop reason");
    parsed.settle(Some(stop));
    assert_eq!(reasoning, parsed.reasoning, "{raw}");
    assert_eq!(status, parsed.status.as_str(), "{raw}");
    assert_eq!(v["observation"].as_str(), parsed.observation.as_deref());

    // greedy: the same command gives the same output; text mode prints the status line
    let again = with_tiny_model("step", &file, &json_args);
    let w: serde_json::Value = serde_json::from_slice(&again.stdout).expect("JSON");
    assert_eq!(w["raw_output"], v["raw_output"]);
    let text = succeeded(with_tiny_model("step", &file, &args));
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        stdout.contains(&format!("── observation (status: {status}) ──")),
        "{stdout}"
    );
}

#[test]
fn step_errors_name_the_problem() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write_trajectory(dir.path());
    let err = failed(with_tiny_model("step", &file, &["--turn", "9"]));
    assert!(
        err.contains("--turn 9 is out of range") && err.contains("1..=3"),
        "{err}"
    );
    // rollout names its own options.
    let err = failed(with_tiny_model(
        "rollout",
        &file,
        &["--from", "7", "--turns", "1"],
    ));
    assert!(err.contains("--from 7 is out of range"), "{err}");
    let err = failed(with_tiny_model(
        "rollout",
        &file,
        &["--from", "2", "--turns", "4"],
    ));
    assert!(
        err.contains("--from 2 --turns 4 reaches turn 5, past the main path's last turn (3)"),
        "{err}"
    );

    let file = file.to_str().expect("utf-8");
    let missing = ["step", file, "--turn", "1", "--model", "/nonexistent/model"];
    assert!(failed(worldloom(&missing)).contains("/nonexistent/model"));
}

#[test]
fn rollout_writes_chosen_free_running_predictions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write_trajectory(dir.path());
    let output = dir.path().join("rolled.json");
    let args = [
        "--from",
        "2",
        "--turns",
        "2",
        "--temperature",
        "0",
        "--max-new-tokens",
        "16",
        "--output",
        output.to_str().expect("utf-8"),
        "--json",
    ];
    let out = succeeded(with_tiny_model("rollout", &file, &args));
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 2);
    assert_eq!(
        (lines[0]["turn"].as_u64(), lines[1]["turn"].as_u64()),
        (Some(2), Some(3))
    );
    // turn 3 resumes from the snapshot taken at the end of turn 2's action
    let p3 = lines[1]["prompt_tokens"].as_u64().expect("count");
    let c3 = lines[1]["prompt_tokens_computed"].as_u64().expect("count");
    assert!(c3 < p3 / 2, "turn 3 re-read {c3} of {p3} tokens");

    let written = TrajectoryFile::read(&output).expect("native file");
    let t = &written.trajectories[0];
    for turn in [2usize, 3] {
        let node = t.node(NodeId(turn as u32)).expect("node");
        assert_eq!(node.predictions.len(), 1, "turn {turn}");
        let p = &node.predictions[0];
        assert_eq!(node.chosen_prediction, Some(p.id));
        assert_eq!(p.context, ContextMode::FreeRunning);
        assert_eq!(p.engine, "local:tiny-world-model");
        assert_eq!(p.seed, Some(0));
        assert!(p.completion_tokens.is_some_and(|n| (1..=16).contains(&n)));
        assert_eq!(p.representation, Representation::Text);
    }
    assert!(t.node(NodeId(1)).expect("node").predictions.is_empty());
    // the input file is untouched
    let original = TrajectoryFile::read(&file).expect("native file");
    assert!(
        original.trajectories[0]
            .nodes
            .iter()
            .all(|n| n.predictions.is_empty())
    );
}

fn sample(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../samples")
        .join(path)
}

#[test]
fn step_runs_a_sample_trajectory() {
    let v = step_sample(&tiny_model());
    assert_eq!(v["turn"], 1);
    assert_eq!(v["params"]["seed"], 7);
    // the sample's defaults come from the model directory: temperature 0.6, top-k 20
    assert_eq!(v["params"]["top_k"], 20);
    let real = v["real_observation"]
        .as_str()
        .expect("the sample records turn 1");
    assert!(!real.is_empty());
    let stats = &v["stats"];
    assert!(
        stats["prompt_tokens"].as_u64().expect("count") > 500,
        "{stats}"
    );
    assert_eq!(stats["completion_tokens"], 8);
    assert_eq!(stats["stop_reason"], "max_tokens");
}

#[test]
fn rollout_of_a_non_native_file_writes_a_native_file_beside_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let name = "agentlab_larkmail-reply_6steps";
    let input = dir.path().join(format!("{name}.json"));
    std::fs::copy(sample(&format!("web/{name}.json")), &input).expect("copy");
    let before = std::fs::read(&input).expect("read");
    let args = [
        "--from",
        "1",
        "--turns",
        "2",
        "--max-new-tokens",
        "6",
        "--json",
    ];
    let out = succeeded(with_tiny_model("rollout", &input, &args));
    assert_eq!(
        std::fs::read(&input).expect("read"),
        before,
        "input untouched"
    );
    let written = TrajectoryFile::read(&dir.path().join(format!("{name}.worldloom.json")))
        .expect("a native file beside the input");
    let t = &written.trajectories[0];
    assert_eq!(t.node(NodeId(1)).expect("node").predictions.len(), 1);
    assert_eq!(t.node(NodeId(2)).expect("node").predictions.len(), 1);
    let lines = json_lines(&out);
    let (p2, c2) = (
        lines[1]["prompt_tokens"].as_u64().expect("count"),
        lines[1]["prompt_tokens_computed"].as_u64().expect("count"),
    );
    assert!(
        c2 < p2,
        "turn 2 reused turn 1's prefix ({c2} of {p2} computed)"
    );
}

/// The tiny checkpoint as a GGUF file (`worldloom model quantize`), with
/// its tokenizer files beside it, in `dir`.
fn tiny_gguf(dir: &Path, file_type: &str) -> PathBuf {
    let out = dir.join(format!("tiny-{file_type}.gguf"));
    let model = tiny_model();
    succeeded(worldloom(&[
        "model",
        "quantize",
        model.to_str().expect("utf-8"),
        "-o",
        out.to_str().expect("utf-8"),
        "--type",
        file_type,
    ]));
    for name in [
        "tokenizer.json",
        "tokenizer_config.json",
        "chat_template.jinja",
        "generation_config.json",
    ] {
        std::fs::copy(model.join(name), dir.join(name)).expect("copy");
    }
    out
}

/// `step` takes a GGUF file for `--model`: an F32 file predicts what the
/// directory predicts (greedy), a Q8_0 file steps the sample trajectory.
#[test]
fn step_runs_on_a_gguf_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write_trajectory(dir.path());
    let f32_gguf = tiny_gguf(dir.path(), "f32");
    let from_dir = greedy_step(&file, &tiny_model());
    let from_gguf = greedy_step(&file, &f32_gguf);
    assert_eq!(from_gguf["engine"], "local:tiny-f32.gguf");
    assert_eq!(from_gguf["raw_output"], from_dir["raw_output"]);

    let q8 = tiny_gguf(dir.path(), "q8_0");
    let v = step_sample(&q8);
    assert_eq!(v["stats"]["completion_tokens"], 8);
    assert_eq!(v["engine"], "local:tiny-q8_0.gguf");

    let info = json_of(worldloom(&[
        "model",
        "info",
        q8.to_str().expect("utf-8"),
        "--json",
    ]));
    assert_eq!(info["gguf"]["architecture"], "qwen35moe");
    let types = info["gguf"]["types"].as_array().expect("types");
    let names: Vec<&str> = types.iter().filter_map(|t| t["type"].as_str()).collect();
    // 16-wide rows (the experts' down projections) fall back to F16.
    assert_eq!(names, ["F16", "F32", "Q8_0"], "{info}");
    assert_eq!(info["config"]["linear_value_heads_tiled"], true);
    assert!(info["parameters_total"].as_u64().expect("count") > 100_000);

    // `model quantize` writes the tokenizer and chat template into the
    // file: alone, it predicts the same tokens as with the tokenizer files
    // beside it.
    let lone = tempfile::tempdir().expect("tempdir");
    let lone_gguf = lone.path().join("tiny-q8_0.gguf");
    std::fs::copy(&q8, &lone_gguf).expect("copy");
    let (beside, alone) = (greedy_step(&file, &q8), greedy_step(&file, &lone_gguf));
    assert_eq!(alone["engine"], "local:tiny-q8_0.gguf");
    assert_eq!(alone["raw_output"], beside["raw_output"]);
    assert_eq!(
        alone["stats"]["prompt_tokens"],
        beside["stats"]["prompt_tokens"]
    );
    assert_eq!(alone["stats"]["completion_tokens"], 16);
}

/// A GGUF file made by llama.cpp's converter from the tiny world model
/// (`crates/worldloom-engine/tests/fixtures/gguf/tiny-world-bf16.gguf`),
/// alone in a folder, steps a sample trajectory: tokenizer, chat template
/// and end-of-turn id from its metadata.
#[test]
fn step_runs_on_a_lone_llama_cpp_gguf_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let gguf = dir.path().join("tiny-world-bf16.gguf");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../worldloom-engine/tests/fixtures/gguf/tiny-world-bf16.gguf"),
        &gguf,
    )
    .expect("copy fixture");
    let v = step_sample(&gguf);
    assert_eq!(v["engine"], "local:tiny-world-bf16.gguf");
    assert_eq!(v["stats"]["completion_tokens"], 8);
    assert!(v["stats"]["prompt_tokens"].as_u64().expect("prompt tokens") > 100);
}

/// The copy baseline through `step` and `rollout`: the prediction is the
/// observation of the state the action is taken from (the parent state on
/// the path), as the turn's history shows it: the recorded one
/// teacher-forced, the chosen prediction free-running.
#[test]
fn the_copy_baseline_predicts_the_parent_state() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write_trajectory(dir.path());
    let path = file.to_str().expect("utf-8");
    for (turn, parent) in [
        ("1", "user@box:~$"),
        ("2", "notes.txt  src"),
        ("3", "buy milk"),
    ] {
        let v = json_of(worldloom(&[
            "step", path, "--turn", turn, "--engine", "copy", "--json",
        ]));
        assert_eq!(v["engine"], "copy");
        assert_eq!(v["observation"], parent, "turn {turn}");
        assert_eq!(v["current_observation"], parent, "turn {turn}");
        assert_eq!(v["status"], "ok");
    }
    // `--engine local` (the default) needs the model.
    let err = failed(worldloom(&["step", path, "--turn", "1"]));
    assert!(err.contains("--engine local needs --model DIR"), "{err}");

    // A rollout from turn 2: turn 2 copies turn 1's recorded state, turn 3
    // copies turn 2's chosen prediction (the same text).
    let output = dir.path().join("rolled.json");
    let out = succeeded(worldloom(&[
        "rollout",
        path,
        "--from",
        "2",
        "--turns",
        "2",
        "--engine",
        "copy",
        "--json",
        "--output",
        output.to_str().expect("utf-8"),
    ]));
    let lines = json_lines(&out);
    let observations: Vec<&str> = lines
        .iter()
        .map(|l| l["observation"].as_str().expect("observation"))
        .collect();
    assert_eq!(observations, ["notes.txt  src", "notes.txt  src"]);
    let written = TrajectoryFile::read(&output).expect("native file");
    let t = &written.trajectories[0];
    for turn in [2u32, 3] {
        let node = t.node(NodeId(turn)).expect("node");
        let chosen = node.preferred_prediction().expect("chosen");
        assert_eq!(chosen.engine, "copy");
        assert_eq!(chosen.context, ContextMode::FreeRunning);
        assert_eq!(chosen.observation.as_deref(), Some("notes.txt  src"));
    }
}

#[test]
fn step_with_drafting_gives_the_greedy_output_without_it() {
    let file = sample("web/agentlab_larkmail-reply_6steps.json");
    let model = tiny_model();
    let step = |draft: &str| {
        json_of(worldloom(&[
            "step",
            file.to_str().expect("utf-8"),
            "--turn",
            "1",
            "--temperature",
            "0",
            "--max-new-tokens",
            "40",
            "--draft",
            draft,
            "--json",
            "--model",
            model.to_str().expect("utf-8"),
        ]))
    };
    let plain = step("off");
    assert!(plain["stats"]["completion_tokens"].as_u64().expect("count") >= 1);
    for draft in ["observation", "prompt-lookup"] {
        let drafted = step(draft);
        assert_eq!(
            drafted["raw_output"], plain["raw_output"],
            "--draft {draft}"
        );
        assert_eq!(
            drafted["stats"]["completion_tokens"],
            plain["stats"]["completion_tokens"]
        );
    }
    let err = failed(with_tiny_model(
        "step",
        &file,
        &["--turn", "1", "--draft", "always"],
    ));
    assert!(err.contains("--draft"), "{err}");
}
