//! Counters behind `GET /metrics` and the progress line.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::{Value, json};

/// Counters since the server started (relaxed atomics).
#[derive(Debug)]
pub struct Metrics {
    started: Instant,
    /// WebSocket sessions accepted.
    pub ws_sessions_opened: AtomicU64,
    /// Connections refused at capacity (WebSocket or HTTP reset).
    pub capacity_refusals: AtomicU64,
    /// Episodes started (resets).
    pub episodes_started: AtomicU64,
    /// Episodes ended (done, closed, reaped).
    pub episodes_finished: AtomicU64,
    /// Steps that produced a turn.
    pub steps: AtomicU64,
    /// Microseconds spent in those steps.
    pub step_us_total: AtomicU64,
    /// Tokens the world model generated.
    pub completion_tokens: AtomicU64,
    /// Malformed actions refused.
    pub invalid_actions: AtomicU64,
    /// Predictions without an observation.
    pub unparseable: AtomicU64,
    /// Steps the world model failed.
    pub engine_errors: AtomicU64,
    /// Malformed messages and requests.
    pub bad_messages: AtomicU64,
    /// Sessions closed for idleness.
    pub idle_closed: AtomicU64,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            ws_sessions_opened: AtomicU64::new(0),
            capacity_refusals: AtomicU64::new(0),
            episodes_started: AtomicU64::new(0),
            episodes_finished: AtomicU64::new(0),
            steps: AtomicU64::new(0),
            step_us_total: AtomicU64::new(0),
            completion_tokens: AtomicU64::new(0),
            invalid_actions: AtomicU64::new(0),
            unparseable: AtomicU64::new(0),
            engine_errors: AtomicU64::new(0),
            bad_messages: AtomicU64::new(0),
            idle_closed: AtomicU64::new(0),
        }
    }
}

impl Metrics {
    /// The counters as JSON, with `active_sessions` and `max_sessions`
    /// given by the server, and rates over the uptime (`steps_per_sec`,
    /// `tokens_per_sec`, `mean_step_ms`).
    pub fn to_json(&self, active_sessions: usize, max_sessions: usize) -> Value {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let uptime_s = self.started.elapsed().as_secs_f64();
        let steps = get(&self.steps);
        let per_sec = |n: u64| {
            if uptime_s > 0.0 {
                n as f64 / uptime_s
            } else {
                0.0
            }
        };
        json!({
            "uptime_s": uptime_s,
            "active_sessions": active_sessions,
            "max_sessions": max_sessions,
            "ws_sessions_opened": get(&self.ws_sessions_opened),
            "capacity_refusals": get(&self.capacity_refusals),
            "episodes_started": get(&self.episodes_started),
            "episodes_finished": get(&self.episodes_finished),
            "steps": steps,
            "steps_per_sec": per_sec(steps),
            "mean_step_ms": if steps > 0 { get(&self.step_us_total) as f64 / steps as f64 / 1e3 } else { 0.0 },
            "completion_tokens": get(&self.completion_tokens),
            "tokens_per_sec": per_sec(get(&self.completion_tokens)),
            "errors": {
                "invalid_actions": get(&self.invalid_actions),
                "unparseable_predictions": get(&self.unparseable),
                "engine": get(&self.engine_errors),
                "bad_messages": get(&self.bad_messages),
                "idle_closed": get(&self.idle_closed),
            },
        })
    }
}
