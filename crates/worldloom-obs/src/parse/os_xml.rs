//! OS accessibility trees as XML in the OSWorld AT-SPI style: the tag is the
//! AT-SPI role (`push-button`, `menu-item`), `name` the accessible name,
//! `st:<state>="true"` per state, `attr:<key>` object attributes,
//! `cp:screencoord="(x, y)"` and `cp:size="(w, h)"` geometry, `val:value`
//! values, element text = the Text interface's text (OSWorld
//! `desktop_env/server/main.py`, `_create_atspi_node`).

use super::text::{WarningSink, sanitize_xml};
use super::{ParseError, Parsed, WarningKind, xml};
use crate::tree::{Attribute, BoundsPx, UiTree};
use worldloom_core::domain::Representation;

/// Well-known OSWorld namespace URIs (their last path part) and the prefix
/// they are written with, used when a document does not declare a prefix.
const KNOWN_NAMESPACES: [(&str, &str); 8] = [
    ("/ns/state", "st"),
    ("/ns/attributes", "attr"),
    ("/ns/component", "cp"),
    ("/ns/document", "doc"),
    ("/ns/document/attributes", "docattr"),
    ("/ns/text", "txt"),
    ("/ns/value", "val"),
    ("/ns/action", "act"),
];

/// Parses an OSWorld-style AT-SPI XML tree.
///
/// When strict XML parsing fails, a lenient pass repairs near-XML that
/// model predictions often contain: commas between attributes
/// (`name="a", st:focused="true"`) and namespace prefixes used without an
/// `xmlns:` declaration. If that parse succeeds a
/// [`WarningKind::LenientFallback`] warning says so; otherwise the strict
/// error is returned.
///
/// A comment that is a truncation marker (see [`super::truncation_marker`])
/// sets [`UiTree::truncated`]; a tree of exactly 1,000 or 2,000 nodes is
/// flagged possibly truncated; an application exposing only childless
/// frames marks the tree [`UiTree::incomplete`]. Each is warned about.
///
/// Errors: [`ParseError::FailedCapture`] for empty or tag-less input,
/// [`ParseError::Syntax`] with line and column otherwise.
pub fn parse_os_xml(input: &[u8]) -> Result<Parsed, ParseError> {
    let mut decoded = sanitize_xml(input);
    let mut sink = WarningSink::default();
    xml::prepare(&mut decoded, None, &mut sink)?;
    // Borrowed, not copied: the document refers into the decoded text.
    let text: &str = &decoded.text;
    let strict = roxmltree::Document::parse_with_options(text, xml::options());
    let tree = match strict {
        Ok(doc) => build(&doc, &decoded, &|p| p, &mut sink),
        Err(strict_err) => {
            let (repaired, inserted, notes) = repair(text);
            let (at, len) = inserted.unwrap_or((usize::MAX, 0));
            let back = move |p: usize| {
                if p >= at.saturating_add(len) {
                    p - len
                } else if p > at {
                    at
                } else {
                    p
                }
            };
            match roxmltree::Document::parse_with_options(&repaired, xml::options()) {
                Ok(doc) if !notes.is_empty() => {
                    sink.push(
                        WarningKind::LenientFallback,
                        1,
                        0,
                        format!(
                            "not well-formed XML ({}); read with the lenient fallback: {}",
                            strict_err,
                            notes.join("; ")
                        ),
                    );
                    build(&doc, &decoded, &back, &mut sink)
                }
                _ => return Err(xml::syntax_error(&strict_err, text, &decoded)),
            }
        }
    };
    let mut warnings = decoded.warnings;
    warnings.extend(sink.finish());
    Ok(super::check_os_tree(Parsed { tree, warnings }))
}

fn build(
    doc: &roxmltree::Document<'_>,
    decoded: &super::text::Decoded<'_>,
    back: &dyn Fn(usize) -> usize,
    sink: &mut WarningSink,
) -> UiTree {
    let mut tree = xml::build_tree(doc, Representation::OsXml, decoded, back, |n, node| {
        let mut states: Vec<&str> = Vec::new();
        let mut attributes = Vec::new();
        for a in node.attributes() {
            let prefix = a.namespace().map(|uri| {
                node.lookup_prefix(uri)
                    .or_else(|| {
                        KNOWN_NAMESPACES
                            .iter()
                            .find(|(s, _)| uri.ends_with(s))
                            .map(|(_, p)| *p)
                    })
                    .unwrap_or("ns")
            });
            let name = match prefix {
                Some(p) => format!("{p}:{}", a.name()),
                None => a.name().to_string(),
            };
            if prefix == Some("st") && a.value() == "true" {
                states.push(a.name());
            }
            attributes.push(Attribute {
                name,
                value: a.value().to_string(),
            });
        }
        let has = |s: &str| states.contains(&s);
        n.name = node.attribute("name").unwrap_or("").to_string();
        let value_attr = attributes
            .iter()
            .find(|a| a.name == "val:value")
            .map(|a| a.value.clone());
        n.value = xml::own_text(node).or(value_attr);
        if has("checkable") || has("checked") {
            n.states.checked = Some(has("checked"));
        }
        if has("selectable") || has("selected") {
            n.states.selected = Some(has("selected"));
        }
        if has("focusable") || has("focused") {
            n.states.focused = Some(has("focused"));
        }
        if !states.is_empty() {
            n.states.enabled = Some(has("enabled") || has("sensitive"));
        }
        if has("expandable") || has("expanded") {
            n.states.expanded = Some(has("expanded"));
        }
        if has("editable") {
            n.states.editable = Some(true);
        }
        let coord = attributes
            .iter()
            .find(|a| a.name == "cp:screencoord")
            .and_then(|a| pair(&a.value));
        let size = attributes
            .iter()
            .find(|a| a.name == "cp:size")
            .and_then(|a| pair(&a.value));
        if let (Some((x, y)), Some((w, h))) = (coord, size) {
            n.bounds_px = Some(BoundsPx::from_origin_size(x, y, w, h));
        }
        n.attributes = attributes;
        // No stable key: AT-SPI has no element identity, and a path key
        // built from ancestors' names (`/frame:Documents - Thunar/…`)
        // changes for a whole subtree when one window title differs, so
        // one wrong title marked every node below it changed. Nodes are
        // aligned structurally instead (see `crate::align`).
    });
    if let Some(w) = xml::flag_truncation_comment(doc, &mut tree, decoded, back) {
        sink.push(w.kind, w.line, w.byte, w.message);
    }
    tree
}

/// Parses `(x, y)` / `(w, h)` (OSWorld geometry attributes).
pub(crate) fn pair(s: &str) -> Option<(i64, i64)> {
    let inner = s.trim().strip_prefix('(')?.strip_suffix(')')?;
    let (a, b) = inner.split_once(',')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

/// Lenient repairs of near-XML. Returns the repaired text, where a
/// declaration block was inserted (offset, length) and notes on what was
/// done (empty when nothing was changed).
fn repair(text: &str) -> (String, Option<(usize, usize)>, Vec<String>) {
    let mut out = String::with_capacity(text.len() + 64);
    let mut notes = Vec::new();
    let mut commas = 0usize;
    let mut in_tag = false;
    let mut quote: Option<char> = None;
    let mut prefixes: Vec<String> = Vec::new();
    let mut declared: Vec<String> = vec!["xml".to_string(), "xmlns".to_string()];
    let mut word = String::new();
    for c in text.chars() {
        match (in_tag, quote, c) {
            (false, _, '<') => {
                in_tag = true;
                word.clear();
                out.push(c);
            }
            (true, None, '>') => {
                note_prefix(&word, &mut prefixes, &mut declared);
                word.clear();
                in_tag = false;
                out.push(c);
            }
            (true, None, '"' | '\'') => {
                quote = Some(c);
                out.push(c);
            }
            (true, Some(q), _) if c == q => {
                quote = None;
                out.push(c);
            }
            (true, None, ',') => {
                commas += 1;
                out.push(' ');
            }
            (true, None, _) => {
                if c.is_whitespace() || c == '=' || c == '/' {
                    note_prefix(&word, &mut prefixes, &mut declared);
                    word.clear();
                } else {
                    word.push(c);
                }
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    if commas > 0 {
        notes.push(format!(
            "{commas} stray comma(s) between attributes ignored"
        ));
    }
    let missing: Vec<&String> = prefixes.iter().filter(|p| !declared.contains(p)).collect();
    let mut inserted = None;
    if !missing.is_empty() {
        // Insert the declarations right after the root element's name.
        let root_start = first_element_start(&out);
        if let Some(at) = root_start {
            let decl: String = missing
                .iter()
                .map(|p| format!(" xmlns:{p}=\"urn:worldloom:undeclared:{p}\""))
                .collect();
            out.insert_str(at, &decl);
            inserted = Some((at, decl.len()));
            notes.push(format!(
                "undeclared prefix(es) {} declared",
                missing
                    .iter()
                    .map(|p| p.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    (out, inserted, notes)
}

fn note_prefix(word: &str, prefixes: &mut Vec<String>, declared: &mut Vec<String>) {
    let word = word.trim_start_matches(['<', '/', '?', '!']);
    if let Some(decl) = word.strip_prefix("xmlns:") {
        if !declared.iter().any(|d| d == decl) {
            declared.push(decl.to_string());
        }
        return;
    }
    if let Some((p, local)) = word.split_once(':')
        && !p.is_empty()
        && !local.is_empty()
        && p.chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '.')
        && !prefixes.iter().any(|x| x == p)
    {
        prefixes.push(p.to_string());
    }
}

/// Byte offset just after the first element's name (skipping `<?…?>`,
/// `<!…>`).
fn first_element_start(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(off) = text[i..].find('<') {
        let start = i + off;
        match bytes.get(start + 1) {
            Some(b'?') | Some(b'!') => {
                i = start + 1;
                continue;
            }
            Some(_) => {
                let mut end = start + 1;
                while end < bytes.len()
                    && !bytes[end].is_ascii_whitespace()
                    && bytes[end] != b'>'
                    && bytes[end] != b'/'
                {
                    end += 1;
                }
                return Some(end);
            }
            None => return None,
        }
    }
    None
}
