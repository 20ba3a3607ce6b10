//! Android uiautomator XML (`uiautomator dump`, `adb exec-out uiautomator
//! dump /dev/tty`): a `<hierarchy rotation="…">` root holding nested
//! `<node index text resource-id class package content-desc checkable checked
//! clickable enabled focusable focused scrollable long-clickable password
//! selected bounds="[l,t][r,b]">` elements (format: AOSP
//! `AccessibilityNodeInfoDumper`).

use super::CompactParseError;
use super::text::{Decoded, WarningSink, sanitize_xml};
use super::xml_stream::{self, Event, Unsupported};
use super::{ParseError, ParseWarning, Parsed, WarningKind, xml};
use crate::compact::{CompactBuilder, CompactTree};
use crate::tree::{Attribute, BoundsPx, NodeId, NodeStates, SourceSpan, UiNode, UiTree};
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
/// the whole tree as [`UiNode`]s nor the whole document: a streaming reader
/// hands each element over as its start tag is read, and the node goes into
/// the compact form at once. The tree is the one [`parse_android_xml`]
/// gives ([`CompactTree::to_tree`] equals it), with the same warnings and
/// errors.
///
/// The streaming reader reads the plain XML dump tools write (see
/// `parse/xml_stream.rs` for the exact subset). Any input outside it (a
/// syntax error, CDATA, namespaces, entities other than the predefined
/// ones, carriage returns…) is parsed by the document parser instead, as
/// [`parse_android_xml`] does, so its errors (line and column), repairs and
/// warnings are those of that parser; such an input costs the document's
/// memory again.
///
/// Errors: as [`parse_android_xml`], and [`CompactParseError::Compact`]
/// when the tree does not fit the compact form's `u32` offsets.
pub fn parse_android_xml_compact(
    input: &[u8],
) -> Result<(CompactTree, Vec<ParseWarning>), CompactParseError> {
    let mut decoded = sanitize_xml(input);
    let mut sink = WarningSink::default();
    prepare_dump(&mut decoded, &mut sink)?;
    if let Ok(read) = stream_android_xml(&decoded, sink) {
        let (tree, warnings) = read?;
        return Ok((tree, warnings));
    }
    // Outside what the streaming reader reads exactly as the document parser
    // does: the document parser gives the tree, or its errors and repairs.
    drop(decoded);
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

/// The streaming half of [`parse_android_xml_compact`]: reads the prepared
/// dump with [`xml_stream::read_elements`], each element made into a node
/// as its start tag is read (as [`xml::build_nodes`] does from the
/// document) and pushed into the compact builder. `sink` holds the warnings
/// of the preparation.
///
/// Errors: [`Unsupported`] when the input is outside the streaming reader's
/// subset (nothing is returned of the partial read); otherwise the compact
/// builder's result.
fn stream_android_xml(
    decoded: &Decoded<'_>,
    mut sink: WarningSink,
) -> Result<Result<(CompactTree, Vec<ParseWarning>), CompactParseError>, Unsupported> {
    let mut builder = CompactBuilder::default();
    let mut failed = None;
    // Our ids of the open elements, innermost last.
    let mut open: Vec<u32> = Vec::new();
    let mut count: u32 = 0;
    xml_stream::read_elements(&decoded.text, |event| match event {
        Event::Start {
            at,
            name: tag,
            attributes,
        } => {
            let id = NodeId(count);
            count = count.saturating_add(1);
            let parent = open.last().copied().map(NodeId);
            let depth = u32::try_from(open.len()).unwrap_or(u32::MAX);
            let start = decoded.map.original(at);
            let mut node = UiNode {
                id,
                parent,
                children: Vec::new(),
                depth,
                role: tag.to_string(),
                name: String::new(),
                value: None,
                key: None,
                attributes,
                states: NodeStates::default(),
                bounds_px: None,
                span: Some(SourceSpan {
                    start_byte: start,
                    // Set when the element closes.
                    end_byte: start,
                    line: decoded.lines.line(start),
                }),
                synthetic: false,
            };
            fill(&mut node, tag, &mut sink);
            open.push(id.0);
            if failed.is_none()
                && let Err(e) = builder.push(node)
            {
                failed = Some(e);
            }
        }
        Event::End { at } => {
            if let Some(id) = open.pop()
                && failed.is_none()
            {
                builder.set_span_end(id as usize, decoded.map.original(at));
            }
        }
    })?;
    if let Some(e) = failed {
        return Ok(Err(e.into()));
    }
    let tree = builder.finish(Representation::AndroidXml, None, false);
    let mut warnings = decoded.warnings.clone();
    warnings.extend(sink.finish());
    Ok(Ok((tree, warnings)))
}

/// Reads a uiautomator dump, handing each node (in pre-order, without its
/// child list) to `emit`; returns the warnings.
fn read_android_xml(
    input: &[u8],
    emit: impl FnMut(UiNode),
) -> Result<Vec<ParseWarning>, ParseError> {
    let mut decoded = sanitize_xml(input);
    let mut sink = WarningSink::default();
    prepare_dump(&mut decoded, &mut sink)?;
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
            fill(n, node.tag_name().name(), &mut sink);
        },
        emit,
    );
    drop(doc);
    let mut warnings = decoded.warnings;
    warnings.extend(sink.finish());
    Ok(warnings)
}

/// Prepares a dump for either reader: [`xml::prepare`] (a failed capture,
/// text around the document), then the two shapes tools write besides one
/// `<hierarchy>` document, each repaired with a warning:
///
/// - several `<hierarchy>` documents one after the other (uiautomator2 and
///   Appium tooling append a page source per call): the first is read, the
///   others are ignored, the warning naming the line each starts on. A dump
///   file is one observation; the documents after the first come with no
///   action between them, so reading them as states would invent turns.
/// - a bare `<node>` fragment with no `<hierarchy>` root (a subtree cut out
///   of a dump): it is read inside an implied `<hierarchy>` (the root node,
///   at line 1 of no bytes of the input).
fn prepare_dump(decoded: &mut Decoded<'_>, sink: &mut WarningSink) -> Result<(), ParseError> {
    xml::prepare(decoded, Some("</hierarchy>"), sink)?;
    let starts = tag_starts(&decoded.text, "<hierarchy");
    if let [first, rest @ ..] = starts.as_slice()
        && !rest.is_empty()
        && let Some(close) = decoded.text[*first..].find("</hierarchy>")
    {
        let end = first + close + "</hierarchy>".len();
        let later: Vec<usize> = rest.iter().copied().filter(|s| *s >= end).collect();
        if !later.is_empty() {
            let lines: Vec<String> = later
                .iter()
                .map(|s| decoded.lines.line(decoded.map.original(*s)).to_string())
                .collect();
            let byte = decoded.map.original(end);
            sink.push(
                WarningKind::TrailingText,
                decoded.lines.line(byte),
                byte,
                format!(
                    "the file holds {} <hierarchy> documents; the first is read and the {} after it ignored (starting at line{} {})",
                    later.len() + 1,
                    if later.len() == 1 { "one" } else { "ones" },
                    if lines.len() == 1 { "" } else { "s" },
                    lines.join(", ")
                ),
            );
            let len = decoded.text.len();
            xml::blank(decoded.text.to_mut(), end, len);
        }
    }
    if starts.is_empty() && first_element_is_node(&decoded.text) {
        const OPEN: &str = "<hierarchy>";
        let declaration_end = if decoded.text.trim_start().starts_with("<?xml") {
            decoded.text.find("?>").map_or(0, |i| i + 2)
        } else {
            0
        };
        let text = decoded.text.to_mut();
        text.insert_str(declaration_end, OPEN);
        text.push_str("</hierarchy>");
        decoded.map.insert(declaration_end, OPEN.len());
        sink.push(
            WarningKind::Malformed,
            1,
            0,
            "a bare <node> fragment with no <hierarchy> root: read inside an implied <hierarchy>"
                .to_string(),
        );
    }
    Ok(())
}

/// Offsets of the start tags `open` (such as `<hierarchy`) in `text`: the
/// name followed by a space, `>` or `/`.
fn tag_starts(text: &str, open: &str) -> Vec<usize> {
    text.match_indices(open)
        .filter(|(i, _)| {
            text[i + open.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_whitespace() || c == '>' || c == '/')
        })
        .map(|(i, _)| i)
        .collect()
}

/// Whether the first element of `text` (after a declaration and comments)
/// is a `<node>`.
fn first_element_is_node(text: &str) -> bool {
    let mut rest = text.trim_start();
    loop {
        if let Some(after) = rest.strip_prefix("<?") {
            let Some(end) = after.find("?>") else {
                return false;
            };
            rest = after[end + 2..].trim_start();
        } else if let Some(after) = rest.strip_prefix("<!--") {
            let Some(end) = after.find("-->") else {
                return false;
            };
            rest = after[end + 3..].trim_start();
        } else {
            return rest.strip_prefix("<node").is_some_and(|after| {
                after
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_whitespace() || c == '>' || c == '/')
            });
        }
    }
}

/// Sets role, name, value, key, states and bounds of a uiautomator `node`
/// element from its attributes (already in `n.attributes`); other elements
/// (`hierarchy`) keep their tag as role.
fn fill(n: &mut UiNode, tag: &str, sink: &mut WarningSink) {
    if tag != "node" {
        return;
    }
    let attribute = |k: &str| {
        n.attributes
            .iter()
            .find(|a| a.name == k)
            .map(|a| a.value.as_str())
    };
    let get = |k: &str| attribute(k).unwrap_or("");
    let is_true = |k: &str| attribute(k) == Some("true");
    let class = get("class");
    let role = (!class.is_empty()).then(|| class.to_string());
    let text = get("text");
    let name = if text.is_empty() {
        get("content-desc").to_string()
    } else {
        text.to_string()
    };
    let editable = class.contains("EditText") || class.contains("AutoCompleteTextView");
    let value = editable.then(|| text.to_string());
    let rid = get("resource-id");
    let key = (!rid.is_empty()).then(|| rid.to_string());
    let mut states = n.states.clone();
    if editable {
        states.editable = Some(true);
    }
    if is_true("checkable") || is_true("checked") {
        states.checked = Some(is_true("checked"));
    }
    if is_true("focusable") || is_true("focused") {
        states.focused = Some(is_true("focused"));
    }
    if is_true("selected") {
        states.selected = Some(true);
    }
    let interactive =
        is_true("clickable") || is_true("focusable") || is_true("checkable") || editable;
    if interactive || attribute("enabled") == Some("false") {
        states.enabled = Some(attribute("enabled") != Some("false"));
    }
    let mut bounds = None;
    if let Some(b) = attribute("bounds") {
        match parse_bounds(b) {
            Some(parsed) => bounds = Some(parsed),
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
    if let Some(role) = role {
        n.role = role;
    }
    n.name = name;
    if value.is_some() {
        n.value = value;
    }
    if key.is_some() {
        n.key = key;
    }
    n.states = states;
    if bounds.is_some() {
        n.bounds_px = bounds;
    }
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

    const DUMP: &str = "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\n<hierarchy rotation=\"0\">\n  <!-- a comment -->\n  <node index=\"0\" text=\"Line one&#10;line two &amp; &lt;three&gt; &quot;q&quot; &apos;a&apos; &#x1F600;\" resource-id=\"app:id/t\" class=\"android.widget.TextView\" package=\"app\" content-desc=\"\" checkable=\"false\" clickable=\"true\" enabled=\"true\" bounds=\"[0,0][100,50]\">\n    <node index=\"0\" text=\"tab\there\" class=\"android.widget.EditText\" package=\"app\" focusable=\"true\" focused=\"true\" enabled=\"true\" bounds=\"[0,0][10,10]\" />\n    <node index=\"1\" text='single' class=\"android.widget.Button\" package=\"app\" enabled=\"false\" bounds=\"[1,2]\"></node >\n  </node>\n</hierarchy>\n";

    /// Both paths of `parse_android_xml_compact` (and the tree parser) give
    /// the same result for `input`; returns whether the streaming reader
    /// read it (rather than handing it to the document parser).
    fn same_both_ways(input: &[u8]) -> bool {
        let want = parse_android_xml(input);
        let got = parse_android_xml_compact(input);
        match (&want, &got) {
            (Ok(parsed), Ok((compact, warnings))) => {
                assert_eq!(
                    &compact.to_tree(),
                    &parsed.tree,
                    "{:?}",
                    String::from_utf8_lossy(input)
                );
                assert_eq!(
                    warnings,
                    &parsed.warnings,
                    "{:?}",
                    String::from_utf8_lossy(input)
                );
            }
            (Err(e), Err(g)) => {
                assert_eq!(
                    g,
                    &CompactParseError::Parse(e.clone()),
                    "{:?}",
                    String::from_utf8_lossy(input)
                );
            }
            _ => panic!(
                "{:?}: tree parser {want:?}, compact {got:?}",
                String::from_utf8_lossy(input)
            ),
        }
        let mut decoded = sanitize_xml(input);
        let mut sink = WarningSink::default();
        xml::prepare(&mut decoded, Some("</hierarchy>"), &mut sink).is_ok()
            && stream_android_xml(&decoded, sink).is_ok()
    }

    #[test]
    fn a_plain_dump_streams_and_equals_the_document_parse() {
        // Declaration, comments, indentation, character and entity
        // references, a raw tab in a value, single quotes, an empty element,
        // a malformed `bounds` warning, spans of nested elements.
        assert!(same_both_ways(DUMP.as_bytes()));
        let tree = parse_android_xml(DUMP.as_bytes()).unwrap().tree;
        assert_eq!(
            tree.nodes[1].name,
            "Line one\nline two & <three> \"q\" 'a' \u{1F600}"
        );
        assert_eq!(tree.nodes[2].value.as_deref(), Some("tab here"));
        // Repairs before the reader (bytes that are not UTF-8, text after
        // the root) keep the stream.
        let mut odd = DUMP.replace("single", "sin\u{1}gle").into_bytes();
        let at = DUMP.find("Line one").unwrap();
        odd.splice(at..at, [0xED, 0xA0, 0xBD]);
        odd.extend_from_slice(b"UI hierchary dumped to: /dev/tty\n");
        assert!(same_both_ways(&odd));
        let warnings = parse_android_xml_compact(&odd).unwrap().1;
        assert!(warnings.iter().any(|w| w.kind == WarningKind::TrailingText));
        assert!(warnings.iter().any(|w| w.kind == WarningKind::Malformed));
    }

    #[test]
    fn malformed_dumps_give_the_document_parsers_errors_and_warnings() {
        for (what, input) in [
            ("unclosed tag", "<hierarchy><node class=\"a\"></hierarchy>"),
            ("unclosed root", "<hierarchy><node class=\"a\"/>"),
            ("mismatched end", "<hierarchy><node></nod></hierarchy>"),
            (
                "unknown entity",
                "<hierarchy><node text=\"&nbsp;\"/></hierarchy>",
            ),
            (
                "malformed entity",
                "<hierarchy><node text=\"a & b\"/></hierarchy>",
            ),
            ("entity in text", "<hierarchy>&bogus;<node/></hierarchy>"),
            (
                "bad char ref",
                "<hierarchy><node text=\"&#0;\"/></hierarchy>",
            ),
            (
                "upper X ref",
                "<hierarchy><node text=\"&#X41;\"/></hierarchy>",
            ),
            (
                "text after root",
                "<hierarchy><node/></hierarchy>trailing words",
            ),
            (
                "element after root",
                "<hierarchy><node/></hierarchy><node/>",
            ),
            ("second root", "<hierarchy/><hierarchy/>"),
            ("text before root", "junk <hierarchy><node/></hierarchy>"),
            (
                "duplicate attribute",
                "<hierarchy><node a=\"1\" a=\"2\"/></hierarchy>",
            ),
            (
                "no space between attributes",
                "<hierarchy><node a=\"1\"b=\"2\"/></hierarchy>",
            ),
            ("unquoted value", "<hierarchy><node a=1/></hierarchy>"),
            ("lt in value", "<hierarchy><node a=\"<\"/></hierarchy>"),
            (
                "namespace",
                "<hierarchy xmlns:x=\"u\"><x:node x:a=\"1\"/></hierarchy>",
            ),
            (
                "default namespace",
                "<hierarchy xmlns=\"u\"><node/></hierarchy>",
            ),
            ("unbound prefix", "<hierarchy><x:node/></hierarchy>"),
            (
                "doctype",
                "<!DOCTYPE h [<!ENTITY e \"x\">]><hierarchy a=\"&e;\"/>",
            ),
            ("cdata", "<hierarchy><![CDATA[x]]><node/></hierarchy>"),
            (
                "processing instruction",
                "<hierarchy><?pi x?><node/></hierarchy>",
            ),
            (
                "double dash comment",
                "<hierarchy><!-- a -- b --><node/></hierarchy>",
            ),
            (
                "crlf",
                "<hierarchy>\r\n<node text=\"a\r\nb\"/>\r\n</hierarchy>\r\n",
            ),
            ("cdata end in text", "<hierarchy>]]><node/></hierarchy>"),
            ("odd declaration", "<?xml version=\"1.1\"?><hierarchy/>"),
            ("late declaration", "  <?xml version=\"1.0\"?><hierarchy/>"),
            ("non-ascii name", "<hierarchy><nöde/></hierarchy>"),
            ("empty", ""),
            ("no tag", "ERROR: could not get idle state."),
            ("cut short", "<hierarchy><node class=\"a\" text=\"unfin"),
        ] {
            // Equality with the document parser is asserted inside.
            let streamed = same_both_ways(input.as_bytes());
            // Only what the preparation repairs streams (text before or after
            // the root and a late declaration are blanked, a reference to a
            // character XML forbids becomes U+FFFD); the rest falls back.
            let repaired = matches!(
                what,
                "text after root"
                    | "element after root"
                    | "text before root"
                    | "late declaration"
                    | "bad char ref"
            );
            assert_eq!(streamed, repaired, "{what}");
        }
        // The errors keep the document parser's line and column.
        let err = parse_android_xml_compact(b"<hierarchy>\n  <node a=\"&nbsp;\"/>\n</hierarchy>")
            .unwrap_err();
        assert!(
            matches!(
                &err,
                CompactParseError::Parse(ParseError::Syntax { line: 2, .. })
            ),
            "{err:?}"
        );
    }

    #[test]
    fn edits_anywhere_in_a_dump_read_the_same_both_ways() {
        // Every kind of damage at many places: each input either streams to
        // the document parser's result or falls back to it.
        const PIECES: [&str; 26] = [
            "<",
            ">",
            "&",
            "&amp;",
            "&#10;",
            "&#xD83D;",
            "\"",
            "'",
            "/",
            " ",
            "\t",
            "\n",
            "\r",
            "--",
            "<!--x-->",
            "]]>",
            ":",
            "=",
            "<a/>",
            "</node>",
            "&bogus;",
            "&#0;",
            "é",
            "xmlns=\"u\" ",
            "<![CDATA[x]]>",
            "\u{FFFE}",
        ];
        let base = DUMP.as_bytes();
        let mut seed: u64 = 0x5eed;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as usize) % n
        };
        let mut streamed = 0;
        for _ in 0..4000 {
            let mut input = base.to_vec();
            for _ in 0..1 + next(2) {
                let at = next(input.len() + 1);
                if next(4) == 0 {
                    let len = next(8).min(input.len() - at.min(input.len()));
                    input.drain(at..at + len);
                } else {
                    let piece = PIECES[next(PIECES.len())].as_bytes();
                    input.splice(at..at, piece.iter().copied());
                }
            }
            if same_both_ways(&input) {
                streamed += 1;
            }
        }
        // Many edits (in text, comments, values) keep the input plain.
        assert!(streamed > 100, "{streamed} streamed");
    }

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

    #[test]
    fn a_file_of_two_documents_reads_the_first_and_names_the_others_line() {
        let one = "<hierarchy rotation=\"0\">\n  <node text=\"Wikipedia\" class=\"android.widget.TextView\" bounds=\"[0,0][100,50]\" />\n</hierarchy>\n";
        let two = "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\n<hierarchy rotation=\"0\">\n  <node text=\"Search\" class=\"android.widget.Button\" bounds=\"[0,0][10,10]\" />\n</hierarchy>\n";
        let input =
            format!("<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\n{one}{two}{two}");
        let parsed = parse_android_xml(input.as_bytes()).expect("parses");
        let names: Vec<&str> = parsed.tree.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["", "Wikipedia"]);
        let warning = parsed
            .warnings
            .iter()
            .find(|w| w.message.contains("<hierarchy> documents"))
            .expect("warned");
        assert_eq!(warning.kind, WarningKind::TrailingText);
        assert_eq!(warning.line, 4);
        assert!(
            warning
                .message
                .contains("holds 3 <hierarchy> documents; the first is read and the ones after it ignored (starting at lines 6, 10)"),
            "{}",
            warning.message
        );
        // The compact form reads the same (streamed or not).
        same_both_ways(input.as_bytes());
    }

    #[test]
    fn a_bare_node_fragment_reads_inside_an_implied_hierarchy() {
        let input = "<?xml version='1.0' encoding='UTF-8'?>\n<node text=\"Settings\" class=\"android.widget.FrameLayout\" bounds=\"[0,0][1080,2400]\">\n  <node text=\"Wi-Fi\" class=\"android.widget.Switch\" checkable=\"true\" checked=\"true\" bounds=\"[0,100][1080,200]\" />\n</node>\n";
        let parsed = parse_android_xml(input.as_bytes()).expect("parses");
        let roles: Vec<&str> = parsed.tree.nodes.iter().map(|n| n.role.as_str()).collect();
        assert_eq!(
            roles,
            [
                "hierarchy",
                "android.widget.FrameLayout",
                "android.widget.Switch"
            ]
        );
        assert_eq!(parsed.tree.nodes[2].states.checked, Some(true));
        // Spans still point into the input: the switch starts on line 3.
        let switch = parsed.tree.nodes[2].span.expect("span");
        assert_eq!(switch.line, 3);
        assert_eq!(&input[switch.start_byte..switch.start_byte + 5], "<node");
        assert_eq!(
            parsed
                .warnings
                .iter()
                .map(|w| (w.kind, w.line, w.message.as_str()))
                .collect::<Vec<_>>(),
            [(
                WarningKind::Malformed,
                1,
                "a bare <node> fragment with no <hierarchy> root: read inside an implied <hierarchy>"
            )]
        );
        assert!(same_both_ways(input.as_bytes()));
        // A fragment of several top-level nodes reads too.
        let siblings = "<node text=\"a\" /><node text=\"b\" />";
        let parsed = parse_android_xml(siblings.as_bytes()).expect("parses");
        assert_eq!(parsed.tree.nodes.len(), 3);
    }
}
