//! Operational endpoints (no token needed): `/healthz`, `/readyz`, `/metrics`,
//! `/openapi.json`; and the responses for unknown routes and contained panics.

use std::any::Any;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use crate::transport::AppState;
use crate::transport::errors::ApiError;

pub(crate) fn routes() -> Router<AppState> {
    crate::transport::routes::router([
        ("/healthz", get(healthz)),
        ("/readyz", get(readyz)),
        ("/metrics", get(metrics)),
        ("/openapi.json", get(crate::transport::openapi::serve)),
    ])
}

/// The process is alive and serving.
async fn healthz() -> Response {
    Json(json!({"status": "ok"})).into_response()
}

/// Ready when the catalog store answers; 503 naming the failing part otherwise. Redis down is
/// `degraded`, not unready: agent reads go on from the local snapshot and cache.
async fn readyz(State(state): State<AppState>) -> Response {
    let ready = state.app.readiness().await;
    if let Err(error) = ready.store {
        return ApiError::Unavailable(format!("store: {error}")).into_response();
    }
    let redis = ready.redis.map(|ping| match ping {
        Ok(()) => "ok".to_owned(),
        Err(error) => error,
    });
    let degraded = redis.as_deref().is_some_and(|check| check != "ok");
    let mut checks = json!({"store": "ok"});
    if let Some(redis) = redis {
        checks["redis"] = json!(redis);
    }
    Json(json!({
        "status": if degraded { "degraded" } else { "ready" },
        "revision": ready.revision,
        "checks": checks,
    }))
    .into_response()
}

/// The server's metrics as Prometheus text. Open like `/healthz`: label values are bounded
/// enums and route templates, never identities.
async fn metrics(State(state): State<AppState>) -> Response {
    match state.app.metrics().render_prometheus() {
        Ok(text) => (
            [(
                axum::http::header::CONTENT_TYPE,
                crate::telemetry::prometheus::CONTENT_TYPE,
            )],
            text,
        )
            .into_response(),
        Err(error) => {
            ApiError::Internal(format!("collecting metrics failed: {error}")).into_response()
        }
    }
}

pub(crate) async fn not_found(uri: axum::http::Uri) -> Response {
    // Under the console, a page for people, with the console's headers.
    if uri.path().starts_with("/console") {
        return crate::transport::console::not_found().await;
    }
    ApiError::NotFound(format!("no route for {}", uri.path())).into_response()
}

/// A known path asked with a method it does not have. The router adds the `Allow` header to
/// this answer; without this handler its 405 would have an empty body.
pub(crate) async fn method_not_allowed(
    method: axum::http::Method,
    uri: axum::http::Uri,
) -> Response {
    let response = ApiError::MethodNotAllowed(format!(
        "{} does not accept {method}; the Allow header lists the methods it does",
        uri.path()
    ))
    .into_response();
    // Under the console, with the console's headers.
    if uri.path().starts_with("/console") {
        return crate::transport::console::with_security_headers(response).await;
    }
    response
}

/// A panic is a bug: log it, answer a generic 500, keep serving.
pub(crate) fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    ApiError::Internal(format!("handler panicked: {message}")).into_response()
}
