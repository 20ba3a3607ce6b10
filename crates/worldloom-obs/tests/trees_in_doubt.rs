//! Accessibility trees that are not what they seem: trees a dump tool cut
//! short (with a marker or at a known cap), applications that expose a bare
//! frame (accessibility off), and indentation taken for element text.

use worldloom_core::domain::Representation;
use worldloom_obs::metrics::{EvalStatus, evaluate, tree_metrics};
use worldloom_obs::parse::truncation_marker;
use worldloom_obs::tree::{NodeId, TruncationReason};
use worldloom_obs::{UiTree, WarningKind, parse};

const HEADER: &str = "tag\tname\ttext\tclass\tdescription\tposition (top-left x&y)\tsize (w&h)\n";

fn row(role: &str, name: &str) -> String {
    format!("{role}\t{name}\t\"\"\t\t\t(0, 0)\t(10, 10)\n")
}

/// An OS table: the header, then one row per `(role, name)`.
fn table(rows: &[(&str, &str)]) -> String {
    let mut text = HEADER.to_string();
    for (role, name) in rows {
        text.push_str(&row(role, name));
    }
    text
}

/// `text` parsed as an OS table.
fn os_table(text: &str) -> UiTree {
    match parse(text, Representation::OsTable) {
        Ok(p) => p.tree,
        Err(e) => panic!("not an OS table: {e}"),
    }
}

#[test]
fn marker_forms_and_caps() {
    assert_eq!(
        truncation_marker("# truncated at 1000 nodes"),
        Some(Some(1000))
    );
    assert_eq!(
        truncation_marker(" tree was cut: MAX NODES 2,000 "),
        Some(Some(2000))
    );
    assert_eq!(truncation_marker("[... limit reached ...]"), Some(None));
    assert_eq!(
        truncation_marker("time budget of 5 s exceeded"),
        Some(Some(5))
    );
    assert_eq!(truncation_marker("push-button Save"), None);
}

#[test]
fn table_marker_line_is_not_a_row() {
    let text = format!(
        "{}# tree truncated: max nodes 1000\n",
        table(&[("push-button", "Save"), ("label", "Ready")])
    );
    let p = parse(&text, Representation::OsTable).expect("parses");
    assert_eq!(p.tree.real_node_count(), 2);
    assert!(p.tree.iter().all(|n| !n.role.contains("truncated")));
    let t = p.tree.truncated.as_ref().expect("flagged truncated");
    assert_eq!(t.reason, TruncationReason::Marker);
    assert_eq!(t.cap, Some(1000));
    assert_eq!(t.last_node, NodeId(2));
    assert!(p.warnings.iter().all(|w| w.kind != WarningKind::Malformed));
    let w: Vec<_> = p
        .warnings
        .iter()
        .filter(|w| w.kind == WarningKind::Truncated)
        .collect();
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].line, 4);
    assert!(w[0].message.contains("1000"), "{}", w[0].message);
}

#[test]
fn table_row_naming_truncation_is_still_a_row() {
    let text = table(&[("label", "Text truncated")]);
    let p = parse(&text, Representation::OsTable).expect("parses");
    assert_eq!(p.tree.real_node_count(), 1);
    assert_eq!(p.tree.nodes[1].name, "Text truncated");
    assert!(p.tree.truncated.is_none());
}

#[test]
fn table_at_a_known_cap_is_possibly_truncated() {
    let mut text = HEADER.to_string();
    for i in 0..1000 {
        text.push_str(&row("label", &format!("item {i}")));
    }
    let p = parse(&text, Representation::OsTable).expect("parses");
    let t = p.tree.truncated.as_ref().expect("possibly truncated");
    assert_eq!(t.reason, TruncationReason::NodeCountAtCap);
    assert_eq!(t.cap, Some(1000));
    assert_eq!(
        p.warnings
            .iter()
            .filter(|w| w.kind == WarningKind::Truncated)
            .count(),
        1
    );
    // One row fewer than the cap: nothing to suspect.
    text.truncate(text.trim_end().rfind('\n').map(|i| i + 1).unwrap_or(0));
    let p = parse(&text, Representation::OsTable).expect("parses");
    assert_eq!(p.tree.real_node_count(), 999);
    assert!(p.tree.truncated.is_none());
    assert!(p.warnings.iter().all(|w| w.kind != WarningKind::Truncated));
}

#[test]
fn xml_marker_comment_flags_the_tree() {
    let xml = r#"<desktop-frame><application name="gedit"><frame name="Doc"><push-button name="Save"/><!-- tree was cut: node limit 2000 --></frame></application></desktop-frame>"#;
    let p = parse(xml, Representation::OsXml).expect("parses");
    assert_eq!(p.tree.len(), 4);
    let t = p.tree.truncated.as_ref().expect("flagged");
    assert_eq!(t.reason, TruncationReason::Marker);
    assert_eq!(t.cap, Some(2000));
    assert_eq!(t.last_node, NodeId(3));
    assert_eq!(p.tree.nodes[3].name, "Save");
    let w = p
        .warnings
        .iter()
        .find(|w| w.kind == WarningKind::Truncated)
        .expect("warned");
    assert_eq!(w.byte, xml.find("<!--").unwrap());
    // An ordinary comment is not a marker.
    let plain = parse(
        "<desktop-frame><!-- dumped by pyatspi --><label name=\"a\"/></desktop-frame>",
        Representation::OsXml,
    )
    .expect("parses");
    assert!(plain.tree.truncated.is_none());
}

#[test]
fn predicted_rows_past_the_cut_are_not_added() {
    let cut = os_table(&format!(
        "{}# truncated (max nodes 1000)\n",
        table(&[("push-button", "Save"), ("label", "Ready")])
    ));
    let pred = os_table(&table(&[
        ("push-button", "Save"),
        ("label", "Ready"),
        ("label", "Line 3"),
        ("label", "Line 4"),
    ]));
    let (m, _, diff) = tree_metrics(&cut, &pred, None);
    let summary = &diff.summary;
    assert_eq!(
        (summary.added, summary.beyond_cut, summary.unchanged),
        (0, 2, 2)
    );
    assert_eq!(
        (m.node_precision, m.node_recall, m.node_f1),
        (1.0, 1.0, 1.0)
    );

    // The same real rows without the marker: the extra rows are added.
    let uncut = os_table(&table(&[("push-button", "Save"), ("label", "Ready")]));
    let (m, _, diff) = tree_metrics(&uncut, &pred, None);
    assert_eq!((diff.summary.added, diff.summary.beyond_cut), (2, 0));
    assert_eq!(m.node_precision, 0.5);

    // An extra row before the cut still counts as added.
    let pred_early = os_table(&table(&[
        ("push-button", "Save"),
        ("label", "Invented"),
        ("label", "Ready"),
    ]));
    let (m, _, diff) = tree_metrics(&cut, &pred_early, None);
    assert_eq!((diff.summary.added, diff.summary.beyond_cut), (1, 0));
    assert!((m.node_precision - 2.0 / 3.0).abs() < 1e-12);
}

#[test]
fn diff_summary_json_is_unchanged_without_a_cut() {
    let real = os_table(&table(&[("label", "a")]));
    let (_, _, diff) = tree_metrics(&real, &real, None);
    assert_eq!(
        serde_json::to_string(&diff.summary).unwrap(),
        r#"{"unchanged":1,"changed":0,"moved":0,"added":0,"removed":0}"#
    );
    let json = serde_json::to_value(&real).unwrap();
    assert!(json.get("truncated").is_none());
    assert!(json.get("incomplete").is_none());
}

const BARE_CHROME: &str = r#"<desktop-frame name="main">
  <application name="Google Chrome">
    <frame name="New Tab - Google Chrome" cp:screencoord="(0, 0)" cp:size="(1920, 1080)" xmlns:cp="https://accessibility.ubuntu.example.org/ns/component"/>
  </application>
</desktop-frame>"#;

#[test]
fn bare_application_frame_marks_the_tree_incomplete() {
    let p = parse(BARE_CHROME, Representation::OsXml).expect("parses");
    assert!(p.tree.incomplete);
    let w = p
        .warnings
        .iter()
        .find(|w| w.kind == WarningKind::Incomplete)
        .expect("warned");
    assert_eq!(
        w.message,
        "application exposes a frame with no children; accessibility is probably off"
    );
    let pred = r#"<desktop-frame name="main"><application name="Google Chrome"><frame name="New Tab - Google Chrome"><push-button name="Search"/><entry name="Address"/></frame></application></desktop-frame>"#;
    let os_xml = |real: &str, pred: &str| {
        evaluate(
            Some(real.as_bytes()),
            Some(pred.as_bytes()),
            None,
            Representation::OsXml,
        )
        .expect("evaluates")
    };
    let e = os_xml(BARE_CHROME, pred);
    assert_eq!(e.status, EvalStatus::Skipped);
    assert!(e.reason.as_deref().unwrap().contains("incomplete"));
    assert_eq!(e.node_f1, None);
    assert_eq!(e.node_precision, None);
    assert_eq!(e.warnings.real.len(), 1);

    // A frame with content is complete and scored.
    let full = parse(pred, Representation::OsXml).expect("parses");
    assert!(!full.tree.incomplete);
    let e = os_xml(pred, pred);
    assert_eq!(e.status, EvalStatus::Scored);
    assert_eq!(e.node_f1, Some(1.0));
}

#[test]
fn bare_frame_in_a_table_marks_it_incomplete() {
    let t = table(&[
        ("application", "Google Chrome"),
        ("frame", "New Tab - Google Chrome"),
    ]);
    let p = parse(&t, Representation::OsTable).expect("parses");
    assert!(p.tree.incomplete);
    assert!(p.warnings.iter().any(|w| w.kind == WarningKind::Incomplete));
    let t = table(&[("frame", "Doc"), ("push-button", "Save")]);
    let p = parse(&t, Representation::OsTable).expect("parses");
    assert!(!p.tree.incomplete);
}

#[test]
fn indentation_is_not_element_text() {
    let indented = "<desktop-frame>\n  <application name=\"gedit\">\n    <frame name=\"Doc\">\n      <label name=\"Ready\">Ready</label>\n    </frame>\n  </application>\n</desktop-frame>\n";
    let flat = "<desktop-frame><application name=\"gedit\"><frame name=\"Doc\"><label name=\"Ready\">Ready</label></frame></application></desktop-frame>";
    let a = parse(indented, Representation::OsXml).unwrap().tree;
    let b = parse(flat, Representation::OsXml).unwrap().tree;
    assert_eq!(a.nodes[0].value, None);
    assert_eq!(a.nodes[2].value, None);
    assert_eq!(a.nodes[3].value.as_deref(), Some("Ready"));
    let (m, _, diff) = tree_metrics(&a, &b, None);
    assert!(diff.summary.is_identical(), "{:?}", diff.summary);
    assert_eq!(diff.summary.unchanged, 4);
    assert!(m.exact);
    // Whitespace-only text gives way to `val:value`.
    let v = parse(
        "<desktop-frame xmlns:val=\"https://accessibility.ubuntu.example.org/ns/value\"><slider name=\"Volume\" val:value=\"40\">\n  </slider></desktop-frame>",
        Representation::OsXml,
    )
    .unwrap()
    .tree;
    assert_eq!(v.nodes[1].value.as_deref(), Some("40"));
}

#[test]
fn xml_at_a_known_cap_is_possibly_truncated() {
    let mut xml = String::from("<desktop-frame><application name=\"files\"><frame name=\"Files\">");
    for i in 0..1997 {
        xml.push_str(&format!("<label name=\"f{i}\"/>"));
    }
    xml.push_str("</frame></application></desktop-frame>");
    let p = parse(&xml, Representation::OsXml).expect("parses");
    assert_eq!(p.tree.real_node_count(), 2000);
    let t = p.tree.truncated.as_ref().expect("possibly truncated");
    assert_eq!(t.reason, TruncationReason::NodeCountAtCap);
    assert_eq!(t.cap, Some(2000));
    assert_eq!(t.last_node, NodeId(1999));
    let w = p
        .warnings
        .iter()
        .find(|w| w.kind == WarningKind::Truncated)
        .expect("warned");
    assert!(w.message.contains("possibly truncated"), "{}", w.message);
}

#[test]
fn axtree_marker_lines_flag_the_tree_and_are_not_nodes() {
    let rows = "RootWebArea 'Shop', focused\n\t[12] button 'Add to cart'\n\t[13] link 'Results truncated'\n\t\tStaticText 'More truncated text'\n";
    for (marker, cap, line) in [
        ("\t# truncated at 1000 nodes\n", Some(1000), 5),
        ("... tree truncated (max nodes 2,000) ...\n", Some(2000), 5),
        ("[limit reached]\n", None, 5),
        ("Tree truncated after the time budget of 5 s\n", Some(5), 5),
    ] {
        let text = format!("{rows}{marker}\t[14] button 'after the note'\n");
        let p = parse(&text, Representation::Axtree).expect("parses");
        // Four rows before the marker, one after it; the marker is no node.
        assert_eq!(p.tree.real_node_count(), 5, "{marker:?}");
        assert!(
            p.tree.iter().filter(|n| !n.synthetic).all(|n| !n
                .role
                .to_lowercase()
                .contains("truncated")
                && !n.role.starts_with('#')
                && !n.role.starts_with("...")
                && !n.role.starts_with('[')),
            "{marker:?}"
        );
        // Rows whose names say "truncated" stay rows.
        assert!(p.tree.iter().any(|n| n.name == "Results truncated"));
        assert!(p.tree.iter().any(|n| n.name == "More truncated text"));
        let t = p.tree.truncated.as_ref().expect("flagged truncated");
        assert_eq!(t.reason, TruncationReason::Marker, "{marker:?}");
        assert_eq!(t.cap, cap, "{marker:?}");
        // The cut is after the fourth row (node 4; node 0 is the document).
        assert_eq!(t.last_node, NodeId(4), "{marker:?}");
        let w: Vec<_> = p
            .warnings
            .iter()
            .filter(|w| w.kind == WarningKind::Truncated)
            .collect();
        assert_eq!(w.len(), 1, "{marker:?}");
        assert_eq!(w[0].line, line, "{marker:?}");
        assert!(p.warnings.iter().all(|w| w.kind != WarningKind::Malformed));
    }
}

#[test]
fn axtree_rows_naming_truncation_are_still_rows() {
    let text = "RootWebArea 'Truncated text demo'\n\t[5] StaticText 'Text truncated'\n\tspinbutton value='truncated', valuemin=1\n\t[a7] button 'max nodes'\n\tgeneric, describedby='node limit'\n";
    let p = parse(text, Representation::Axtree).expect("parses");
    assert_eq!(p.tree.real_node_count(), 5);
    assert!(p.tree.truncated.is_none());
    assert!(p.warnings.iter().all(|w| w.kind != WarningKind::Truncated));
}

#[test]
fn predicted_axtree_rows_past_the_marker_are_not_added() {
    let real = "RootWebArea 'Shop'\n\t[12] button 'Add to cart'\n# truncated at 2 nodes\n";
    let pred = "RootWebArea 'Shop'\n\t[12] button 'Add to cart'\n\t[13] link 'Checkout'\n";
    let real = parse(real, Representation::Axtree).unwrap().tree;
    let pred = parse(pred, Representation::Axtree).unwrap().tree;
    assert!(real.truncated.is_some());
    let (m, _, diff) = tree_metrics(&real, &pred, None);
    assert_eq!(diff.summary.added, 0);
    assert_eq!(diff.summary.beyond_cut, 1);
    assert_eq!(diff.summary.unchanged, 2);
    assert_eq!(m.node_precision, 1.0);
}
