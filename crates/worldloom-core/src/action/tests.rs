//! Tests of action parsing, problems and targets.

use super::*;
use serde_json::json;

#[test]
fn browsergym_click_and_fill() {
    let a = Action::new("click('12')", ActionFormat::Browsergym);
    let Some(ParsedAction::Browsergym { calls }) = a.parsed else {
        panic!("not parsed")
    };
    assert_eq!(calls[0].function, "click");
    assert_eq!(calls[0].args, vec![json!("12")]);

    let calls = parse_python_calls(r#"fill('41', 'it\'s "fine"\n')"#).expect("parses");
    assert_eq!(calls[0].args, vec![json!("41"), json!("it's \"fine\"\n")]);
}

#[test]
fn browsergym_keywords_lists_and_multiple_lines() {
    let calls =
        parse_python_calls("click('a51', button='right', modifiers=['Shift'])\nscroll(0, -120.5)")
            .expect("parses");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].kwargs.get("button"), Some(&json!("right")));
    assert_eq!(calls[0].kwargs.get("modifiers"), Some(&json!(["Shift"])));
    assert_eq!(calls[1].args, vec![json!(0), json!(-120.5)]);
    assert_eq!(
        parse_python_calls("select_option('7', [\"Red\", 'Blue'])").expect("parses")[0].args[1],
        json!(["Red", "Blue"])
    );
}

#[test]
fn python_strings_escapes_and_triple_quotes() {
    assert_eq!(
        parse_python_literal(r"'caf\xe9 \u00e9 \101'"),
        Some(json!("café é A"))
    );
    assert_eq!(parse_python_literal(r"r'C:\new'"), Some(json!("C:\\new")));
    assert_eq!(
        parse_python_literal("'''a 'b'\nc'''"),
        Some(json!("a 'b'\nc"))
    );
    assert_eq!(
        parse_python_literal("\"Ünïcødé 语言\""),
        Some(json!("Ünïcødé 语言"))
    );
    assert_eq!(
        parse_python_literal("{'a': (1, None, True)}"),
        Some(json!({"a": [1, null, true]}))
    );
    assert_eq!(parse_python_literal("'unterminated"), None);
}

#[test]
fn non_calls_do_not_parse() {
    assert!(parse_python_calls("click(12").is_none());
    assert!(parse_python_calls("x = 3").is_none());
    assert!(parse_python_calls("").is_none());
    assert!(
        Action::new("noop()", ActionFormat::Browsergym)
            .parsed
            .is_some()
    );
}

#[test]
fn android_actions() {
    let click = AndroidAction::from_json(&json!({"action_type": "click", "x": 540, "y": 1200}));
    assert_eq!(
        click,
        Some(AndroidAction::Click {
            target: AndroidTarget::Point {
                x_px: 540.0,
                y_px: 1200.0
            }
        })
    );
    let by_id =
        AndroidAction::from_json(&json!({"action_type": "click", "element": "com.app:id/send"}));
    assert_eq!(
        by_id,
        Some(AndroidAction::Click {
            target: AndroidTarget::Element {
                element: "com.app:id/send".into()
            }
        })
    );
    assert_eq!(
        AndroidAction::from_json(&json!({"action_type": "type", "text": "hi"})),
        Some(AndroidAction::Type {
            text: "hi".into(),
            target: None
        })
    );
    assert_eq!(
        AndroidAction::from_json(&json!({"action_type": "navigate_back"})),
        Some(AndroidAction::NavigateBack)
    );
    assert_eq!(
        AndroidAction::from_json(&json!({"action_type": "open_app", "app_name": "Settings"})),
        Some(AndroidAction::OpenApp {
            app_name: "Settings".into()
        })
    );
    assert_eq!(AndroidAction::from_json(&json!({"x": 1})), None);
    let a = Action::new(
        r#"{"action_type": "scroll", "direction": "down"}"#,
        ActionFormat::AndroidJson,
    );
    assert!(matches!(
        a.parsed,
        Some(ParsedAction::Android {
            action: AndroidAction::Scroll { .. }
        })
    ));
}

#[test]
fn tool_call_json_in_fence() {
    let a = Action::new(
        "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n```",
        ActionFormat::ToolCall,
    );
    assert_eq!(
        a.parsed,
        Some(ParsedAction::Json {
            value: json!({"name": "read_file", "arguments": {"path": "a.txt"}})
        })
    );
    assert!(
        Action::new("pyautogui.click(1, 2)", ActionFormat::Pyautogui)
            .parsed
            .is_none()
    );
}

fn target(raw: &str, format: ActionFormat) -> Option<ActionTarget> {
    Action::new(raw, format).target()
}

#[test]
fn browsergym_targets_name_the_first_bid_or_point() {
    let bid = |verb: &str, bid: &str| {
        Some(ActionTarget::Bid {
            verb: verb.into(),
            bid: bid.into(),
        })
    };
    assert_eq!(
        target("click('12')", ActionFormat::Browsergym),
        bid("click", "12")
    );
    assert_eq!(
        target("fill('a41', 'hello')", ActionFormat::Browsergym),
        bid("fill", "a41")
    );
    // The first call that names an element wins; a bare integer bid is
    // its decimal text; keywords are read.
    assert_eq!(
        target("noop()\nselect_option(7, 'Red')", ActionFormat::Browsergym),
        bid("select_option", "7")
    );
    assert_eq!(
        target(
            "drag_and_drop(from_bid='3', to_bid='9')",
            ActionFormat::Browsergym
        ),
        bid("drag_and_drop", "3")
    );
    assert_eq!(
        target("mouse_click(120.5, 64)", ActionFormat::Browsergym),
        Some(ActionTarget::Point {
            verb: "mouse_click".into(),
            x_px: 120.5,
            y_px: 64.0
        })
    );
    assert_eq!(
        target("keyboard_press('Enter')", ActionFormat::Browsergym),
        None
    );
    assert_eq!(target("scroll(0, 200)", ActionFormat::Browsergym), None);
    assert_eq!(target("click(", ActionFormat::Browsergym), None);
    // An action read back without its parsed form is parsed on demand.
    let stored = Action {
        raw: "click('14')".into(),
        format: ActionFormat::Browsergym,
        parsed: None,
    };
    assert_eq!(stored.target(), bid("click", "14"));
}

#[test]
fn android_targets_are_taps_presses_fields_and_swipe_starts() {
    let point = |verb: &str, x: f64, y: f64| {
        Some(ActionTarget::Point {
            verb: verb.into(),
            x_px: x,
            y_px: y,
        })
    };
    let a = ActionFormat::AndroidJson;
    assert_eq!(
        target(r#"{"action_type": "click", "x": 540, "y": 398}"#, a),
        point("click", 540.0, 398.0)
    );
    assert_eq!(
        target(r#"{"action_type": "long_press", "x": 10, "y": 20}"#, a),
        point("long_press", 10.0, 20.0)
    );
    assert_eq!(
        target(
            r#"{"action_type": "swipe", "direction": "up", "x": 500, "y": 1800}"#,
            a
        ),
        point("scroll", 500.0, 1800.0)
    );
    assert_eq!(
        target(
            r#"{"action_type": "input_text", "text": "hi", "resource_id": "com.app:id/msg"}"#,
            a
        ),
        Some(ActionTarget::Element {
            verb: "type".into(),
            element: "com.app:id/msg".into()
        })
    );
    assert_eq!(target(r#"{"action_type": "type", "text": "hi"}"#, a), None);
    assert_eq!(target(r#"{"action_type": "navigate_back"}"#, a), None);
    assert_eq!(
        target(r#"{"action_type": "scroll", "direction": "down"}"#, a),
        None
    );
}

#[test]
fn pyautogui_targets_are_pointer_calls_with_coordinates() {
    let p = ActionFormat::Pyautogui;
    assert_eq!(
        target("pyautogui.click(785, 307)", p),
        Some(ActionTarget::Point {
            verb: "pyautogui.click".into(),
            x_px: 785.0,
            y_px: 307.0
        })
    );
    // Other statements are skipped; keywords are read.
    assert_eq!(
        target(
            "import pyautogui\ntime.sleep(0.5); pyautogui.doubleClick(x=10, y=20, interval=0.1)",
            p
        ),
        Some(ActionTarget::Point {
            verb: "pyautogui.doubleClick".into(),
            x_px: 10.0,
            y_px: 20.0
        })
    );
    assert_eq!(target("pyautogui.click()", p), None);
    assert_eq!(target("pyautogui.write('hello')", p), None);
    assert_eq!(target("pyautogui.press('f2')", p), None);
    assert_eq!(target("DONE", p), None);
}
