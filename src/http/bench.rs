//! Bench-only routes (cargo feature `bench-routes`, never in a release build): the baseline for
//! the load benchmark.
//!
//! `POST /bench/precomputed` (with an agent token) renders that agent's manifest once and keeps
//! the bytes; `GET /bench/precomputed` then answers with exactly those bytes and headers and
//! nothing else — no token, no claims key, no cache lookup. Comparing its throughput with
//! `GET /agents/tools` for the same agent measures what the hot path adds on top of writing
//! bytes.

use std::sync::{Arc, RwLock};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::AppState;
use super::errors::ApiError;
use crate::cache::RenderedManifest;
use crate::domain::manifest::ManifestOptions;
use crate::service::Caller;

static PRECOMPUTED: RwLock<Option<Arc<RenderedManifest>>> = RwLock::new(None);

pub(super) fn routes() -> Router<AppState> {
    Router::new().route("/bench/precomputed", get(serve).post(prepare))
}

async fn prepare(State(state): State<AppState>, agent: Caller) -> Result<Response, ApiError> {
    let snapshot = state.app.catalog.snapshot();
    let key = state
        .app
        .manifests
        .key(&snapshot, agent.claims(), ManifestOptions::default());
    let rendered = state
        .app
        .manifests
        .resolve(&snapshot, agent.claims(), key)
        .await;
    let count = rendered.tool_count;
    *PRECOMPUTED.write().unwrap_or_else(|p| p.into_inner()) = Some(rendered);
    Ok((StatusCode::OK, format!("{{\"tools\":{count}}}")).into_response())
}

async fn serve() -> Response {
    let rendered = PRECOMPUTED
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let Some(rendered) = rendered else {
        return ApiError::NotFound("POST /bench/precomputed first".to_owned()).into_response();
    };
    (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (
                header::ETAG,
                HeaderValue::from_str(&rendered.etag).unwrap_or(HeaderValue::from_static("\"\"")),
            ),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("private, no-cache"),
            ),
        ],
        Body::new(super::chunks::Chunks::new(rendered.parts())),
    )
        .into_response()
}
