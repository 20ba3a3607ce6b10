//! The line layout of a JSONL file, taken from the bytes as they stream to
//! the JSON parser: where each non-blank line's value must end, so that "one
//! value per line" is checked in the pass that parses the rows (the file is
//! read once).

use std::cell::RefCell;
use std::io::Read;
use std::rc::Rc;

/// A non-blank line: its 1-based number and one past its last
/// non-whitespace byte, in file offsets (where the line's JSON value must end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LineEnd {
    pub line: usize,
    pub value_end: u64,
}

/// The layout seen so far.
#[derive(Debug, Default)]
pub(crate) struct Layout {
    /// Non-blank lines ended so far (by a newline, or the end of the file
    /// once [`LineReader`] has reached it).
    pub ended: Vec<LineEnd>,
    /// 1-based number of the line being read.
    pub line: usize,
    offset: u64,
    /// One past the last non-whitespace byte of the line being read.
    open_end: Option<u64>,
    at_eof: bool,
}

impl Layout {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' {
                self.end_line();
                self.line += 1;
            } else if !b.is_ascii_whitespace() {
                self.open_end = Some(self.offset + 1);
            }
            self.offset += 1;
        }
    }

    fn end_line(&mut self) {
        if let Some(value_end) = self.open_end.take() {
            self.ended.push(LineEnd {
                line: self.line,
                value_end,
            });
        }
    }

    /// The line the `k`-th value (0-based) is on in a file of one value per
    /// non-blank line, and whether its end is known to be `value_end`
    /// (`Some(false)`: it is not; `None`: the line has not ended yet).
    pub fn place(&self, k: usize, value_end: u64) -> (usize, Option<bool>) {
        match self.ended.get(k) {
            Some(l) => (l.line, Some(l.value_end == value_end)),
            None => (self.line, None),
        }
    }

    /// Whether the whole file was one value per non-blank line, the values
    /// ending at `ends` (checked once the reader reached the end).
    pub fn one_value_per_line(&self, ends: &[u64]) -> bool {
        self.at_eof
            && self.ended.len() == ends.len()
            && self.ended.iter().zip(ends).all(|(l, &e)| l.value_end == e)
    }
}

/// A reader that records the [`Layout`] of the bytes it passes on (wrap the
/// file, below the buffering, so it is ahead of the parser).
pub(crate) struct LineReader<R> {
    inner: R,
    layout: Rc<RefCell<Layout>>,
}

impl<R: Read> LineReader<R> {
    /// Wraps `inner`; the layout is shared with the caller.
    pub fn new(inner: R) -> (Self, Rc<RefCell<Layout>>) {
        let layout = Rc::new(RefCell::new(Layout {
            line: 1,
            ..Layout::default()
        }));
        (
            Self {
                inner,
                layout: layout.clone(),
            },
            layout,
        )
    }
}

impl<R: Read> Read for LineReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut layout = self.layout.borrow_mut();
        if n == 0 {
            if !layout.at_eof {
                layout.end_line();
                layout.at_eof = true;
            }
        } else {
            layout.feed(&buf[..n]);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_lines_crlf_and_trailing_spaces_are_laid_out() {
        let text = b"\n  \n{\"a\":1} \r\n\n[2]\n3";
        let (mut r, layout) = LineReader::new(&text[..]);
        std::io::copy(&mut r, &mut std::io::sink()).unwrap();
        let l = layout.borrow();
        assert_eq!(
            l.ended,
            vec![
                LineEnd {
                    line: 3,
                    value_end: 11
                },
                LineEnd {
                    line: 5,
                    value_end: 18
                },
                LineEnd {
                    line: 6,
                    value_end: 20
                },
            ]
        );
        assert!(l.one_value_per_line(&[11, 18, 20]));
        assert!(!l.one_value_per_line(&[11, 18]));
        assert_eq!(l.place(1, 18), (5, Some(true)));
        assert_eq!(l.place(3, 30), (6, None));
    }
}
