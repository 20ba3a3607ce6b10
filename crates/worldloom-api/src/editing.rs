//! Editing: branches, authored observations, perturbations, comparisons.
use crate::error::{ApiError, ErrorCode};
use crate::types::*;
use crate::Studio;

/// `edit_action` (not yet available in this build).
///
/// # Errors
/// [`ErrorCode::Unsupported`].
pub fn edit_action(_studio: &Studio, _req: EditActionRequest) -> Result<BranchCreated, ApiError> {
    Err(ApiError::new(ErrorCode::Unsupported, "edit_action is not yet available in this build"))
}

/// `append_turn` (not yet available in this build).
///
/// # Errors
/// [`ErrorCode::Unsupported`].
pub fn append_turn(_studio: &Studio, _req: AppendTurnRequest) -> Result<BranchCreated, ApiError> {
    Err(ApiError::new(ErrorCode::Unsupported, "append_turn is not yet available in this build"))
}

/// `parse_action` (not yet available in this build).
///
/// # Errors
/// [`ErrorCode::Unsupported`].
pub fn parse_action(_studio: &Studio, _req: ParseActionRequest) -> Result<ParseActionResponse, ApiError> {
    Err(ApiError::new(ErrorCode::Unsupported, "parse_action is not yet available in this build"))
}

/// `validate_observation` (not yet available in this build).
///
/// # Errors
/// [`ErrorCode::Unsupported`].
pub fn validate_observation(_studio: &Studio, _req: ValidateObservationRequest) -> Result<ValidationReport, ApiError> {
    Err(ApiError::new(ErrorCode::Unsupported, "validate_observation is not yet available in this build"))
}

/// `author_observation` (not yet available in this build).
///
/// # Errors
/// [`ErrorCode::Unsupported`].
pub fn author_observation(_studio: &Studio, _req: AuthorObservationRequest) -> Result<AuthorObservationResponse, ApiError> {
    Err(ApiError::new(ErrorCode::Unsupported, "author_observation is not yet available in this build"))
}

/// `set_perturbation` (not yet available in this build).
///
/// # Errors
/// [`ErrorCode::Unsupported`].
pub fn set_perturbation(_studio: &Studio, _req: SetPerturbationRequest) -> Result<ChangeResponse, ApiError> {
    Err(ApiError::new(ErrorCode::Unsupported, "set_perturbation is not yet available in this build"))
}

/// `compare_branches` (not yet available in this build).
///
/// # Errors
/// [`ErrorCode::Unsupported`].
pub fn compare_branches(_studio: &Studio, _req: CompareBranchesRequest) -> Result<CompareBranchesResponse, ApiError> {
    Err(ApiError::new(ErrorCode::Unsupported, "compare_branches is not yet available in this build"))
}

