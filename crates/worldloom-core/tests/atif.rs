//! The Agent Trajectory Interchange Format (ATIF), on fixtures written in
//! its layout: a terminal run (Terminus-style keystrokes) and a SWE run
//! (OpenHands-style tools).

use std::path::{Path, PathBuf};

use serde_json::json;
use worldloom_core::formats::agent_reasoning;
use worldloom_core::{
    ActionFormat, Domain, ImportOptions, InputFormat, NodeId, ParsedAction, Representation,
    detect_format, import_path,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/atif")
        .join(name)
}

#[test]
fn a_terminal_run_imports_as_shell_turns_with_reasoning() {
    let path = fixture("terminus_disk-usage.json");
    assert_eq!(detect_format(&path).expect("detects"), InputFormat::Atif);
    let imported = import_path(&path, &ImportOptions::default()).expect("imports");
    assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
    let t = &imported.trajectories[0];
    assert_eq!(t.id, "terminus-disk-usage-01");
    assert_eq!(
        (t.domain, t.source.format.as_str()),
        (Domain::Terminal, "atif")
    );
    assert!(
        t.system_prompt
            .as_deref()
            .is_some_and(|s| s.starts_with("You are an AI assistant"))
    );
    let goal = "Find which folder under /srv/data uses the most space and write its name to /tmp/biggest.txt.";
    assert_eq!(t.goal.as_deref(), Some(goal));
    let root = t
        .node(NodeId(0))
        .and_then(|n| n.real.as_ref())
        .expect("root");
    assert_eq!(
        (root.representation, root.text.as_str()),
        (Representation::Text, goal)
    );

    assert_eq!(t.edges.len(), 2);
    let first = &t.edges[0];
    assert_eq!(first.action.format, ActionFormat::Shell);
    assert_eq!(
        first.action.raw,
        "du -h --max-depth=1 /srv/data | sort -h\n"
    );
    assert_eq!(
        agent_reasoning(first),
        Some("du with a depth of 1 gives one line per folder; sort -h orders them.")
    );
    assert_eq!(first.extra["metrics"]["prompt_tokens"], json!(812));
    let after = t
        .node(NodeId(1))
        .and_then(|n| n.real.as_ref())
        .expect("obs");
    assert!(
        after.text.starts_with("4.0K\t/srv/data/empty\n"),
        "{}",
        after.text
    );

    // Two calls in one step: both commands, both results in order.
    let second = &t.edges[1];
    assert_eq!(
        second.action.raw,
        "echo photos > /tmp/biggest.txt\n\ncat /tmp/biggest.txt\n"
    );
    assert_eq!(
        agent_reasoning(second),
        Some("photos is the largest; writing it and checking the file.")
    );
    let last = t.node(NodeId(2)).expect("last");
    assert_eq!(
        last.real.as_ref().expect("obs").text,
        "[call_2]\nroot@box:/# \n\n[call_3]\nphotos\nroot@box:/# "
    );
    assert_eq!(
        last.extra["final_message"],
        json!("Done: /tmp/biggest.txt holds `photos`.")
    );
    assert_eq!(t.extra["agent"]["name"], json!("terminus-2"));
    assert_eq!(t.extra["final_metrics"]["total_steps"], json!(5));
}

#[test]
fn a_swe_run_imports_as_tool_calls_and_keeps_later_user_messages() {
    let path = fixture("openhands_typo-fix.json");
    let imported = import_path(&path, &ImportOptions::default()).expect("imports");
    let t = &imported.trajectories[0];
    assert_eq!(t.domain, Domain::Swe);
    assert_eq!(t.edges.len(), 2);
    let edit = &t.edges[1];
    assert_eq!(edit.action.format, ActionFormat::ToolCall);
    let Some(ParsedAction::Json { value }) = &edit.action.parsed else {
        panic!("not parsed: {}", edit.action.raw)
    };
    assert_eq!(value["name"], json!("str_replace_editor"));
    assert_eq!(value["arguments"]["new_str"], json!("'Hello, '"));
    assert_eq!(agent_reasoning(&t.edges[0]), Some("Find the line first."));
    // The user's message between the turns stays on the state it came to.
    let between = t.node(NodeId(1)).expect("state 1");
    assert_eq!(between.extra["user_messages"], json!(["Keep the comma."]));
    assert_eq!(
        t.node(NodeId(2))
            .and_then(|n| n.real.as_ref())
            .map(|o| o.text.as_str()),
        Some("The file src/greet.py has been edited.")
    );
}

#[test]
fn a_bad_step_is_named_by_index_and_field() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("run.json");
    let doc = json!({"schema_version": "ATIF-v1.4", "session_id": "s", "agent": {"name": "a", "version": "1"},
        "steps": [{"step_id": 1, "source": "user", "message": "hi"}, {"step_id": 2, "source": "robot", "message": "?"}]});
    std::fs::write(&path, doc.to_string()).expect("write");
    let err = import_path(&path, &ImportOptions::default())
        .expect_err("bad source")
        .to_string();
    assert!(
        err.contains("run.json") && err.contains("steps[1].source"),
        "{err}"
    );

    let doc = json!({"schema_version": "ATIF-v1.4", "session_id": "s", "agent": {"name": "a", "version": "1"},
        "steps": [{"step_id": 1, "source": "agent", "message": "x", "tool_calls": {"oops": 1}}]});
    std::fs::write(&path, doc.to_string()).expect("write");
    let err = import_path(&path, &ImportOptions::default())
        .expect_err("bad tool_calls")
        .to_string();
    assert!(err.contains("steps[0].tool_calls"), "{err}");
}
