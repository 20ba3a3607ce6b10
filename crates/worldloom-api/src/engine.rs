//! Engine settings and the engine instance of a studio.
use crate::error::{ApiError, ErrorCode};
use crate::types::*;
use crate::Studio;

/// `engine_status` (not yet available in this build).
///
/// # Errors
/// [`ErrorCode::Unsupported`].
pub fn engine_status(_studio: &Studio, _req: EmptyRequest) -> Result<EngineStatus, ApiError> {
    Err(ApiError::new(ErrorCode::Unsupported, "engine_status is not yet available in this build"))
}

/// `inspect_model_dir` (not yet available in this build).
///
/// # Errors
/// [`ErrorCode::Unsupported`].
pub fn inspect_model_dir(_studio: &Studio, _req: InspectModelDirRequest) -> Result<ModelDirInfo, ApiError> {
    Err(ApiError::new(ErrorCode::Unsupported, "inspect_model_dir is not yet available in this build"))
}

/// `set_engine` (not yet available in this build).
///
/// # Errors
/// [`ErrorCode::Unsupported`].
pub fn set_engine(_studio: &Studio, _req: SetEngineRequest) -> Result<EngineStatus, ApiError> {
    Err(ApiError::new(ErrorCode::Unsupported, "set_engine is not yet available in this build"))
}

