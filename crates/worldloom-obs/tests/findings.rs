//! The error taxonomy on hand-made triples (previous, real, predicted) of
//! every domain, with the counts worked out by hand from the rules in
//! `docs/metrics.md` ("Error taxonomy").

use worldloom_core::domain::Representation;
use worldloom_obs::findings::{ErrorKind, Finding, TurnFindings, turn_findings};
use worldloom_obs::metrics::{EvalStatus, Observed};

fn run(prev: Option<&str>, real: &str, pred: &str, r: Representation) -> TurnFindings {
    let real = Observed::new(real.as_bytes(), r);
    let pred = Observed::new(pred.as_bytes(), r);
    let prev = prev.map(|p| Observed::new(p.as_bytes(), r));
    match turn_findings(Some(&real), Some(&pred), prev.as_ref(), r) {
        Ok((_, f)) => f,
        Err(e) => panic!("real observation does not parse: {e}"),
    }
}

/// `"kind detail role count"` of each finding, in the findings' order, `-`
/// standing for an empty detail or role.
fn table(f: &TurnFindings) -> Vec<String> {
    let or_dash = |s: &str| {
        if s.is_empty() {
            "-".to_owned()
        } else {
            s.to_owned()
        }
    };
    f.findings
        .iter()
        .map(|x| {
            format!(
                "{} {} {} {}",
                x.kind.as_str(),
                or_dash(&x.detail),
                or_dash(&x.role),
                x.count
            )
        })
        .collect()
}

/// Checks the findings' table (see [`table`]) against `want`, row by row.
fn assert_table(f: &TurnFindings, want: &[&str]) {
    assert_eq!(table(f), want);
}

fn find<'a>(f: &'a TurnFindings, kind: ErrorKind, role: &str) -> &'a Finding {
    f.findings
        .iter()
        .find(|x| x.kind == kind && x.role == role)
        .unwrap_or_else(|| panic!("no {kind:?} finding on {role}: {:?}", table(f)))
}

const WEB_PREV: &str = "RootWebArea 'Shop', focused
\t[1] button 'Add to cart', clickable
\t[2] checkbox 'Gift wrap', checked='false'
\t[3] StaticText 'Cart: 0'
";
const WEB_REAL: &str = "RootWebArea 'Shop', focused
\t[1] button 'Add to cart', clickable
\t[2] checkbox 'Gift wrap', checked='false'
\t[3] StaticText 'Cart: 1'
\t[4] button 'Checkout', clickable
";

#[test]
fn web_invented_forgotten_checked_and_a_diverged_change() {
    // The model invents a link, forgets the Checkout button, ticks the
    // checkbox it should have left alone; the cart count is right.
    let pred = "RootWebArea 'Shop', focused
\t[1] button 'Add to cart', clickable
\t[2] checkbox 'Gift wrap', checked='true'
\t[3] StaticText 'Cart: 1'
\t[9] link 'Coupon'
";
    let f = run(Some(WEB_PREV), WEB_REAL, pred, Representation::Axtree);
    assert_eq!(f.status, EvalStatus::Scored);
    assert_table(
        &f,
        &[
            "invented - link 1",
            "forgotten - button 1",
            "attribute attr:checked checkbox 1",
            "attribute state:checked checkbox 1",
            "diverged - - 1",
            "anchor form_values - 1",
        ],
    );
    // Lines point at the nodes: the Checkout button is line 5 of the real
    // observation, the invented link line 5 of the prediction, the checkbox
    // line 3 of both.
    assert_eq!(find(&f, ErrorKind::Forgotten, "button").real_lines, vec![5]);
    assert_eq!(find(&f, ErrorKind::Invented, "link").pred_lines, vec![5]);
    let checked = find(&f, ErrorKind::Attribute, "checkbox");
    assert_eq!(
        (checked.real_lines.clone(), checked.pred_lines.clone()),
        (vec![3], vec![3])
    );
}

#[test]
fn web_stale_copy_of_the_previous_state() {
    let f = run(Some(WEB_PREV), WEB_REAL, WEB_PREV, Representation::Axtree);
    assert_table(
        &f,
        &[
            "forgotten - button 1",
            "text name StaticText 1",
            "stale - - 1",
        ],
    );
}

#[test]
fn web_over_change_when_nothing_should_change() {
    // The real page stayed; the model renamed a button.
    let pred = WEB_PREV.replace("'Add to cart'", "'Added'");
    let f = run(Some(WEB_PREV), WEB_PREV, &pred, Representation::Axtree);
    assert_table(&f, &["text name button 1", "over_change - - 1"]);
    // Without a previous observation there is no transition view.
    let f = run(None, WEB_PREV, &pred, Representation::Axtree);
    assert_table(&f, &["text name button 1"]);
    // A perfect prediction has no finding at all.
    let f = run(Some(WEB_PREV), WEB_REAL, WEB_REAL, Representation::Axtree);
    assert_eq!(f.status, EvalStatus::Scored);
    assert!(f.findings.is_empty(), "{:?}", table(&f));
}

#[test]
fn web_reordered_nodes_are_moved() {
    // The same nodes, two of them swapped: one is moved, nothing is
    // invented or forgotten.
    let pred = "RootWebArea 'Shop', focused
\t[2] checkbox 'Gift wrap', checked='false'
\t[1] button 'Add to cart', clickable
\t[3] StaticText 'Cart: 1'
\t[4] button 'Checkout', clickable
";
    let f = run(None, WEB_REAL, pred, Representation::Axtree);
    assert_eq!(f.count(ErrorKind::Moved), 1, "{:?}", table(&f));
    assert_eq!(f.findings.len(), 1, "{:?}", table(&f));
}

fn android_node(rid: &str, class: &str, text: &str, extra: &str, bounds: &str) -> String {
    format!(
        r#"<node index="0" text="{text}" resource-id="{rid}" class="{class}" package="com.example.todo" content-desc="" {extra} bounds="{bounds}" />"#
    )
}

fn android(rows: &[String]) -> String {
    format!(
        r#"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>
<hierarchy rotation="0">
<node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.example.todo" content-desc="" bounds="[0,0][1080,2400]">
{}
</node>
</hierarchy>
"#,
        rows.join("\n")
    )
}

#[test]
fn android_forgotten_list_row_bounds_and_a_box_left_unticked() {
    let title = android_node(
        "com.example.todo:id/title",
        "android.widget.TextView",
        "Groceries",
        "",
        "[0,0][1080,100]",
    );
    let milk = android_node(
        "com.example.todo:id/row1",
        "android.widget.TextView",
        "Milk",
        "",
        "[0,100][1080,200]",
    );
    let eggs = android_node(
        "com.example.todo:id/row2",
        "android.widget.TextView",
        "Eggs",
        "",
        "[0,200][1080,300]",
    );
    let done = android_node(
        "com.example.todo:id/done",
        "android.widget.CheckBox",
        "Done",
        r#"checkable="true" checked="true""#,
        "[0,300][1080,400]",
    );
    let done_off = android_node(
        "com.example.todo:id/done",
        "android.widget.CheckBox",
        "Done",
        r#"checkable="true" checked="false""#,
        "[0,300][1080,400]",
    );
    let eggs_low = android_node(
        "com.example.todo:id/row2",
        "android.widget.TextView",
        "Eggs",
        "",
        "[0,250][1080,350]",
    );
    let prev = android(&[title.clone(), milk.clone(), eggs.clone(), done_off.clone()]);
    let real = android(&[title.clone(), milk.clone(), eggs.clone(), done.clone()]);
    // The prediction forgets Milk, draws Eggs lower, and leaves the box
    // unticked: it kept the previous state where the real one changed.
    let pred = android(&[title, eggs_low, done_off]);
    let f = run(Some(&prev), &real, &pred, Representation::AndroidXml);
    assert_table(
        &f,
        &[
            "forgotten - android.widget.TextView 1",
            "attribute attr:bounds android.widget.TextView 1",
            "attribute attr:checked android.widget.CheckBox 1",
            "attribute bounds android.widget.TextView 1",
            "attribute state:checked android.widget.CheckBox 1",
            "diverged - - 1",
            "anchor checked_selected - 1",
        ],
    );
    assert_eq!(
        find(&f, ErrorKind::Forgotten, "android.widget.TextView").real_lines,
        vec![5]
    );
}

#[test]
fn os_text_value_and_active_window() {
    let doc = |value: &str, active: &str| {
        format!(
            r#"<desktop-frame xmlns:st="https://accessibility.ubuntu.example.org/ns/state">
<application name="notepad">
<frame name="Notes" st:active="{active}">
<text name="Body" st:editable="true">{value}</text>
<push-button name="Save"/>
</frame>
</application>
</desktop-frame>
"#
        )
    };
    let prev = doc("hello", "true");
    let real = doc("hello world", "true");
    let pred = doc("hello there", "false");
    let f = run(Some(&prev), &real, &pred, Representation::OsXml);
    let kinds: Vec<ErrorKind> = f.findings.iter().map(|x| x.kind).collect();
    assert!(kinds.contains(&ErrorKind::Diverged), "{:?}", table(&f));
    assert_eq!(f.count(ErrorKind::Invented), 0);
    assert_eq!(f.count(ErrorKind::Forgotten), 0);
    assert!(
        f.findings
            .iter()
            .any(|x| x.kind == ErrorKind::Anchor && x.detail == "active_window"),
        "{:?}",
        table(&f)
    );
}

#[test]
fn text_domains_work_on_lines() {
    let prev = "$ ls\nsrc\n";
    let real = "$ ls\nsrc\n$ cat a.txt\nalpha\nbeta\n";
    // One line right, one replaced, one forgotten.
    let pred = "$ ls\nsrc\n$ cat a.txt\nALPHA\n";
    let f = run(Some(prev), real, pred, Representation::Text);
    assert_table(
        &f,
        &["forgotten - line 1", "text line line 1", "diverged - - 1"],
    );
    assert_eq!(find(&f, ErrorKind::Text, "line").real_lines, vec![4]);
    assert_eq!(find(&f, ErrorKind::Forgotten, "line").real_lines, vec![5]);
    // A copy of the previous text is stale; lines the real text lacks are
    // invented.
    let f = run(Some(prev), real, prev, Representation::Text);
    assert_eq!(f.count(ErrorKind::Stale), 1);
    assert_eq!(f.count(ErrorKind::Forgotten), 3);
    let f = run(Some(prev), prev, "$ ls\nsrc\nextra\n", Representation::Json);
    assert_table(&f, &["invented - line 1", "over_change - - 1"]);
}

#[test]
fn unscored_turns_have_no_findings() {
    let f = run(None, WEB_REAL, "  ", Representation::Axtree);
    assert_eq!(f.status, EvalStatus::Missing);
    assert!(f.findings.is_empty());
}
