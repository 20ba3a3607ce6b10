//! BrowserGym accessibility-tree text (`flatten_axtree_to_str` in
//! `browsergym/core/src/browsergym/utils/obs.py`): one node per line,
//! indented with one tab per level, `[bid] role 'name', prop, prop=value`,
//! or `[bid] role 'name' value='v', prop…` for nodes with a value (the value
//! comes after the name with a space, the properties after commas);
//! the name is a Python `repr` (so it may be in double quotes and carry
//! escapes such as `\ue604`). Rows without `[bid]` (`StaticText 'foo'`) are
//! kept. WebArena's variant writes properties as `key: value` pairs after the
//! name (`[301] combobox '' hasPopup: menu expanded: False`).

use super::text::{TextLine, WarningSink, non_blank_lines};
use super::{
    ParseError, Parsed, WarningKind, flag_truncation_line, line_truncation_marker, starts_like_note,
};
use crate::tree::{Attribute, NodeId, SourceSpan, UiTree};
use worldloom_core::domain::Representation;

/// Parses accessibility-tree text into a tree under a synthetic `#document`
/// root.
///
/// Names keep Python escapes as written (`\ue604` stays six characters) so
/// real and predicted text compare identically; only the escaped quote
/// character itself is undone. Indentation that jumps more than one level
/// attaches the node to the deepest open node and warns.
///
/// A truncation marker line (a note a dump tool writes where it cut the
/// tree, see [`super::truncation_marker`]: `# truncated at 1000 nodes`,
/// `... tree truncated ...`, `[max nodes 2000 reached]`, or a line of prose
/// naming the cut that is not a row) is not a node: it sets
/// [`crate::tree::UiTree::truncated`] and is warned about, as in the OS
/// table. A row whose name says "truncated" stays a row.
///
/// Errors: [`ParseError::FailedCapture`] for empty input.
pub fn parse_axtree(input: &str) -> Result<Parsed, ParseError> {
    let lines = non_blank_lines(input, "empty accessibility tree")?;
    let mut sink = WarningSink::default();
    let mut tree = UiTree::with_root(Representation::Axtree, "#document");
    let space_unit = input
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start_matches(' ').len())
        .filter(|n| *n > 0)
        .min()
        .unwrap_or(1);
    let mut stack: Vec<NodeId> = vec![tree.root()];
    for TextLine {
        start,
        number: line_no,
        text: line,
    } in lines
    {
        if let Some(cap) = line_truncation_marker(line, is_axtree_row) {
            flag_truncation_line(&mut tree, &mut sink, cap, line_no, start);
            continue;
        }
        let tabs = line.len() - line.trim_start_matches('\t').len();
        let after_tabs = &line[tabs..];
        let spaces = after_tabs.len() - after_tabs.trim_start_matches(' ').len();
        let depth = tabs + spaces / space_unit + 1;
        let content = after_tabs.trim();
        let depth = if depth > stack.len() {
            sink.push(
                WarningKind::IndentJump,
                line_no,
                start,
                format!(
                    "indentation jumps from level {} to {}",
                    stack.len() - 1,
                    depth - 1
                ),
            );
            stack.len()
        } else {
            depth
        };
        stack.truncate(depth);
        let parent = stack.last().copied().unwrap_or(tree.root());
        let id = tree.push(Some(parent), String::new());
        stack.push(id);
        let row = read_row(content);
        if let Some(problem) = &row.problem {
            sink.push(WarningKind::Malformed, line_no, start, problem.clone());
        }
        let n = tree.node_mut(id);
        n.span = Some(SourceSpan {
            start_byte: start,
            end_byte: start + line.len(),
            line: line_no,
        });
        n.role = row.role;
        n.name = row.name;
        n.key = row.bid;
        for (k, v) in &row.props {
            let flag = || parse_flag(v);
            match k.as_str() {
                "checked" => {
                    n.states.checked = Some(v.eq_ignore_ascii_case("true") || v == "mixed")
                }
                "selected" => n.states.selected = flag(),
                "focused" => n.states.focused = flag(),
                "disabled" => n.states.enabled = flag().map(|d| !d),
                "expanded" => n.states.expanded = flag(),
                "editable" => n.states.editable = Some(v != "false"),
                "value" | "valuetext" if n.value.is_none() => n.value = Some(v.clone()),
                _ => {}
            }
        }
        n.attributes = row
            .props
            .into_iter()
            .map(|(name, value)| Attribute { name, value })
            .collect();
    }
    Ok(Parsed {
        tree,
        warnings: sink.finish(),
    })
}

/// Whether a trimmed line is a row of the accessibility tree rather than a
/// note: `[bid] …` (a bid has a letter or digit and no spaces), or, without
/// a bid, a line that does not open the way notes do and is a bare role or
/// a role followed by its quoted name or its properties (`StaticText 'x'`,
/// `generic, clickable`, `spinbutton value=3`, `combobox hasPopup: menu`).
/// Prose such as `Tree truncated at 1000 nodes` is not a row.
fn is_axtree_row(line: &str) -> bool {
    if let Some(after) = line.strip_prefix('[') {
        return after.find(']').is_some_and(|end| {
            let bid = &after[..end];
            bid.chars().any(char::is_alphanumeric) && !bid.chars().any(char::is_whitespace)
        });
    }
    if starts_like_note(line) {
        return false;
    }
    match line.split_once(' ') {
        None => true,
        Some((role, rest)) => {
            let first = rest.split(' ').next().unwrap_or("");
            role.ends_with(',')
                || rest.starts_with(['\'', '"', ','])
                || first.contains('=')
                || first.ends_with(':')
        }
    }
}

fn parse_flag(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "" | "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

struct Row {
    bid: Option<String>,
    role: String,
    name: String,
    props: Vec<(String, String)>,
    problem: Option<String>,
}

fn read_row(content: &str) -> Row {
    let mut rest = content;
    let mut bid = None;
    if let Some(after) = rest.strip_prefix('[')
        && let Some(end) = after.find(']')
    {
        bid = Some(after[..end].to_string());
        rest = after[end + 1..].trim_start();
    }
    let role_end = rest.find([' ', ',']).unwrap_or(rest.len());
    let role = rest[..role_end].to_string();
    rest = rest[role_end..].trim_start_matches(' ');
    let mut name = String::new();
    let mut problem = None;
    if let Some(q) = rest.chars().next().filter(|c| *c == '\'' || *c == '"') {
        match quoted(rest, q) {
            Some((text, used)) => {
                name = text;
                rest = &rest[used..];
            }
            None => {
                problem = Some(format!(
                    "unterminated quoted name {rest:?}; kept the rest of the line as the name"
                ));
                name = rest[1..].to_string();
                rest = "";
            }
        }
    }
    let rest = rest.trim();
    let props = if rest.is_empty() {
        Vec::new()
    } else if let Some(list) = rest.strip_prefix(',') {
        browsergym_props(list)
    } else if starts_with_assignment(rest) {
        // BrowserGym writes the value right after the name, before the
        // comma-separated properties: `'Name' value='Ada', clickable`.
        browsergym_props(rest)
    } else {
        webarena_props(rest)
    };
    Row {
        bid,
        role,
        name,
        props,
        problem,
    }
}

/// True when `s` opens with `identifier=` (BrowserGym `value='…'` after the
/// name), as opposed to WebArena's `identifier: ` pairs.
fn starts_with_assignment(s: &str) -> bool {
    let ident_len = s
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
        .count();
    ident_len > 0 && s.as_bytes().get(ident_len) == Some(&b'=')
}

/// Reads a Python-repr quoted string starting at `s[0] == q`. Returns the
/// text (escapes kept except `\q`) and the bytes consumed.
fn quoted(s: &str, q: char) -> Option<(String, usize)> {
    let mut out = String::new();
    let mut chars = s.char_indices().skip(1);
    while let Some((i, c)) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some((_, n)) if n == q => out.push(n),
                Some((_, n)) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push('\\'),
            }
        } else if c == q {
            return Some((out, i + c.len_utf8()));
        } else {
            out.push(c);
        }
    }
    None
}

/// `, clickable, visible, checked='false', describedby='dialog'`.
fn browsergym_props(list: &str) -> Vec<(String, String)> {
    let mut props = Vec::new();
    let mut rest = list.trim_start();
    while !rest.is_empty() {
        let key_end = rest.find([',', '=']).unwrap_or(rest.len());
        let key = rest[..key_end].trim().to_string();
        rest = &rest[key_end..];
        let mut value = String::new();
        if let Some(after) = rest.strip_prefix('=') {
            let q = after.chars().next().filter(|c| *c == '\'' || *c == '"');
            match q.and_then(|q| quoted(after, q)) {
                Some((text, used)) => {
                    value = text;
                    rest = &after[used..];
                }
                None => {
                    let end = after.find(',').unwrap_or(after.len());
                    value = after[..end].trim().to_string();
                    rest = &after[end..];
                }
            }
        }
        if !key.is_empty() {
            props.push((key, value));
        }
        rest = rest.trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
    }
    props
}

/// `hasPopup: menu expanded: False url: http://x/y`: keys are single words
/// followed by `: `; a value runs until the next key.
fn webarena_props(rest: &str) -> Vec<(String, String)> {
    let bytes = rest.as_bytes();
    let mut keys: Vec<(usize, usize, usize)> = Vec::new(); // (key start, key end, value start)
    let mut i = 0;
    while i < bytes.len() {
        if (i == 0 || bytes[i - 1] == b' ') && bytes[i].is_ascii_alphabetic() {
            let mut j = i;
            while j < bytes.len()
                && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_' || bytes[j] == b'-')
            {
                j += 1;
            }
            if j < bytes.len() && bytes[j] == b':' && (j + 1 == bytes.len() || bytes[j + 1] == b' ')
            {
                keys.push((i, j, (j + 2).min(bytes.len())));
                i = j + 1;
                continue;
            }
        }
        i += 1;
    }
    if keys.is_empty() {
        return vec![(rest.to_string(), String::new())];
    }
    let mut props = Vec::new();
    for (k, (ks, ke, vs)) in keys.iter().enumerate() {
        let ve = keys.get(k + 1).map(|n| n.0).unwrap_or(rest.len());
        let value = rest.get(*vs..ve.max(*vs)).unwrap_or("").trim();
        props.push((rest[*ks..*ke].to_string(), value.to_string()));
    }
    props
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webarena_properties() {
        let p = webarena_props("hasPopup: menu expanded: False url: http://a.b/c?d=e: f");
        assert_eq!(
            p,
            vec![
                ("hasPopup".to_string(), "menu".to_string()),
                ("expanded".to_string(), "False".to_string()),
                ("url".to_string(), "http://a.b/c?d=e: f".to_string()),
            ]
        );
    }

    #[test]
    fn browsergym_value_after_name_then_properties() {
        let r = read_row("[23] textbox 'Name' value='Ada', clickable, focused");
        assert_eq!(r.bid.as_deref(), Some("23"));
        assert_eq!(r.role, "textbox");
        assert_eq!(r.name, "Name");
        assert_eq!(
            r.props,
            vec![
                ("value".to_string(), "Ada".to_string()),
                ("clickable".to_string(), String::new()),
                ("focused".to_string(), String::new()),
            ]
        );
        let r = read_row(
            "[30] combobox 'Time zone' value='(UTC, a=b)', hasPopup='menu', expanded=False, required",
        );
        assert_eq!(r.name, "Time zone");
        assert_eq!(
            r.props,
            vec![
                ("value".to_string(), "(UTC, a=b)".to_string()),
                ("hasPopup".to_string(), "menu".to_string()),
                ("expanded".to_string(), "False".to_string()),
                ("required".to_string(), String::new()),
            ]
        );
        // No name at all, value only.
        let r = read_row("spinbutton value=3, valuemin=1");
        assert_eq!((r.role.as_str(), r.name.as_str()), ("spinbutton", ""));
        assert_eq!(
            r.props,
            vec![
                ("value".to_string(), "3".to_string()),
                ("valuemin".to_string(), "1".to_string()),
            ]
        );
        // WebArena pairs still read as pairs.
        let r = read_row("[301] combobox 'Sort' hasPopup: menu expanded: False");
        assert_eq!(
            r.props,
            vec![
                ("hasPopup".to_string(), "menu".to_string()),
                ("expanded".to_string(), "False".to_string()),
            ]
        );
    }

    #[test]
    fn browsergym_properties_and_escapes() {
        let r =
            read_row(r#"[a7] button "it's \ue604", clickable, describedby='a, b', checked='true'"#);
        assert_eq!(r.bid.as_deref(), Some("a7"));
        assert_eq!(r.role, "button");
        assert_eq!(r.name, r"it's \ue604");
        assert_eq!(
            r.props,
            vec![
                ("clickable".to_string(), String::new()),
                ("describedby".to_string(), "a, b".to_string()),
                ("checked".to_string(), "true".to_string()),
            ]
        );
    }
}
