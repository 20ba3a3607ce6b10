//! Byte-level helpers shared by the parsers: UTF-8 decoding and XML
//! character sanitising that keep a map back to the original byte offsets,
//! and line lookup.

use super::{ParseError, ParseWarning, Parsed, WarningKind};
use crate::tree::UiTree;
use std::borrow::Cow;

/// At most this many warnings of one kind are listed one by one; the rest
/// are summed up in a final warning.
const WARNINGS_PER_KIND: usize = 20;

/// Start offsets of lines, for byte → line lookups.
#[derive(Debug, Clone)]
pub(crate) struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub(crate) fn new(bytes: &[u8]) -> Self {
        let mut starts = vec![0];
        starts.extend(
            bytes
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineIndex { starts }
    }

    /// 1-based line containing `byte`.
    pub(crate) fn line(&self, byte: usize) -> u32 {
        let idx = self.starts.partition_point(|s| *s <= byte);
        u32::try_from(idx.max(1)).unwrap_or(u32::MAX)
    }

    /// Start byte of a 1-based line.
    pub(crate) fn line_start(&self, line: u32) -> Option<usize> {
        self.starts.get((line as usize).checked_sub(1)?).copied()
    }
}

/// One non-blank line of a line-oriented observation (axtree, table).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TextLine<'a> {
    /// Byte offset of the line's first byte in the input.
    pub(crate) start: usize,
    /// 1-based line number.
    pub(crate) number: u32,
    /// The line without its `\n` / `\r\n` ending.
    pub(crate) text: &'a str,
}

/// The lines of `input` that are not blank, in order.
///
/// Errors: [`ParseError::FailedCapture`] with `empty_message` when the whole
/// input is blank.
pub(crate) fn non_blank_lines<'a>(
    input: &'a str,
    empty_message: &str,
) -> Result<impl Iterator<Item = TextLine<'a>>, ParseError> {
    if input.trim().is_empty() {
        return Err(ParseError::FailedCapture {
            message: empty_message.to_string(),
        });
    }
    let index = LineIndex::new(input.as_bytes());
    let mut offset = 0usize;
    Ok(input.split_inclusive('\n').filter_map(move |raw| {
        let start = offset;
        offset += raw.len();
        let text = raw.trim_end_matches(['\n', '\r']);
        (!text.trim().is_empty()).then(|| TextLine {
            start,
            number: index.line(start),
            text,
        })
    }))
}

/// Maps offsets in a rewritten string back to the original bytes.
#[derive(Debug, Clone, Default)]
pub(crate) struct OffsetMap {
    /// `(output offset, input offset)` at the start of each segment; within a
    /// segment offsets advance together.
    segments: Vec<(usize, usize)>,
}

impl OffsetMap {
    fn mark(&mut self, out: usize, input: usize) {
        if self
            .segments
            .last()
            .map(|(o, i)| out - o != input - i)
            .unwrap_or(out != input)
        {
            self.segments.push((out, input));
        }
    }

    /// The original offset of output offset `out`.
    pub(crate) fn original(&self, out: usize) -> usize {
        let idx = self.segments.partition_point(|(o, _)| *o <= out);
        if idx == 0 {
            return out;
        }
        let (o, i) = self.segments[idx - 1];
        let mapped = i + (out - o);
        match self.segments.get(idx) {
            Some((_, next_in)) => mapped.min(*next_in),
            None => mapped,
        }
    }

    /// Records that `len` bytes were inserted into the output at output
    /// offset `at` (text of no input bytes, such as an implied root tag):
    /// they map to the input offset `at` maps to, and every later output
    /// offset moves by `len`.
    pub(crate) fn insert(&mut self, at: usize, len: usize) {
        let input = self.original(at);
        let mut segments = Vec::with_capacity(self.segments.len() + 2);
        segments.extend(self.segments.iter().copied().filter(|(o, _)| *o < at));
        segments.push((at, input));
        segments.push((at + len, input));
        segments.extend(
            self.segments
                .iter()
                .filter(|(o, _)| *o >= at)
                .map(|(o, i)| (o + len, *i)),
        );
        self.segments = segments;
    }

    /// True when output and input offsets are the same everywhere.
    pub(crate) fn is_identity(&self) -> bool {
        self.segments.is_empty()
    }
}

/// Text decoded (and possibly repaired) from input bytes: the input itself,
/// borrowed, when nothing had to be replaced.
#[derive(Debug, Clone)]
pub(crate) struct Decoded<'a> {
    pub(crate) text: Cow<'a, str>,
    pub(crate) map: OffsetMap,
    pub(crate) warnings: Vec<ParseWarning>,
    pub(crate) lines: LineIndex,
}

impl Decoded<'_> {
    /// Rewrites spans and warning offsets of a tree parsed from `self.text`
    /// so that they point into the original bytes, and puts the decoding
    /// warnings first.
    pub(crate) fn finish(self, mut parsed: Parsed) -> Parsed {
        if !self.map.is_identity() {
            remap_tree(&mut parsed.tree, &self.map, &self.lines);
            for w in &mut parsed.warnings {
                w.byte = self.map.original(w.byte);
                w.line = self.lines.line(w.byte);
            }
        }
        let mut warnings = self.warnings;
        warnings.append(&mut parsed.warnings);
        parsed.warnings = warnings;
        parsed
    }
}

fn remap_tree(tree: &mut UiTree, map: &OffsetMap, lines: &LineIndex) {
    for n in &mut tree.nodes {
        if let Some(span) = &mut n.span {
            span.start_byte = map.original(span.start_byte);
            span.end_byte = map.original(span.end_byte).max(span.start_byte);
            span.line = lines.line(span.start_byte);
        }
    }
}

/// Collects warnings with a per-kind cap.
#[derive(Debug, Default)]
pub(crate) struct WarningSink {
    pub(crate) warnings: Vec<ParseWarning>,
    suppressed: Vec<(WarningKind, usize)>,
}

impl WarningSink {
    pub(crate) fn push(&mut self, kind: WarningKind, line: u32, byte: usize, message: String) {
        let listed = self.warnings.iter().filter(|w| w.kind == kind).count();
        if listed < WARNINGS_PER_KIND {
            self.warnings.push(ParseWarning {
                kind,
                line,
                byte,
                message,
            });
        } else if let Some(entry) = self.suppressed.iter_mut().find(|(k, _)| *k == kind) {
            entry.1 += 1;
        } else {
            self.suppressed.push((kind, 1));
        }
    }

    pub(crate) fn finish(mut self) -> Vec<ParseWarning> {
        for (kind, count) in self.suppressed {
            self.warnings.push(ParseWarning {
                kind,
                line: 0,
                byte: 0,
                message: format!("{count} more warnings of this kind not listed"),
            });
        }
        self.warnings
    }
}

/// Decodes bytes as UTF-8, replacing each invalid sequence with one U+FFFD
/// (the rule of `worldloom_core::text::invalid_sequences`), with one
/// [`WarningKind::InvalidUtf8`] warning at the first.
pub(crate) fn decode_utf8(input: &[u8]) -> Decoded<'_> {
    rewrite(input, false)
}

/// Decodes bytes as UTF-8 and replaces characters XML 1.0 forbids (section
/// 2.2, production `Char`: C0 controls other than tab/LF/CR, U+FFFE, U+FFFF,
/// and surrogate code points, raw or as character references) with U+FFFD,
/// so that one bad character never loses the rest of a dump.
pub(crate) fn sanitize_xml(input: &[u8]) -> Decoded<'_> {
    rewrite(input, true)
}

fn xml_char_allowed(c: u32) -> bool {
    matches!(c, 0x9 | 0xA | 0xD | 0x20..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF)
}

fn rewrite(input: &[u8], xml: bool) -> Decoded<'_> {
    let mut w = Rewriter {
        lines: LineIndex::new(input),
        sink: WarningSink::default(),
        out: String::with_capacity(input.len()),
        map: OffsetMap::default(),
        changed: false,
    };
    // One U+FFFD per invalid sequence and one warning for them all (the rule
    // of `worldloom_core::text`, which the importers follow too).
    let runs = worldloom_core::text::invalid_sequences(input);
    if let Some(first) = runs.first() {
        let line = w.lines.line(first.start);
        w.sink.push(
            WarningKind::InvalidUtf8,
            line,
            first.start,
            worldloom_core::text::invalid_utf8_message(runs.len(), first.start),
        );
    }
    let mut in_pos = 0usize;
    let end = input.len()..input.len();
    for run in runs.iter().chain(std::iter::once(&end)) {
        // Between two invalid sequences the bytes are valid (borrowed).
        let valid = String::from_utf8_lossy(&input[in_pos..run.start]);
        if xml {
            w.push_xml_checked(&valid, in_pos);
        } else {
            w.out.push_str(&valid);
        }
        if !run.is_empty() {
            w.changed = true;
            w.map.mark(w.out.len(), run.start);
            w.out.push('\u{FFFD}');
            w.map.mark(w.out.len(), run.end);
        }
        in_pos = run.end;
    }
    // Nothing replaced: the output is the input, which is borrowed instead
    // (the copy is dropped here, before a parser builds on the text).
    let text = match (w.changed, std::str::from_utf8(input)) {
        (false, Ok(same)) => Cow::Borrowed(same),
        _ => Cow::Owned(std::mem::take(&mut w.out)),
    };
    drop(std::mem::take(&mut w.out));
    Decoded {
        text,
        map: w.map,
        warnings: w.sink.finish(),
        lines: w.lines,
    }
}

/// The text being rewritten, its offset map and its warnings.
struct Rewriter {
    lines: LineIndex,
    sink: WarningSink,
    out: String,
    map: OffsetMap,
    /// Whether anything was replaced (the output then differs from the
    /// input, even where the offsets do not move).
    changed: bool,
}

impl Rewriter {
    /// Writes `replacement` for the input bytes `start..end` and warns.
    fn replace(
        &mut self,
        start: usize,
        end: usize,
        replacement: &str,
        kind: WarningKind,
        message: String,
    ) {
        self.changed = true;
        self.map.mark(self.out.len(), start);
        self.out.push_str(replacement);
        self.map.mark(self.out.len(), end);
        self.sink.push(kind, self.lines.line(start), start, message);
    }

    /// Copies `valid` (input bytes from `base`), replacing characters XML
    /// forbids.
    fn push_xml_checked(&mut self, valid: &str, base: usize) {
        let bytes = valid.as_bytes();
        let mut copied = 0usize;
        let mut i = 0usize;
        while i < bytes.len() {
            let b = bytes[i];
            // The character at `i`: its length, and when XML forbids it, its
            // replacement and the warning.
            let (len, forbidden) = if b == b'&'
                && bytes.get(i + 1) == Some(&b'#')
                && let Some((len, code)) = char_ref(&bytes[i..])
            {
                let forbidden = (!code.is_some_and(xml_char_allowed)).then(|| {
                    ("&#xFFFD;", format!(
                        "character reference `{}` is not an XML character (lone surrogate or control); replaced with U+FFFD",
                        &valid[i..i + len]
                    ))
                });
                (len, forbidden)
            } else if b < 0x80 {
                let forbidden = (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')).then(|| {
                    ("\u{FFFD}", format!(
                        "control character U+{b:04X} is not allowed in XML; replaced with U+FFFD"
                    ))
                });
                (1, forbidden)
            } else {
                // Multi-byte character: only U+FFFE and U+FFFF are forbidden here.
                let Some(c) = valid[i..].chars().next() else {
                    break;
                };
                let forbidden = matches!(c, '\u{FFFE}' | '\u{FFFF}').then(|| {
                    (
                        "\u{FFFD}",
                        format!(
                            "non-character U+{:04X} is not allowed in XML; replaced with U+FFFD",
                            c as u32
                        ),
                    )
                });
                (c.len_utf8(), forbidden)
            };
            if let Some((replacement, message)) = forbidden {
                self.out.push_str(&valid[copied..i]);
                self.replace(
                    base + i,
                    base + i + len,
                    replacement,
                    WarningKind::ForbiddenCharacter,
                    message,
                );
                copied = i + len;
            }
            i += len;
        }
        self.out.push_str(&valid[copied..]);
    }
}

/// Reads a character reference `&#123;` / `&#x1F600;` at the start of `s`.
/// Returns its length in bytes and the code point (`None` when the number is
/// too large to be one). `None` overall when it is not a complete reference.
fn char_ref(s: &[u8]) -> Option<(usize, Option<u32>)> {
    let (digits_start, radix) = match s.get(2) {
        Some(b'x') => (3, 16),
        _ => (2, 10),
    };
    let mut end = digits_start;
    while end < s.len() && end < digits_start + 16 && s[end].is_ascii_alphanumeric() {
        end += 1;
    }
    if end == digits_start || s.get(end) != Some(&b';') {
        return None;
    }
    let digits = std::str::from_utf8(&s[digits_start..end]).ok()?;
    if !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    Some((end + 1, u32::from_str_radix(digits, radix).ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_text_is_borrowed_and_repaired_text_owned() {
        // Nothing to replace: the input itself, not a copy.
        let clean = "<a b=\"&#x41;\">t\u{e9}xt</a>";
        let d = sanitize_xml(clean.as_bytes());
        assert!(matches!(d.text, Cow::Borrowed(_)));
        assert_eq!(d.text, clean);
        assert!(d.warnings.is_empty());
        assert!(matches!(
            decode_utf8(clean.as_bytes()).text,
            Cow::Borrowed(_)
        ));
        // A replacement of the same length still makes a new text.
        let d = sanitize_xml(b"<a b=\"&#xD83D;\"/>");
        assert!(matches!(d.text, Cow::Owned(_)));
        assert_eq!(d.text, "<a b=\"&#xFFFD;\"/>");
        assert_eq!(d.warnings.len(), 1);
        let d = decode_utf8(b"a\xffb");
        assert_eq!(d.text, "a\u{FFFD}b");
        assert!(matches!(d.text, Cow::Owned(_)));
    }

    #[test]
    fn raw_lone_surrogate_becomes_one_replacement() {
        let d = sanitize_xml(b"<a b=\"x\xED\xA0\xBDy\"/>");
        assert_eq!(d.text, "<a b=\"x\u{FFFD}y\"/>");
        assert_eq!(d.warnings.len(), 1);
        assert_eq!(d.warnings[0].kind, WarningKind::InvalidUtf8);
        assert_eq!(d.warnings[0].byte, 7);
        // `y` is at output 10 (3-byte U+FFFD) and input 10 (3 raw bytes).
        assert_eq!(d.map.original(10), 10);
    }

    #[test]
    fn surrogate_char_ref_and_control_replaced() {
        let d = sanitize_xml("<a b=\"&#xD83D;\u{1}&#65;\"/>\nz".as_bytes());
        assert_eq!(d.text, "<a b=\"&#xFFFD;\u{FFFD}&#65;\"/>\nz");
        assert_eq!(d.warnings.len(), 2);
        // `&#65;` starts at input 15 (after 8-byte ref + 1 control byte) and
        // at output 17 (8-byte ref + 3-byte U+FFFD).
        assert_eq!(d.map.original(17), 15);
    }

    #[test]
    fn line_index_lines() {
        let text = "ab\ncé\nx";
        let idx = LineIndex::new(text.as_bytes());
        assert_eq!(idx.line(0), 1);
        assert_eq!(idx.line(3), 2);
        assert_eq!(idx.line(7), 3);
        assert_eq!(idx.line_start(3), Some(7));
    }
}
