//! Integration tests of worldloom-obs: parsers on committed fixtures
//! (snapshots), alignment and diff, metrics with hand-computed values, and
//! deep / large inputs.

use worldloom_core::domain::Representation;
use worldloom_obs::diff::{NodeStatus, diff_trees};
use worldloom_obs::metrics::{
    Anchor, AnchorStatus, EvalStatus, TreeMetrics, evaluate, tree_metrics,
};
use worldloom_obs::{BoundsAnomaly, ParseError, UiTree, WarningKind, parse, parse_bytes};

const PIZZA_BEFORE: &str = include_str!("fixtures/pizza_before.ax");
const PIZZA_AFTER: &str = include_str!("fixtures/pizza_after.ax");
const SHOP_HTML: &str = include_str!("fixtures/shop.html");
const SETTINGS_XML: &str = include_str!("fixtures/settings.xml");
const NOTES_XML: &str = include_str!("fixtures/notes.xml");
const NOTES_NEAR_XML: &str = include_str!("fixtures/notes_near_xml.xml");
const NOTES_TSV: &str = include_str!("fixtures/notes.tsv");
const NOTES_SPACES: &str = include_str!("fixtures/notes_spaces.txt");
const PROFILE_FORM: &str = include_str!("fixtures/profile_form.ax");

fn tree(text: &str, r: Representation) -> UiTree {
    match parse(text, r) {
        Ok(p) => p.tree,
        Err(e) => panic!("fixture does not parse as {r}: {e}"),
    }
}

/// `text` parsed as a BrowserGym accessibility tree.
fn axtree(text: &str) -> UiTree {
    tree(text, Representation::Axtree)
}

fn find<'a>(t: &'a UiTree, role: &str, name: &str) -> &'a worldloom_obs::UiNode {
    t.iter()
        .find(|n| n.role == role && n.name == name)
        .unwrap_or_else(|| panic!("no {role} {name:?}"))
}

fn by_key<'a>(t: &'a UiTree, key: &str) -> &'a worldloom_obs::UiNode {
    t.iter()
        .find(|n| n.key.as_deref() == Some(key))
        .unwrap_or_else(|| panic!("no node with key {key:?}"))
}

fn anchor<'a>(m: &'a TreeMetrics, name: &str) -> &'a Anchor {
    m.anchors
        .iter()
        .find(|a| a.anchor == name)
        .unwrap_or_else(|| panic!("no anchor {name:?}"))
}

// ---------------------------------------------------------------- parsers

#[test]
fn axtree_fixture() {
    let p = parse(PIZZA_BEFORE, Representation::Axtree).expect("parses");
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    insta::assert_snapshot!("axtree_pizza_before", p.tree.outline());
    let t = &p.tree;
    assert_eq!(t.real_node_count(), 11);
    let olives = find(t, "checkbox", "Olives");
    assert_eq!(olives.key.as_deref(), Some("14"));
    assert_eq!(olives.states.checked, Some(false));
    assert_eq!(olives.depth, 3);
    let combo = find(t, "combobox", "Size");
    assert_eq!(combo.attr("hasPopup"), Some("listbox"));
    assert_eq!(combo.states.expanded, Some(false));
    // The escape is kept as written (six characters), not decoded.
    let link = t.iter().find(|n| n.role == "link").expect("link");
    assert_eq!(link.name, "Menu \\ue604");
    assert_eq!(link.attr("url"), Some("https://pizza.example/menu"));
    assert_eq!(find(t, "textbox", "Name").value.as_deref(), Some("Ada"));
    // Spans point at the line.
    let span = olives.span.expect("span");
    assert_eq!(span.line, 4);
    assert_eq!(
        &PIZZA_BEFORE[span.start_byte..span.end_byte],
        "\t\t[14] checkbox 'Olives', clickable, visible, checked='false'"
    );
}

#[test]
fn axtree_indent_jump_is_warned() {
    let p = parse(
        "RootWebArea 'x'\n\t\t\t[3] button 'Deep'\n",
        Representation::Axtree,
    )
    .expect("parses");
    assert_eq!(p.warnings.len(), 1);
    assert_eq!(p.warnings[0].kind, WarningKind::IndentJump);
    assert_eq!(p.warnings[0].line, 2);
    assert_eq!(find(&p.tree, "button", "Deep").depth, 2);
}

#[test]
fn html_fixture() {
    let p = parse(SHOP_HTML, Representation::Html).expect("parses");
    insta::assert_snapshot!("html_shop", p.tree.outline());
    let t = &p.tree;
    assert_eq!(
        find(t, "title", "Tidy Shop – Cart").key.as_deref(),
        Some("2")
    );
    assert_eq!(find(t, "h1", "Your cart").key.as_deref(), Some("5"));
    assert_eq!(by_key(t, "8").states.checked, Some(true));
    assert_eq!(by_key(t, "9").value.as_deref(), Some("Ada Lovelace"));
    assert_eq!(by_key(t, "12").states.selected, Some(true));
    assert_eq!(by_key(t, "13").value.as_deref(), Some("Leave at door"));
    assert_eq!(by_key(t, "14").states.enabled, Some(false));
    // Script text is not page text; nothing ran.
    assert!(t.iter().all(|n| !n.name.contains("hacked")));
    // srcdoc frame, nested srcdoc frame, and a frame without bid with inline content.
    assert!(t.iter().any(|n| n.role == "b" && n.name == "frame"));
    assert!(t.iter().any(|n| n.role == "em" && n.name == "deepest"));
    let span_el = find(t, "span", "inline frame text");
    let frame = t
        .node(
            t.node(span_el.parent.expect("parent"))
                .parent
                .expect("html"),
        )
        .parent
        .expect("doc");
    assert_eq!(t.node(frame).role, "#document");
    assert_eq!(t.node(t.node(frame).parent.expect("iframe")).role, "iframe");
    // Pre-order arena: every parent precedes its children.
    assert!(t.iter().all(|n| n.parent.is_none_or(|p| p < n.id)));
    // Span of the h1 is its start tag.
    let h1 = find(t, "h1", "Your cart").span.expect("span");
    assert_eq!(&SHOP_HTML[h1.start_byte..h1.end_byte], "<h1 bid=\"5\">");
    assert_eq!(h1.line, 6);
}

#[test]
fn android_fixture_repairs_and_bounds() {
    let p = parse(SETTINGS_XML, Representation::AndroidXml).expect("parses");
    insta::assert_snapshot!("android_settings", p.tree.outline());
    let kinds: Vec<WarningKind> = p.warnings.iter().map(|w| w.kind).collect();
    assert_eq!(
        kinds,
        vec![
            WarningKind::ForbiddenCharacter,
            WarningKind::TrailingText,
            WarningKind::TrailingText
        ]
    );
    assert_eq!(p.warnings[0].line, 5);
    let t = &p.tree;
    assert_eq!(t.real_node_count(), 5);
    let title = by_key(t, "com.example.settings:id/title");
    assert_eq!(title.name, "Wi\u{2011}Fi \u{FFFD}");
    let b = title.bounds_px.as_ref().expect("bounds");
    assert_eq!((b.left, b.top, b.right, b.bottom), (-5, -20, 100, 50));
    assert_eq!(b.anomalies, vec![BoundsAnomaly::Negative]);
    let sw = t
        .iter()
        .find(|n| n.role == "android.widget.Switch")
        .expect("switch");
    assert_eq!(
        (sw.name.as_str(), sw.states.checked, sw.states.focused),
        ("Wi-Fi", Some(true), Some(true))
    );
    let ssid = t
        .iter()
        .find(|n| n.role == "android.widget.EditText")
        .expect("edit");
    assert_eq!(ssid.value.as_deref(), Some("Home"));
    assert_eq!(
        ssid.bounds_px.as_ref().map(|b| b.anomalies.clone()),
        Some(vec![BoundsAnomaly::Inverted])
    );
}

#[test]
fn android_raw_lone_surrogate_keeps_rest_of_dump() {
    let mut bytes = b"<hierarchy><node text=\"a".to_vec();
    bytes.extend_from_slice(b"\xED\xA0\xBD");
    bytes.extend_from_slice(
        b"b\" class=\"X\" bounds=\"[0,0][1,1]\"/><node text=\"after\" class=\"Y\"/></hierarchy>",
    );
    let p = parse_bytes(&bytes, Representation::AndroidXml).expect("parses");
    assert_eq!(p.warnings.len(), 1);
    assert_eq!(p.warnings[0].kind, WarningKind::InvalidUtf8);
    assert_eq!(p.warnings[0].byte, 24);
    assert_eq!(p.tree.node(worldloom_obs::NodeId(1)).name, "a\u{FFFD}b");
    assert_eq!(p.tree.node(worldloom_obs::NodeId(2)).name, "after");
    // Span of the second node is in original byte offsets (3 raw bytes, not 3+).
    let span = p.tree.node(worldloom_obs::NodeId(2)).span.expect("span");
    assert_eq!(&bytes[span.start_byte..span.start_byte + 5], b"<node");
}

/// `worldloom parse` (bytes to `parse_bytes`) and `worldloom import` (bytes
/// through `worldloom_core::text`, the stored text parsed later by the
/// studio) read the same bytes the same way: one U+FFFD per invalid
/// sequence and one warning naming the first byte offset.
#[test]
fn parse_and_import_replace_invalid_bytes_alike() {
    let mut bytes = b"<hierarchy>\n<node text=\"a".to_vec();
    // A lone surrogate (3 raw bytes), a surrogate pair in CESU-8 (6), Latin-1.
    bytes.extend_from_slice(b"\xED\xA0\xBDb\xED\xA0\xBD\xED\xB8\x80c\xE9");
    bytes.extend_from_slice(b"\" class=\"X\" bounds=\"[0,0][1,1]\"/></hierarchy>");
    let expected_name = "a\u{FFFD}b\u{FFFD}c\u{FFFD}";
    let message = "not valid UTF-8: 3 invalid byte sequence(s) replaced by U+FFFD, the first at byte offset 25";

    let parsed = parse_bytes(&bytes, Representation::AndroidXml).expect("parses");
    assert_eq!(
        parsed.tree.node(worldloom_obs::NodeId(1)).name,
        expected_name
    );
    assert_eq!(parsed.warnings.len(), 1, "{:?}", parsed.warnings);
    assert_eq!(parsed.warnings[0].kind, WarningKind::InvalidUtf8);
    assert_eq!((parsed.warnings[0].line, parsed.warnings[0].byte), (2, 25));
    assert_eq!(parsed.warnings[0].message, message);

    let imported =
        worldloom_core::text::decode_utf8_lossy(std::path::Path::new("dump.xml"), &bytes);
    let warning = imported.warning.expect("one warning");
    assert_eq!(
        warning.to_string(),
        format!("dump.xml:2 (byte 25): {message}")
    );
    let stored = parse(&imported.text, Representation::AndroidXml).expect("parses");
    assert_eq!(
        stored.tree.node(worldloom_obs::NodeId(1)).name,
        expected_name
    );
    assert!(stored.warnings.is_empty(), "{:?}", stored.warnings);
    assert_eq!(worldloom_core::text::lossy(&bytes), imported.text);
}

#[test]
fn android_failed_capture_and_syntax_error() {
    match parse(
        "ERROR: could not get idle state.\n",
        Representation::AndroidXml,
    ) {
        Err(ParseError::FailedCapture { message }) => {
            assert_eq!(message, "ERROR: could not get idle state.")
        }
        other => panic!("expected failed capture, got {other:?}"),
    }
    match parse(
        "<hierarchy>\n  <node text=\"x\">\n</hierarchy>",
        Representation::AndroidXml,
    ) {
        Err(ParseError::Syntax { line, column, .. }) => assert_eq!((line, column), (3, 1)),
        other => panic!("expected syntax error, got {other:?}"),
    }
}

#[test]
fn os_xml_fixture() {
    let p = parse(NOTES_XML, Representation::OsXml).expect("parses");
    assert!(p.warnings.is_empty());
    insta::assert_snapshot!("os_xml_notes", p.tree.outline());
    let t = &p.tree;
    let text = find(t, "text", "");
    assert_eq!(text.value.as_deref(), Some("hello world"));
    assert_eq!(text.states.focused, Some(true));
    assert_eq!(text.states.editable, Some(true));
    assert!(text.attributes.iter().any(|a| a.name == "st:multi_line"));
    let b = text.bounds_px.as_ref().expect("bounds");
    assert_eq!((b.left, b.top, b.right, b.bottom), (100, 100, 900, 600));
    let wrap = find(t, "check-box", "Wrap lines");
    assert_eq!(wrap.states.checked, Some(false));
    assert_eq!(
        wrap.bounds_px.as_ref().map(|b| b.anomalies.clone()),
        Some(vec![BoundsAnomaly::Negative, BoundsAnomaly::Inverted])
    );
    assert_eq!(find(t, "scroll-bar", "").value.as_deref(), Some("0.0"));
    // AT-SPI has no element identity; a path key of ancestor names would
    // not survive a renamed window, so OS XML nodes carry none.
    assert!(t.iter().all(|n| n.key.is_none()));
}

#[test]
fn axtree_value_after_name_is_a_value_not_part_of_an_attribute() {
    let t = &axtree(PROFILE_FORM);
    let name = find(t, "textbox", "Name");
    assert_eq!(name.key.as_deref(), Some("23"));
    assert_eq!(name.value.as_deref(), Some("Ada"));
    assert_eq!(name.states.focused, Some(true));
    let attrs: Vec<(&str, &str)> = name
        .attributes
        .iter()
        .map(|a| (a.name.as_str(), a.value.as_str()))
        .collect();
    assert_eq!(
        attrs,
        vec![
            ("value", "Ada"),
            ("clickable", ""),
            ("visible", ""),
            ("focused", ""),
            ("required", "")
        ]
    );
    assert_eq!(find(t, "checkbox", "Newsletter").states.checked, Some(true));
    let tz = find(t, "combobox", "Time zone");
    assert_eq!(tz.value.as_deref(), Some("(UTC+01:00) Paris, Madrid"));
    assert_eq!(tz.states.expanded, Some(false));
    assert_eq!(tz.attr("hasPopup"), Some("menu"));
    assert_eq!(find(t, "button", "Save").states.enabled, Some(false));
    let sort = find(t, "combobox", "Sort");
    assert_eq!(sort.attr("hasPopup"), Some("menu"));
    assert_eq!(sort.states.expanded, Some(false));

    // A predicted value change is one changed field, not a renamed node.
    let pred = axtree(&PROFILE_FORM.replace("value='Ada'", "value='Grace'"));
    let (m, _, diff) = tree_metrics(t, &pred, None);
    assert_eq!(diff.summary.changed, 1);
    match &diff.real[name.id.index()] {
        NodeStatus::Changed { changes, .. } => {
            let fields: Vec<&str> = changes.iter().map(|c| c.field.as_str()).collect();
            assert_eq!(fields, vec!["value", "attr:value"]);
            assert_eq!(changes[0].real.as_deref(), Some("Ada"));
            assert_eq!(changes[0].pred.as_deref(), Some("Grace"));
        }
        other => panic!("expected changed, got {other:?}"),
    }
    // Same role, name and key: still a node-F1 true positive.
    assert_eq!(m.node_f1, 1.0);
}

#[test]
fn os_xml_renamed_window_changes_one_node_not_its_subtree() {
    let real = tree(NOTES_XML, Representation::OsXml);
    let pred = tree(
        &NOTES_XML
            .replace("Notes - Editor", "Untitled - Editor")
            .replace("hello world", "hello"),
        Representation::OsXml,
    );
    let (m, _, diff) = tree_metrics(&real, &pred, Some(&real));
    // 8 nodes: the frame and the text differ, everything else is unchanged.
    assert_eq!(real.real_node_count(), 8);
    assert_eq!(diff.summary.changed, 2);
    assert_eq!(diff.summary.unchanged, 6);
    assert_eq!(diff.summary.added + diff.summary.removed, 0);
    // Node F1 counts role + name: only the frame misses (7 of 8).
    assert!((m.node_f1 - 7.0 / 8.0).abs() < 1e-9, "{}", m.node_f1);
    let frame = find(&real, "frame", "Notes - Editor");
    match &diff.real[frame.id.index()] {
        NodeStatus::Changed { changes, .. } => {
            let fields: Vec<&str> = changes.iter().map(|c| c.field.as_str()).collect();
            assert_eq!(fields, vec!["name", "attr:name"]);
        }
        other => panic!("expected changed, got {other:?}"),
    }
}

#[test]
fn os_xml_lenient_fallback_says_so() {
    let p = parse(NOTES_NEAR_XML, Representation::OsXml).expect("lenient parse");
    assert_eq!(p.warnings.len(), 1);
    assert_eq!(p.warnings[0].kind, WarningKind::LenientFallback);
    assert!(
        p.warnings[0].message.contains("2 stray comma"),
        "{}",
        p.warnings[0].message
    );
    assert!(
        p.warnings[0].message.contains("st, cp"),
        "{}",
        p.warnings[0].message
    );
    let t = &p.tree;
    let frame = find(t, "frame", "Notes - Editor");
    assert_eq!(frame.attr("st:active"), Some("true"));
    let b = frame.bounds_px.as_ref().expect("bounds");
    assert_eq!((b.left, b.top, b.right, b.bottom), (100, 50, 900, 650));
    assert_eq!(find(t, "text", "").value.as_deref(), Some("hello there"));
    // Span offsets survive the inserted declarations.
    let span = find(t, "text", "").span.expect("span");
    assert!(NOTES_NEAR_XML[span.start_byte..].starts_with("<text name"));
    // Broken beyond repair: the strict error with line and column.
    match parse("<a>\n<b></a>", Representation::OsXml) {
        Err(ParseError::Syntax { line: 2, .. }) => {}
        other => panic!("expected syntax error on line 2, got {other:?}"),
    }
}

#[test]
fn os_tables_tab_and_space_aligned() {
    let tab = parse(NOTES_TSV, Representation::OsTable).expect("tsv");
    insta::assert_snapshot!("os_table_notes", tab.tree.outline());
    assert!(tab.warnings.is_empty());
    let label = find(&tab.tree, "label", "Says \"hi\"");
    assert_eq!(label.value.as_deref(), Some("He said \"hi\""));
    let save = find(&tab.tree, "push-button", "Save");
    assert_eq!(save.attr("description"), Some("Save the file    Ctrl+S"));
    let spaces = parse(NOTES_SPACES, Representation::OsTable).expect("spaces");
    assert!(spaces.warnings.is_empty(), "{:?}", spaces.warnings);
    assert_eq!(spaces.tree.real_node_count(), 3);
    let text = find(&spaces.tree, "text", "");
    assert_eq!(text.value.as_deref(), Some("hello world"));
    let b = text.bounds_px.as_ref().expect("bounds");
    assert_eq!((b.left, b.top, b.right, b.bottom), (100, 100, 900, 600));
    assert_eq!(
        find(&spaces.tree, "push-button", "Save").attr("description"),
        Some("Save file")
    );
}

// ------------------------------------------------------- alignment, diff

#[test]
fn inserted_node_does_not_shift_later_siblings() {
    let items = |names: &[&str]| {
        let mut s = String::from("<hierarchy><node class=\"List\">");
        for (i, n) in names.iter().enumerate() {
            s.push_str(&format!(
                "<node index=\"{i}\" class=\"TextView\" text=\"{n}\"/>"
            ));
        }
        s.push_str("</node></hierarchy>");
        tree(&s, Representation::AndroidXml)
    };
    let real = items(&["a", "b", "c", "d", "e"]);
    let pred = items(&["a", "new", "b", "c", "d", "e"]);
    let (_, diff) = diff_trees(&real, &pred);
    assert_eq!(diff.summary.unchanged, 7);
    assert_eq!(diff.summary.added, 1);
    assert_eq!(
        diff.summary.changed + diff.summary.removed + diff.summary.moved,
        0
    );
    assert_eq!(diff.pred[3], NodeStatus::Added);
    insta::assert_json_snapshot!("diff_inserted_node", diff);
}

#[test]
fn key_matched_node_under_new_parent_is_moved() {
    let real = axtree("RootWebArea 'p'\n\t[1] group 'A'\n\t\t[5] button 'Go'\n\t[2] group 'B'\n");
    let pred = axtree("RootWebArea 'p'\n\t[1] group 'A'\n\t[2] group 'B'\n\t\t[5] button 'Go!'\n");
    let (_, diff) = diff_trees(&real, &pred);
    match &diff.real[3] {
        NodeStatus::Moved {
            counterpart,
            changes,
        } => {
            assert_eq!(counterpart.0, 4);
            assert_eq!(changes.len(), 1);
            assert_eq!(changes[0].field, "name");
            assert_eq!(changes[0].real.as_deref(), Some("Go"));
            assert_eq!(changes[0].pred.as_deref(), Some("Go!"));
        }
        other => panic!("expected moved, got {other:?}"),
    }
    assert_eq!(diff.summary.moved, 1);
    assert_eq!(diff.summary.unchanged, 3);
}

#[test]
fn swapped_siblings_without_keys_are_moved_not_removed_and_added() {
    let icons = |names: &[&str]| {
        let mut s =
            String::from("<desktop-frame><application name=\"Files\"><frame name=\"Home\">");
        for n in names {
            s.push_str(&format!("<icon name=\"{n}\"/>"));
        }
        s.push_str("</frame></application></desktop-frame>");
        tree(&s, Representation::OsXml)
    };
    let real = icons(&["a", "b", "c", "d"]);
    let pred = icons(&["a", "c", "b", "d"]);
    let (m, _, diff) = tree_metrics(&real, &pred, None);
    assert_eq!(diff.summary.moved, 1);
    assert_eq!(diff.summary.unchanged, 6);
    assert_eq!(
        diff.summary.added + diff.summary.removed + diff.summary.changed,
        0
    );
    // Every node keeps its role and name: node F1 is 1 although not exact.
    assert_eq!(m.node_f1, 1.0);
    assert!(!m.exact);
    let moved: Vec<&str> = real
        .iter()
        .filter(|n| matches!(diff.real[n.id.index()], NodeStatus::Moved { .. }))
        .map(|n| n.name.as_str())
        .collect();
    assert_eq!(moved.len(), 1);
    assert!(moved[0] == "b" || moved[0] == "c", "{moved:?}");
}

#[test]
fn transition_f1_weighs_the_content_of_added_nodes() {
    let prev = axtree("RootWebArea 'Signup'\n\t[2] button 'Next', clickable\n");
    let real = axtree(
        "RootWebArea 'Signup'\n\t[2] button 'Next', clickable\n\t[3] textbox 'Email' value='a@b.c', focused\n\t[4] checkbox 'Terms', checked='false'\n",
    );
    // Right nodes in the right place, right content: 2 of 2 items.
    let (m, _, _) = tree_metrics(&real, &real, Some(&prev));
    assert_eq!(m.transition_f1, Some(1.0));
    // Same two nodes, but the checkbox added checked: 1 of 2 items match,
    // F1 = 2·1 / (2 + 2).
    let pred = axtree(
        "RootWebArea 'Signup'\n\t[2] button 'Next', clickable\n\t[3] textbox 'Email' value='a@b.c', focused\n\t[4] checkbox 'Terms', checked='true'\n",
    );
    let (m, _, _) = tree_metrics(&real, &pred, Some(&prev));
    assert_eq!(m.transition_f1, Some(0.5));
    let t = m.transition.as_ref().expect("transition detail");
    assert_eq!((t.real_changes, t.pred_changes), (2, 2));
    assert_eq!(t.matched_changes, 1);
}

#[test]
fn renamed_parent_keeps_its_subtree_aligned() {
    let real = axtree("RootWebArea 'p'\n\tgroup 'Old'\n\t\tbutton 'x'\n\t\tbutton 'y'\n");
    let pred = axtree("RootWebArea 'p'\n\tgroup 'New'\n\t\tbutton 'x'\n\t\tbutton 'y'\n");
    let (_, diff) = diff_trees(&real, &pred);
    assert_eq!(diff.summary.changed, 1);
    assert_eq!(diff.summary.unchanged, 3);
    assert_eq!(diff.real[2].name(), "changed");
}

// ---------------------------------------------------------------- metrics

/// 40 nodes: a root area and 13 × (label, checkbox, static text).
fn checkbox_page(checked: &[usize]) -> String {
    let mut s = String::from("RootWebArea 'Form', focused\n");
    for i in 0..13 {
        let c = if checked.contains(&i) {
            "true"
        } else {
            "false"
        };
        s.push_str(&format!("\t[{}] LabelText ''\n", 100 + 3 * i));
        s.push_str(&format!(
            "\t\t[{}] checkbox 'c{i}', clickable, checked='{c}'\n",
            101 + 3 * i
        ));
        s.push_str(&format!("\t\tStaticText 'c{i}'\n"));
    }
    s
}

#[test]
fn one_changed_checkbox_among_40_nodes() {
    let prev = axtree(&checkbox_page(&[]));
    let real = axtree(&checkbox_page(&[5]));
    assert_eq!(real.real_node_count(), 40);
    // The stale copy of the previous state.
    let (m, _, diff) = tree_metrics(&real, &prev, Some(&prev));
    assert!(!m.exact);
    assert_eq!(diff.summary.changed, 1);
    assert_eq!(diff.summary.unchanged, 39);
    assert_eq!(m.text_f1, 1.0);
    assert_eq!(m.node_f1, 1.0);
    // checked: 13 compared, 12 right; text: 27 named nodes, all right;
    // focused: the root, right. 40 / 41.
    assert_eq!(m.attribute_accuracy, Some(40.0 / 41.0));
    let checked = m
        .attributes
        .iter()
        .find(|t| t.attribute == "checked")
        .expect("tally");
    assert_eq!((checked.compared, checked.correct), (13, 12));
    // The real change is one node with two changed fields; the copy has none.
    assert_eq!(m.transition_f1, Some(0.0));
    let t = m.transition.expect("detail");
    assert_eq!(
        (t.real_changes, t.pred_changes, t.matched_changes),
        (2, 0, 0)
    );

    // The right checkbox: transition F1 1; the wrong one: 0; right plus an
    // extra wrong one: 2·2 / (2 + 4).
    let right = axtree(&checkbox_page(&[5]));
    let wrong = axtree(&checkbox_page(&[6]));
    let extra = axtree(&checkbox_page(&[5, 6]));
    assert_eq!(
        tree_metrics(&real, &right, Some(&prev)).0.transition_f1,
        Some(1.0)
    );
    assert_eq!(
        tree_metrics(&real, &wrong, Some(&prev)).0.transition_f1,
        Some(0.0)
    );
    let m_extra = tree_metrics(&real, &extra, Some(&prev)).0;
    assert!((m_extra.transition_f1.expect("f1") - 4.0 / 6.0).abs() < 1e-12);
    assert_eq!(m_extra.attribute_accuracy, Some(40.0 / 41.0));
}

#[test]
fn stale_copy_scores_zero_and_correct_noop_scores_one() {
    let before = axtree(PIZZA_BEFORE);
    let after = axtree(PIZZA_AFTER);
    // Real change happened; the prediction is a copy of the previous state.
    let stale = tree_metrics(&after, &before, Some(&before)).0;
    assert_eq!(stale.transition_f1, Some(0.0));
    // No-op in reality (after → after), predicted as a no-op.
    let noop = tree_metrics(&after, &after, Some(&after)).0;
    assert_eq!(noop.transition_f1, Some(1.0));
    assert!(noop.exact);
    // No-op in reality, but the prediction invents a change.
    let invented = tree_metrics(&before, &after, Some(&before)).0;
    assert_eq!(invented.transition_f1, Some(0.0));
}

#[test]
fn text_f1_hand_computed() {
    let real = axtree("[1] button 'Submit order now'\n");
    let pred = axtree("[1] button 'Submit   ORDER'\n");
    let m = tree_metrics(&real, &pred, None).0;
    // real {submit, order, now}, pred {submit, order}: P = 1, R = 2/3.
    assert!((m.text_f1 - 0.8).abs() < 1e-12);
    assert_eq!(m.node_f1, 0.0);
    assert_eq!(m.attribute_accuracy, Some(0.0));
    assert_eq!(m.transition_f1, None);
}

#[test]
fn web_anchors() {
    let before = axtree(PIZZA_BEFORE);
    let after = axtree(PIZZA_AFTER);
    let m = tree_metrics(&after, &before, None).0;
    let get = |name: &str| anchor(&m, name);
    assert_eq!(get("title").status, AnchorStatus::Matched);
    assert_eq!(get("url").status, AnchorStatus::Matched);
    assert_eq!(
        get("url").real.as_deref(),
        Some("https://pizza.example/menu")
    );
    let focused = get("focused");
    assert_eq!(focused.status, AnchorStatus::Mismatched);
    assert_eq!(focused.real.as_deref(), Some("[14] checkbox 'Olives'"));
    assert_eq!(focused.pred.as_deref(), Some("RootWebArea 'Order a pizza'"));
    assert_eq!(get("form_values").status, AnchorStatus::Mismatched);
    assert_eq!(get("dialogs").status, AnchorStatus::Absent);
}

#[test]
fn android_and_os_anchors() {
    let a = tree(SETTINGS_XML, Representation::AndroidXml);
    let m = tree_metrics(&a, &a, None).0;
    let get = |name: &str| anchor(&m, name);
    assert_eq!(get("package").real.as_deref(), Some("com.example.settings"));
    assert_eq!(
        get("focused").real.as_deref(),
        Some("[com.example.settings:id/wifi_switch] android.widget.Switch 'Wi-Fi'")
    );
    assert_eq!(get("keyboard_visible").real.as_deref(), Some("false"));
    assert_eq!(
        get("text_fields").real.as_deref(),
        Some("[com.example.settings:id/ssid] android.widget.EditText 'Home' = \"Home\"")
    );
    assert!(
        m.anchors
            .iter()
            .all(|x| x.status != AnchorStatus::Mismatched)
    );

    let os = tree(NOTES_XML, Representation::OsXml);
    let m = tree_metrics(&os, &os, None).0;
    let get = |name: &str| anchor(&m, name);
    assert_eq!(
        get("active_window").real.as_deref(),
        Some("notepad / frame 'Notes - Editor'")
    );
    assert_eq!(get("focused").real.as_deref(), Some("text ''"));
}

#[test]
fn android_package_anchor_is_the_foreground_app_not_the_status_bar() {
    let dump = r#"<hierarchy rotation="0">
<node index="0" text="" class="android.widget.FrameLayout" package="com.android.systemui" bounds="[0,0][1080,80]"><node index="0" text="12:30" class="android.widget.TextView" package="com.android.systemui" bounds="[20,10][200,70]"/></node>
<node index="1" text="" class="android.widget.FrameLayout" package="com.example.mail" bounds="[0,80][1080,2400]"><node index="0" text="Inbox" class="android.widget.TextView" package="com.example.mail" bounds="[40,120][400,200]"/></node>
</hierarchy>"#;
    let a = tree(dump, Representation::AndroidXml);
    let m = tree_metrics(&a, &a, None).0;
    assert_eq!(
        anchor(&m, "package").real.as_deref(),
        Some("com.example.mail")
    );
    // A dump of the system UI alone (lock screen, notification shade) keeps its package.
    let shade = r#"<hierarchy rotation="0"><node index="0" text="" class="android.widget.FrameLayout" package="com.android.systemui" bounds="[0,0][1080,2400]"/></hierarchy>"#;
    let s = tree(shade, Representation::AndroidXml);
    let m = tree_metrics(&s, &s, None).0;
    assert_eq!(
        anchor(&m, "package").real.as_deref(),
        Some("com.android.systemui")
    );
}

#[test]
fn failed_capture_and_missing_prediction_are_not_scored() {
    let r = Representation::AndroidXml;
    let e = evaluate(
        Some(b"ERROR: could not get idle state."),
        Some(SETTINGS_XML.as_bytes()),
        None,
        r,
    )
    .expect("eval");
    assert_eq!(e.status, EvalStatus::Skipped);
    assert_eq!(e.exact, None);
    let e = evaluate(Some(SETTINGS_XML.as_bytes()), Some(b"  \n"), None, r).expect("eval");
    assert_eq!(e.status, EvalStatus::Missing);
    assert_eq!(e.node_f1, None);
    let e = evaluate(Some(SETTINGS_XML.as_bytes()), None, None, r).expect("eval");
    assert_eq!(e.status, EvalStatus::Missing);
    // A prediction that is itself a failed capture is scored, as zero.
    let e = evaluate(
        Some(SETTINGS_XML.as_bytes()),
        Some(b"ERROR: could not get idle state."),
        None,
        r,
    )
    .expect("eval");
    assert_eq!(e.status, EvalStatus::Scored);
    assert_eq!(e.node_f1, Some(0.0));
    assert_eq!(e.exact, Some(false));
    assert!(
        e.reason
            .as_deref()
            .is_some_and(|s| s.contains("failed capture"))
    );
    // A malformed real observation is an error with its line.
    let err =
        evaluate(Some(b"<hierarchy>\n<node>"), Some(b"<hierarchy/>"), None, r).expect_err("error");
    assert!(err.to_string().contains("line 1, column 1"), "{err}");
    assert!(err.to_string().contains("never closed"), "{err}");
}

#[test]
fn evaluation_json_shape() {
    let e = evaluate(
        Some(PIZZA_AFTER.as_bytes()),
        Some(PIZZA_BEFORE.as_bytes()),
        Some(PIZZA_BEFORE.as_bytes()),
        Representation::Axtree,
    )
    .expect("eval");
    let v = serde_json::to_value(&e).expect("json");
    for key in [
        "status",
        "exact",
        "text_f1",
        "node_f1",
        "attribute_accuracy",
        "transition_f1",
        "anchors",
        "nodes",
        "line_diff",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["status"], "scored");
    assert_eq!(v["transition_f1"], 0.0);
    assert_eq!(v["nodes"]["real"][4]["status"], "changed");
    assert_eq!(v["nodes"]["real"][4]["counterpart"], 4);
    insta::assert_json_snapshot!("evaluation_pizza_stale", e);
}

#[test]
fn text_representation_exact_and_f1() {
    let text = |real: &[u8], pred: &[u8]| {
        evaluate(Some(real), Some(pred), None, Representation::Text).expect("eval")
    };
    let e = text(b"a b\r\nc  \n\n", b"a b\nc");
    assert_eq!(e.exact, Some(true));
    assert_eq!(e.text_f1, Some(1.0));
    let e = text(b"one two", b"one three");
    assert_eq!(e.exact, Some(false));
    assert_eq!(e.text_f1, Some(0.5));
    let ops = e.line_diff.expect("line diff").ops;
    assert_eq!(ops.len(), 1);
    assert_eq!(ops[0].tag, worldloom_obs::diff::LineTag::Replace);
}

// ------------------------------------------------------ deep and large

const DEPTH: usize = 10_000;
const NODES: usize = 200_000;

fn check_deep(t: &UiTree) {
    assert!(t.max_depth() as usize >= DEPTH, "depth {}", t.max_depth());
    let (m, _, _) = tree_metrics(t, t, Some(t));
    assert!(m.exact);
    assert_eq!(m.transition_f1, Some(1.0));
    let json = serde_json::to_string(t).expect("json");
    assert!(json.len() > DEPTH);
}

#[test]
fn deep_nesting_does_not_overflow() {
    let xml = |open: &str, close: &str| {
        format!(
            "<hierarchy>{}{}</hierarchy>",
            open.repeat(DEPTH),
            close.repeat(DEPTH)
        )
    };
    let a = tree(
        &xml("<node class=\"V\" text=\"t\">", "</node>"),
        Representation::AndroidXml,
    );
    check_deep(&a);
    let o = tree(
        &xml("<panel name=\"p\">", "</panel>"),
        Representation::OsXml,
    );
    check_deep(&o);
    // HTML keeps at most MAX_HTML_DEPTH levels below <body> (browsers do
    // the same); ten times DEPTH nested elements neither overflow nor slow
    // the parse down.
    let h = tree(
        &format!(
            "<body>{}x{}</body>",
            "<div>".repeat(10 * DEPTH),
            "</div>".repeat(10 * DEPTH)
        ),
        Representation::Html,
    );
    assert_eq!(
        h.max_depth() as usize,
        worldloom_obs::parse::MAX_HTML_DEPTH + 2
    );
    let (m, _, _) = tree_metrics(&h, &h, Some(&h));
    assert!(m.exact);
    assert_eq!(m.transition_f1, Some(1.0));
    assert!(serde_json::to_string(&h).expect("json").len() > worldloom_obs::parse::MAX_HTML_DEPTH);
    let mut ax = String::new();
    for d in 0..=DEPTH {
        ax.push_str(&"\t".repeat(d));
        ax.push_str(&format!("[{d}] group 'g'\n"));
    }
    check_deep(&axtree(&ax));
}

#[test]
fn large_trees_parse_and_diff() {
    let mut xml = String::from("<hierarchy><node class=\"List\">");
    for i in 0..NODES {
        xml.push_str(&format!(
            "<node index=\"{i}\" class=\"T\" text=\"item {i}\" bounds=\"[0,{i}][10,{}]\"/>",
            i + 1
        ));
    }
    xml.push_str("</node></hierarchy>");
    let a = tree(&xml, Representation::AndroidXml);
    assert_eq!(a.real_node_count(), NODES + 2);
    let (_, diff) = diff_trees(&a, &a);
    assert_eq!(diff.summary.unchanged, NODES + 2);

    let mut table =
        String::from("tag\tname\ttext\tclass\tdescription\tposition (top-left x&y)\tsize (w&h)\n");
    for i in 0..NODES {
        table.push_str(&format!("label\tL{i}\t\"\"\t\t\t({i}, 0)\t(1, 1)\n"));
    }
    assert_eq!(
        tree(&table, Representation::OsTable).real_node_count(),
        NODES
    );

    let mut html = String::from("<ul>");
    for i in 0..NODES / 2 {
        html.push_str(&format!("<li>item {i}</li>"));
    }
    html.push_str("</ul>");
    let h = tree(&html, Representation::Html);
    assert_eq!(h.iter().filter(|n| n.role == "li").count(), NODES / 2);
}

// ---------------------------------------------------------- robustness

/// Deterministic byte mutations of every fixture through every parser: no
/// input may panic (a cheap complement to the cargo-fuzz targets).
#[test]
fn mutated_fixtures_never_panic() {
    let fixtures = [
        PIZZA_BEFORE,
        SHOP_HTML,
        SETTINGS_XML,
        NOTES_XML,
        NOTES_NEAR_XML,
        NOTES_TSV,
        NOTES_SPACES,
    ];
    let reps = [
        Representation::Html,
        Representation::Axtree,
        Representation::OsXml,
        Representation::OsTable,
        Representation::AndroidXml,
    ];
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let specials: [&[u8]; 8] = [
        b"<",
        b">",
        b"\"",
        b"&#xD800;",
        b"\t\t\t",
        b"\xED\xA0\x80",
        b"\n",
        b"][",
    ];
    let mut parsed_ok = 0usize;
    for f in fixtures {
        for _ in 0..60 {
            let mut bytes = f.as_bytes().to_vec();
            for _ in 0..(next() % 6 + 1) {
                let pos = (next() as usize) % (bytes.len() + 1);
                match next() % 3 {
                    0 if pos < bytes.len() => {
                        bytes.remove(pos);
                    }
                    1 => {
                        let s = specials[(next() as usize) % specials.len()];
                        bytes.splice(pos..pos, s.iter().copied());
                    }
                    _ if pos < bytes.len() => bytes[pos] = next() as u8,
                    _ => {}
                }
            }
            for r in reps {
                if let Ok(p) = parse_bytes(&bytes, r) {
                    parsed_ok += 1;
                    let _ = tree_metrics(&p.tree, &p.tree, None);
                }
            }
        }
    }
    assert!(parsed_ok > 0);
}
