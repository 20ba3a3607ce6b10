//! Byte-level helpers shared by the parsers: UTF-8 decoding and XML
//! character sanitising that keep a map back to the original byte offsets,
//! and line lookup.

use super::{ParseWarning, Parsed, WarningKind};
use crate::tree::UiTree;

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

    /// True when output and input offsets are the same everywhere.
    pub(crate) fn is_identity(&self) -> bool {
        self.segments.is_empty()
    }
}

/// Text decoded (and possibly repaired) from input bytes.
#[derive(Debug, Clone)]
pub(crate) struct Decoded {
    pub(crate) text: String,
    pub(crate) map: OffsetMap,
    pub(crate) warnings: Vec<ParseWarning>,
    pub(crate) lines: LineIndex,
}

impl Decoded {
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
pub(crate) fn decode_utf8(input: &[u8]) -> Decoded {
    rewrite(input, false)
}

/// Decodes bytes as UTF-8 and replaces characters XML 1.0 forbids (section
/// 2.2, production `Char`: C0 controls other than tab/LF/CR, U+FFFE, U+FFFF,
/// and surrogate code points, raw or as character references) with U+FFFD,
/// so that one bad character never loses the rest of a dump.
pub(crate) fn sanitize_xml(input: &[u8]) -> Decoded {
    rewrite(input, true)
}

fn xml_char_allowed(c: u32) -> bool {
    matches!(c, 0x9 | 0xA | 0xD | 0x20..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF)
}

fn rewrite(input: &[u8], xml: bool) -> Decoded {
    let lines = LineIndex::new(input);
    let mut sink = WarningSink::default();
    let mut out = String::with_capacity(input.len());
    let mut map = OffsetMap::default();
    let runs = worldloom_core::text::invalid_sequences(input);
    if let Some(first) = runs.first() {
        sink.push(
            WarningKind::InvalidUtf8,
            lines.line(first.start),
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
            push_xml_checked(&valid, in_pos, &mut out, &mut map, &mut sink, &lines);
        } else {
            out.push_str(&valid);
        }
        if !run.is_empty() {
            map.mark(out.len(), run.start);
            out.push('\u{FFFD}');
            map.mark(out.len(), run.end);
        }
        in_pos = run.end;
    }
    Decoded {
        text: out,
        map,
        warnings: sink.finish(),
        lines,
    }
}

fn push_xml_checked(
    valid: &str,
    base: usize,
    out: &mut String,
    map: &mut OffsetMap,
    sink: &mut WarningSink,
    lines: &LineIndex,
) {
    let bytes = valid.as_bytes();
    let mut copied = 0usize;
    let mut i = 0usize;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'&'
            && bytes.get(i + 1) == Some(&b'#')
            && let Some((len, code)) = char_ref(&bytes[i..])
        {
            {
                if !code.is_some_and(xml_char_allowed) {
                    out.push_str(&valid[copied..i]);
                    map.mark(out.len(), base + i);
                    out.push_str("&#xFFFD;");
                    map.mark(out.len(), base + i + len);
                    sink.push(
                        WarningKind::ForbiddenCharacter,
                        lines.line(base + i),
                        base + i,
                        format!(
                            "character reference `{}` is not an XML character (lone surrogate or control); replaced with U+FFFD",
                            &valid[i..i + len]
                        ),
                    );
                    copied = i + len;
                }
                i += len;
                continue;
            }
        }
        if b < 0x80 {
            if b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r') {
                out.push_str(&valid[copied..i]);
                map.mark(out.len(), base + i);
                out.push('\u{FFFD}');
                map.mark(out.len(), base + i + 1);
                sink.push(
                    WarningKind::ForbiddenCharacter,
                    lines.line(base + i),
                    base + i,
                    format!(
                        "control character U+{b:04X} is not allowed in XML; replaced with U+FFFD"
                    ),
                );
                copied = i + 1;
            }
            i += 1;
            continue;
        }
        // Multi-byte character: only U+FFFE and U+FFFF are forbidden here.
        let Some(c) = valid[i..].chars().next() else {
            break;
        };
        let len = c.len_utf8();
        if matches!(c, '\u{FFFE}' | '\u{FFFF}') {
            out.push_str(&valid[copied..i]);
            map.mark(out.len(), base + i);
            out.push('\u{FFFD}');
            map.mark(out.len(), base + i + len);
            sink.push(
                WarningKind::ForbiddenCharacter,
                lines.line(base + i),
                base + i,
                format!(
                    "non-character U+{:04X} is not allowed in XML; replaced with U+FFFD",
                    c as u32
                ),
            );
            copied = i + len;
        }
        i += len;
    }
    out.push_str(&valid[copied..]);
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
