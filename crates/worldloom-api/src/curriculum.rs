//! Curriculum export and browser uploads.
use crate::error::{ApiError, ErrorCode};
use crate::types::*;
use crate::Studio;

/// `export_curriculum` (not yet available in this build).
///
/// # Errors
/// [`ErrorCode::Unsupported`].
pub fn export_curriculum(_studio: &Studio, _req: ExportCurriculumRequest) -> Result<ExportCurriculumResponse, ApiError> {
    Err(ApiError::new(ErrorCode::Unsupported, "export_curriculum is not yet available in this build"))
}

/// `import_uploaded` (not yet available in this build).
///
/// # Errors
/// [`ErrorCode::Unsupported`].
pub fn import_uploaded(_studio: &Studio, _req: ImportUploadedRequest) -> Result<ImportFilesResponse, ApiError> {
    Err(ApiError::new(ErrorCode::Unsupported, "import_uploaded is not yet available in this build"))
}

