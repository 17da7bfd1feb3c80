//! `GET /agents/tools/stream` (aliases `/agents/stream`, `/api/agents/stream`): the agent's
//! manifest as server-sent events (API.md). The same token, query options and admin rules as
//! `GET /agents/tools`; the work happens in [`crate::stream`].

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::AppState;
use super::agents::AgentQuery;
use super::errors::ApiError;
use super::extract::{Agent, QueryPairs};
use super::limit::RouteClass;
use crate::stream::{Connection, Opening, SubscribeError};

/// How long a client refused for too many streams should wait before retrying, seconds.
const RETRY_AFTER_SECS: u64 = 5;

/// The stream routes; mounted outside the request timeout.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/agents/tools/stream", get(stream_tools))
        .route("/agents/stream", get(stream_tools))
        .route("/api/agents/stream", get(stream_tools))
}

async fn stream_tools(
    State(state): State<AppState>,
    agent: Agent,
    QueryPairs(pairs): QueryPairs,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    state.limit(RouteClass::Streams, &agent)?;
    let query = AgentQuery::parse(&pairs)?;
    query.authorize(&agent)?;
    if query.explain {
        return Err(ApiError::Malformed(
            "explain is not available on the stream; use GET /agents/tools?explain=true".into(),
        ));
    }
    let (subscription, snapshot, key) = state
        .hub
        .subscribe(
            &agent.subject(),
            agent.claims(),
            query.options.clone(),
            &state.catalog,
        )
        .map_err(|error| match error {
            SubscribeError::TooManyStreams { .. } => ApiError::TooManyRequests {
                detail: error.to_string(),
                retry_after_secs: RETRY_AFTER_SECS,
            },
            SubscribeError::ShuttingDown => ApiError::Unavailable(error.to_string()),
        })?;
    let rendered = state
        .manifests
        .resolve(&snapshot, agent.claims(), key)
        .await;
    drop(snapshot); // an idle stream must not pin an old snapshot
    let resumed = headers
        .get("last-event-id")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|id| id.trim() == rendered.etag);
    // A resynchronising stream renders its own manifest at the then current snapshot, through
    // the manifest service (not back through this handler's state).
    let claims = Arc::clone(&subscription.claims);
    let catalog = Arc::clone(&state.catalog);
    let manifests = Arc::clone(&state.manifests);
    let options = query.options;
    let render =
        Box::new(move || manifests.resolve_local(&catalog.snapshot(), &claims, options.clone()));
    let connection = Connection::new(
        subscription,
        render,
        Opening { resumed, rendered },
        state.sse_ping,
        agent.token.expires_at,
    );
    Ok(event_stream(Body::from_stream(connection.into_stream())))
}

/// A `text/event-stream` response with `body`, uncached, and unbuffered by nginx-style proxies.
pub fn event_stream(body: Body) -> Response {
    (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            (
                header::HeaderName::from_static("x-accel-buffering"),
                HeaderValue::from_static("no"),
            ),
        ],
        body,
    )
        .into_response()
}
