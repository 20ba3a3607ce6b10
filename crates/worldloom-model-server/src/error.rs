//! Errors answered in the OpenAI error shape (`{"error": {"message",
//! "type", "param", "code"}}`).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use worldloom_engine::EngineError;

/// An error answered in the OpenAI error shape.
#[derive(Debug)]
pub(crate) struct ApiError {
    pub(crate) status: StatusCode,
    pub(crate) kind: &'static str,
    pub(crate) message: String,
    pub(crate) param: Option<String>,
    pub(crate) code: Option<&'static str>,
}

impl ApiError {
    /// A 400 naming the request field `param`.
    pub(crate) fn invalid(param: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error",
            message: message.into(),
            param: Some(param.into()),
            code: None,
        }
    }

    /// An engine error: 400 for an invalid request, else 500.
    pub(crate) fn from_engine(error: &EngineError) -> Self {
        let (status, kind) = match error {
            EngineError::InvalidRequest(_) => (StatusCode::BAD_REQUEST, "invalid_request_error"),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "server_error"),
        };
        Self {
            status,
            kind,
            message: error.to_string(),
            param: None,
            code: None,
        }
    }

    /// The JSON body, `{"error": {message, type, param, code}}`.
    pub(crate) fn body(&self) -> Value {
        json!({"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(self.body())).into_response()
    }
}
