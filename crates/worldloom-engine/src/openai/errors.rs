//! Error messages that say what happened: the error chain of a failed
//! request, and quotes of what a server sent.

use crate::world_model::EngineError;

/// Characters of a malformed line or error body quoted in error messages.
const QUOTE_CHARS: usize = 200;

/// An error and its sources, joined by `: `.
pub(super) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

pub(super) fn request_error(url: &str, error: &reqwest::Error) -> EngineError {
    let chain = error_chain(error);
    if error.is_connect() {
        let what = if chain.to_ascii_lowercase().contains("refused") {
            "connection refused (is the server running and listening there?)"
        } else if error.is_timeout() {
            "connect timeout"
        } else {
            "connection failed"
        };
        EngineError::Remote(format!("cannot connect to {url}: {what} [{chain}]"))
    } else if error.is_timeout() {
        EngineError::Remote(format!("request to {url} timed out: {chain}"))
    } else {
        EngineError::Remote(format!("request to {url} failed: {chain}"))
    }
}

pub(super) fn body_error(url: &str, error: &reqwest::Error) -> EngineError {
    EngineError::Remote(format!(
        "reading the response of {url} failed: {}",
        error_chain(error)
    ))
}

/// At most [`QUOTE_CHARS`] characters of `text`, with `…` when cut.
pub(super) fn quote(text: &str) -> String {
    let mut out: String = text.chars().take(QUOTE_CHARS).collect();
    if text.chars().count() > QUOTE_CHARS {
        out.push('…');
    }
    out
}

/// The body of `response` as text, read chunk by chunk: each chunk must come
/// within `read_timeout` of the previous one, and at most `max_bytes` are
/// kept.
///
/// Errors: [`EngineError::Remote`] naming the read timeout, the size limit,
/// a dropped connection or a body that is not UTF-8.
pub(super) async fn read_body(
    response: reqwest::Response,
    url: &str,
    read_timeout: std::time::Duration,
    max_bytes: usize,
) -> Result<String, EngineError> {
    use futures_util::StreamExt;
    let mut stream = response.bytes_stream();
    let mut body: Vec<u8> = Vec::new();
    loop {
        let next = tokio::time::timeout(read_timeout, stream.next())
            .await
            .map_err(|_| {
                EngineError::Remote(format!(
                    "{url} stopped sending its response for {} ms after {} bytes (read timeout)",
                    read_timeout.as_millis(),
                    body.len()
                ))
            })?;
        match next {
            None => break,
            Some(Err(e)) => return Err(body_error(url, &e)),
            Some(Ok(chunk)) => {
                if body.len() + chunk.len() > max_bytes {
                    return Err(EngineError::Remote(format!(
                        "the response of {url} is longer than {max_bytes} bytes; stopped reading"
                    )));
                }
                body.extend_from_slice(&chunk);
            }
        }
    }
    String::from_utf8(body).map_err(|e| {
        EngineError::Remote(format!(
            "the response of {url} is not UTF-8: {}",
            quote(&String::from_utf8_lossy(e.as_bytes()))
        ))
    })
}
