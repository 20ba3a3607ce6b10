//! Importers, exporters and bad input, on files the tests write or the
//! committed samples.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use worldloom_core::formats::{awb, sft};
use worldloom_core::{
    ActionFormat, AndroidAction, ChatMessage, ChatRole, CoreError, Domain, ImportOptions,
    InputFormat, NodeId, OutputStatus, ParsedAction, PromptOptions, Representation, StepErrorKind,
    TrajectoryFile, build_messages, detect_format, import_path,
};

fn sample_awb() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../samples/agentworldbench/agentworldbench_sample.jsonl")
}

/// Writes `contents` to `path` and imports it with the default options,
/// which must fail; the error's text.
fn import_error(path: &Path, contents: &str) -> String {
    std::fs::write(path, contents).expect("write");
    match import_path(path, &ImportOptions::default()) {
        Ok(_) => panic!("{} imported", path.display()),
        Err(e) => e.to_string(),
    }
}

fn rows(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("row"))
        .collect()
}

#[test]
fn awb_sample_groups_rows_into_trajectories() {
    let imported = import_path(&sample_awb(), &ImportOptions::default()).expect("imports");
    assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
    // One trajectory per domain, in the order of `Domain::ALL`.
    let domains: Vec<Domain> = imported.trajectories.iter().map(|t| t.domain).collect();
    assert_eq!(domains, Domain::ALL);
    let turns: Vec<usize> = imported
        .trajectories
        .iter()
        .map(|t| t.main_path().edges.len())
        .collect();
    assert_eq!(turns, vec![3, 2, 3, 3, 2, 2, 2]);
    let mcp = &imported.trajectories[0];
    let call = &mcp.edges[1].action;
    assert_eq!(call.format, ActionFormat::ToolCall);
    let Some(ParsedAction::Json { value }) = &call.parsed else {
        panic!("tool call not parsed")
    };
    assert_eq!(value["name"], json!("update_event"));
    let obs = mcp
        .node(NodeId(1))
        .and_then(|n| n.real.as_ref())
        .expect("observation");
    assert_eq!(obs.prefix, "**Environment Observation:**\n");
    assert_eq!(obs.representation, Representation::Json);
    let web = &imported.trajectories[4];
    assert_eq!(web.edges[0].action.raw, "fill('33', '2')");
    assert!(matches!(
        web.edges[0].action.parsed,
        Some(ParsedAction::Browsergym { .. })
    ));
    let android = &imported.trajectories[6];
    assert!(matches!(
        android.edges[1].action.parsed,
        Some(ParsedAction::Android {
            action: AndroidAction::NavigateBack
        })
    ));
}

#[test]
fn awb_reexport_is_field_for_field_identical() {
    let original = std::fs::read_to_string(sample_awb()).expect("sample");
    let imported = import_path(&sample_awb(), &ImportOptions::default()).expect("imports");
    let exported = awb::export(&imported.trajectories);
    assert_eq!(rows(&exported), rows(&original));
    // Through the native file too.
    let native = TrajectoryFile::new(imported.trajectories).to_json_string();
    let back = TrajectoryFile::from_json_str(Path::new("n.json"), &native).expect("native");
    assert_eq!(rows(&awb::export(&back.trajectories)), rows(&original));
}

/// The official script's message construction for one row (eval/eval.py,
/// inference step), restated: system_str if non-empty, then prompt[j] /
/// response[j] for j < turn_idx - 1, then prompt[turn_idx-1] (where the
/// script would fail for a `prompt` list too short, the row's current_prompt).
fn official_messages(row: &Value) -> Vec<ChatMessage> {
    let text = |v: &Value| v.as_str().unwrap_or("").to_owned();
    let mut out = Vec::new();
    let system = text(&row["system_str"]);
    if !system.is_empty() {
        out.push(ChatMessage::new(ChatRole::System, system));
    }
    let prompts = row["prompt"].as_array().cloned().unwrap_or_default();
    let responses = row["response"].as_array().cloned().unwrap_or_default();
    let turn = (row["turn_idx"].as_u64().unwrap_or(1) as usize).saturating_sub(1);
    for j in 0..turn.min(prompts.len()).min(responses.len()) {
        out.push(ChatMessage::new(ChatRole::User, text(&prompts[j])));
        out.push(ChatMessage::new(ChatRole::Assistant, text(&responses[j])));
    }
    let current = prompts.get(turn).unwrap_or(&row["current_prompt"]);
    out.push(ChatMessage::new(ChatRole::User, text(current)));
    out
}

/// `build_messages` for every row of an imported AgentWorldBench file, next
/// to the official construction of that row.
fn ours_and_official(path: &Path) -> Vec<(Vec<ChatMessage>, Vec<ChatMessage>)> {
    let original = rows(&std::fs::read_to_string(path).expect("file"));
    let imported = import_path(path, &ImportOptions::default()).expect("imports");
    let mut pairs = Vec::new();
    for t in &imported.trajectories {
        for (turn, node) in awb::row_nodes(t) {
            let ours = build_messages(t, node, &PromptOptions::default()).expect("messages");
            let row = original
                .iter()
                .find(|r| {
                    r["turn_idx"] == json!(turn)
                        && t.edges[turn - 1].awb_row.as_ref().map(|a| &a.fields["id"])
                            == Some(&r["id"])
                })
                .expect("row");
            pairs.push((ours, official_messages(row)));
        }
    }
    pairs
}

#[test]
fn awb_prompts_match_the_official_construction_for_every_row() {
    let pairs = ours_and_official(&sample_awb());
    for (i, (ours, official)) in pairs.iter().enumerate() {
        assert_eq!(ours, official, "row {i}");
    }
    assert_eq!(pairs.len(), 17);
}

#[test]
fn awb_current_turn_prompt_is_prompt_entry_not_current_prompt() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("differ.jsonl");
    let obs = |s: &str| format!("**Environment Observation:**\n{s}");
    let text = [
        // current_prompt differs from prompt[1]: prompt[1] is sent.
        json!({"task": "terminal", "id": 1, "prompt": ["ls", "pwd"], "response": [obs("a"), obs("/home")],
            "current_prompt": "whoami", "system_str": "S", "turn_idx": 2, "total_turns": 2}),
        // The row's prompt list is too short for its turn: current_prompt is sent.
        json!({"task": "search", "id": 2, "prompt": ["q1"], "response": [obs("r1"), obs("r2")],
            "current_prompt": "q2", "system_str": "", "turn_idx": 2, "total_turns": 2}),
        // Too short, with a longer list in another row of the trajectory: the
        // row's own current_prompt is still what is sent for its turn.
        json!({"task": "mcp", "id": 3, "prompt": ["a", "b"], "response": [obs("x"), obs("y")],
            "current_prompt": "a", "system_str": "", "turn_idx": 1, "total_turns": 2}),
        json!({"task": "mcp", "id": 4, "prompt": ["a"], "response": [obs("x"), obs("y")],
            "current_prompt": "c", "system_str": "", "turn_idx": 2, "total_turns": 2}),
    ]
    .map(|r| r.to_string())
    .join("\n");
    std::fs::write(&path, &text).expect("write");
    let system = |t: &str| ChatMessage::new(ChatRole::System, t);
    let user = |t: &str| ChatMessage::new(ChatRole::User, t);
    let assistant = |t: &str| ChatMessage::new(ChatRole::Assistant, obs(t));
    let pairs = ours_and_official(&path);
    let sent: Vec<_> = pairs.iter().map(|(ours, _)| ours.clone()).collect();
    assert_eq!(
        sent,
        vec![
            vec![system("S"), user("ls"), assistant("a"), user("pwd")],
            vec![user("q1"), assistant("r1"), user("q2")],
            vec![user("a")],
            vec![user("a"), assistant("x"), user("c")],
        ]
    );
    for (i, (ours, official)) in pairs.iter().enumerate() {
        assert_eq!(ours, official, "row {i}");
    }
    // Every row still exports field for field (export adds rows for the
    // turns that had none).
    let imported = import_path(&path, &ImportOptions::default()).expect("imports");
    let exported = rows(&awb::export(&imported.trajectories));
    for row in rows(&text) {
        assert!(exported.contains(&row), "{row} not exported as it was");
    }
    assert_eq!(exported.len(), 6);
}

#[test]
fn awb_interleaved_rows_split_by_content_and_keep_file_order() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("mixed.jsonl");
    let row = |id: u64, task: &str, p: &[&str], r: &[&str], k: u64| {
        json!({"task": task, "id": id, "prompt": p, "response": r, "current_prompt": p[(k - 1) as usize], "system_str": "S", "turn_idx": k, "total_turns": p.len(), "extra_field": {"kept": true}})
            .to_string()
    };
    let text = [
        row(
            1,
            "terminal",
            &["ls", "pwd"],
            &[
                "**Environment Observation:**\na",
                "**Environment Observation:**\n/home",
            ],
            1,
        ),
        row(
            2,
            "terminal",
            &["ls", "cat x"],
            &[
                "**Environment Observation:**\nb",
                "**Environment Observation:**\nno such file",
            ],
            1,
        ),
        row(
            3,
            "terminal",
            &["ls", "pwd"],
            &[
                "**Environment Observation:**\na",
                "**Environment Observation:**\n/home",
            ],
            2,
        ),
        String::new(),
        row(
            4,
            "terminal",
            &["ls", "cat x"],
            &[
                "**Environment Observation:**\nb",
                "**Environment Observation:**\nno such file",
            ],
            2,
        ),
    ]
    .join("\n");
    std::fs::write(&path, &text).expect("write");
    let imported = import_path(&path, &ImportOptions::default()).expect("imports");
    assert_eq!(imported.trajectories.len(), 2);
    assert_eq!(imported.trajectories[0].edges[1].action.raw, "pwd");
    assert_eq!(imported.trajectories[1].edges[1].action.raw, "cat x");
    assert_eq!(rows(&awb::export(&imported.trajectories)), rows(&text));
}

#[test]
fn malformed_jsonl_line_fails_with_its_number_or_is_skipped() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("bad.jsonl");
    let good = json!({"task": "search", "id": 1, "prompt": ["q"], "response": ["**Environment Observation:**\nr"], "current_prompt": "q", "system_str": "", "turn_idx": 1, "total_turns": 1});
    std::fs::write(
        &path,
        format!(
            "{good}\n{{\"task\": \"search\", \"prompt\": [\n{}\n",
            good.to_string().replace("\"id\":1", "\"id\":2")
        ),
    )
    .expect("write");
    let err = import_path(&path, &ImportOptions::default()).expect_err("fails");
    assert!(matches!(err, CoreError::Json { line: 2, .. }), "{err}");
    assert!(err.to_string().contains("bad.jsonl:2:"), "{err}");
    let imported = import_path(
        &path,
        &ImportOptions {
            format: InputFormat::Auto,
            skip_bad_rows: true,
        },
    )
    .expect("skips");
    assert_eq!(imported.trajectories.len(), 2);
    assert_eq!(imported.warnings.len(), 1);
    assert_eq!(imported.warnings[0].line, Some(2));
    // A row of the wrong shape names the field.
    let err = import_error(&path, "{\"task\": \"web\", \"prompt\": [1]}\n");
    assert!(err.contains(":1: field `prompt[0]`"), "{err}");
    let err = import_error(&path, "{\"task\": \"browser\", \"prompt\": []}\n");
    assert!(err.contains("field `task`"), "{err}");
}

fn agentlab_step(step: u64, axtree: &str, action: Value, error: &str) -> Value {
    json!({"step": step, "url": "https://shop.example/cart", "goal": "Check out", "open_pages_urls": ["https://shop.example/cart"],
        "open_pages_titles": ["Cart"], "focused_element_bid": "", "last_action": "", "last_action_error": error,
        "axtree_txt": axtree, "pruned_html": if axtree.is_empty() { "" } else { "<button bid=\"5\">Pay</button>" }, "action": action, "think": null,
        "llm_answer_raw": null, "reward": 0, "terminated": false, "truncated": false, "screenshot_path": "step.png"})
}

#[test]
fn agentlab_frame_detached_is_an_error_step_and_sidecar_attaches() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("cart.json");
    let steps = json!({"source_task": "demo", "steps": [
        agentlab_step(0, "RootWebArea 'Cart'\n\t[5] button 'Pay'", json!("click('5')"), ""),
        agentlab_step(1, "", json!("noop()"), "Frame has been detached."),
        agentlab_step(2, "RootWebArea 'Paid'", Value::Null, ""),
    ]});
    std::fs::write(&path, serde_json::to_string_pretty(&steps).expect("json")).expect("write");
    std::fs::write(
        dir.path().join("cart.predictions.jsonl"),
        "{\"step\": 2, \"engine\": \"copy\", \"seed\": 3, \"output\": \"</think><predicted_observation>RootWebArea 'Paid'</predicted_observation>\", \"latency_ms\": 5}\n{\"step\": 9, \"engine\": \"copy\", \"output\": \"x\"}\n",
    )
    .expect("write");
    assert_eq!(
        detect_format(&path).expect("detects"),
        InputFormat::Agentlab
    );
    let imported = import_path(&path, &ImportOptions::default()).expect("imports");
    let t = &imported.trajectories[0];
    assert_eq!(t.goal.as_deref(), Some("Check out"));
    assert_eq!(t.extra.get("source_task"), Some(&json!("demo")));
    let detached = t
        .node(NodeId(1))
        .and_then(|n| n.real.as_ref())
        .expect("step 1");
    assert!(detached.is_error_step());
    let error = detached.error.as_ref().expect("error");
    assert_eq!(
        (error.kind, error.message.as_str()),
        (StepErrorKind::Action, "Frame has been detached.")
    );
    let root = t
        .node(NodeId(0))
        .and_then(|n| n.real.as_ref())
        .expect("root");
    assert_eq!(root.metadata.title.as_deref(), Some("Cart"));
    assert_eq!(
        root.view(Representation::Html),
        Some("<button bid=\"5\">Pay</button>")
    );
    assert_eq!(
        t.nodes[0].extra.get("screenshot_path"),
        Some(&json!("step.png"))
    );
    let node2 = t.node(NodeId(2)).expect("node 2");
    assert_eq!(node2.predictions.len(), 1);
    assert_eq!(node2.predictions[0].status, OutputStatus::Ok);
    assert_eq!(
        node2.predictions[0].observation.as_deref(),
        Some("RootWebArea 'Paid'")
    );
    assert_eq!(node2.predictions[0].seed, Some(3));
    assert_eq!(
        node2.predictions[0].extra.get("latency_ms"),
        Some(&json!(5))
    );
    assert_eq!(imported.warnings.len(), 1);
    assert!(
        imported.warnings[0].message.contains("step 9"),
        "{}",
        imported.warnings[0]
    );
    // The error step's prompt shows the error.
    let messages = build_messages(t, NodeId(2), &PromptOptions::default()).expect("messages");
    assert!(
        messages[3]
            .content
            .contains("**Last Action Error:**\nFrame has been detached."),
        "{}",
        messages[3].content
    );
}

#[test]
fn latin1_file_imports_with_one_warning() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("latin1.json");
    let mut bytes = b"[{\"url\": \"https://caf\xE9.example/\", \"axtree_txt\": \"RootWebArea 'Caf\xE9 cr\xE8me'\", \"action\": null}]".to_vec();
    bytes.push(b'\n');
    std::fs::write(&path, &bytes).expect("write");
    let imported = import_path(&path, &ImportOptions::default()).expect("imports");
    assert_eq!(imported.warnings.len(), 1);
    let w = &imported.warnings[0];
    assert_eq!(
        w.byte_offset,
        bytes.iter().position(|&b| b == 0xE9).map(|p| p as u64)
    );
    assert_eq!(w.byte_offset, Some(21));
    assert!(w.path.ends_with("latin1.json"));
    let root = imported.trajectories[0].nodes[0]
        .real
        .as_ref()
        .expect("root");
    assert_eq!(root.text, "RootWebArea 'Caf\u{FFFD} cr\u{FFFD}me'");
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).expect("write");
}

#[test]
fn android_folder_with_cesu_bytes_and_failed_capture() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path().join("settings_run");
    std::fs::create_dir(&d).expect("mkdir");
    let head = b"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\"><node text=\"";
    let mut dump0 = head.to_vec();
    dump0.extend_from_slice(b"Hi \xED\xA0\xBD\xED\xB8\x80\" resource-id=\"com.chat:id/msg\" bounds=\"[0,0][1080,200]\"/></hierarchy>");
    write(&d, "step_00.xml", &dump0);
    write(&d, "step_01.xml", b"ERROR: could not get idle state.\n");
    write(
        &d,
        "step_02.xml",
        b"<?xml version='1.0' ?><hierarchy rotation=\"0\"><node text=\"Sent\"/></hierarchy>",
    );
    write(
        &d,
        "actions.jsonl",
        b"{\"step\": 0, \"action\": {\"action_type\": \"click\", \"element\": \"com.chat:id/send\"}, \"note\": \"send\"}\n{\"step\": 1, \"action\": {\"action_type\": \"wait\"}, \"note\": null}\n{\"step\": 2, \"action\": null, \"note\": \"done\"}\n",
    );
    write(&d, "task.json", b"{\"goal\": \"Send the greeting\", \"package\": \"com.chat\", \"screen\": {\"width\": 1080, \"height\": 2400}}");
    assert_eq!(
        detect_format(&d).expect("detects"),
        InputFormat::AndroidDumps
    );
    let imported = import_path(&d, &ImportOptions::default()).expect("imports");
    assert_eq!(imported.warnings.len(), 1, "{:?}", imported.warnings);
    let w = &imported.warnings[0];
    assert!(w.path.ends_with("step_00.xml"), "{w}");
    assert_eq!(w.byte_offset, Some(head.len() as u64 + 3));
    let t = &imported.trajectories[0];
    assert_eq!(t.domain, Domain::Android);
    assert_eq!(t.goal.as_deref(), Some("Send the greeting"));
    assert_eq!(t.extra.get("package"), Some(&json!("com.chat")));
    let root = t.nodes[0].real.as_ref().expect("root");
    assert!(root.text.contains("Hi \u{FFFD}"));
    assert_eq!(
        root.metadata.screen.map(|s| (s.width_px, s.height_px)),
        Some((1080, 2400))
    );
    let failed = t.nodes[1].real.as_ref().expect("step 1");
    assert!(failed.is_error_step());
    let error = failed.error.as_ref().expect("error");
    assert_eq!(
        (error.kind, error.message.as_str()),
        (StepErrorKind::Capture, "ERROR: could not get idle state.\n")
    );
    assert_eq!(t.edges[0].note.as_deref(), Some("send"));
    assert!(matches!(
        t.edges[0].action.parsed,
        Some(ParsedAction::Android {
            action: AndroidAction::Click { .. }
        })
    ));
    assert_eq!(t.nodes[2].extra.get("note"), Some(&json!("done")));
}

#[test]
fn osworld_folder_with_table_view_and_bad_actions_line() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path().join("files_run");
    std::fs::create_dir(&d).expect("mkdir");
    for (i, name) in ["Downloads", "Receipts"].iter().enumerate() {
        write(&d, &format!("step_{i:02}.xml"), format!("<desktop-frame><application name=\"files\"><frame name=\"{name}\"/></application></desktop-frame>").as_bytes());
        write(&d, &format!("step_{i:02}.tsv"), format!("tag\tname\ttext\tclass\tdescription\tposition (top-left x&y)\tsize (w&h)\nframe\t{name}\t\t\t\t(0, 0)\t(800, 600)\n").as_bytes());
    }
    write(&d, "actions.jsonl", b"{\"step\": 0, \"action\": \"pyautogui.doubleClick(120, 80)\", \"note\": \"open\"}\n{\"step\": 1, \"action\": null}\n");
    write(
        &d,
        "capture_meta.json",
        b"[{\"step\": 0, \"nodes\": 3}, {\"step\": 1, \"nodes\": 3}]",
    );
    assert_eq!(detect_format(&d).expect("detects"), InputFormat::Osworld);
    let imported = import_path(&d, &ImportOptions::default()).expect("imports");
    let t = &imported.trajectories[0];
    assert_eq!(t.domain, Domain::Os);
    assert_eq!(
        t.representations(),
        vec![Representation::OsXml, Representation::OsTable]
    );
    let n1 = t.nodes[1].real.as_ref().expect("node 1");
    assert!(
        n1.view(Representation::OsTable)
            .is_some_and(|v| v.contains("frame\tReceipts"))
    );
    assert_eq!(
        n1.metadata.extra.get("capture"),
        Some(&json!({"step": 1, "nodes": 3}))
    );
    assert_eq!(t.edges[0].action.format, ActionFormat::Pyautogui);
    assert_eq!(t.edges[0].action.raw, "pyautogui.doubleClick(120, 80)");
    write(
        &d,
        "actions.jsonl",
        b"{\"step\": 0, \"action\": \"x\"}\n{\"step\": oops}\n",
    );
    let err = import_path(&d, &ImportOptions::default()).expect_err("fails");
    assert!(err.to_string().contains("actions.jsonl:2:"), "{err}");
}

#[test]
fn a_folder_read_with_the_wrong_gui_format_is_refused_and_cut_xml_is_warned() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path().join("os_run");
    std::fs::create_dir(&d).expect("mkdir");
    write(
        &d,
        "step_00.xml",
        b"<desktop-frame><application name=\"files\"/></desktop-frame>",
    );
    write(
        &d,
        "step_01.xml",
        b"<desktop-frame>\n<application name=\"files\">\n<frame name=\"Rec",
    );
    write(
        &d,
        "actions.jsonl",
        b"{\"step\": 0, \"action\": \"pyautogui.click(1, 2)\"}\n{\"step\": 1, \"action\": null}\n",
    );
    let forced = ImportOptions {
        format: InputFormat::AndroidDumps,
        ..ImportOptions::default()
    };
    let err = import_path(&d, &forced).expect_err("an OS folder is not Android dumps");
    let text = err.to_string();
    assert!(text.contains("step_00.xml"), "{text}");
    assert!(text.contains("`<desktop-frame>`"), "{text}");
    assert!(text.contains("--format osworld"), "{text}");
    // With the right format the folder imports; the cut-off step is kept, with a warning at its line.
    let imported = import_path(&d, &ImportOptions::default()).expect("imports");
    assert_eq!(imported.warnings.len(), 1, "{:?}", imported.warnings);
    let w = &imported.warnings[0];
    assert!(w.path.ends_with("step_01.xml"), "{w}");
    assert_eq!(w.line, Some(3), "where the text stops");
    assert!(
        w.message.contains("not well-formed (line 3, column 17"),
        "{w}"
    );
    let kept = imported.trajectories[0].nodes[1]
        .real
        .as_ref()
        .expect("step 1");
    assert!(kept.text.ends_with("name=\"Rec"), "{}", kept.text);
}

#[test]
fn native_export_then_import_gives_the_same_bytes() {
    let imported = import_path(&sample_awb(), &ImportOptions::default()).expect("imports");
    let dir = tempfile::tempdir().expect("tmp");
    let first = dir.path().join("a.json");
    TrajectoryFile::new(imported.trajectories)
        .write(&first)
        .expect("write");
    assert_eq!(detect_format(&first).expect("detects"), InputFormat::Native);
    let again = import_path(&first, &ImportOptions::default()).expect("imports native");
    let second = TrajectoryFile::new(again.trajectories).to_json_string();
    assert_eq!(second, std::fs::read_to_string(&first).expect("read"));
}

#[test]
fn sft_export_reads_back_as_the_same_trajectories() {
    let original = import_path(&sample_awb(), &ImportOptions::default()).expect("imports");
    let text = sft::export(&original.trajectories, &PromptOptions::default()).expect("sft");
    let first = &rows(&text)[0];
    assert_eq!(
        first["task"],
        json!(original.trajectories[0].domain.as_str())
    );
    assert_eq!(
        first["id"],
        json!(format!("{}#1", original.trajectories[0].id))
    );
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("curriculum.sft.jsonl");
    std::fs::write(&file, &text).expect("write");
    let again = import_path(&file, &ImportOptions::default()).expect("imports sft");
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
    assert_eq!(again.trajectories.len(), original.trajectories.len());
    for (a, b) in original.trajectories.iter().zip(&again.trajectories) {
        assert_eq!(a.domain, b.domain);
        assert_eq!(a.system_prompt, b.system_prompt);
        let (pa, pb) = (a.main_path(), b.main_path());
        assert_eq!(pa.edges.len(), pb.edges.len(), "{}", a.id);
        for (ea, eb) in pa.edges.iter().zip(&pb.edges) {
            assert_eq!(
                a.edges[ea.0 as usize].action.raw,
                b.edges[eb.0 as usize].action.raw
            );
        }
        for (na, nb) in pa.nodes.iter().zip(&pb.nodes).skip(1) {
            let real = |t: &worldloom_core::Trajectory, n: &worldloom_core::NodeId| {
                t.nodes[n.0 as usize].real.as_ref().map(|o| o.text.clone())
            };
            assert_eq!(real(a, na), real(b, nb), "{} node {}", a.id, na.0);
        }
    }
    // Exporting what was read back gives the same file.
    let twice = sft::export(&again.trajectories, &PromptOptions::default()).expect("sft");
    assert_eq!(twice, text);
}

#[test]
fn awb_export_reads_back_under_the_same_trajectory_ids_and_a_lone_sidecar_is_refused() {
    let original = import_path(&sample_awb(), &ImportOptions::default()).expect("imports");
    let mut fresh = original.trajectories.clone();
    for t in &mut fresh {
        // Rows written from the tree (no stored AgentWorldBench row info).
        for e in &mut t.edges {
            e.awb_row = None;
        }
    }
    let text = awb::export(&fresh);
    assert!(
        text.contains(&format!("\"id\":\"{}#1\"", fresh[0].id)),
        "{}",
        &text[..200]
    );
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("again.jsonl");
    std::fs::write(&file, &text).expect("write");
    let again = import_path(&file, &ImportOptions::default()).expect("imports");
    let ids =
        |ts: &[worldloom_core::Trajectory]| ts.iter().map(|t| t.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&again.trajectories), ids(&original.trajectories));

    let msg = import_error(
        &dir.path().join("run.predictions.jsonl"),
        "{\"step\": 1, \"engine\": \"m\", \"output\": \"x\"}\n",
    );
    assert!(msg.contains("run.predictions.jsonl"), "{msg}");
    assert!(msg.contains("import `run.json` beside it"), "{msg}");
}

#[test]
fn a_format_given_by_hand_that_does_not_fit_names_the_one_that_does() {
    let forced = |format: InputFormat| ImportOptions {
        format,
        ..ImportOptions::default()
    };
    let err = import_path(&sample_awb(), &forced(InputFormat::Agentlab)).expect_err("not agentlab");
    assert!(
        err.to_string()
            .contains("reads as `--format agentworldbench`"),
        "{err}"
    );
    let web = sample_awb()
        .parent()
        .and_then(Path::parent)
        .expect("samples")
        .join("web/agentlab_larkmail-reply_6steps.json");
    let err = import_path(&web, &forced(InputFormat::Agentworldbench)).expect_err("not awb");
    assert!(
        err.to_string().contains("reads as `--format agentlab`"),
        "{err}"
    );
    let err = import_path(&web, &forced(InputFormat::Osworld)).expect_err("not a folder");
    assert!(
        err.to_string()
            .contains("`--format osworld` reads a folder, and this is a file"),
        "{err}"
    );
}

#[test]
fn sft_lines_out_of_order_are_refused_by_field() {
    let dir = tempfile::tempdir().expect("tmp");
    let text = import_error(
        &dir.path().join("bad.sft.jsonl"),
        "{\"task\": \"terminal\", \"messages\": [{\"role\": \"user\", \"content\": \"ls\"}, {\"role\": \"user\", \"content\": \"pwd\"}]}\n",
    );
    assert!(text.contains("bad.sft.jsonl:1"), "{text}");
    assert!(text.contains("messages[1].role"), "{text}");
}

#[test]
fn sft_export_has_one_line_per_observed_turn() {
    let imported = import_path(&sample_awb(), &ImportOptions::default()).expect("imports");
    let text = sft::export(&imported.trajectories, &PromptOptions::default()).expect("sft");
    let lines = rows(&text);
    assert_eq!(lines.len(), 17);
    let first = &lines[0]["messages"];
    assert_eq!(first[0]["role"], json!("system"));
    assert_eq!(first[1]["role"], json!("user"));
    assert_eq!(first.as_array().map(Vec::len), Some(3));
    let answer = first[2]["content"].as_str().expect("answer");
    assert!(answer.starts_with("<predicted_observation>\n{"), "{answer}");
    assert!(answer.ends_with("\n</predicted_observation>"));
    // Turn 3 of the MCP trajectory carries two earlier turns.
    assert_eq!(lines[2]["messages"].as_array().map(Vec::len), Some(7));
}

#[test]
fn committed_gui_samples_import_with_their_predictions() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples");
    for (folder, domain) in [
        ("web", Domain::Web),
        ("os", Domain::Os),
        ("android", Domain::Android),
    ] {
        let imported = import_path(&root.join(folder), &ImportOptions::default()).expect("imports");
        assert!(
            imported.trajectories.len() >= 3,
            "{folder}: {} trajectories",
            imported.trajectories.len()
        );
        for t in &imported.trajectories {
            assert_eq!(t.domain, domain, "{}", t.id);
            assert!(
                t.main_path().edges.len() >= 4,
                "{}: {} turns",
                t.id,
                t.main_path().edges.len()
            );
            assert!(
                t.nodes.iter().any(|n| !n.predictions.is_empty()),
                "{}: no sidecar predictions",
                t.id
            );
            let messages = build_messages(t, t.main_path().nodes[2], &PromptOptions::default())
                .expect("messages");
            assert_eq!(messages.len(), 4, "{}", t.id);
        }
    }
}

#[test]
fn sidecar_representation_field_sets_the_prediction_representation() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/web");
    let path = root.join("agentlab_tidewell-shop_add-to-cart_8steps.json");
    let imported = import_path(&path, &ImportOptions::default()).expect("imports");
    let t = &imported.trajectories[0];
    let mut by_engine = std::collections::BTreeMap::new();
    for p in t.nodes.iter().flat_map(|n| &n.predictions) {
        by_engine
            .entry(p.engine.clone())
            .or_insert_with(std::collections::BTreeSet::new)
            .insert(p.representation);
    }
    // The sample's sidecar predicts the accessibility tree under one engine
    // name and the HTML under another; each keeps its own representation.
    assert_eq!(
        by_engine.get("sample-author"),
        Some(&[Representation::Axtree].into_iter().collect())
    );
    assert_eq!(
        by_engine.get("sample-author-html"),
        Some(&[Representation::Html].into_iter().collect())
    );
}

#[test]
fn auto_detection_names_the_position_of_broken_json_and_refuses_empty_files() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("run.json");
    std::fs::write(
        &broken,
        "[\n  {\"goal\": \"buy a lamp\",\n   \"url\": \"http://shop.example/",
    )
    .unwrap();
    let err = import_path(&broken, &ImportOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("run.json"), "{err}");
    assert!(err.contains(":3:"), "line 3 of the file: {err}");
    assert!(err.contains("does not parse"), "{err}");

    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "  \n").unwrap();
    let err = import_path(&empty, &ImportOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("empty.json") && err.contains("empty"), "{err}");
}
