//! The edit form's commands through `dispatch`, as the studio sends them:
//! `action_space`, `parse_action` (the form's fields under their raw names)
//! and `format_action` (fields back to the text, or the bad parameter), in
//! every domain.

#[allow(dead_code)] // the shared helpers this file does not call
mod common;

use serde_json::{Value, json};
use worldloom_api::{Studio, dispatch};

fn call(studio: &Studio, command: &str, request: Value) -> Value {
    dispatch(studio, command, request).unwrap_or_else(|e| panic!("{command}: {e:?}"))
}

/// `parse_action` of `raw` gives `name` and `fields`; `format_action` of
/// them gives `written`, which parses to the same fields again.
fn round_trip(studio: &Studio, domain: &str, raw: &str, name: &str, fields: Value, written: &str) {
    let parsed = call(
        studio,
        "parse_action",
        json!({"domain": domain, "raw": raw}),
    );
    assert_eq!(parsed["form_problem"], Value::Null, "{raw}: {parsed}");
    assert_eq!(
        parsed["form"],
        json!({"name": name, "fields": fields}),
        "{raw}"
    );
    let formatted = call(
        studio,
        "format_action",
        json!({"domain": domain, "action": parsed["form"]}),
    );
    assert_eq!(formatted, json!({"raw": written, "problem": null}), "{raw}");
    let again = call(
        studio,
        "parse_action",
        json!({"domain": domain, "raw": written}),
    );
    assert_eq!(again["form"], parsed["form"], "{written}");
    assert_eq!(again["error"], Value::Null, "{written}: {again}");
}

#[test]
fn action_space_lists_each_domains_actions() {
    let (_dir, studio) = common::studio();
    let web = call(&studio, "action_space", json!({"domain": "web"}));
    assert_eq!(web["format"], "browsergym");
    assert_eq!(web["actions"][0]["name"], "click");
    assert_eq!(
        web["actions"][0]["params"][0],
        json!({"name": "bid", "kind": "string", "required": true,
               "description": "the element's [bid] in the accessibility tree"})
    );
    let os = call(&studio, "action_space", json!({"domain": "os"}));
    assert_eq!(os["format"], "pyautogui");
    let names: Vec<&str> = os["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .filter_map(|a| a["name"].as_str())
        .collect();
    assert!(
        names.contains(&"hotkey") && names.contains(&"FAIL"),
        "{names:?}"
    );
    let android = call(&studio, "action_space", json!({"domain": "android"}));
    assert_eq!(android["format"], "android-json");
    for domain in ["mcp", "swe"] {
        let tools = call(&studio, "action_space", json!({"domain": domain}));
        assert_eq!(tools["actions"][0]["name"], "tool_call", "{domain}");
        assert_eq!(tools["actions"][0]["params"][1]["kind"], "json", "{domain}");
    }
    for domain in ["terminal", "search"] {
        let free = call(&studio, "action_space", json!({"domain": domain}));
        assert_eq!(free["actions"], json!([]), "{domain}");
    }
}

#[test]
fn parse_and_format_round_trip_in_every_domain_with_a_form() {
    let (_dir, studio) = common::studio();
    round_trip(
        &studio,
        "web",
        "fill('41', \"it's\")",
        "fill",
        json!({"bid": "41", "value": "it's"}),
        r"fill('41', 'it\'s')",
    );
    round_trip(
        &studio,
        "android",
        r#"{"action_type": "click", "x": 540, "y": 559}"#,
        "click",
        json!({"x": "540", "y": "559", "element": ""}),
        r#"{"action_type": "click", "x": 540, "y": 559}"#,
    );
    round_trip(
        &studio,
        "os",
        "pyautogui.hotkey('ctrl', 's')",
        "hotkey",
        json!({"keys": "ctrl, s"}),
        "pyautogui.hotkey('ctrl', 's')",
    );
    round_trip(&studio, "os", "DONE", "DONE", json!({}), "DONE");
    for domain in ["mcp", "swe"] {
        round_trip(
            &studio,
            domain,
            r#"{"name": "read_file", "arguments": {"path": "a.rs"}}"#,
            "tool_call",
            json!({"name": "read_file", "arguments": "{\n  \"path\": \"a.rs\"\n}"}),
            r#"{"name": "read_file", "arguments": {"path":"a.rs"}}"#,
        );
    }
}

#[test]
fn texts_outside_the_form_and_bad_fields_are_answered_with_problems() {
    let (_dir, studio) = common::studio();
    // Parses as BrowserGym, but two calls do not fit one form.
    let two = call(
        &studio,
        "parse_action",
        json!({"domain": "web", "raw": "click('1')\nclick('2')"}),
    );
    assert_eq!(two["error"], Value::Null);
    assert_eq!(two["form"], Value::Null);
    assert_eq!(two["form_problem"], "2 calls: the form holds one action");
    let shell = call(
        &studio,
        "parse_action",
        json!({"domain": "terminal", "raw": "ls -la"}),
    );
    assert_eq!(shell["form"], Value::Null);
    assert_eq!(
        shell["form_problem"],
        "shell commands have no form; edit the raw text"
    );
    let formatted = call(
        &studio,
        "format_action",
        json!({"domain": "os", "action": {"name": "click", "fields": {"x": "12", "y": "abc"}}}),
    );
    assert_eq!(
        formatted,
        json!({"raw": null, "problem": {"param": "y", "message": "click: y: a number is needed, got \"abc\""}})
    );
    let formatted = call(
        &studio,
        "format_action",
        json!({"domain": "android", "action": {"name": "open_app", "fields": {}}}),
    );
    assert_eq!(formatted["problem"]["param"], "app_name");
    assert_eq!(
        formatted["problem"]["message"],
        "open_app: app_name is required"
    );
    let formatted = call(
        &studio,
        "format_action",
        json!({"domain": "search", "action": {"name": "text", "fields": {}}}),
    );
    assert_eq!(formatted["problem"]["param"], Value::Null);
    // A request of the wrong shape is a bad request naming the command.
    let err = dispatch(&studio, "format_action", json!({"domain": "web"})).expect_err("no action");
    assert!(
        err.message.starts_with("format_action: request:"),
        "{}",
        err.message
    );
}
