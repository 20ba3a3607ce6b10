//! Errors of the environment, each with its OpenEnv WebSocket code and its
//! HTTP status.

/// Why a reset, step or state request got no observation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EnvError {
    /// The task file or workspace could not be read (startup only).
    #[error("tasks: {0}")]
    Tasks(String),
    /// The request is malformed (unknown field, wrong type, unknown task or
    /// domain); nothing changed.
    #[error("{0}")]
    Invalid(String),
    /// The action does not parse in the domain's action language; the
    /// episode goes on from the same state.
    #[error("malformed action: {0}")]
    InvalidAction(String),
    /// No episode to act on (step before reset, unknown `episode_id`, an
    /// episode that has ended).
    #[error("{0}")]
    Session(String),
    /// Every session slot is taken.
    #[error(
        "server at capacity: {active} of {max} sessions active; close one or wait (--max-sessions)"
    )]
    Capacity {
        /// Sessions open now.
        active: usize,
        /// `--max-sessions`.
        max: usize,
    },
    /// The world model failed (endpoint down, deadline passed); the episode
    /// goes on from the same state and the step can be sent again.
    #[error("world model failed: {0}")]
    Engine(String),
    /// The episode could not be written to the workspace.
    #[error("recording the episode: {0}")]
    Record(String),
}

impl EnvError {
    /// The OpenEnv WebSocket error code (`WSErrorCode` of `openenv-core`).
    pub fn ws_code(&self) -> &'static str {
        match self {
            EnvError::Invalid(_) | EnvError::InvalidAction(_) => "VALIDATION_ERROR",
            EnvError::Session(_) => "SESSION_ERROR",
            EnvError::Capacity { .. } => "CAPACITY_REACHED",
            EnvError::Tasks(_) | EnvError::Engine(_) | EnvError::Record(_) => "EXECUTION_ERROR",
        }
    }

    /// The HTTP status of the same error: 422 for malformed requests and
    /// actions (as FastAPI's validation errors), 404/409 for episodes, 503
    /// at capacity, 502 for a failing model, 500 otherwise.
    pub fn http_status(&self) -> u16 {
        match self {
            EnvError::Invalid(_) | EnvError::InvalidAction(_) => 422,
            EnvError::Session(m) if m.starts_with("no episode") => 404,
            EnvError::Session(_) => 409,
            EnvError::Capacity { .. } => 503,
            EnvError::Engine(_) => 502,
            EnvError::Tasks(_) | EnvError::Record(_) => 500,
        }
    }
}

/// What a JSON value is, for messages: `a number (5)`, `an object`, …
/// (short values shown, long ones only named).
pub(crate) fn json_kind(value: &serde_json::Value) -> String {
    let kind = match value {
        serde_json::Value::Null => return "null".into(),
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    };
    let text = value.to_string();
    if text.len() <= 40 {
        format!("{kind} ({text})")
    } else {
        kind.into()
    }
}
