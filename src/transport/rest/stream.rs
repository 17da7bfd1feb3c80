//! `GET /agents/tools/stream` (aliases `/agents/stream`, `/api/agents/stream`): the agent's
//! manifest as server-sent events (docs/api.md). The same token, query options and read rules as
//! `GET /agents/tools`; the stream opens through
//! [`App::open_stream`](crate::app::App::open_stream) and its events come
//! from [`crate::stream::Connection`].

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;

use crate::app::RunSurface;
use crate::service::Caller;
use crate::stream::{Connection, Opening, StreamClass};
use crate::transport::AppState;
use crate::transport::errors::ApiError;
use crate::transport::extract::QueryPairs;
use crate::transport::read::read_request;
use crate::transport::sse::event_stream;

/// The stream routes; mounted outside the request timeout.
pub fn routes() -> Router<AppState> {
    crate::transport::routes::router([
        ("/agents/tools/stream", get(stream_tools)),
        ("/agents/stream", get(stream_tools)),
        ("/api/agents/stream", get(stream_tools)),
    ])
}

async fn stream_tools(
    State(state): State<AppState>,
    agent: Caller,
    QueryPairs(pairs): QueryPairs,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let read = read_request(&pairs)?;
    let opened = state
        .app
        .open_stream(&agent, &read, StreamClass::Sse, RunSurface::CurrentState)
        .await?;
    let resumed = headers
        .get("last-event-id")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|id| id.trim() == opened.rendered.etag);
    let connection = Connection::new(
        opened.subscription,
        opened.render,
        Opening {
            resumed,
            rendered: opened.rendered,
        },
        state.http.sse_ping,
        opened.expiry,
    );
    Ok(event_stream(Body::from_stream(connection.into_stream())))
}
