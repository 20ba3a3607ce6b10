//! `GET /api/screenshots/<sha256>`: a stored screenshot's bytes, exactly as
//! imported, with their `Content-Type` (`image/png`, `image/jpeg`). Behind
//! the door like every `/api/` route (the token may come as `?token=`, so
//! that an `<img>` can name it); never decoded here.

use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use worldloom_api::ApiError;

use crate::{AppState, error_response};

/// Serves the screenshot named by its SHA-256.
pub(crate) async fn screenshot_handler(
    State(state): State<AppState>,
    UrlPath(sha256): UrlPath<String>,
) -> Response {
    let studio = state.studio.clone();
    let result = tokio::task::spawn_blocking(move || {
        worldloom_api::commands::screenshot_bytes(&studio, &sha256)
    })
    .await;
    match result {
        Ok(Ok(stored)) => {
            let mut resp = stored.bytes.into_response();
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(stored.media_type.media_type()),
            );
            resp
        }
        Ok(Err(err)) => error_response(&err),
        Err(join) => error_response(&ApiError::internal(format!(
            "reading the screenshot failed: {join}"
        ))),
    }
}
