//! The transports, one folder each: `rest` (the agents' manifest, its SSE stream, the
//! operational routes), `admin`, `console`, `mcp`, `authzen`, `oauth`, `openapi` (the
//! document); over shared plumbing: the state ([`AppState`]), the route table (`routes`), the
//! extractors (`extract`), problem JSON (`errors`). One router ([`router`]) assembles them.
//!
//! Handlers only map their wire: extract (the [`crate::service::Caller`], an
//! [`AdminDesk`](crate::app::AdminDesk), query, body), call one use case of [`crate::app`],
//! which applies every rule and charges every budget, and map the answer. Nothing here reaches
//! the store, the caches, the stream hub, the rate limiter or the verifier
//! (`tests/it/layering.rs`). A new transport is a folder here and rows in `routes.rs`.

pub mod admin;
pub mod authzen;
mod chunks;
pub mod console;
pub mod errors;
pub mod extract;
pub mod mcp;
mod oauth;
pub mod openapi;
pub mod read;
mod request_metrics;
mod request_span;
pub mod rest;
pub mod routes;
mod sse;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::error_handling::HandleErrorLayer;
use axum::http::{Extensions, HeaderMap, HeaderName, StatusCode, Version};
use axum::response::IntoResponse;
use axum::routing::get;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::{DefaultPredicate, Predicate};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};

use crate::app::App;
use crate::config::Settings;

/// Everything a handler may use: the application, and what only HTTP needs. Cloned per
/// request: three `Arc`s.
#[derive(Clone)]
pub struct AppState {
    pub app: Arc<App>,
    pub http: Arc<HttpSettings>,
    /// The MCP endpoint: its sessions and settings.
    pub mcp: Arc<mcp::McpEndpoint>,
    /// The admin console's sessions and single sign-on.
    pub console: Arc<console::Console>,
}

/// Settings of the HTTP transport.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// Largest accepted request body, bytes.
    pub body_limit: usize,
    /// Time limit of an ordinary request (streams are exempt).
    pub request_timeout: Duration,
    /// Interval of the streams' keep-alive comments.
    pub sse_ping: Duration,
    /// The status of a denied single AuthZEN evaluation; `None`: 200.
    pub authz_deny_status: Option<StatusCode>,
}

impl AppState {
    /// The state of a server of `app` configured by `settings`.
    pub fn new(app: Arc<App>, settings: &Settings) -> anyhow::Result<AppState> {
        let authz_deny_status = settings
            .authz_deny_status
            .map(|status| {
                StatusCode::from_u16(status).map_err(|_| {
                    anyhow::anyhow!("the AuthZEN deny status {status} is not a status")
                })
            })
            .transpose()?;
        let public_url = settings.mcp.public_url.as_deref();
        let sso = match (&settings.console_oidc_client_id, &settings.jwt_issuer) {
            (None, _) => None,
            (Some(client_id), Some(issuer)) => Some(console::sso::Sso::new(
                client_id.clone(),
                settings
                    .console_oidc_client_secret
                    .as_ref()
                    .map(|secret| secret.expose().to_owned()),
                issuer.clone(),
                &sso_base(public_url, settings.listen)?,
            )),
            (Some(_), None) => anyhow::bail!(
                "TOOLGATE_CONSOLE_OIDC_CLIENT_ID needs TOOLGATE_JWT_ISSUER: single sign-on reads \
                 the issuer's discovery document at <issuer>/.well-known/openid-configuration"
            ),
        };
        Ok(AppState {
            app,
            http: Arc::new(HttpSettings {
                body_limit: settings.body_limit_bytes,
                request_timeout: settings.request_timeout,
                sse_ping: settings.sse_ping,
                authz_deny_status,
            }),
            mcp: Arc::new(mcp::McpEndpoint {
                sessions: mcp::session::Sessions::new(settings.mcp.sessions),
                settings: settings.mcp.clone(),
            }),
            // `Secure` cookies unless served on loopback, where browsers accept plain http, or
            // whenever the public URL is https (a proxy in front terminates TLS).
            console: Arc::new(console::Console {
                sessions: console::session::ConsoleSessions::new(
                    !settings.listen.ip().is_loopback()
                        || public_url.is_some_and(|url| url.starts_with("https://")),
                ),
                sso,
            }),
        })
    }
}

/// Where single sign-on sends browsers back to, from configuration only: the public URL, or
/// the loopback address the gateway listens on (a browser on the same machine). Never a
/// request's `Host` header, which whoever sends the victim there chooses.
fn sso_base(public_url: Option<&str>, listen: std::net::SocketAddr) -> anyhow::Result<String> {
    match public_url {
        Some(url) => Ok(url.to_owned()),
        None if listen.ip().is_loopback() => Ok(format!("http://{listen}")),
        None => anyhow::bail!(
            "TOOLGATE_CONSOLE_OIDC_CLIENT_ID needs TOOLGATE_PUBLIC_URL (the URL browsers reach \
             the gateway at) when the gateway does not listen on loopback: single sign-on's \
             redirect URI is made from it, never from a request's Host header"
        ),
    }
}

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The whole application: routes plus request ids, tracing, metrics, timeouts, compression and
/// panic containment. Streams are mounted outside the request timeout, which would cut them.
pub fn router(state: AppState) -> Router {
    let metrics = Arc::clone(state.app.metrics());
    let request_timeout = state.http.request_timeout;
    let api = routes::router([
        ("/agents/tools", get(rest::agents::list_tools)),
        ("/api/agents/tools", get(rest::agents::list_tools)),
    ])
    .merge(authzen::routes())
    .merge(oauth::routes())
    .merge(rest::runs::routes())
    .merge(admin::routes(&state));
    #[cfg(feature = "bench-routes")]
    let api = api.merge(rest::bench::routes());
    let api =
        api.layer(
            ServiceBuilder::new()
                .layer(HandleErrorLayer::new(
                    move |error: tower::BoxError| async move {
                        timeout_problem(&error, request_timeout)
                    },
                ))
                .timeout(request_timeout),
        );
    Router::new()
        .merge(api)
        .merge(rest::stream::routes())
        .merge(mcp::routes())
        .merge(mcp::open_routes())
        .merge(rest::ops::routes())
        .merge(console::routes())
        .merge(authzen::open_routes())
        .fallback(rest::ops::not_found)
        // After every route is in: it applies to the routes present when it is called.
        .method_not_allowed_fallback(rest::ops::method_not_allowed)
        .with_state(state)
        // One `layer` call for the whole stack, outermost first: each call boxes every route
        // again, and each request clones every box. Six calls made into this one saved about
        // 12,000 of 49,000 instructions per request on the hot path (callgrind).
        .layer(
            ServiceBuilder::new()
                .map_request(request_span::keep_plain_request_id::<axum::body::Body>)
                .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
                .layer(PropagateRequestIdLayer::new(REQUEST_ID))
                .layer(request_span::layer())
                .map_response(errors::log_internal)
                .layer(request_metrics::RecordRequestsLayer::new(metrics))
                .layer(CatchPanicLayer::custom(rest::ops::panic_response))
                .layer(CompressionLayer::new().compress_when(
                    DefaultPredicate::new().and(without_entity_tag as EntityTagged),
                )),
        )
}

/// The compression layer's own predicate's shape.
type EntityTagged = fn(StatusCode, Version, &HeaderMap, &Extensions) -> bool;

/// Whether the compression layer may encode a response: not one with an `ETag`. A strong tag
/// names one representation's bytes, so a coded form needs a tag of its own; responses with
/// tags (manifests, entities) choose their codings themselves (`GET /agents/tools` serves gzip
/// and zstd forms under their own tags) or are sent as they are.
fn without_entity_tag(_: StatusCode, _: Version, headers: &HeaderMap, _: &Extensions) -> bool {
    !headers.contains_key(axum::http::header::ETAG)
}

/// A request that outlives the timeout is answered with problem JSON like every other error.
fn timeout_problem(error: &tower::BoxError, limit: Duration) -> axum::response::Response {
    if error.is::<tower::timeout::error::Elapsed>() {
        errors::ApiError::Unavailable(format!(
            "the request took longer than {} s and was abandoned",
            limit.as_secs_f64()
        ))
        .into_response()
    } else {
        errors::ApiError::Internal(format!("middleware failed: {error}")).into_response()
    }
}
