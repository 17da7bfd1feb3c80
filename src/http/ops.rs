//! Operational endpoints (no token needed): `/healthz`, `/readyz`, `/openapi.json`; and the
//! responses for unknown routes and contained panics.

use std::any::Any;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use super::AppState;
use super::errors::ApiError;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/openapi.json", get(super::openapi::serve))
}

/// The process is alive and serving.
async fn healthz() -> Response {
    Json(json!({"status": "ok"})).into_response()
}

/// Ready when the catalog store answers; 503 naming the failing part otherwise.
async fn readyz(State(state): State<AppState>) -> Response {
    match state.catalog.store().ping().await {
        Ok(()) => Json(json!({
            "status": "ready",
            "revision": state.catalog.snapshot().revision(),
            "checks": {"store": "ok"},
        }))
        .into_response(),
        Err(error) => ApiError::Unavailable(format!("store: {error}")).into_response(),
    }
}

pub async fn not_found(uri: axum::http::Uri) -> Response {
    ApiError::NotFound(format!("no route for {}", uri.path())).into_response()
}

/// A panic is a bug: log it, answer a generic 500, keep serving.
pub fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    ApiError::Internal(format!("handler panicked: {message}")).into_response()
}
