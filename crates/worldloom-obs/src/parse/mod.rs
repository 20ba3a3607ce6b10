//! Parsers from observation text to [`UiTree`].
//!
//! Every parser returns a [`Parsed`] (the tree plus [`ParseWarning`]s for
//! everything it had to repair) or a [`ParseError`] carrying the line and
//! column of the fatal problem. Byte offsets in warnings and spans refer to
//! the bytes handed to [`parse_bytes`] (or the `&str` handed to [`parse`]),
//! before any repair.

mod android;
mod axtree;
mod html;
mod os_table;
mod os_xml;
pub(crate) mod text;
mod xml;
mod xml_stream;

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use worldloom_core::domain::Representation;

use crate::compact::{CompactError, CompactTree};
use crate::tree::{KNOWN_NODE_CAPS, NodeId, Truncation, TruncationReason, UiTree};

pub use android::{parse_android_xml, parse_android_xml_compact};
pub use axtree::parse_axtree;
pub use html::{MAX_HTML_DEPTH, parse_html};
pub use os_table::parse_os_table;
pub use os_xml::parse_os_xml;

/// What kind of repair or oddity a warning reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// Bytes that are not UTF-8 (including lone surrogates written as raw
    /// CESU-style bytes) were replaced with U+FFFD.
    InvalidUtf8,
    /// A character XML 1.0 forbids (C0 controls, U+FFFE/U+FFFF, lone
    /// surrogates as `&#xD83D;`) was replaced with U+FFFD.
    ForbiddenCharacter,
    /// Text after the root element (adb's `UI hierchary dumped to: …`) or
    /// before the first tag was ignored.
    TrailingText,
    /// The lenient near-XML fallback was used (stray commas between
    /// attributes, undeclared namespace prefixes).
    LenientFallback,
    /// A line or attribute could not be read and was kept as best as possible.
    Malformed,
    /// Indentation jumped more than one level; the node was attached to the
    /// deepest open node.
    IndentJump,
    /// A nested document (iframe `srcdoc`) was too deep to expand, or HTML
    /// elements nested deeper than [`MAX_HTML_DEPTH`] were not kept.
    NestingLimit,
    /// The dump tool cut the tree (a marker line or comment was found), or
    /// the node count equals a known cap, so it was possibly cut.
    Truncated,
    /// The tree is known to be incomplete: an application exposes a frame
    /// with no children (accessibility off in Chrome/Electron).
    Incomplete,
}

/// A non-fatal problem met while parsing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParseWarning {
    /// What happened.
    pub kind: WarningKind,
    /// 1-based line in the original input.
    pub line: u32,
    /// Byte offset in the original input.
    pub byte: usize,
    /// Human-readable detail.
    pub message: String,
}

/// A fatal parse failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum ParseError {
    /// The text is not well-formed enough to build a tree.
    #[error("line {line}, column {column}: {message}")]
    Syntax {
        /// 1-based line in the original input.
        line: u32,
        /// 1-based column (characters) in the original input.
        column: u32,
        /// What the underlying parser reported.
        message: String,
    },
    /// The capture itself failed: the input is only a tool's error message
    /// (uiautomator `ERROR: could not get idle state.`) or is empty. This is
    /// not an empty screen and must never be scored as one.
    #[error("failed capture: {message}")]
    FailedCapture {
        /// The error text found in place of a dump (first line, trimmed).
        message: String,
    },
    /// The representation is not a tree (`json`, `text`).
    #[error("representation `{0}` is not a UI tree")]
    NotATree(Representation),
}

/// A parsed tree and the warnings met on the way.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Parsed {
    /// The tree.
    pub tree: UiTree,
    /// Repairs and oddities, in input order.
    pub warnings: Vec<ParseWarning>,
}

/// Parses text in the given representation.
///
/// Errors: [`ParseError::NotATree`] for `json`/`text`, otherwise whatever the
/// format's parser reports.
pub fn parse(input: &str, representation: Representation) -> Result<Parsed, ParseError> {
    parse_bytes(input.as_bytes(), representation)
}

/// Observations parsed into trees in this process so far.
static PARSES: AtomicU64 = AtomicU64::new(0);

/// How many observations [`parse`], [`parse_bytes`] and [`parse_compact`]
/// have parsed into trees in this process so far (all threads; a text in a
/// representation that is not a tree is not counted). The count lets a test
/// state how many parses a use case costs: read it before and after.
pub fn parses_so_far() -> u64 {
    PARSES.load(Ordering::Relaxed)
}

fn count_parse(representation: Representation) {
    if representation.is_tree() {
        PARSES.fetch_add(1, Ordering::Relaxed);
    }
}

/// Parses raw bytes (as read from a file) in the given representation.
/// Invalid UTF-8 is replaced with U+FFFD and warned about, never rejected.
pub fn parse_bytes(input: &[u8], representation: Representation) -> Result<Parsed, ParseError> {
    count_parse(representation);
    parse_uncounted(input, representation)
}

fn parse_uncounted(input: &[u8], representation: Representation) -> Result<Parsed, ParseError> {
    match representation {
        Representation::Html => Ok(parse_html_bytes(input)),
        Representation::Axtree => parse_axtree_bytes(input),
        Representation::OsXml => parse_os_xml(input),
        Representation::OsTable => parse_os_table_bytes(input),
        Representation::AndroidXml => parse_android_xml(input),
        Representation::Json | Representation::Text => Err(ParseError::NotATree(representation)),
    }
}

/// Why a tree could not be parsed into compact form: the parse failed, or
/// the tree does not fit the compact form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompactParseError {
    /// The parser's own error.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The tree parsed but cannot be kept compact.
    #[error(transparent)]
    Compact(#[from] CompactError),
}

/// Parses raw bytes into a [`CompactTree`] (the form a large tree is kept
/// in), with the warnings [`parse_bytes`] gives. Android uiautomator XML is
/// read straight into the compact form ([`parse_android_xml_compact`]), so
/// the whole tree never exists as [`UiNode`](crate::tree::UiNode)s; the
/// other representations are parsed as by [`parse_bytes`] and then made
/// compact. Either way [`CompactTree::to_tree`] equals `parse_bytes`'s tree.
///
/// Errors: [`CompactParseError::Parse`] as [`parse_bytes`];
/// [`CompactParseError::Compact`] when the tree does not fit the compact
/// form.
pub fn parse_compact(
    input: &[u8],
    representation: Representation,
) -> Result<(CompactTree, Vec<ParseWarning>), CompactParseError> {
    count_parse(representation);
    if representation == Representation::AndroidXml {
        return parse_android_xml_compact(input);
    }
    let Parsed { tree, warnings } = parse_uncounted(input, representation)?;
    Ok((CompactTree::from_tree(tree)?, warnings))
}

fn parse_html_bytes(input: &[u8]) -> Parsed {
    let decoded = text::decode_utf8(input);
    let parsed = parse_html(&decoded.text);
    decoded.finish(parsed)
}

fn parse_axtree_bytes(input: &[u8]) -> Result<Parsed, ParseError> {
    let decoded = text::decode_utf8(input);
    let parsed = parse_axtree(&decoded.text)?;
    Ok(decoded.finish(parsed))
}

fn parse_os_table_bytes(input: &[u8]) -> Result<Parsed, ParseError> {
    let decoded = text::decode_utf8(input);
    let parsed = parse_os_table(&decoded.text)?;
    Ok(decoded.finish(parsed))
}

/// Words that make a line or comment a truncation marker (matched
/// case-insensitively).
pub const TRUNCATION_MARKER_PHRASES: [&str; 6] = [
    "truncated",
    "tree was cut",
    "max nodes",
    "limit reached",
    "node limit",
    "time budget",
];

/// Reads a truncation marker: a comment or line that AT-SPI dump tools
/// write where they cut a tree.
///
/// `text` is the comment's text (XML `<!-- … -->`) or a table line. It is a
/// marker when it contains one of [`TRUNCATION_MARKER_PHRASES`] (any case).
/// A table line must also look like a note rather than a row: it starts
/// with `#`, `//`, `<!--`, `[`, `(`, `...` or `…`, or it has neither a tab
/// nor two spaces in a row (so it is not a row of either table layout). The
/// first number in it (digits, optionally grouped with `,` or `_`:
/// `1,000`) is the cap. Returns `None` when `text` is not a marker,
/// `Some(cap)` otherwise.
///
/// Accepted examples: `# truncated at 1000 nodes`, `<!-- tree was cut:
/// max nodes 2000 -->`, `[... limit reached (2,000) ...]`,
/// `... truncated`.
pub fn truncation_marker(text: &str) -> Option<Option<u32>> {
    let lower = text.to_lowercase();
    if !TRUNCATION_MARKER_PHRASES.iter().any(|p| lower.contains(p)) {
        return None;
    }
    let mut digits = String::new();
    let mut chars = lower.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else if !digits.is_empty()
            && (c == ',' || c == '_')
            && chars.peek().is_some_and(|n| n.is_ascii_digit())
        {
            continue;
        } else if !digits.is_empty() {
            break;
        }
    }
    Some(digits.parse().ok())
}

/// Whether a trimmed line opens the way dump tools' notes do: `#`, `//`,
/// `<!--`, `[`, `(`, `...` or `…`.
pub(crate) fn starts_like_note(line: &str) -> bool {
    ["#", "//", "<!--", "[", "(", "...", "…"]
        .iter()
        .any(|p| line.starts_with(p))
}

/// [`truncation_marker`] for a line of a line-per-node dump (the OS table,
/// BrowserGym's accessibility tree): the trimmed line counts only when the
/// reader's `is_row` says it is not one of its rows (each reader knows its
/// row shapes; a row whose text says "truncated" stays a row).
pub(crate) fn line_truncation_marker(
    line: &str,
    is_row: impl Fn(&str) -> bool,
) -> Option<Option<u32>> {
    let t = line.trim();
    if is_row(t) {
        None
    } else {
        truncation_marker(t)
    }
}

/// Flags `tree` as cut by a marker line (the first marker counts; later
/// ones are ignored): the node pushed last is the last one before the cut,
/// and a `truncated` warning names the line.
pub(crate) fn flag_truncation_line(
    tree: &mut UiTree,
    sink: &mut text::WarningSink,
    cap: Option<u32>,
    line: u32,
    byte: usize,
) {
    if tree.truncated.is_some() {
        return;
    }
    let last = NodeId(u32::try_from(tree.len().saturating_sub(1)).unwrap_or(u32::MAX));
    tree.truncated = Some(Truncation {
        reason: TruncationReason::Marker,
        cap,
        last_node: last,
    });
    sink.push(WarningKind::Truncated, line, byte, truncation_message(cap));
}

/// The warning message for a tree cut at a marker.
pub(crate) fn truncation_message(cap: Option<u32>) -> String {
    match cap {
        Some(c) => format!(
            "the dump tool cut the tree (marker says {c}); nodes after this point are missing"
        ),
        None => "the dump tool cut the tree; nodes after this point are missing".to_string(),
    }
}

/// Roles of an AT-SPI top-level window.
const FRAME_ROLES: [&str; 3] = ["frame", "window", "dialog"];

/// Checks common to both OS representations, after parsing:
///
/// - a tree with no marker whose real node count equals one of
///   [`KNOWN_NODE_CAPS`] is flagged possibly truncated
///   ([`TruncationReason::NodeCountAtCap`]);
/// - an application that exposes a frame with no children (or a tree that
///   is only such frames) marks the tree incomplete.
pub(crate) fn check_os_tree(mut parsed: Parsed) -> Parsed {
    let tree = &mut parsed.tree;
    let count = tree.real_node_count();
    if tree.truncated.is_none()
        && let Some(cap) = KNOWN_NODE_CAPS.iter().find(|c| **c as usize == count)
    {
        let last = NodeId(u32::try_from(tree.len().saturating_sub(1)).unwrap_or(u32::MAX));
        tree.truncated = Some(Truncation {
            reason: TruncationReason::NodeCountAtCap,
            cap: Some(*cap),
            last_node: last,
        });
        parsed.warnings.push(ParseWarning {
            kind: WarningKind::Truncated,
            line: 1,
            byte: 0,
            message: format!(
                "the tree has exactly {cap} nodes, a cap dump tools apply: possibly truncated"
            ),
        });
    }
    let is_frame = |role: &str| FRAME_ROLES.iter().any(|f| role.eq_ignore_ascii_case(f));
    let bare = match tree.representation {
        Representation::OsTable => {
            let rows: Vec<&str> = tree
                .iter()
                .filter(|n| !n.synthetic)
                .map(|n| n.role.as_str())
                .collect();
            rows.iter().any(|r| is_frame(r))
                && rows
                    .iter()
                    .all(|r| is_frame(r) || r.eq_ignore_ascii_case("application"))
        }
        _ => {
            let only_bare_frame = tree.len() == 1 && is_frame(&tree.nodes[0].role);
            only_bare_frame
                || tree.iter().any(|n| {
                    n.role.eq_ignore_ascii_case("application")
                        && !n.children.is_empty()
                        && n.children.iter().all(|c| {
                            let c = tree.node(*c);
                            is_frame(&c.role) && c.children.is_empty()
                        })
                })
        }
    };
    if bare {
        tree.incomplete = true;
        parsed.warnings.push(ParseWarning {
            kind: WarningKind::Incomplete,
            line: 1,
            byte: 0,
            message: "application exposes a frame with no children; accessibility is probably off"
                .to_string(),
        });
    }
    parsed
}
