//! The server-sent-event line format (WHATWG HTML, "Server-sent events").

use super::errors::quote;
use crate::world_model::EngineError;

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
    pub(super) fn feed_line(&mut self, line: &str, line_no: usize) -> Result<(), EngineError> {
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
            _ => Err(EngineError::Remote(format!(
                "malformed SSE line {line_no}: `{}`",
                quote(line)
            ))),
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
        assert_eq!(
            err,
            EngineError::Remote("malformed SSE line 5: `garbage here`".to_owned())
        );
    }
}
