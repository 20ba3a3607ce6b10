//! When to try a request again: 429 and 5xx answers, after the
//! `Retry-After` the server asks for or an exponential backoff.

/// The longest `Retry-After` wait honoured, in milliseconds.
const MAX_RETRY_AFTER_MS: u64 = 120_000;

/// The wait before retry number `attempt` (0-based), in milliseconds:
/// `initial_ms · 2^attempt`, capped at `max_ms`.
pub(super) fn backoff_ms(attempt: u32, initial_ms: u64, max_ms: u64) -> u64 {
    initial_ms
        .saturating_mul(1u64 << attempt.min(30))
        .min(max_ms)
}

/// Milliseconds to wait according to a `Retry-After` header given in
/// seconds (RFC 9110 §10.2.3; the HTTP-date form is not honoured and falls
/// back to the backoff), capped at two minutes.
pub(super) fn retry_after_ms(headers: &reqwest::header::HeaderMap) -> Option<u64> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    let secs: f64 = value.trim().parse().ok()?;
    if !secs.is_finite() || secs < 0.0 {
        return None;
    }
    Some(((secs * 1000.0) as u64).min(MAX_RETRY_AFTER_MS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_and_retry_after_is_seconds() {
        assert_eq!(
            (0..5)
                .map(|a| backoff_ms(a, 500, 3_000))
                .collect::<Vec<_>>(),
            vec![500, 1_000, 2_000, 3_000, 3_000]
        );
        let mut headers = reqwest::header::HeaderMap::new();
        assert_eq!(retry_after_ms(&headers), None);
        headers.insert(reqwest::header::RETRY_AFTER, "1.5".parse().unwrap());
        assert_eq!(retry_after_ms(&headers), Some(1_500));
        headers.insert(reqwest::header::RETRY_AFTER, "9999".parse().unwrap());
        assert_eq!(retry_after_ms(&headers), Some(MAX_RETRY_AFTER_MS));
    }
}
