//! The fidelity atlas over a generated run: counts, rows and rates by
//! table worked out from how the run was generated, and two runs compared.

use worldloom_core::Action;
use worldloom_core::domain::Domain;
use worldloom_eval::atlas::{
    ActionKind, AtlasRow, AtlasTable, action_kind, aggregate, compare, render,
};
use worldloom_obs::findings::{ErrorKind, Finding};
use worldloom_obs::metrics::EvalStatus;

fn finding(kind: ErrorKind, detail: &str, role: &str, count: u32) -> Finding {
    Finding {
        kind,
        detail: detail.to_owned(),
        role: role.to_owned(),
        count,
        real_lines: Vec::new(),
        pred_lines: Vec::new(),
    }
}

/// 100 rows: row i is web when i is even, android otherwise; turn i % 5 + 1;
/// click when i % 4 == 0, type when i % 4 == 1, scroll otherwise. Every
/// third row invents two buttons; every type row is stale; rows 0..10 miss
/// their prediction; every android row forgets one TextView and gets its
/// `state:checked` wrong.
fn generated() -> Vec<AtlasRow> {
    (0..100i64)
        .map(|i| {
            let domain = if i % 2 == 0 {
                Domain::Web
            } else {
                Domain::Android
            };
            let action = match i % 4 {
                0 => ActionKind::Click,
                1 => ActionKind::Type,
                _ => ActionKind::Scroll,
            };
            let mut findings = Vec::new();
            if i % 3 == 0 {
                findings.push(finding(ErrorKind::Invented, "", "button", 2));
            }
            if action == ActionKind::Type {
                findings.push(finding(ErrorKind::Stale, "", "", 1));
            }
            if domain == Domain::Android {
                findings.push(finding(
                    ErrorKind::Forgotten,
                    "",
                    "android.widget.TextView",
                    1,
                ));
                findings.push(finding(
                    ErrorKind::Attribute,
                    "state:checked",
                    "android.widget.CheckBox",
                    1,
                ));
            }
            let status = if i < 10 {
                EvalStatus::Missing
            } else {
                EvalStatus::Scored
            };
            AtlasRow {
                row_id: i,
                domain,
                turn: (i % 5) as u32 + 1,
                action,
                status,
                findings: if i < 10 { Vec::new() } else { findings },
            }
        })
        .collect()
}

#[test]
fn a_generated_run_is_counted_by_every_table() {
    let rows = generated();
    let a = aggregate(&rows);
    assert_eq!((a.rows, a.scored, a.missing, a.skipped), (100, 90, 10, 0));
    let scored: Vec<i64> = (10..100).collect();
    let n = |f: &dyn Fn(i64) -> bool| scored.iter().filter(|i| f(**i)).count() as u32;

    // Invented: rows 12, 15, …, 99 → 30 rows, 2 nodes each.
    let inv = a
        .cell(AtlasTable::Overall, "all", ErrorKind::Invented)
        .expect("invented");
    assert_eq!((inv.count, inv.rows, inv.scored_rows), (60, 30, 90));
    assert!((inv.rate - 30.0 / 90.0).abs() < 1e-12);
    let by_role = a
        .cell(AtlasTable::Role, "button", ErrorKind::Invented)
        .expect("by role");
    assert_eq!(
        (by_role.count, by_role.rows, by_role.scored_rows),
        (60, 30, 90)
    );

    // Stale: every type row (i % 4 == 1) among the scored ones.
    let stale_rows = n(&|i| i % 4 == 1);
    let st = a
        .cell(AtlasTable::Action, "type", ErrorKind::Stale)
        .expect("stale on type");
    assert_eq!(
        (st.rows, st.scored_rows, st.rate),
        (stale_rows, stale_rows, 1.0)
    );
    assert!(
        a.cell(AtlasTable::Action, "click", ErrorKind::Stale)
            .is_none()
    );

    // By domain: android rows forget one TextView each; rates over the
    // domain's own scored rows.
    let android = n(&|i| i % 2 == 1);
    let fg = a
        .cell(AtlasTable::Domain, "android", ErrorKind::Forgotten)
        .expect("forgotten");
    assert_eq!(
        (fg.count, fg.rows, fg.scored_rows),
        (android, android, android)
    );
    assert!(
        a.cell(AtlasTable::Domain, "web", ErrorKind::Forgotten)
            .is_none()
    );
    let web_inv = a
        .cell(AtlasTable::Domain, "web", ErrorKind::Invented)
        .expect("web invented");
    assert_eq!(
        (web_inv.rows, web_inv.scored_rows),
        (n(&|i| i % 2 == 0 && i % 3 == 0), n(&|i| i % 2 == 0))
    );

    // By attribute, and by turn.
    let ck = a
        .cell(AtlasTable::Attribute, "state:checked", ErrorKind::Attribute)
        .expect("checked");
    assert_eq!((ck.count, ck.rows), (android, android));
    let t1 = a
        .cell(AtlasTable::Turn, "1", ErrorKind::Invented)
        .expect("turn 1");
    assert_eq!(
        (t1.rows, t1.scored_rows),
        (n(&|i| i % 5 == 0 && i % 3 == 0), n(&|i| i % 5 == 0))
    );

    // Tables come in order; actions in their fixed order.
    let actions: Vec<&str> =
        a.table(AtlasTable::Action)
            .map(|c| c.group.as_str())
            .fold(Vec::new(), |mut v, g| {
                if v.last() != Some(&g) {
                    v.push(g);
                }
                v
            });
    assert_eq!(actions, vec!["click", "type", "scroll"]);

    let text = render(&a, None);
    assert!(
        text.contains("run: 100 rows, 90 scored, 10 missing, 0 skipped"),
        "{text}"
    );
    assert!(text.contains("by role"), "{text}");
}

#[test]
fn two_runs_side_by_side() {
    let a_rows = generated();
    // B never invents anything and is never stale.
    let b_rows: Vec<AtlasRow> = generated()
        .into_iter()
        .map(|mut r| {
            r.findings
                .retain(|f| !matches!(f.kind, ErrorKind::Invented | ErrorKind::Stale));
            r
        })
        .collect();
    let (a, b) = (aggregate(&a_rows), aggregate(&b_rows));
    let d = compare(&a, &b);
    let inv = d
        .iter()
        .find(|c| c.table == AtlasTable::Overall && c.kind == ErrorKind::Invented)
        .expect("invented delta");
    assert!((inv.rate_a - 30.0 / 90.0).abs() < 1e-12);
    assert_eq!((inv.rate_b, inv.count_b), (0.0, 0));
    assert!((inv.delta - inv.rate_a).abs() < 1e-12);
    let fg = d
        .iter()
        .find(|c| c.table == AtlasTable::Overall && c.kind == ErrorKind::Forgotten)
        .expect("forgotten delta");
    assert_eq!(fg.delta, 0.0);
    assert!(render(&a, Some(&b)).contains("A − B"));
}

#[test]
fn action_types_of_every_format() {
    let cases = [
        (Domain::Web, "click('12')", ActionKind::Click),
        (Domain::Web, "fill('41', 'Ada')", ActionKind::Type),
        (Domain::Web, "scroll(0, 200)", ActionKind::Scroll),
        (
            Domain::Web,
            "goto('https://a.example')",
            ActionKind::Navigate,
        ),
        (Domain::Web, "keyboard_press('Enter')", ActionKind::Key),
        (
            Domain::Android,
            r#"{"action_type": "click", "x": 1, "y": 2}"#,
            ActionKind::Click,
        ),
        (
            Domain::Android,
            r#"{"action_type": "type", "text": "hi"}"#,
            ActionKind::Type,
        ),
        (
            Domain::Android,
            r#"{"action_type": "navigate_back"}"#,
            ActionKind::Navigate,
        ),
        (Domain::Os, "pyautogui.hotkey('ctrl', 's')", ActionKind::Key),
        (Domain::Os, "pyautogui.typewrite('hello')", ActionKind::Type),
        (
            Domain::Mcp,
            r#"{"name": "search", "arguments": {}}"#,
            ActionKind::ToolCall,
        ),
        (Domain::Terminal, "ls -la", ActionKind::ToolCall),
        (Domain::Web, "noop()", ActionKind::Other),
    ];
    for (d, raw, want) in cases {
        assert_eq!(
            action_kind(&Action::for_domain(d, raw)),
            want,
            "{d:?} {raw}"
        );
    }
}
