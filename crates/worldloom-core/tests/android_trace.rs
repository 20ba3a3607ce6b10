//! Numbered Android trace folders (`0.xml`, … with `eventStructs.txt` and
//! `instruction.txt`), on a fixture written in that layout.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use worldloom_core::formats::android_trace::parse_event;
use worldloom_core::{
    ActionFormat, AndroidAction, AndroidTarget, ImportOptions, InputFormat, NodeId, ParsedAction,
    Representation, detect_format, import_path,
};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/android_trace/notes_27")
}

fn android(action: &worldloom_core::Action) -> &AndroidAction {
    match &action.parsed {
        Some(ParsedAction::Android { action }) => action,
        other => panic!("not an Android action: {other:?} ({})", action.raw),
    }
}

#[test]
fn a_trace_folder_imports_with_scaled_taps_and_the_instruction() {
    let dir = fixture();
    assert_eq!(
        detect_format(&dir).expect("detects"),
        InputFormat::AndroidTrace
    );
    let imported = import_path(&dir, &ImportOptions::default()).expect("imports");
    assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
    let t = &imported.trajectories[0];
    assert_eq!(t.source.format, "android-trace");
    assert_eq!(
        t.goal.as_deref(),
        Some("Add a note that says Buy oat milk.")
    );
    assert_eq!(t.extra["episode"], json!("27"));
    assert_eq!((t.nodes.len(), t.edges.len()), (4, 3));

    // The tap was logged on a 540×1200 screen; the dumps are 1080×2400.
    let tap = &t.edges[0];
    assert_eq!(tap.action.format, ActionFormat::AndroidJson);
    assert_eq!(
        android(&tap.action),
        &AndroidAction::Click {
            target: AndroidTarget::Point {
                x_px: 948.0,
                y_px: 2220.0
            }
        }
    );
    assert_eq!(
        tap.extra["logged"],
        json!({"resolution": [540.0, 1200.0], "x": 474.0, "y": 1110.0})
    );
    assert_eq!(
        tap.extra["event"],
        json!("[Click] Screen Resolution (540, 1200), Click Position (474, 1110)")
    );
    assert_eq!(
        android(&t.edges[1].action),
        &AndroidAction::Type {
            text: "Buy oat milk".into(),
            target: None
        }
    );
    // Same resolution: not scaled; the finger moves up.
    let swipe = &t.edges[2];
    let raw: Value = serde_json::from_str(&swipe.action.raw).expect("json");
    assert_eq!(
        raw,
        json!({"action_type": "swipe", "x": 540.0, "y": 1800.0, "direction": "up", "end_x": 560.0, "end_y": 600.0})
    );
    assert!(!swipe.extra.contains_key("logged"));
    // The last event is taken from the last state: kept there.
    let last = t.node(NodeId(3)).expect("last");
    assert_eq!(
        last.extra["final_action"],
        json!(r#"{"action_type":"navigate_back"}"#)
    );
    assert_eq!(last.extra["screenshot_path"], json!("3.png"));
    // `N.png` beside the dump is the state's screenshot (its header read).
    let shot = last.screenshot.as_ref().expect("3.png kept");
    assert_eq!(
        (shot.width_px, shot.height_px, shot.byte_length),
        (1, 1, 70)
    );
    assert!(t.node(NodeId(2)).expect("2").screenshot.is_none());
    assert!(
        !t.node(NodeId(2))
            .expect("2")
            .extra
            .contains_key("screenshot_path")
    );

    let first = t
        .node(NodeId(0))
        .and_then(|n| n.real.as_ref())
        .expect("obs");
    assert_eq!(first.representation, Representation::AndroidXml);
    assert!(first.text.contains("Groceries"));
    assert_eq!(
        first.metadata.extra["activity"],
        json!("com.pinecone.notes/.NoteListActivity")
    );
    let screen = first.metadata.screen.expect("screen");
    assert_eq!((screen.width_px, screen.height_px), (1080, 2400));
}

#[test]
fn event_lines_read_in_both_wordings() {
    let zh = parse_event("【点击事件】屏幕大小：（w1080，h2400），触摸位置：（x540，y1200）")
        .expect("tap");
    assert_eq!(zh.resolution, Some((1080.0, 2400.0)));
    assert_eq!(
        Value::Object(zh.action),
        json!({"action_type": "click", "x": 540.0, "y": 1200.0})
    );
    let swipe = parse_event(
        "【滑动事件】屏幕大小：（w1080，h2400），起始位置：（x900，y1000），结束位置：（x100，y1040）",
    )
    .expect("swipe");
    assert_eq!(swipe.action["direction"], json!("left"));
    assert_eq!(
        Value::Object(parse_event("【键盘输入】你好").expect("text").action),
        json!({"action_type": "input_text", "text": "你好"})
    );
    assert_eq!(
        Value::Object(parse_event("【Home键】").expect("home").action),
        json!({"action_type": "navigate_home"})
    );
    assert_eq!(parse_event("[Shake] twice"), None);
    assert_eq!(parse_event("[Click] somewhere"), None);
}

#[test]
fn an_unknown_event_and_a_missing_dump_are_warned_with_their_line() {
    let dir = tempfile::tempdir().expect("dir");
    for n in [0, 2] {
        std::fs::copy(
            fixture().join(format!("{n}.xml")),
            dir.path().join(format!("{n}.xml")),
        )
        .expect("copy");
    }
    std::fs::write(
        dir.path().join("eventStructs.txt"),
        "[Shake] twice\n[Home]\n",
    )
    .expect("events");
    let imported = import_path(dir.path(), &ImportOptions::default()).expect("imports");
    let t = &imported.trajectories[0];
    assert_eq!(t.edges[0].action.raw, "[Shake] twice");
    assert!(t.node(NodeId(1)).expect("1").real.is_none());
    let lines: Vec<String> = imported.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("no 1.xml")), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("eventStructs.txt:1: an event of no known kind")),
        "{lines:?}"
    );
}
