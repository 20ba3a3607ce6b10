//! Prompt preview, streaming steps, cancellation and rollouts.
use crate::error::{ApiError, ErrorCode};
use crate::types::*;
use crate::Studio;

/// `preview_prompt` (not yet available in this build).
///
/// # Errors
/// [`ErrorCode::Unsupported`].
pub fn preview_prompt(_studio: &Studio, _req: PreviewPromptRequest) -> Result<PreviewPromptResponse, ApiError> {
    Err(ApiError::new(ErrorCode::Unsupported, "preview_prompt is not yet available in this build"))
}

/// `step` (not yet available in this build).
///
/// # Errors
/// [`ErrorCode::Unsupported`].
pub fn step(_studio: &Studio, _req: StepRequest) -> Result<StepResponse, ApiError> {
    Err(ApiError::new(ErrorCode::Unsupported, "step is not yet available in this build"))
}

/// `cancel_step` (not yet available in this build).
///
/// # Errors
/// [`ErrorCode::Unsupported`].
pub fn cancel_step(_studio: &Studio, _req: CancelStepRequest) -> Result<CancelStepResponse, ApiError> {
    Err(ApiError::new(ErrorCode::Unsupported, "cancel_step is not yet available in this build"))
}

/// `rollout` (not yet available in this build).
///
/// # Errors
/// [`ErrorCode::Unsupported`].
pub fn rollout(_studio: &Studio, _req: RolloutRequest) -> Result<RolloutResponse, ApiError> {
    Err(ApiError::new(ErrorCode::Unsupported, "rollout is not yet available in this build"))
}

