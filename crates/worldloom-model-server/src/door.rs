//! `worldloom-door`'s door in front of every route, its refusal answered as
//! an OpenAI error, and one stderr line per request.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::error::ApiError;

/// Why a request is refused before it reaches a route, if it is.
fn door(state: &AppState, method: &Method, path: &str, headers: &HeaderMap) -> Option<ApiError> {
    worldloom_door::check_door(
        state.addr,
        state.api_key.as_deref(),
        path.starts_with("/v1/"),
        method,
        headers,
    )
    .map(|refusal| ApiError {
        status: refusal.status,
        kind: "invalid_request_error",
        message: refusal.message,
        param: None,
        code: refusal.code,
    })
}

/// Host / Origin / API key / content-type checks for every request, and
/// one stderr line per request.
pub(crate) async fn guard(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = match door(&state, &method, &path, request.headers()) {
        Some(refusal) => refusal.into_response(),
        None => next.run(request).await,
    };
    if state.log_requests {
        eprintln!(
            "serve-model: {method} {path} {} {}ms",
            response.status().as_u16(),
            started.elapsed().as_millis()
        );
    }
    response
}
