//! The server-sent-event line format (WHATWG HTML, "Server-sent events"):
//! splitting the body into lines in linear time with a length cap
//! ([`SseLineReader`]), and reading the fields of one event ([`SseEvent`]).

use super::errors::quote;

/// Default cap on one SSE line, in bytes (16 MiB): far above any chunk an
/// OpenAI-compatible server sends (a chunk holds a few tokens), low enough
/// that a body without newlines cannot fill the memory.
pub const DEFAULT_MAX_SSE_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Splits a byte stream into lines (ended by `\n`, `\r\n` or `\r\n`'s
/// `\n`; a trailing `\r` is removed), in time linear in the bytes pushed:
/// each byte is scanned for a newline once, however the stream is cut into
/// chunks, and consumed bytes are dropped only when they make up at least
/// half of the buffer.
///
/// A line longer than the cap ends the reading with
/// [`SseLineError::TooLong`] as soon as its first `cap + 1` bytes are held,
/// so memory stays below about twice the cap plus one chunk.
#[derive(Debug)]
pub struct SseLineReader {
    buffer: Vec<u8>,
    /// Start of the line being read in `buffer`.
    start: usize,
    /// Bytes of `buffer` before this index hold no newline after `start`.
    scanned_to: usize,
    /// Total bytes looked at while searching for newlines.
    scanned: u64,
    /// Lines returned so far (the 1-based number of the last one).
    lines: usize,
    max_line_bytes: usize,
}

/// Why [`SseLineReader::next_line`] stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseLineError {
    /// Line `line` (1-based) grew past `cap` bytes without ending.
    TooLong {
        /// The number of the line.
        line: usize,
        /// The cap in bytes.
        cap: usize,
    },
    /// Line `line` is not UTF-8; `text` quotes it (lossily).
    NotUtf8 {
        /// The number of the line.
        line: usize,
        /// The line, with invalid sequences replaced, cut to 200 characters.
        text: String,
    },
}

impl SseLineReader {
    /// A reader whose lines may hold at most `max_line_bytes` bytes
    /// (without their line ending); `0` is taken as 1.
    pub fn new(max_line_bytes: usize) -> Self {
        Self {
            buffer: Vec::new(),
            start: 0,
            scanned_to: 0,
            scanned: 0,
            lines: 0,
            max_line_bytes: max_line_bytes.max(1),
        }
    }

    /// Appends the next piece of the body.
    pub fn push(&mut self, chunk: &[u8]) {
        if self.start > 0 && self.start * 2 >= self.buffer.len() {
            // The consumed prefix is at least half the buffer: moving the
            // rest costs no more than the bytes already consumed.
            self.buffer.drain(..self.start);
            self.scanned_to -= self.start;
            self.start = 0;
        }
        self.buffer.extend_from_slice(chunk);
    }

    /// The next complete line without its line ending, `None` when the
    /// pushed bytes hold no further newline.
    ///
    /// Errors: [`SseLineError::TooLong`] when the line being read is longer
    /// than the cap (complete or not), [`SseLineError::NotUtf8`].
    pub fn next_line(&mut self) -> Option<Result<String, SseLineError>> {
        let unscanned = &self.buffer[self.scanned_to..];
        let found = unscanned.iter().position(|&b| b == b'\n');
        self.scanned += found.map_or(unscanned.len(), |p| p + 1) as u64;
        let Some(offset) = found else {
            self.scanned_to = self.buffer.len();
            // `+ 1`: the `\r` of a `\r\n` ending may be held without its `\n`.
            if self.buffer.len() - self.start > self.max_line_bytes + 1 {
                return Some(Err(self.too_long()));
            }
            return None;
        };
        let end = self.scanned_to + offset;
        let mut line = &self.buffer[self.start..end];
        self.start = end + 1;
        self.scanned_to = self.start;
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        if line.len() > self.max_line_bytes {
            return Some(Err(self.too_long()));
        }
        self.lines += 1;
        Some(match std::str::from_utf8(line) {
            Ok(text) => Ok(text.to_owned()),
            Err(_) => Err(SseLineError::NotUtf8 {
                line: self.lines,
                text: quote(&String::from_utf8_lossy(line)),
            }),
        })
    }

    fn too_long(&self) -> SseLineError {
        SseLineError::TooLong {
            line: self.lines + 1,
            cap: self.max_line_bytes,
        }
    }

    /// The bytes of an unfinished last line (pushed after the last newline).
    pub fn pending(&self) -> &[u8] {
        &self.buffer[self.start..]
    }

    /// The number of lines returned so far.
    pub fn lines(&self) -> usize {
        self.lines
    }

    /// How many bytes the newline search has looked at in all: equal to the
    /// bytes pushed once every line is read, whatever the chunk sizes.
    pub fn scanned_bytes(&self) -> u64 {
        self.scanned
    }
}

/// The `data` lines of the SSE event being read.
#[derive(Default)]
pub(super) struct SseEvent {
    pub(super) data: String,
    pub(super) first_line: Option<usize>,
}

impl SseEvent {
    /// Reads one non-empty line (WHATWG SSE: `field: value` or `: comment`).
    /// Lines with a field other than `data`, `event`, `id` or `retry` are
    /// rejected: OpenAI-compatible servers never send them, so they signal a
    /// broken proxy or a non-SSE body.
    ///
    /// Errors: the message `malformed SSE line N: `…``, for the caller to
    /// put into its error.
    pub(super) fn feed_line(&mut self, line: &str, line_no: usize) -> Result<(), String> {
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.first_line.is_none() {
                    self.first_line = Some(line_no);
                } else {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                Ok(())
            }
            "event" | "id" | "retry" => Ok(()),
            _ => Err(format!("malformed SSE line {line_no}: `{}`", quote(line))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_lines() {
        let mut e = SseEvent::default();
        e.feed_line(": keep-alive", 1).unwrap();
        e.feed_line("event: message", 2).unwrap();
        e.feed_line("data: {\"a\":", 3).unwrap();
        e.feed_line("data:1}", 4).unwrap();
        assert_eq!(e.data, "{\"a\":\n1}");
        assert_eq!(e.first_line, Some(3));
        let err = e.feed_line("garbage here", 5).unwrap_err();
        assert_eq!(err, "malformed SSE line 5: `garbage here`");
    }

    fn read_all(reader: &mut SseLineReader) -> Vec<Result<String, SseLineError>> {
        std::iter::from_fn(|| reader.next_line()).collect()
    }

    #[test]
    fn lines_split_across_chunks_and_line_endings() {
        let mut r = SseLineReader::new(64);
        r.push(b"data: a\r");
        assert_eq!(read_all(&mut r), vec![]);
        r.push(b"\ndata");
        r.push(b": b\n\n: c");
        assert_eq!(
            read_all(&mut r),
            vec![
                Ok("data: a".to_owned()),
                Ok("data: b".to_owned()),
                Ok(String::new())
            ]
        );
        assert_eq!(r.pending(), b": c");
        assert_eq!(r.lines(), 3);
        r.push(b"\xff\n");
        assert_eq!(
            read_all(&mut r),
            vec![Err(SseLineError::NotUtf8 {
                line: 4,
                text: ": c\u{fffd}".to_owned()
            })]
        );
    }

    #[test]
    fn a_long_line_in_small_chunks_is_scanned_once() {
        // 4 MiB in 64-byte chunks: a rescan of the whole buffer per chunk
        // would look at about 2^22 · 2^16 / 2 = 1.4e11 bytes.
        const LINE: usize = 4 * 1024 * 1024;
        let mut r = SseLineReader::new(DEFAULT_MAX_SSE_LINE_BYTES);
        let chunk = [b'x'; 64];
        let mut pushed = 0u64;
        for _ in 0..LINE / chunk.len() {
            r.push(&chunk);
            pushed += chunk.len() as u64;
            assert_eq!(r.next_line(), None);
        }
        r.push(b"\nnext\n");
        pushed += 6;
        let lines = read_all(&mut r);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].as_ref().map(String::len), Ok(LINE));
        assert_eq!(lines[1], Ok("next".to_owned()));
        assert_eq!(r.scanned_bytes(), pushed);
        // consumed bytes are dropped: the buffer does not keep the long line
        r.push(b"z");
        assert_eq!(r.pending(), b"z");
        assert!(r.buffer.len() <= 2, "{}", r.buffer.len());
    }

    #[test]
    fn many_short_lines_are_scanned_once() {
        let mut r = SseLineReader::new(16);
        let mut pushed = 0u64;
        for _ in 0..1000 {
            let (a, b): (&[u8], &[u8]) = (b"data: 1\n\ndata", b": 2\n\n");
            r.push(a);
            r.push(b);
            pushed += (a.len() + b.len()) as u64;
            assert_eq!(read_all(&mut r).len(), 4);
        }
        assert_eq!(r.scanned_bytes(), pushed);
        assert_eq!(r.lines(), 4000);
    }

    #[test]
    fn a_line_over_the_cap_is_an_error_before_it_ends() {
        let mut r = SseLineReader::new(1000);
        r.push(b"data: ok\n");
        assert_eq!(read_all(&mut r), vec![Ok("data: ok".to_owned())]);
        for _ in 0..15 {
            r.push(&[b'x'; 64]);
            assert_eq!(r.next_line(), None);
        }
        r.push(&[b'x'; 40]);
        assert_eq!(r.next_line(), None); // 1000 bytes: at the cap
        r.push(b"xx");
        assert_eq!(
            r.next_line(),
            Some(Err(SseLineError::TooLong { line: 2, cap: 1000 }))
        );
        // a complete line over the cap in one chunk is refused too
        let mut r = SseLineReader::new(4);
        r.push(b"12345\n");
        assert_eq!(
            r.next_line(),
            Some(Err(SseLineError::TooLong { line: 1, cap: 4 }))
        );
        // the line ending does not count towards the cap
        let mut r = SseLineReader::new(4);
        r.push(b"1234\r");
        assert_eq!(r.next_line(), None);
        r.push(b"\n");
        assert_eq!(r.next_line(), Some(Ok("1234".to_owned())));
    }
}
