//! Shared XML plumbing for the Android and OS parsers (`roxmltree`, which
//! parses without recursion and rejects DTDs, so no entity expansion).

use super::text::{Decoded, LineIndex, WarningSink};
use super::{ParseError, ParseWarning, WarningKind, truncation_marker, truncation_message};
use crate::tree::{NodeId, SourceSpan, Truncation, TruncationReason, UiNode, UiTree};
use worldloom_core::domain::Representation;

/// Options used for every XML document: no DTD (so no entity expansion).
pub(crate) fn options<'a>() -> roxmltree::ParsingOptions<'a> {
    roxmltree::ParsingOptions {
        allow_dtd: false,
        ..roxmltree::ParsingOptions::default()
    }
}

/// Detects a failed capture and blanks text before the first tag and after
/// the root element (replacing it with spaces keeps byte offsets).
///
/// `root_close` is the closing tag that ends a complete dump
/// (`</hierarchy>`); without one, text after the last `>` is treated as
/// trailing.
pub(crate) fn prepare(
    decoded: &mut Decoded<'_>,
    root_close: Option<&str>,
    sink: &mut WarningSink,
) -> Result<(), ParseError> {
    let trimmed = decoded.text.trim();
    if trimmed.is_empty() {
        return Err(ParseError::FailedCapture {
            message: "empty dump".to_string(),
        });
    }
    let Some(first_lt) = decoded.text.find('<') else {
        let first_line = trimmed.lines().next().unwrap_or(trimmed).trim();
        let message: String = first_line.chars().take(200).collect();
        return Err(ParseError::FailedCapture { message });
    };
    if !decoded.text[..first_lt].trim().is_empty() {
        let junk: String = decoded.text[..first_lt].trim().chars().take(120).collect();
        let byte = decoded.map.original(0);
        sink.push(
            WarningKind::TrailingText,
            decoded.lines.line(byte),
            byte,
            format!("ignored text before the first tag: {junk:?}"),
        );
        blank(decoded.text.to_mut(), 0, first_lt);
    }
    blank_late_declaration(&mut decoded.text);
    let end = root_close
        .and_then(|close| decoded.text.rfind(close).map(|i| i + close.len()))
        .or_else(|| decoded.text.rfind('>').map(|i| i + 1));
    if let Some(end) = end
        && !decoded.text[end..].trim().is_empty()
    {
        let junk: String = decoded.text[end..].trim().chars().take(120).collect();
        let byte = decoded.map.original(end);
        sink.push(
            WarningKind::TrailingText,
            decoded.lines.line(byte),
            byte,
            format!("ignored text after the root element: {junk:?}"),
        );
        let len = decoded.text.len();
        blank(decoded.text.to_mut(), end, len);
    }
    Ok(())
}

/// Replaces `text[start..end]` with as many spaces as it has bytes, keeping
/// line feeds so line numbers stay right.
pub(crate) fn blank(text: &mut String, start: usize, end: usize) {
    if start < end && text.is_char_boundary(start) && text.is_char_boundary(end) {
        let spaces: String = text[start..end]
            .bytes()
            .map(|b| if b == b'\n' { '\n' } else { ' ' })
            .collect();
        text.replace_range(start..end, &spaces);
    }
}

/// Blanks an XML declaration that no longer starts the text (after leading
/// junk was blanked), since XML allows it only at offset 0.
fn blank_late_declaration(text: &mut std::borrow::Cow<'_, str>) {
    let lead = text.len() - text.trim_start().len();
    if lead > 0
        && text[lead..].starts_with("<?xml")
        && let Some(end) = text[lead..].find("?>")
    {
        blank(text.to_mut(), lead, lead + end + 2);
    }
}

/// Turns a roxmltree error into a [`ParseError::Syntax`] whose line and
/// column refer to the original input.
pub(crate) fn syntax_error(
    err: &roxmltree::Error,
    text: &str,
    decoded: &Decoded<'_>,
) -> ParseError {
    syntax_error_mapped(err, text, decoded, &|p| p)
}

/// Like [`syntax_error`] for a text that was further edited after
/// decoding; `to_decoded` maps its offsets back to `decoded.text` offsets.
pub(crate) fn syntax_error_mapped(
    err: &roxmltree::Error,
    text: &str,
    decoded: &Decoded<'_>,
    to_decoded: &dyn Fn(usize) -> usize,
) -> ParseError {
    let pos = err.pos();
    let idx = LineIndex::new(text.as_bytes());
    let line_start = idx.line_start(pos.row).unwrap_or(0);
    let byte = text
        .get(line_start..)
        .and_then(|rest| {
            rest.char_indices()
                .nth((pos.col as usize).saturating_sub(1))
                .map(|(i, _)| line_start + i)
        })
        .unwrap_or(line_start);
    let original = decoded.map.original(to_decoded(byte));
    ParseError::Syntax {
        line: decoded.lines.line(original),
        column: pos.col,
        message: err.to_string(),
    }
}

/// Builds a [`UiTree`] from every element of `doc`, in document order,
/// without recursion. `fill` sets role, name, attributes… of each new node.
pub(crate) fn build_tree(
    doc: &roxmltree::Document<'_>,
    representation: Representation,
    decoded: &Decoded<'_>,
    to_decoded: &dyn Fn(usize) -> usize,
    fill: impl FnMut(&mut UiNode, roxmltree::Node<'_, '_>),
) -> UiTree {
    let mut tree = UiTree {
        representation,
        nodes: Vec::new(),
        truncated: None,
        incomplete: false,
    };
    build_nodes(doc, decoded, to_decoded, fill, |node| {
        if let Some(p) = node.parent {
            tree.nodes[p.index()].children.push(node.id);
        }
        tree.nodes.push(node);
    });
    tree
}

/// Makes one [`UiNode`] per element of `doc`, in document order (pre-order)
/// and without recursion, and hands each to `emit` once `fill` has set its
/// role, name, attributes…: ids are indices in that order, the first
/// element is the root, and an element whose parent is not an element
/// hangs under the root. Children lists are left empty (`emit` links them,
/// or not). A consumer that keeps nodes in another form never holds them
/// all as [`UiNode`]s.
pub(crate) fn build_nodes(
    doc: &roxmltree::Document<'_>,
    decoded: &Decoded<'_>,
    to_decoded: &dyn Fn(usize) -> usize,
    mut fill: impl FnMut(&mut UiNode, roxmltree::Node<'_, '_>),
    mut emit: impl FnMut(UiNode),
) {
    // roxmltree node index → our node id, for elements only.
    let mut ours: Vec<u32> = Vec::new();
    // Depth of each of our nodes.
    let mut depths: Vec<u32> = Vec::new();
    for node in doc.root().descendants().filter(|n| n.is_element()) {
        let parent = node
            .parent_element()
            .and_then(|p| ours.get(p.id().get_usize()).copied())
            .filter(|p| *p != u32::MAX)
            .map(NodeId);
        let parent = if depths.is_empty() {
            None
        } else {
            parent.or(Some(NodeId(0)))
        };
        let id = NodeId(u32::try_from(depths.len()).unwrap_or(u32::MAX));
        let depth = parent.map_or(0, |p| depths[p.index()] + 1);
        depths.push(depth);
        let range = node.range();
        let start = decoded.map.original(to_decoded(range.start));
        let end = decoded.map.original(to_decoded(range.end)).max(start);
        let mut ui = UiNode::new(id, parent, depth, node.tag_name().name().to_string());
        ui.span = Some(SourceSpan {
            start_byte: start,
            end_byte: end,
            line: decoded.lines.line(start),
        });
        let idx = node.id().get_usize();
        if ours.len() <= idx {
            ours.resize(idx + 1, u32::MAX);
        }
        ours[idx] = id.0;
        fill(&mut ui, node);
        emit(ui);
    }
}

/// Finds the first comment of `doc` that is a truncation marker (see
/// [`super::truncation_marker`]) and flags `tree` as cut there: the last
/// node read is the last element that starts before the comment. Returns
/// the warning to report, or `None` when there is no marker.
pub(crate) fn flag_truncation_comment(
    doc: &roxmltree::Document<'_>,
    tree: &mut UiTree,
    decoded: &Decoded<'_>,
    to_decoded: &dyn Fn(usize) -> usize,
) -> Option<ParseWarning> {
    let comment = doc
        .descendants()
        .filter(|n| n.is_comment())
        .find_map(|n| truncation_marker(n.text().unwrap_or("")).map(|cap| (n, cap)))?;
    let (node, cap) = comment;
    let at = node.range().start;
    let before = doc
        .descendants()
        .filter(|n| n.is_element() && n.range().start < at)
        .count();
    let last = NodeId(u32::try_from(before.saturating_sub(1)).unwrap_or(u32::MAX));
    tree.truncated = Some(Truncation {
        reason: TruncationReason::Marker,
        cap,
        last_node: last,
    });
    let byte = decoded.map.original(to_decoded(at));
    Some(ParseWarning {
        kind: WarningKind::Truncated,
        line: decoded.lines.line(byte),
        byte,
        message: truncation_message(cap),
    })
}

/// The text an element holds directly (its text children, concatenated),
/// or `None` when that is empty or only whitespace (indentation between
/// child elements is not a value). Used by every XML representation, so
/// an indented dump and the same dump on one line compare equal.
pub(crate) fn own_text(node: roxmltree::Node<'_, '_>) -> Option<String> {
    let text: String = node
        .children()
        .filter(|c| c.is_text())
        .filter_map(|c| c.text())
        .collect();
    (!text.trim().is_empty()).then_some(text)
}
