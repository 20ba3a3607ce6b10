//! HTML documents (full pages and BrowserGym `pruned_html`), parsed with
//! `scraper` (html5ever, the WHATWG HTML parsing algorithm). Nothing is
//! executed and nothing is fetched: scripts are kept as inert nodes, `src`
//! attributes are plain text.

use std::collections::HashMap;

use super::text::{LineIndex, WarningSink};
use super::{Parsed, WarningKind};
use crate::tree::{Attribute, NodeId, SourceSpan, UiTree, collapse_whitespace};
use scraper::{Html, Node};
use worldloom_core::domain::Representation;

mod depth;

pub use depth::MAX_HTML_DEPTH;

/// How many iframe documents may nest inside each other before expansion
/// stops (with a [`WarningKind::NestingLimit`] warning).
pub const MAX_FRAME_NESTING: u32 = 8;

/// How far ahead (bytes) the source-span search looks for an element's start
/// tag; elements html5ever implied (`<tbody>`, a missing `<body>`) are not
/// in the source and get no span.
const SPAN_SEARCH_WINDOW_BYTES: usize = 64 * 1024;

/// Elements whose text content is not visible page text.
const NON_VISIBLE: [&str; 4] = ["script", "style", "noscript", "template"];

/// Parses an HTML document. Never fails: the HTML parsing algorithm accepts
/// any input.
///
/// Each element becomes a node (role = tag name in lower case); the
/// element's own text (text children, whitespace collapsed) is its name,
/// falling back to `aria-label`, `alt`, then `placeholder`. The key is the
/// BrowserGym `bid` attribute, else `id`. Form state: `value` of text-like
/// inputs and `<textarea>` content become the node value; `checked`,
/// `selected`, `disabled`, `aria-checked`, `aria-selected`,
/// `aria-expanded` become states. An `<iframe>` keeps its content: the
/// document in `srcdoc`, or the markup BrowserGym inlines as the iframe's
/// text, is parsed and listed under it (below a synthetic `#document` node)
/// whether or not the frame has a `bid`. Spans cover the element's start
/// tag; nodes inside iframe documents carry the iframe's span.
///
/// Elements nested more than [`MAX_HTML_DEPTH`] deep below `<body>` are
/// not kept (their text goes to the deepest element kept), with one
/// [`WarningKind::NestingLimit`] warning per document at the first: parsing
/// stays linear in the input's length however deep the nesting.
pub fn parse_html(input: &str) -> Parsed {
    let lines = LineIndex::new(input.as_bytes());
    let lower = input.to_ascii_lowercase();
    let mut sink = WarningSink::default();
    let mut tree = UiTree::with_root(Representation::Html, "#document");
    // (document text, parent node, nesting level, span to give its nodes)
    let mut queue: Vec<(String, NodeId, u32, Option<SourceSpan>)> = Vec::new();
    let mut cursor = 0usize;
    let (doc, report) = depth::parse_document_capped(input);
    if let Some(line) = report.first_line {
        let line = u32::try_from(line).unwrap_or(u32::MAX);
        let byte = lines.line_start(line).unwrap_or(0);
        depth_warning(&mut sink, report.dropped, line, byte);
    }
    let root = tree.root();
    let mut next_start = 0usize;
    add_document(&doc, &mut tree, root, 0, None, &mut queue, &mut |tag| {
        if report.dropped > 0 {
            // Step over the start tags the depth cap dropped: they are in
            // the source but not in the tree.
            while let Some((name, false)) = report.starts.get(next_start) {
                let _ = find_start_tag(input, &lower, &lines, &mut cursor, name);
                next_start += 1;
            }
            if report
                .starts
                .get(next_start)
                .is_some_and(|(name, _)| &**name == tag)
            {
                next_start += 1;
            }
        }
        find_start_tag(input, &lower, &lines, &mut cursor, tag)
    });
    while let Some((text, parent, level, span)) = queue.pop() {
        if level > MAX_FRAME_NESTING {
            sink.push(
                WarningKind::NestingLimit,
                span.map(|s| s.line).unwrap_or(0),
                span.map(|s| s.start_byte).unwrap_or(0),
                format!("iframe documents nested more than {MAX_FRAME_NESTING} deep; inner content not expanded"),
            );
            continue;
        }
        let inner = tree.push(Some(parent), "#document".to_string());
        tree.node_mut(inner).synthetic = true;
        tree.node_mut(inner).span = span;
        let (doc, report) = depth::parse_document_capped(&text);
        if report.dropped > 0 {
            let (line, byte) = span.map(|s| (s.line, s.start_byte)).unwrap_or((0, 0));
            depth_warning(&mut sink, report.dropped, line, byte);
        }
        add_document(&doc, &mut tree, inner, level, span, &mut queue, &mut |_| {
            span
        });
    }
    let tree = tree.into_preorder();
    Parsed {
        tree,
        warnings: sink.finish(),
    }
}

fn depth_warning(sink: &mut WarningSink, dropped: usize, line: u32, byte: usize) {
    sink.push(
        WarningKind::NestingLimit,
        line,
        byte,
        format!(
            "HTML elements nested more than {MAX_HTML_DEPTH} deep: {dropped} deeper start tag(s) not kept, their text kept in the element at depth {MAX_HTML_DEPTH}"
        ),
    );
}

fn add_document(
    doc: &Html,
    tree: &mut UiTree,
    root: NodeId,
    level: u32,
    frame_span: Option<SourceSpan>,
    queue: &mut Vec<(String, NodeId, u32, Option<SourceSpan>)>,
    span_of: &mut dyn FnMut(&str) -> Option<SourceSpan>,
) {
    let mut ours: HashMap<ego_tree::NodeId, NodeId> = HashMap::new();
    // Element id → whether its text is visible.
    let mut hidden_text: HashMap<ego_tree::NodeId, bool> = HashMap::new();
    let doc_root = doc.tree.root();
    ours.insert(doc_root.id(), root);
    hidden_text.insert(doc_root.id(), false);
    for node in doc_root.descendants().skip(1) {
        let Some(parent_ego) = node.parent() else {
            continue;
        };
        let parent = ours.get(&parent_ego.id()).copied();
        match node.value() {
            Node::Element(el) => {
                let Some(parent) = parent else { continue };
                let tag = el.name().to_string();
                let id = tree.push(Some(parent), tag.clone());
                ours.insert(node.id(), id);
                let parent_hidden = hidden_text.get(&parent_ego.id()).copied().unwrap_or(false);
                hidden_text.insert(
                    node.id(),
                    parent_hidden || NON_VISIBLE.contains(&tag.as_str()),
                );
                let n = tree.node_mut(id);
                n.attributes = el
                    .attrs()
                    .map(|(k, v)| Attribute {
                        name: k.to_string(),
                        value: v.to_string(),
                    })
                    .collect();
                n.span = span_of(&tag);
                let attr = |k: &str| el.attr(k);
                n.key = attr("bid")
                    .or(attr("id"))
                    .filter(|k| !k.is_empty())
                    .map(str::to_string);
                let input_type = attr("type").unwrap_or("text").to_ascii_lowercase();
                let form_control = matches!(
                    tag.as_str(),
                    "input" | "button" | "select" | "textarea" | "option"
                );
                if tag == "input" && matches!(input_type.as_str(), "checkbox" | "radio") {
                    n.states.checked = Some(attr("checked").is_some());
                } else if tag == "input"
                    && !matches!(
                        input_type.as_str(),
                        "button" | "submit" | "reset" | "image" | "hidden"
                    )
                {
                    n.value = Some(attr("value").unwrap_or("").to_string());
                    n.states.editable = Some(attr("readonly").is_none());
                }
                if let Some(v) = attr("aria-checked") {
                    n.states.checked = Some(v == "true" || v == "mixed");
                }
                if tag == "option" {
                    n.states.selected = Some(attr("selected").is_some());
                }
                if let Some(v) = attr("aria-selected") {
                    n.states.selected = Some(v == "true");
                }
                if let Some(v) = attr("aria-expanded") {
                    n.states.expanded = Some(v == "true");
                }
                if form_control || attr("disabled").is_some() {
                    n.states.enabled =
                        Some(attr("disabled").is_none() && attr("aria-disabled") != Some("true"));
                }
                if tag == "textarea" || attr("contenteditable").is_some_and(|v| v != "false") {
                    n.states.editable = Some(true);
                }
                if tag == "iframe" {
                    let inline: String = node
                        .children()
                        .filter_map(|c| c.value().as_text())
                        .map(|t| &**t)
                        .collect();
                    let content = attr("srcdoc").map(str::to_string).or_else(|| {
                        let trimmed = inline.trim();
                        (!trimmed.is_empty()).then(|| trimmed.to_string())
                    });
                    if let Some(content) = content {
                        queue.push((content, id, level + 1, n.span.or(frame_span)));
                    }
                }
            }
            Node::Text(text) => {
                let Some(parent) = parent else { continue };
                if hidden_text.get(&parent_ego.id()).copied().unwrap_or(false) {
                    continue;
                }
                let p = tree.node_mut(parent);
                if p.role == "iframe" {
                    continue;
                }
                let t = collapse_whitespace(text);
                if t.is_empty() {
                    continue;
                }
                if p.role == "textarea" {
                    p.value = Some(t);
                } else {
                    if !p.name.is_empty() {
                        p.name.push(' ');
                    }
                    p.name.push_str(&t);
                }
            }
            _ => {}
        }
    }
    // Names for elements without own text.
    for id in ours.values() {
        let n = tree.node_mut(*id);
        if n.name.is_empty() && !n.synthetic {
            let fallback = ["aria-label", "alt", "placeholder"].iter().find_map(|k| {
                n.attr(k)
                    .filter(|v| !v.trim().is_empty())
                    .map(collapse_whitespace)
            });
            if let Some(f) = fallback {
                n.name = f;
            }
        }
    }
}

/// Finds `<tag` (case-insensitive, followed by whitespace, `>` or `/`) at or
/// after `cursor` within the search window; on success moves the cursor past
/// it and returns the start tag's span.
fn find_start_tag(
    input: &str,
    lower: &str,
    lines: &LineIndex,
    cursor: &mut usize,
    tag: &str,
) -> Option<SourceSpan> {
    let needle = format!("<{tag}");
    let window_end = cursor
        .saturating_add(SPAN_SEARCH_WINDOW_BYTES)
        .min(lower.len());
    let hay = lower.get(*cursor..window_end)?;
    let mut from = 0;
    while let Some(off) = hay[from..].find(&needle) {
        let start = *cursor + from + off;
        let after = start + needle.len();
        let next = input.as_bytes().get(after).copied();
        if matches!(
            next,
            None | Some(b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | b'>' | b'/')
        ) {
            let end = input[after..]
                .find('>')
                .map(|e| after + e + 1)
                .unwrap_or(input.len());
            *cursor = after;
            return Some(SourceSpan {
                start_byte: start,
                end_byte: end,
                line: lines.line(start),
            });
        }
        from += off + needle.len();
    }
    None
}
