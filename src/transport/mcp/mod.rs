//! `/mcp`: the Model Context Protocol over Streamable HTTP (docs/api.md, "MCP endpoint"). An agent
//! that speaks MCP sees exactly its manifest, is told exactly when it changed, and can call
//! only what it lists.
//!
//! Hand-written over axum rather than the `rmcp` SDK: the endpoint is a thin map onto the
//! manifest and decision services (what `tools/list` and `tools/call` answer is already
//! decided there), it must verify the bearer token on *every* request and tie notifications to
//! the stream hub's per-manifest groups, and it speaks the stateless 2026-07-28 revision beside
//! the 2025 session revisions on one path; an SDK built around long-lived server sessions would
//! have to be bent around all three.
//!
//! - [`jsonrpc`]: one message per POST; [`version`]: the revisions spoken;
//!   [`session`]: 2025 sessions, bound to their subject; [`options`]: manifest options from the
//!   URL and `_meta`; [`stateless`]: the checks of a 2026-07-28 request; [`methods`]: what each method answers; [`notify`]: the notification
//!   streams; [`metadata`]: the RFC 9728 protected-resource document and the 401 challenge.
//! - HTTP-level refusals (no or bad token, unknown session, unsupported revision, wrong media
//!   type) are problem JSON like every other error of the gateway; everything inside a readable
//!   JSON-RPC request is answered in JSON-RPC.

pub mod jsonrpc;
mod metadata;
mod methods;
mod notify;
mod options;
mod params;
pub mod session;
mod stateless;
pub mod version;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use self::jsonrpc::Incoming;
use self::methods::Method;
use self::session::Sessions;
use self::version::Version;
use super::AppState;
use super::errors::ApiError;
use super::extract::{QueryPairs, RawBody};
use super::read::read_request;
use crate::domain::manifest::ManifestOptions;
use crate::service::Caller;
use crate::service::mcp::McpSettings;

/// The header naming a 2025 session.
pub const SESSION_ID: &str = "mcp-session-id";
/// The header naming the protocol revision of a request.
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// The `_meta` key of a 2026-07-28 request's revision.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// What only the MCP endpoint holds: the 2025 sessions, and its settings. (Listing and calls
/// are [`crate::service::McpTools`]; notification streams are in the one stream hub.)
pub struct McpEndpoint {
    pub sessions: Sessions,
    pub settings: McpSettings,
}

/// `/mcp`; mounted outside the request timeout (its notification streams stay open).
pub fn routes() -> Router<AppState> {
    super::routes::router([("/mcp", post(post_mcp).get(get_mcp).delete(delete_mcp))])
}

/// The protected-resource metadata, which needs no token.
pub fn open_routes() -> Router<AppState> {
    super::routes::router([
        (
            "/.well-known/oauth-protected-resource",
            get(metadata::document),
        ),
        (
            "/.well-known/oauth-protected-resource/mcp",
            get(metadata::document),
        ),
    ])
}

/// How a request is answered: the revision it speaks and the session it belongs to.
#[derive(Debug, Clone)]
pub(super) struct Context {
    pub version: Version,
    /// The 2025 session, when the request names one.
    pub session: Option<(String, session::Session)>,
    /// The manifest options of the URL.
    pub options: ManifestOptions,
}

async fn post_mcp(
    State(state): State<AppState>,
    agent: Result<Caller, ApiError>,
    QueryPairs(pairs): QueryPairs,
    headers: HeaderMap,
    RawBody(body): RawBody,
) -> Response {
    let agent = match admit(&state, &headers, agent) {
        Ok(agent) => agent,
        Err(response) => return *response,
    };
    match handle_post(&state, &agent, &pairs, &headers, &body).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

/// The checks every request passes first: its origin, then its token (a 401 names the
/// metadata document).
fn admit(
    state: &AppState,
    headers: &HeaderMap,
    agent: Result<Caller, ApiError>,
) -> Result<Caller, Box<Response>> {
    metadata::check_origin(state, headers).map_err(|error| Box::new(error.into_response()))?;
    agent.map_err(|error| Box::new(metadata::challenge(state, headers, error)))
}

async fn handle_post(
    state: &AppState,
    agent: &Caller,
    pairs: &[(String, String)],
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"));
    if !is_json {
        return Err(ApiError::UnsupportedMediaType(
            "an MCP message is sent as Content-Type: application/json".to_owned(),
        ));
    }
    let message = jsonrpc::parse(body).map_err(|jsonrpc::Unreadable(error)| {
        ApiError::Malformed(format!("{} (JSON-RPC {})", error.message, error.code))
    })?;
    let options = url_options(pairs)?;
    match message {
        Incoming::Request { id, method, params } => {
            let context = match classify(state, agent, headers, &method, &params, options)? {
                Ok(context) => context,
                Err(refused) => {
                    state
                        .app
                        .metrics()
                        .mcp
                        .request(methods::Method::parse(&method).as_str(), false);
                    return Ok(methods::error_response(&id, refused, true));
                }
            };
            Ok(methods::answer(state, agent, context, id, &method, params).await)
        }
        Incoming::Notification { method, params } => {
            // A notification of a session that is gone is refused like any other message of
            // it; otherwise there is nothing to do: this server waits on no client notice.
            if headers.contains_key(SESSION_ID) {
                session_context(state, agent, headers, options)?;
            }
            let _ = params;
            state
                .app
                .metrics()
                .mcp
                .request(methods::Method::parse(&method).as_str(), true);
            Ok(StatusCode::ACCEPTED.into_response())
        }
        Incoming::Response => Ok(StatusCode::ACCEPTED.into_response()),
    }
}

/// How a request is to be answered. `initialize` starts a session (the method negotiates the
/// revision); a request naming a session belongs to it; a request that says its revision in
/// `_meta` (or the 2026-07-28 header) is stateless and passes the revision's checks, which
/// refuse in JSON-RPC (the inner error); anything else is a 400.
fn classify(
    state: &AppState,
    agent: &Caller,
    headers: &HeaderMap,
    method: &str,
    params: &serde_json::Map<String, serde_json::Value>,
    options: ManifestOptions,
) -> Result<Result<Context, jsonrpc::RpcError>, ApiError> {
    let meta = params.get("_meta");
    let says_version = meta.is_some_and(|meta| meta.get(META_PROTOCOL_VERSION).is_some());
    if Method::parse(method) == Method::Initialize && !says_version {
        return Ok(Ok(Context {
            version: Version::NEWEST_WITH_SESSIONS, // negotiated by the method
            session: None,
            options,
        }));
    }
    if headers.contains_key(SESSION_ID) {
        return session_context(state, agent, headers, options).map(Ok);
    }
    let header_version = headers
        .get(PROTOCOL_VERSION)
        .map(|value| value.to_str().unwrap_or_default());
    if says_version || header_version == Some(Version::V2026_07_28.as_str()) {
        return Ok(
            stateless::check(headers, method, params).map(|version| Context {
                version,
                session: None,
                options,
            }),
        );
    }
    Err(ApiError::Malformed(format!(
        "no Mcp-Session-Id header: send initialize first (protocol {} or {}), or speak {} with \
         '{META_PROTOCOL_VERSION}' in params._meta",
        Version::V2025_06_18.as_str(),
        Version::V2025_11_25.as_str(),
        Version::V2026_07_28.as_str()
    )))
}

/// The manifest options of the URL (`/mcp?group=…`), parsed as `GET /agents/tools` parses
/// them; `explain` has no place here, nor has `fields`: an MCP tool object has the shape MCP
/// gives it, not a manifest entry's.
fn url_options(pairs: &[(String, String)]) -> Result<ManifestOptions, ApiError> {
    let query = read_request(pairs)?;
    if query.explain {
        return Err(ApiError::Malformed(
            "explain is not available at /mcp; use GET /agents/tools?explain=true".to_owned(),
        ));
    }
    if pairs.iter().any(|(key, _)| key == "fields") {
        return Err(ApiError::Malformed(
            "fields is not available at /mcp: MCP tool objects have a fixed shape; use \
             GET /agents/tools?fields=…"
                .to_owned(),
        ));
    }
    Ok(query.options)
}

/// The session a request names, live and the caller's own (404 otherwise), and its revision,
/// which an `MCP-Protocol-Version` header must repeat (400 otherwise).
fn session_context(
    state: &AppState,
    agent: &Caller,
    headers: &HeaderMap,
    options: ManifestOptions,
) -> Result<Context, ApiError> {
    let Some(id) = headers.get(SESSION_ID) else {
        return Err(ApiError::Malformed(
            "no Mcp-Session-Id header: send initialize first".to_owned(),
        ));
    };
    let id = id.to_str().unwrap_or_default();
    let session = state
        .mcp
        .sessions
        .touch(id, &agent.identity(), state.app.clock().monotonic())
        .ok_or_else(session_not_found)?;
    if let Some(value) = headers.get(PROTOCOL_VERSION) {
        let text = value.to_str().unwrap_or_default();
        if text != session.version.as_str() {
            return Err(ApiError::Malformed(format!(
                "this session speaks MCP protocol version '{}', not '{text}' (this server \
                 speaks {})",
                session.version.as_str(),
                Version::supported()
            )));
        }
    }
    Ok(Context {
        version: session.version,
        session: Some((id.to_owned(), session)),
        options,
    })
}

fn session_not_found() -> ApiError {
    ApiError::NotFound(
        "no such MCP session (it ended, expired, or belongs to another instance or subject); \
         send initialize to start a new one"
            .to_owned(),
    )
}

/// `GET /mcp`: the notification stream of a 2025 session.
async fn get_mcp(
    State(state): State<AppState>,
    agent: Result<Caller, ApiError>,
    QueryPairs(pairs): QueryPairs,
    headers: HeaderMap,
) -> Response {
    let agent = match admit(&state, &headers, agent) {
        Ok(agent) => agent,
        Err(response) => return *response,
    };
    match open_stream(&state, &agent, &pairs, &headers).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

async fn open_stream(
    state: &AppState,
    agent: &Caller,
    pairs: &[(String, String)],
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let accepts_events = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|media| {
            let media = media.split(';').next().unwrap_or_default().trim();
            media.eq_ignore_ascii_case("text/event-stream") || media == "*/*"
        });
    if !accepts_events {
        return Err(ApiError::NotAcceptable(
            "GET /mcp is the notification stream: send Accept: text/event-stream".to_owned(),
        ));
    }
    let options = url_options(pairs)?;
    let context = session_context(state, agent, headers, options)?;
    let opening_priming = context.version >= Version::V2025_11_25;
    let resumed_from = headers
        .get("last-event-id")
        .and_then(|value| value.to_str().ok())
        .map(str::trim);
    let shape = methods::Shape {
        resumed_from,
        opening: if opening_priming {
            methods::Opening::Priming
        } else {
            methods::Opening::Comment
        },
        closing: None,
        changes: true,
        params: None,
    };
    Ok(methods::stream(state, agent, &context, shape).await?)
}

/// `DELETE /mcp`: ends the caller's session.
async fn delete_mcp(
    State(state): State<AppState>,
    agent: Result<Caller, ApiError>,
    headers: HeaderMap,
) -> Response {
    let agent = match admit(&state, &headers, agent) {
        Ok(agent) => agent,
        Err(response) => return *response,
    };
    let Some(id) = headers.get(SESSION_ID) else {
        return ApiError::Malformed(
            "DELETE /mcp ends the session its Mcp-Session-Id names; send one".to_owned(),
        )
        .into_response();
    };
    if state
        .mcp
        .sessions
        .end(id.to_str().unwrap_or_default(), &agent.identity())
    {
        StatusCode::NO_CONTENT.into_response()
    } else {
        session_not_found().into_response()
    }
}

/// A JSON body (a JSON-RPC response), with the session header when one was created.
pub(super) fn json_response(body: Vec<u8>, session_id: Option<&str>) -> Response {
    let mut response = (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        Body::from(body),
    )
        .into_response();
    if let Some(value) = session_id.and_then(|id| HeaderValue::from_str(id).ok()) {
        response.headers_mut().insert(SESSION_ID, value);
    }
    response
}
