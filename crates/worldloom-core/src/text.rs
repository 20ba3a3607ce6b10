//! Input bytes as text: the one rule every reader of bytes decodes them by
//! (files are read through [`crate::input`]).
//!
//! Real trajectory files are not always valid UTF-8: Android dumps may hold a
//! lone UTF-16 surrogate written as raw CESU-8 bytes (`ED A0 BD`), and saved
//! web pages may be Latin-1. Such files still import: each invalid sequence
//! becomes one U+FFFD (the Unicode replacement character) and the import
//! reports one warning naming the file and the byte offset of the first
//! invalid sequence.
//!
//! The rule, in [`invalid_sequences`], is the one every reader of bytes
//! uses (the importers here, the observation parsers of `worldloom-obs`, the
//! metrics): an invalid sequence is a maximal run of bytes that are not
//! UTF-8, so a lone surrogate written as three raw bytes is one U+FFFD, not
//! three as `String::from_utf8_lossy` would write.

use std::borrow::Cow;
use std::ops::Range;
use std::path::Path;

use crate::error::ImportWarning;

/// A file's text after lossy UTF-8 decoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedText {
    /// The text; invalid sequences replaced by U+FFFD.
    pub text: String,
    /// One warning when any byte sequence was invalid, else `None`.
    pub warning: Option<ImportWarning>,
}

/// The invalid sequences of `bytes` read as UTF-8, as byte ranges in
/// order: each a maximal run of bytes that are not part of a valid UTF-8
/// character (a CESU-8 surrogate `ED A0 BD`, a Latin-1 byte, a character cut
/// short, or several of those back to back). Each becomes one U+FFFD.
pub fn invalid_sequences(bytes: &[u8]) -> Vec<Range<usize>> {
    let mut runs: Vec<Range<usize>> = Vec::new();
    let mut pos = 0usize;
    for chunk in bytes.utf8_chunks() {
        pos += chunk.valid().len();
        let len = chunk.invalid().len();
        if len == 0 {
            continue;
        }
        match runs.last_mut() {
            Some(last) if last.end == pos => last.end = pos + len,
            _ => runs.push(pos..pos + len),
        }
        pos += len;
    }
    runs
}

/// `bytes` as text, each invalid sequence ([`invalid_sequences`]) replaced
/// by one U+FFFD; borrowed when the bytes are valid UTF-8.
pub fn lossy(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(replace_sequences(bytes, &invalid_sequences(bytes)))
}

/// The message of the one warning a reader gives for a text with invalid
/// sequences: how many were replaced and the byte offset of the first.
pub fn invalid_utf8_message(count: usize, first_offset: usize) -> String {
    format!(
        "not valid UTF-8: {count} invalid byte sequence(s) replaced by U+FFFD, the first at byte offset {first_offset}"
    )
}

fn replace_sequences(bytes: &[u8], runs: &[Range<usize>]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let mut pos = 0usize;
    for run in runs {
        // Between two runs the bytes are valid: this borrows, never replaces.
        out.push_str(&String::from_utf8_lossy(&bytes[pos..run.start]));
        out.push('\u{FFFD}');
        pos = run.end;
    }
    out.push_str(&String::from_utf8_lossy(&bytes[pos..]));
    out
}

/// Decodes `bytes` read from `path` (used only for the warning) as UTF-8,
/// replacing each invalid sequence ([`invalid_sequences`]) with one U+FFFD.
/// A leading UTF-8 byte-order mark is kept (it is part of the original
/// text).
pub fn decode_utf8_lossy(path: &Path, bytes: &[u8]) -> DecodedText {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return DecodedText {
            text: text.to_owned(),
            warning: None,
        };
    }
    let runs = invalid_sequences(bytes);
    let offset = runs.first().map_or(0, |r| r.start);
    let warning = ImportWarning {
        path: path.display().to_string(),
        line: Some(1 + bytes[..offset].iter().filter(|&&b| b == b'\n').count()),
        byte_offset: Some(offset as u64),
        message: invalid_utf8_message(runs.len(), offset),
    };
    DecodedText {
        text: replace_sequences(bytes, &runs),
        warning: Some(warning),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cesu_surrogate_becomes_replacement_with_one_warning() {
        let bytes = b"<node text=\"a\xED\xA0\xBDb\"/>\n<node text=\"\xED\xA0\xBD\"/>";
        let decoded = decode_utf8_lossy(Path::new("dump.xml"), bytes);
        // One U+FFFD per surrogate (3 raw bytes), not one per byte.
        assert_eq!(
            decoded.text,
            "<node text=\"a\u{FFFD}b\"/>\n<node text=\"\u{FFFD}\"/>"
        );
        assert_eq!(invalid_sequences(bytes), vec![13..16, 33..36]);
        let warning = decoded.warning.expect("a warning");
        assert_eq!(warning.byte_offset, Some(13));
        assert_eq!(warning.line, Some(1));
        assert_eq!(warning.path, "dump.xml");
        assert_eq!(
            warning.message,
            "not valid UTF-8: 2 invalid byte sequence(s) replaced by U+FFFD, the first at byte offset 13"
        );
        assert_eq!(lossy(bytes), decoded.text);
    }

    #[test]
    fn back_to_back_invalid_bytes_are_one_sequence() {
        // A surrogate pair written as CESU-8 (6 bytes), then a cut-off
        // 3-byte character at the end.
        let bytes = b"x\xED\xA0\xBD\xED\xB8\x80y\xE2\x82";
        assert_eq!(invalid_sequences(bytes), vec![1..7, 8..10]);
        assert_eq!(lossy(bytes), "x\u{FFFD}y\u{FFFD}");
        assert!(matches!(lossy(b"plain"), Cow::Borrowed("plain")));
    }

    #[test]
    fn latin1_text_decodes_lossily() {
        let bytes = b"caf\xE9 cr\xE8me";
        let decoded = decode_utf8_lossy(Path::new("page.html"), bytes);
        assert_eq!(decoded.text, "caf\u{FFFD} cr\u{FFFD}me");
        let warning = decoded.warning.expect("a warning");
        assert_eq!(warning.byte_offset, Some(3));
        assert!(
            warning.message.starts_with("not valid UTF-8: 2 invalid"),
            "{}",
            warning.message
        );
    }

    #[test]
    fn valid_utf8_has_no_warning() {
        let decoded = decode_utf8_lossy(Path::new("x"), "语言 °F".as_bytes());
        assert_eq!(decoded.text, "语言 °F");
        assert!(decoded.warning.is_none());
    }
}
