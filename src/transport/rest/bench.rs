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

use crate::app::Served;
use crate::service::{Caller, ReadRequest};
use crate::transport::AppState;
use crate::transport::errors::ApiError;

static PRECOMPUTED: RwLock<Option<Arc<Served>>> = RwLock::new(None);

pub(crate) fn routes() -> Router<AppState> {
    Router::new().route("/bench/precomputed", get(serve).post(prepare))
}

async fn prepare(State(state): State<AppState>, agent: Caller) -> Result<Response, ApiError> {
    let served = state
        .app
        .manifest(&agent, ReadRequest::default(), [])
        .await?;
    let bytes: usize = served.parts().iter().map(bytes::Bytes::len).sum();
    *PRECOMPUTED.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(served));
    Ok((StatusCode::OK, format!("{{\"bytes\":{bytes}}}")).into_response())
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
                HeaderValue::from_str(rendered.etag()).unwrap_or(HeaderValue::from_static("\"\"")),
            ),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("private, no-cache"),
            ),
        ],
        Body::new(crate::transport::chunks::Chunks::new(rendered.parts())),
    )
        .into_response()
}
