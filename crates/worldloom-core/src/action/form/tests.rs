//! Tests of the action catalogues and of reading and writing forms.

use super::*;

fn fields(name: &str, pairs: &[(&str, &str)]) -> ActionFields {
    ActionFields {
        name: name.to_owned(),
        fields: pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    }
}

/// Reads `raw`, checks the fields, writes them back and checks the text.
fn round_trip(format: ActionFormat, raw: &str, name: &str, want: &[(&str, &str)], written: &str) {
    let form = read_fields(raw, format).unwrap_or_else(|e| panic!("{raw}: {e}"));
    assert_eq!(form.name, name, "{raw}");
    for (k, v) in want {
        assert_eq!(
            form.fields.get(*k).map(String::as_str),
            Some(*v),
            "{raw}: {k}"
        );
    }
    let text = write_fields(&form, format).unwrap_or_else(|p| panic!("{raw}: {}", p.message));
    assert_eq!(text, written);
    assert_eq!(read_fields(&text, format).as_ref(), Ok(&form), "{written}");
}

#[test]
fn catalogues_per_language() {
    let web = catalogue(ActionFormat::Browsergym);
    let click = web.iter().find(|a| a.name == "click").expect("click");
    assert_eq!(click.params[0].name, "bid");
    assert_eq!(click.params[0].kind, ParamKind::String);
    assert!(click.params[0].required);
    assert!(!click.params[1].required);
    assert!(!click.description.is_empty());
    let os = catalogue(ActionFormat::Pyautogui);
    let names: Vec<&str> = os.iter().map(|a| a.name.as_str()).collect();
    assert!(names.contains(&"doubleClick") && names.contains(&"DONE"));
    let hotkey = os.iter().find(|a| a.name == "hotkey").expect("hotkey");
    assert_eq!(hotkey.params[0].kind, ParamKind::List);
    let android = catalogue(ActionFormat::AndroidJson);
    let tap = android.iter().find(|a| a.name == "click").expect("click");
    let keys: Vec<&str> = tap.params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(keys, ["x", "y", "element"]);
    assert_eq!(catalogue(ActionFormat::ToolCall)[0].name, TOOL_CALL);
    assert!(catalogue(ActionFormat::Shell).is_empty());
    assert!(catalogue(ActionFormat::Text).is_empty());
}

#[test]
fn browsergym_round_trips() {
    let f = ActionFormat::Browsergym;
    round_trip(
        f,
        "click('12')",
        "click",
        &[("bid", "12"), ("button", "")],
        "click('12')",
    );
    round_trip(
        f,
        "click('a51', button='right')",
        "click",
        &[("bid", "a51"), ("button", "right")],
        "click('a51', 'right')",
    );
    round_trip(
        f,
        r#"fill("41", "it's\nfine")"#,
        "fill",
        &[("bid", "41"), ("value", "it's\nfine")],
        r"fill('41', 'it\'s\nfine')",
    );
    round_trip(
        f,
        "scroll(0, -120.5)",
        "scroll",
        &[("delta_x", "0"), ("delta_y", "-120.5")],
        "scroll(0, -120.5)",
    );
    round_trip(f, "go_back()", "go_back", &[], "go_back()");
    round_trip(f, "noop()", "noop", &[("wait_ms", "")], "noop()");
    // A number written as a bid is read as its text.
    round_trip(f, "click(12)", "click", &[("bid", "12")], "click('12')");
}

#[test]
fn browsergym_texts_that_do_not_fit() {
    let f = ActionFormat::Browsergym;
    let err = |raw: &str| read_fields(raw, f).expect_err(raw);
    assert!(err("click('1')\nclick('2')").contains("2 calls"));
    assert!(err("mouse_wheel(1)").contains("not in the form"));
    assert!(err("click('1', modifiers=['Shift'])").contains("keyword `modifiers`"));
    assert!(err("click('1'").contains("not one call"));
    assert!(err("scroll('a', 1)").contains("delta_x is not a number"));
    assert_eq!(err("  "), "the action is empty");
}

#[test]
fn pyautogui_round_trips() {
    let f = ActionFormat::Pyautogui;
    round_trip(
        f,
        "pyautogui.click(640, 360)",
        "click",
        &[("x", "640"), ("y", "360")],
        "pyautogui.click(640, 360)",
    );
    round_trip(
        f,
        "pyautogui.doubleClick(x=10, y=20.5)",
        "doubleClick",
        &[("x", "10"), ("y", "20.5")],
        "pyautogui.doubleClick(10, 20.5)",
    );
    round_trip(
        f,
        "pyautogui.hotkey('ctrl', 's')",
        "hotkey",
        &[("keys", "ctrl, s")],
        "pyautogui.hotkey('ctrl', 's')",
    );
    round_trip(
        f,
        "pyautogui.write('hello world')",
        "write",
        &[("message", "hello world")],
        "pyautogui.write('hello world')",
    );
    round_trip(
        f,
        "pyautogui.scroll(-3)",
        "scroll",
        &[("clicks", "-3")],
        "pyautogui.scroll(-3)",
    );
    round_trip(f, " DONE ", "DONE", &[], "DONE");
    round_trip(f, "WAIT", "WAIT", &[], "WAIT");
    // An optional parameter after a missing one is written as a keyword.
    let text =
        write_fields(&fields("scroll", &[("clicks", "5"), ("y", "300")]), f).expect("writes");
    assert_eq!(text, "pyautogui.scroll(5, y=300)");
    assert_eq!(read_fields(&text, f).expect("reads").fields["y"], "300");
}

#[test]
fn pyautogui_texts_that_do_not_fit() {
    let f = ActionFormat::Pyautogui;
    let err = |raw: &str| read_fields(raw, f).expect_err(raw);
    assert!(err("click(1, 2)").contains("`click` is not a pyautogui.call"));
    assert!(err("import pyautogui\npyautogui.click(1, 2)").contains("not one pyautogui.call"));
    assert!(err("pyautogui.click(1, 2)\npyautogui.write('x')").contains("2 calls"));
    assert!(err("pyautogui.locateOnScreen('a.png')").contains("not in the form"));
    assert!(err("pyautogui.click(1, 2, 3)").contains("3 arguments"));
}

#[test]
fn android_round_trips_keep_the_raw_keys() {
    let f = ActionFormat::AndroidJson;
    round_trip(
        f,
        r#"{"action_type": "click", "x": 540, "y": 559}"#,
        "click",
        &[("x", "540"), ("y", "559"), ("element", "")],
        r#"{"action_type": "click", "x": 540, "y": 559}"#,
    );
    round_trip(
        f,
        r#"{"y":12.5,"x":3,"action_type":"long_press"}"#,
        "long_press",
        &[("x", "3"), ("y", "12.5")],
        r#"{"action_type": "long_press", "x": 3, "y": 12.5}"#,
    );
    round_trip(
        f,
        r#"{"action_type": "click", "element": "com.app:id/ok"}"#,
        "click",
        &[("element", "com.app:id/ok"), ("x", "")],
        r#"{"action_type": "click", "element": "com.app:id/ok"}"#,
    );
    round_trip(
        f,
        r#"{"action_type": "type", "text": "say \"hi\""}"#,
        "type",
        &[("text", "say \"hi\"")],
        r#"{"action_type": "type", "text": "say \"hi\""}"#,
    );
    round_trip(
        f,
        r#"{"action_type": "status", "goal_status": "complete"}"#,
        "status",
        &[("goal_status", "complete")],
        r#"{"action_type": "status", "goal_status": "complete"}"#,
    );
    round_trip(
        f,
        r#"{"action_type":"navigate_back"}"#,
        "navigate_back",
        &[],
        r#"{"action_type": "navigate_back"}"#,
    );
}

#[test]
fn android_texts_that_do_not_fit() {
    let f = ActionFormat::AndroidJson;
    let err = |raw: &str| read_fields(raw, f).expect_err(raw);
    assert!(err("{\"action_type\": \"click\",").starts_with("line 1, column"));
    assert!(err("[1]").contains("not a JSON object"));
    assert!(err(r#"{"x": 1}"#).contains("no string `action_type`"));
    assert!(err(r#"{"action_type": "pinch"}"#).contains("`pinch` is not in the form"));
    assert!(err(r#"{"action_type": "click", "x": 1, "y": 2, "z": 3}"#).contains("key `z`"));
    assert!(err(r#"{"action_type": "click", "x": [1], "y": 2}"#).contains("x is not a number"));
}

#[test]
fn tool_call_round_trips() {
    let f = ActionFormat::ToolCall;
    let form = read_fields(
        "```json\n{\"name\": \"search\", \"arguments\": {\"q\": \"rust\", \"n\": 3}}\n```",
        f,
    )
    .expect("reads");
    assert_eq!(form.name, TOOL_CALL);
    assert_eq!(form.fields["name"], "search");
    assert_eq!(
        form.fields["arguments"],
        "{\n  \"q\": \"rust\",\n  \"n\": 3\n}"
    );
    let text = write_fields(&form, f).expect("writes");
    assert_eq!(
        text,
        r#"{"name": "search", "arguments": {"q":"rust","n":3}}"#
    );
    assert_eq!(read_fields(&text, f), Ok(form));
    // No arguments: an empty object.
    let text = write_fields(&fields(TOOL_CALL, &[("name", "finish")]), f).expect("writes");
    assert_eq!(text, r#"{"name": "finish", "arguments": {}}"#);
    assert!(
        read_fields(r#"{"tool": "view", "path": "a.rs"}"#, f)
            .expect_err("not name/arguments")
            .contains("no string `name`")
    );
}

#[test]
fn free_text_languages_have_no_form() {
    for f in [ActionFormat::Shell, ActionFormat::Text] {
        assert!(
            read_fields("ls -la", f)
                .expect_err("no form")
                .contains("no form")
        );
        let p = write_fields(&fields("command", &[]), f).expect_err("no form");
        assert_eq!(p.param, None);
    }
}

#[test]
fn problems_name_the_parameter() {
    let problem = |form: ActionFields, format| write_fields(&form, format).expect_err("a problem");
    let p = problem(fields("click", &[("bid", " ")]), ActionFormat::Browsergym);
    assert_eq!(
        (p.param.as_deref(), p.message.as_str()),
        (Some("bid"), "click: bid is required")
    );
    let p = problem(
        fields("scroll", &[("delta_x", "0"), ("delta_y", "1e3")]),
        ActionFormat::Browsergym,
    );
    assert_eq!(p.param.as_deref(), Some("delta_y"));
    assert_eq!(
        p.message,
        "scroll: delta_y: a number is needed, got \"1e3\""
    );
    let p = problem(fields("go_back", &[("bid", "3")]), ActionFormat::Browsergym);
    assert_eq!(p.param.as_deref(), Some("bid"));
    assert_eq!(p.message, "go_back: no parameter bid (it takes none)");
    let p = problem(fields("teleport", &[]), ActionFormat::Browsergym);
    assert_eq!(p.param, None);
    assert!(
        p.message
            .starts_with("unknown action `teleport` (known: click, ")
    );
    let p = problem(fields("click", &[("x", "10")]), ActionFormat::Pyautogui);
    assert_eq!(
        (p.param.as_deref(), p.message.as_str()),
        (Some("y"), "click: y is required")
    );
    let p = problem(fields("click", &[("x", "10")]), ActionFormat::AndroidJson);
    assert_eq!(
        (p.param.as_deref(), p.message.as_str()),
        (Some("y"), "click: y is needed with x")
    );
    let p = problem(fields("click", &[]), ActionFormat::AndroidJson);
    assert_eq!(
        (p.param.as_deref(), p.message.as_str()),
        (Some("x"), "click: give x and y, or element")
    );
    let p = problem(
        fields("click", &[("x", "1"), ("y", "2"), ("element", "3")]),
        ActionFormat::AndroidJson,
    );
    assert_eq!(p.param.as_deref(), Some("element"));
    let p = problem(
        fields(TOOL_CALL, &[("name", "f"), ("arguments", "[1]")]),
        ActionFormat::ToolCall,
    );
    assert_eq!(p.param.as_deref(), Some("arguments"));
    assert_eq!(p.message, "tool_call: arguments: a JSON object is needed");
    let p = problem(
        fields(TOOL_CALL, &[("name", "f"), ("arguments", "{")]),
        ActionFormat::ToolCall,
    );
    assert!(
        p.message
            .starts_with("tool_call: arguments: line 1, column 1: not JSON"),
        "{}",
        p.message
    );
    let p = problem(
        fields(TOOL_CALL, &[("arguments", "{}")]),
        ActionFormat::ToolCall,
    );
    assert_eq!(p.message, "tool_call: name is required");
}

#[test]
fn python_strings_escape_what_the_parser_reads_back() {
    let text = "a\\b'c\"d\n\te\r";
    let literal = python_string(text);
    assert_eq!(literal, r#"'a\\b\'c"d\n\te\r'"#);
    assert_eq!(
        crate::action::parse_python_literal(&literal),
        Some(Value::String(text.to_owned()))
    );
}
