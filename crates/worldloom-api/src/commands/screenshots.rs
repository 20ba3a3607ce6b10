//! Screenshots of states: their bytes as stored, and giving a state one.

use base64::Engine as _;
use worldloom_core::NodeId;
use worldloom_core::screenshot::probe;
use worldloom_store::ScreenshotBytes;

use crate::error::ApiError;
use crate::ids::parse_trajectory_id;
use crate::types::*;
use crate::views::change_summary;
use crate::{Studio, StudioEvent};

/// A stored screenshot's bytes, exactly as imported, and their media type:
/// what `GET /api/screenshots/<sha256>` serves and [`get_screenshot`]
/// carries in base64. Never decoded.
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`] for a `sha256` that is not 64 lowercase
/// hex digits; [`crate::ErrorCode::NotFound`] when the workspace holds no
/// such screenshot; [`crate::ErrorCode::Storage`].
pub fn screenshot_bytes(studio: &Studio, sha256: &str) -> Result<ScreenshotBytes, ApiError> {
    let hex = sha256.len() == 64
        && sha256
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if !hex {
        return Err(ApiError::bad_request(format!(
            "`{sha256}` is not a SHA-256 (64 lowercase hex digits)"
        )));
    }
    studio
        .lock()?
        .screenshot_bytes(sha256)?
        .ok_or_else(|| ApiError::not_found(format!("no screenshot {sha256} in this workspace")))
}

/// `get_screenshot`: a stored screenshot's bytes in base64, for the
/// desktop IPC (which carries JSON only).
///
/// # Errors
/// As [`screenshot_bytes`].
pub fn get_screenshot(
    studio: &Studio,
    req: GetScreenshotRequest,
) -> Result<ScreenshotData, ApiError> {
    let stored = screenshot_bytes(studio, &req.sha256)?;
    Ok(ScreenshotData {
        media_type: stored.media_type,
        data_base64: base64::engine::general_purpose::STANDARD.encode(&stored.bytes),
    })
}

/// `set_screenshot`: gives a state the screenshot in a PNG or JPEG file
/// (its header read and its bytes stored once per hash; one undoable
/// change).
///
/// # Errors
/// [`crate::ErrorCode::BadRequest`] naming the file when it cannot be
/// read, is not a PNG or JPEG, or is over 16 MiB;
/// [`crate::ErrorCode::NotFound`] for an unknown state.
pub fn set_screenshot(
    studio: &Studio,
    req: SetScreenshotRequest,
) -> Result<ChangeResponse, ApiError> {
    let key = parse_trajectory_id(&req.trajectory_id)?;
    let shot = probe(std::path::Path::new(&req.path)).map_err(ApiError::bad_request)?;
    let change = {
        let mut ws = studio.lock()?;
        let id = ws.set_screenshot(key, NodeId(req.node_id), &shot)?;
        ws.history(50)?.into_iter().find(|c| c.id == id)
    };
    studio.emit(StudioEvent::WorkspaceChanged {
        trajectory_id: Some(key.0.to_string()),
        kind: ChangeKind::SetScreenshot.into(),
    });
    Ok(ChangeResponse {
        change: change.as_ref().map(change_summary).transpose()?,
    })
}
