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

use serde::{Deserialize, Serialize};
use worldloom_core::domain::Representation;

use crate::tree::UiTree;

pub use android::parse_android_xml;
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

/// Parses raw bytes (as read from a file) in the given representation.
/// Invalid UTF-8 is replaced with U+FFFD and warned about, never rejected.
pub fn parse_bytes(input: &[u8], representation: Representation) -> Result<Parsed, ParseError> {
    match representation {
        Representation::Html => Ok(parse_html_bytes(input)),
        Representation::Axtree => parse_axtree_bytes(input),
        Representation::OsXml => parse_os_xml(input),
        Representation::OsTable => parse_os_table_bytes(input),
        Representation::AndroidXml => parse_android_xml(input),
        Representation::Json | Representation::Text => Err(ParseError::NotATree(representation)),
    }
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
