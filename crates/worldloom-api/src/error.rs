//! Classified API errors: the UI matches on [`ErrorCode`], never on message
//! text. On the wire: `{"error": {"code": "not_found", "message": "…"}}`.

use serde::{Deserialize, Serialize};
use ts_rs::TS;
use worldloom_store::StoreError;

/// What kind of failure an [`ApiError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The request is malformed (wrong JSON shape, bad id, bad value).
    BadRequest,
    /// The command name is not one of [`crate::COMMANDS`].
    UnknownCommand,
    /// A trajectory, branch, node or prediction does not exist.
    NotFound,
    /// A file could not be read or its content is not a format Worldloom reads.
    ImportFailed,
    /// A file could not be written.
    ExportFailed,
    /// The request is valid but this build cannot do it.
    Unsupported,
    /// The workspace file could not be read or written.
    Storage,
    /// A missing or wrong access token (HTTP transport only).
    Unauthorized,
    /// A bug: please report it.
    Internal,
}

impl ErrorCode {
    /// The snake_case name, as on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::UnknownCommand => "unknown_command",
            ErrorCode::NotFound => "not_found",
            ErrorCode::ImportFailed => "import_failed",
            ErrorCode::ExportFailed => "export_failed",
            ErrorCode::Unsupported => "unsupported",
            ErrorCode::Storage => "storage",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::Internal => "internal",
        }
    }
}

/// An API error: a code and a message naming the file, line, field or id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct ApiError {
    /// The classification.
    pub code: ErrorCode,
    /// A human-readable message.
    pub message: String,
}

/// The wire form of an error: `{"error": {"code", "message"}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ErrorBody {
    /// The error.
    pub error: ApiError,
}

impl ApiError {
    /// An error with the given code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// [`ErrorCode::BadRequest`].
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::BadRequest, message)
    }

    /// [`ErrorCode::NotFound`].
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }

    /// [`ErrorCode::Internal`].
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }

    /// The wire body.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: self.clone(),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        let code = match &e {
            StoreError::NotFound(_) => ErrorCode::NotFound,
            StoreError::Invalid(_) => ErrorCode::BadRequest,
            _ => ErrorCode::Storage,
        };
        ApiError::new(code, e.to_string())
    }
}
