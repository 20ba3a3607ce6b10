//! Android uiautomator XML (`uiautomator dump`, `adb exec-out uiautomator
//! dump /dev/tty`): a `<hierarchy rotation="…">` root holding nested
//! `<node index text resource-id class package content-desc checkable checked
//! clickable enabled focusable focused scrollable long-clickable password
//! selected bounds="[l,t][r,b]">` elements (format: AOSP
//! `AccessibilityNodeInfoDumper`).

use super::text::{WarningSink, sanitize_xml};
use super::{ParseError, ParseWarning, Parsed, WarningKind, xml};
use crate::compact::{CompactBuilder, CompactParseError, CompactTree};
use crate::tree::{Attribute, BoundsPx, UiNode, UiTree};
use worldloom_core::domain::Representation;

/// Parses a uiautomator dump.
///
/// Repairs, each reported as a warning: bytes that are not UTF-8 and
/// characters XML forbids (lone surrogates raw or as `&#xD83D;`, C0
/// controls) become U+FFFD; text before the first tag or after
/// `</hierarchy>` (adb's `UI hierchary dumped to: /dev/tty`) is ignored;
/// malformed `bounds` are left out.
///
/// Errors: [`ParseError::FailedCapture`] when the input holds no tag at all
/// (`ERROR: could not get idle state.`) or is empty; [`ParseError::Syntax`]
/// with line and column when the XML is broken beyond these repairs.
pub fn parse_android_xml(input: &[u8]) -> Result<Parsed, ParseError> {
    let mut tree = UiTree {
        representation: Representation::AndroidXml,
        nodes: Vec::new(),
        truncated: None,
        incomplete: false,
    };
    let warnings = read_android_xml(input, |node| {
        if let Some(p) = node.parent {
            tree.nodes[p.index()].children.push(node.id);
        }
        tree.nodes.push(node);
    })?;
    Ok(Parsed { tree, warnings })
}

/// Parses a uiautomator dump straight into a [`CompactTree`], never holding
/// the whole tree as [`UiNode`]s: each node is copied into the compact form
/// as soon as it is read. The tree is the one [`parse_android_xml`] gives
/// ([`CompactTree::to_tree`] equals it), with the same warnings and errors.
///
/// Errors: as [`parse_android_xml`], and [`CompactParseError::Compact`]
/// when the tree does not fit the compact form's `u32` offsets.
pub fn parse_android_xml_compact(
    input: &[u8],
) -> Result<(CompactTree, Vec<ParseWarning>), CompactParseError> {
    let mut builder = CompactBuilder::default();
    let mut failed = None;
    let warnings = read_android_xml(input, |node| {
        if failed.is_none()
            && let Err(e) = builder.push(node)
        {
            failed = Some(e);
        }
    })?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    let tree = builder.finish(Representation::AndroidXml, None, false);
    Ok((tree, warnings))
}

/// Reads a uiautomator dump, handing each node (in pre-order, without its
/// child list) to `emit`; returns the warnings.
fn read_android_xml(
    input: &[u8],
    emit: impl FnMut(UiNode),
) -> Result<Vec<ParseWarning>, ParseError> {
    let mut decoded = sanitize_xml(input);
    let mut sink = WarningSink::default();
    xml::prepare(&mut decoded, Some("</hierarchy>"), &mut sink)?;
    // Borrowed, not copied: the document refers into the decoded text.
    let text: &str = &decoded.text;
    let doc = roxmltree::Document::parse_with_options(text, xml::options())
        .map_err(|e| xml::syntax_error(&e, text, &decoded))?;
    xml::build_nodes(
        &doc,
        &decoded,
        &|p| p,
        |n, node| {
            n.attributes = node
                .attributes()
                .map(|a| Attribute {
                    name: a.name().to_string(),
                    value: a.value().to_string(),
                })
                .collect();
            if node.tag_name().name() != "node" {
                return;
            }
            let get = |k: &str| node.attribute(k).unwrap_or("");
            let is_true = |k: &str| node.attribute(k) == Some("true");
            let class = get("class");
            if !class.is_empty() {
                n.role = class.to_string();
            }
            let text = get("text");
            n.name = if text.is_empty() {
                get("content-desc").to_string()
            } else {
                text.to_string()
            };
            let editable = class.contains("EditText") || class.contains("AutoCompleteTextView");
            if editable {
                n.value = Some(text.to_string());
                n.states.editable = Some(true);
            }
            let rid = get("resource-id");
            if !rid.is_empty() {
                n.key = Some(rid.to_string());
            }
            if is_true("checkable") || is_true("checked") {
                n.states.checked = Some(is_true("checked"));
            }
            if is_true("focusable") || is_true("focused") {
                n.states.focused = Some(is_true("focused"));
            }
            if is_true("selected") {
                n.states.selected = Some(true);
            }
            let interactive =
                is_true("clickable") || is_true("focusable") || is_true("checkable") || editable;
            if interactive || node.attribute("enabled") == Some("false") {
                n.states.enabled = Some(node.attribute("enabled") != Some("false"));
            }
            if let Some(b) = node.attribute("bounds") {
                match parse_bounds(b) {
                    Some(bounds) => n.bounds_px = Some(bounds),
                    None => {
                        let span = n.span;
                        sink.push(
                            WarningKind::Malformed,
                            span.map(|s| s.line).unwrap_or(0),
                            span.map(|s| s.start_byte).unwrap_or(0),
                            format!("bounds {b:?} is not `[l,t][r,b]`; left out"),
                        );
                    }
                }
            }
        },
        emit,
    );
    drop(doc);
    let mut warnings = decoded.warnings;
    warnings.extend(sink.finish());
    Ok(warnings)
}

/// Parses `[l,t][r,b]` (integers, possibly negative, spaces tolerated).
pub(crate) fn parse_bounds(s: &str) -> Option<BoundsPx> {
    let s = s.trim();
    let inner = s.strip_prefix('[')?.strip_suffix(']')?;
    let (a, b) = inner.split_once("][")?;
    let pair = |p: &str| -> Option<(i64, i64)> {
        let (x, y) = p.split_once(',')?;
        Some((x.trim().parse().ok()?, y.trim().parse().ok()?))
    };
    let (l, t) = pair(a)?;
    let (r, bt) = pair(b)?;
    Some(BoundsPx::from_edges(l, t, r, bt))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::BoundsAnomaly;

    #[test]
    fn negative_bounds_are_kept_and_flagged() {
        let b = parse_bounds("[-5,-20][100,50]").expect("bounds");
        assert_eq!((b.left, b.top, b.right, b.bottom), (-5, -20, 100, 50));
        assert_eq!(b.anomalies, vec![BoundsAnomaly::Negative]);
        let inv = parse_bounds("[10,10][5,20]").expect("bounds");
        assert_eq!(inv.anomalies, vec![BoundsAnomaly::Inverted]);
        assert!(parse_bounds("[1,2][3]").is_none());
        assert!(parse_bounds("garbage").is_none());
    }
}
