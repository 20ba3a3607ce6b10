//! `worldloom import`, `export`, `inspect` and `parse-output` on the built binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn worldloom(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_worldloom"))
        .args(args)
        .output()
        .expect("runs the binary")
}

/// The repository's AgentWorldBench sample.
const SAMPLE_AWB: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../samples/agentworldbench/agentworldbench_sample.jsonl"
);

fn sample_awb() -> PathBuf {
    PathBuf::from(SAMPLE_AWB)
}

/// The JSON values of a JSON Lines file, in order.
fn rows(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("JSON Lines file");
    serde_json::Deserializer::from_str(&text)
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("rows")
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

#[test]
fn import_export_round_trips_agentworldbench_and_native() {
    let dir = tempfile::tempdir().expect("tmp");
    let native = dir.path().join("awb.json");
    let out = worldloom(&["import", s(&sample_awb()), "-o", s(&native)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("imported 7 trajectories (17 turns)"));

    let awb = dir.path().join("awb.jsonl");
    let out = worldloom(&[
        "export",
        s(&native),
        "--format",
        "agentworldbench",
        "-o",
        s(&awb),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(rows(&awb), rows(&sample_awb()));

    let again = dir.path().join("again.json");
    let out = worldloom(&["export", s(&native), "--format", "native", "-o", s(&again)]);
    assert!(out.status.success());
    assert_eq!(
        std::fs::read(&again).expect("again"),
        std::fs::read(&native).expect("native")
    );
    let third = dir.path().join("third.json");
    assert!(
        worldloom(&["import", s(&again), "-o", s(&third)])
            .status
            .success()
    );
    assert_eq!(
        std::fs::read(&third).expect("third"),
        std::fs::read(&native).expect("native")
    );

    let sft = dir.path().join("sft.jsonl");
    assert!(
        worldloom(&["export", s(&native), "--format", "sft", "-o", s(&sft)])
            .status
            .success()
    );
    let lines = rows(&sft);
    assert_eq!(lines.len(), 17);
    assert!(
        lines
            .iter()
            .all(|l| l["messages"].as_array().is_some_and(|m| m.len() >= 3))
    );
}

#[test]
fn inspect_json_lists_domains_turns_and_branches() {
    let out = worldloom(&["inspect", s(&sample_awb()), "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    let trajectories = report["trajectories"].as_array().expect("list");
    assert_eq!(trajectories.len(), 7);
    let domains: Vec<&str> = trajectories
        .iter()
        .filter_map(|t| t["domain"].as_str())
        .collect();
    assert_eq!(
        domains,
        ["mcp", "search", "terminal", "swe", "web", "os", "android"]
    );
    assert_eq!(trajectories[0]["turns"], 3);
    assert_eq!(trajectories[0]["branches"], 1);
    assert_eq!(
        trajectories[0]["representations"],
        serde_json::json!(["json"])
    );
    assert_eq!(
        trajectories[6]["representations"],
        serde_json::json!(["android-xml"])
    );
    let table = worldloom(&["inspect", s(&sample_awb())]);
    assert!(String::from_utf8_lossy(&table.stdout).contains("7 trajectories"));
}

#[test]
fn import_errors_name_file_and_line_and_skip_bad_rows_works() {
    let dir = tempfile::tempdir().expect("tmp");
    let bad = dir.path().join("bad.jsonl");
    let mut text = std::fs::read_to_string(sample_awb()).expect("sample");
    text.insert_str(text.find('\n').expect("line") + 1, "{\"task\": \"web\", \n");
    std::fs::write(&bad, &text).expect("write");
    let out_path = dir.path().join("o.json");
    let out = worldloom(&["import", s(&bad), "-o", s(&out_path)]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bad.jsonl:2:"), "{stderr}");
    let out = worldloom(&[
        "import",
        s(&bad),
        "--skip-bad-rows",
        "--format",
        "agentworldbench",
        "-o",
        s(&out_path),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.jsonl:2: row skipped"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("imported 7 trajectories"));
    let out = worldloom(&[
        "import",
        s(&dir.path().join("missing.json")),
        "-o",
        s(&out_path),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.json"));
}

#[test]
fn parse_output_json_contract() {
    let dir = tempfile::tempdir().expect("tmp");
    let raw = dir.path().join("out.txt");
    std::fs::write(&raw, "Checking the cart.\n</think>\n<predicted_observation>\n**Environment Observation:**\n[5] button 'Pay'\n</predicted_observation>").expect("write");
    let out = worldloom(&["parse-output", s(&raw), "--json"]);
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["observation"], "[5] button 'Pay'");
    assert_eq!(v["reasoning"], "Checking the cart.");
    assert_eq!(v["status"], "ok");
    assert_eq!(v["warnings"], serde_json::json!([]));
    let keys: Vec<&String> = v.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["observation", "reasoning", "status", "warnings"]);

    // Reasoning only, OpenAI style, from stdin.
    let mut child = Command::new(env!("CARGO_BIN_EXE_worldloom"))
        .args(["parse-output", "-", "--json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    {
        use std::io::Write;
        let stdin = child.stdin.as_mut().expect("stdin");
        stdin
            .write_all(br#"{"choices": [{"message": {"content": "", "reasoning_content": "The page reloads. <predicted_observation>X</predicted_observation>"}}]}"#)
            .expect("write");
    }
    let out = child.wait_with_output().expect("wait");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    // Reasoning apart with an empty answer is the same output as an
    // unclosed think block inline (below): the same status.
    assert_eq!(v["status"], "no_observation");
    assert_eq!(v["observation"], Value::Null);
    assert!(
        v["reasoning"]
            .as_str()
            .is_some_and(|r| r.starts_with("The page reloads."))
    );

    std::fs::write(&raw, "<think>Cut off while think").expect("write");
    let v: Value = serde_json::from_slice(&worldloom(&["parse-output", s(&raw), "--json"]).stdout)
        .expect("json");
    assert_eq!(v["status"], "no_observation");
    assert_eq!(v["observation"], Value::Null);

    // Stopped by the token limit: truncated, reasoning kept, no observation;
    // said by the response's finish_reason or by --stop-reason.
    let cut = dir.path().join("cut.json");
    std::fs::write(
        &cut,
        r#"{"choices": [{"finish_reason": "length", "message": {"content": "", "reasoning_content": "Cut off while think"}}]}"#,
    )
    .expect("write");
    for args in [
        vec!["parse-output", s(&cut), "--json"],
        vec![
            "parse-output",
            s(&raw),
            "--json",
            "--stop-reason",
            "max_tokens",
        ],
        vec!["parse-output", s(&raw), "--json", "--stop-reason", "length"],
    ] {
        let v: Value = serde_json::from_slice(&worldloom(&args).stdout).expect("json");
        assert_eq!(v["status"], "truncated", "{args:?}");
        assert_eq!(v["observation"], Value::Null, "{args:?}");
        assert_eq!(v["reasoning"], "Cut off while think", "{args:?}");
    }
    let out = worldloom(&["parse-output", s(&raw), "--stop-reason", "later"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown stop reason `later`"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn version_names_the_version_and_the_commit() {
    let out = Command::new(env!("CARGO_BIN_EXE_worldloom"))
        .arg("--version")
        .output()
        .expect("run worldloom --version");
    assert!(out.status.success());
    let line = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let head = Command::new("git")
        .arg("-C")
        .arg(manifest)
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let commit = head.as_deref().unwrap_or("unknown");
    assert_eq!(
        line,
        format!("worldloom {} (commit {commit})", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn record_takes_steps_as_json_lines_and_answers_each() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().expect("dir");
    let workspace = dir.path().join("loop.worldloom");
    let mut child = Command::new(env!("CARGO_BIN_EXE_worldloom"))
        .args(["record", "--workspace"])
        .arg(&workspace)
        .args([
            "--domain",
            "terminal",
            "--representation",
            "text",
            "--goal",
            "list",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn worldloom record");
    let lines = [
        r#"{"observation": "$ "}"#,
        r#"{"action": "ls", "observation": "a b", "predicted": "a"}"#,
        r#"{"action": "ls", "oops": 1}"#,
        "",
        r#"{"observation": "late"}"#,
        r#"{"action": "pwd", "observation": "/"}"#,
    ];
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(lines.join("\n").as_bytes())
        .expect("write steps");
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success());
    let replies: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON reply"))
        .collect();
    assert_eq!(replies.len(), 5, "{replies:?}");
    assert_eq!(
        replies[0],
        serde_json::json!({"trajectory_id": "1", "node_id": 0, "edge_id": null})
    );
    assert_eq!(
        replies[1],
        serde_json::json!({"trajectory_id": "1", "node_id": 1, "edge_id": 0})
    );
    let bad = replies[2]["error"].as_str().expect("an error line");
    assert!(
        bad.starts_with("line 3: not a step object: unknown field `oops`"),
        "{bad}"
    );
    assert_eq!(
        replies[3]["error"],
        "line 5: an observation with no action comes first or not at all"
    );
    // The step after the refused lines is taken from the last state recorded.
    assert_eq!(
        replies[4],
        serde_json::json!({"trajectory_id": "1", "node_id": 2, "edge_id": 1})
    );
}

#[test]
fn import_to_a_native_file_writes_the_screenshots_beside_it_and_a_workspace_reads_them() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../samples/android/settings_airplane-mode_trajectory");
    let dir = tempfile::tempdir().expect("tmp");
    let native = dir.path().join("settings.worldloom.json");
    let out = worldloom(&["import", s(&folder), "-o", s(&native)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("(0 warnings)"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(&native).expect("native")).expect("json");
    let nodes = file["trajectories"][0]["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 5);
    for (i, node) in nodes.iter().enumerate() {
        let shot = &node["screenshot"];
        let bytes = std::fs::read(folder.join(format!("step_{i:02}.png"))).expect("sample png");
        let sha = worldloom_core::screenshot::sha256_hex(&bytes);
        assert_eq!(
            shot["file"].as_str(),
            Some(format!("settings.worldloom.screenshots/{sha}.png").as_str())
        );
        assert_eq!(
            (shot["width_px"].as_u64(), shot["height_px"].as_u64()),
            (Some(270), Some(600))
        );
        // The sidecar holds the sample's bytes, once per distinct image.
        assert_eq!(
            std::fs::read(dir.path().join(shot["file"].as_str().expect("file"))).expect("sidecar"),
            bytes
        );
    }
    // The native file with its sidecar imports into a workspace.
    let ws = dir.path().join("ws.worldloom");
    let out = worldloom(&["import", s(&native), "--workspace", s(&ws)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Exported again elsewhere: a sidecar folder of its own.
    std::fs::create_dir_all(dir.path().join("again")).expect("dir");
    let again = dir.path().join("again").join("copy.json");
    let out = worldloom(&["export", s(&native), "--format", "native", "-o", s(&again)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let copied = std::fs::read_dir(dir.path().join("again").join("copy.screenshots"))
        .expect("sidecar")
        .count();
    let distinct = std::fs::read_dir(dir.path().join("settings.worldloom.screenshots"))
        .expect("sidecar")
        .count();
    assert_eq!(copied, distinct);
    assert!(
        std::fs::read_to_string(&again)
            .expect("copy")
            .contains("\"file\": \"copy.screenshots/")
    );
}

#[test]
fn export_lesson_writes_one_self_contained_html_file() {
    use worldloom_api::types::{AddToLessonRequest, ImportFilesRequest, SetCaptionRequest};
    use worldloom_api::{Studio, commands};
    let dir = tempfile::tempdir().expect("tmp");
    let ws = dir.path().join("ws.worldloom");
    {
        let studio = Studio::open(&ws).expect("workspace");
        let imported = commands::import_files(
            &studio,
            ImportFilesRequest {
                paths: vec![SAMPLE_AWB.into()],
            },
        )
        .expect("import");
        let first = &imported.imported[0].trajectory_id;
        let tree = commands::get_trajectory(
            &studio,
            worldloom_api::types::GetTrajectoryRequest {
                trajectory_id: first.clone(),
            },
        )
        .expect("tree");
        commands::add_to_lesson(
            &studio,
            AddToLessonRequest {
                lesson: "week 1".into(),
                trajectory_id: first.clone(),
                branch_id: tree.branches[0].id.clone(),
                present: true,
            },
        )
        .expect("lesson");
        commands::set_caption(
            &studio,
            SetCaptionRequest {
                trajectory_id: first.clone(),
                node_id: 1,
                text: "Watch the <menu> open".into(),
            },
        )
        .expect("caption");
    }
    let out = dir.path().join("lesson.html");
    let run = worldloom(&["export", s(&ws), "--lesson", "week 1", "-o", s(&out)]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.starts_with("wrote lesson `week 1`: "), "{stdout}");
    let html = std::fs::read_to_string(&out).expect("html");
    assert!(html.contains("<p class=\"caption\">Watch the &lt;menu&gt; open</p>"));
    assert!(html.contains("id=\"s1\"") && html.contains("<a href=\"#s2\" rel=\"next\">"));
    assert!(!html.to_ascii_lowercase().contains("<script"));

    // An unknown lesson and a missing workspace are errors naming them.
    let run = worldloom(&["export", s(&ws), "--lesson", "nope", "-o", s(&out)]);
    assert!(!run.status.success());
    assert!(String::from_utf8_lossy(&run.stderr).contains("lesson `nope`"));
    let missing = dir.path().join("missing.worldloom");
    let run = worldloom(&["export", s(&missing), "--lesson", "x", "-o", s(&out)]);
    assert!(!run.status.success());
    assert!(String::from_utf8_lossy(&run.stderr).contains("no such workspace file"));
    assert!(!missing.exists());
    // Without --lesson a format is still required.
    let run = worldloom(&["export", s(&ws), "-o", s(&out)]);
    assert!(!run.status.success());
}

/// A pipe whose reading end is already closed: what a command writing into
/// `| head -0` sees.
fn closed_pipe() -> std::io::PipeWriter {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    writer
}

#[test]
fn a_closed_standard_output_stops_a_command_quietly() {
    use std::os::unix::process::ExitStatusExt as _;
    let out = Command::new(env!("CARGO_BIN_EXE_worldloom"))
        .args(["inspect", s(&sample_awb())])
        .stdout(closed_pipe())
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("runs the binary");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    // As `cat` does: ended by SIGPIPE (13), nothing printed.
    assert_eq!(out.status.signal(), Some(13), "{stderr}");
    assert_eq!(stderr, "");
}

#[test]
fn a_server_with_a_closed_standard_output_keeps_serving() {
    let dir = tempfile::tempdir().expect("tmp");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_worldloom"))
        .args(["serve", "--workspace", s(&dir.path().join("ws.worldloom"))])
        .args(["--port", &port.to_string()])
        .stdout(closed_pipe())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starts");
    // It prints its workspace before it listens: it must get past that.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let listening = loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break true;
        }
        if child.try_wait().expect("wait").is_some() || std::time::Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let alive = child.try_wait().expect("wait").is_none();
    let _ = child.kill();
    let out = child.wait_with_output().expect("output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        listening && alive,
        "listening {listening}, alive {alive}: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
