//! The small routes: the model list (`GET /v1/models`, `GET
//! /v1/models/{id}`) and the answers to unknown routes and wrong methods.

use std::sync::Arc;

use axum::extract::{Path as UrlPath, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::AppState;
use crate::error::ApiError;

/// 404 for a route this server does not have.
pub(crate) async fn not_found(method: Method, uri: axum::http::Uri) -> Response {
    ApiError {
        status: StatusCode::NOT_FOUND,
        kind: "invalid_request_error",
        message: format!(
            "unknown route {method} {}: this server answers GET /v1/models, GET /v1/models/{{id}}, POST /v1/chat/completions and GET /health",
            uri.path()
        ),
        param: None,
        code: Some("not_found"),
    }
    .into_response()
}

/// 405 for a route asked with a method it does not take.
pub(crate) async fn method_not_allowed(method: Method, uri: axum::http::Uri) -> Response {
    ApiError {
        status: StatusCode::METHOD_NOT_ALLOWED,
        kind: "invalid_request_error",
        message: format!("{} does not accept {method}", uri.path()),
        param: None,
        code: Some("method_not_allowed"),
    }
    .into_response()
}

/// The OpenAI model object, with the context and the queueing policy.
fn model_object(state: &AppState) -> Value {
    json!({
        "id": state.model_id,
        "object": "model",
        "created": 0,
        "owned_by": "worldloom",
        "max_model_len": state.engine.context_tokens(),
        "max_concurrent_requests": state.max_concurrent,
        "queue": "requests beyond max_concurrent_requests wait first-come and run one after another",
    })
}

/// `GET /v1/models`: the one model.
pub(crate) async fn models(State(state): State<Arc<AppState>>) -> Response {
    axum::Json(json!({"object": "list", "data": [model_object(&state)]})).into_response()
}

/// `GET /v1/models/{id}`: the model, or 404 naming `model`.
pub(crate) async fn model(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
) -> Response {
    if id == state.model_id {
        axum::Json(model_object(&state)).into_response()
    } else {
        ApiError {
            status: StatusCode::NOT_FOUND,
            kind: "invalid_request_error",
            message: format!(
                "The model `{id}` does not exist; this server serves `{}`.",
                state.model_id
            ),
            param: Some("model".to_owned()),
            code: Some("model_not_found"),
        }
        .into_response()
    }
}
