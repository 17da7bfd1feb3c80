//! What each MCP method answers. `tools/list` and `tools/call` read the manifest and decision
//! services at the current snapshot; everything else is the protocol's own bookkeeping.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::jsonrpc::{self, Id, RpcError};
use super::notify::{self, Framing};
use super::stateless;
use super::version::Version;
use super::{Context, json_response, options, params};
use crate::app::{Denied, RunSurface};
use crate::service::mcp::{BadCursor, Refused, ToolsPage};
use crate::service::{Caller, ReadRequest};
use crate::stream::{OpenError, StreamClass, Watch};
use crate::transport::AppState;
use crate::transport::chunks::Chunks;
use crate::transport::errors::ApiError;

/// The methods this server knows; anything else is [`Method::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Method {
    Initialize,
    Ping,
    ToolsList,
    ToolsCall,
    ServerDiscover,
    SubscriptionsListen,
    NotificationsInitialized,
    NotificationsCancelled,
    Other,
}

impl Method {
    const ALL: [Method; 9] = [
        Method::Initialize,
        Method::Ping,
        Method::ToolsList,
        Method::ToolsCall,
        Method::ServerDiscover,
        Method::SubscriptionsListen,
        Method::NotificationsInitialized,
        Method::NotificationsCancelled,
        Method::Other,
    ];

    /// The method named `name` on the wire.
    pub(super) fn parse(name: &str) -> Method {
        Method::ALL
            .into_iter()
            .find(|method| method.as_str() == name)
            .unwrap_or(Method::Other)
    }

    /// The method's wire name; `other` for an unknown one (its metric label).
    pub(super) const fn as_str(self) -> &'static str {
        match self {
            Method::Initialize => "initialize",
            Method::Ping => "ping",
            Method::ToolsList => "tools/list",
            Method::ToolsCall => "tools/call",
            Method::ServerDiscover => "server/discover",
            Method::SubscriptionsListen => "subscriptions/listen",
            Method::NotificationsInitialized => "notifications/initialized",
            Method::NotificationsCancelled => "notifications/cancelled",
            Method::Other => "other",
        }
    }
}

/// The `_meta` key stamping each message of a `subscriptions/listen` stream with its id.
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The server's name and version, as `serverInfo`.
fn server_info() -> Value {
    json!({"name": "toolgate", "title": "toolgate", "version": env!("CARGO_PKG_VERSION")})
}

const INSTRUCTIONS: &str = "The tools listed are exactly those this caller's token grants. \
     The list changes when an administrator changes the catalog: list again on \
     notifications/tools/list_changed.";

/// What a request is answered with.
enum Reply {
    /// A result object (2026-07-28 results get `resultType`).
    Result(Value),
    /// A `tools/list` result, whose `tools` array is already JSON.
    Tools(ToolsResult),
    Error(RpcError),
    /// A whole HTTP response (a stream, or a refusal at the HTTP level).
    Http(Response),
}

/// Answers request `id`.
pub(super) async fn answer(
    state: &AppState,
    agent: &Caller,
    context: Context,
    id: Id,
    method: &str,
    params: Map<String, Value>,
) -> Response {
    let mut created_session = None;
    let known = Method::parse(method);
    let reply = match (known, context.version.is_stateless()) {
        // 2026-07-28 has no initialize: a stateless one is a method this revision lacks.
        (Method::Initialize, false) => match params::parse(params) {
            Ok(params) => {
                let (reply, session) = initialize(state, agent, &params);
                created_session = session;
                reply
            }
            Err(error) => Reply::Error(error),
        },
        (Method::Ping, false) => Reply::Result(json!({})),
        (Method::ToolsList, _) => match params::parse(params) {
            Ok(params) => tools_list(state, agent, &context, params),
            Err(error) => Reply::Error(error),
        },
        (Method::ToolsCall, _) => match params::parse(params) {
            Ok(params) => tools_call(state, agent, &context, params).await,
            Err(error) => Reply::Error(error),
        },
        (Method::ServerDiscover, true) => Reply::Result(discover()),
        (Method::SubscriptionsListen, true) => match params::parse(params) {
            Ok(params) => listen(state, agent, &context, &id, params).await,
            Err(error) => Reply::Error(error),
        },
        _ => Reply::Error(RpcError::new(
            jsonrpc::METHOD_NOT_FOUND,
            format!(
                "method '{method}' is not available in protocol version {}",
                context.version.as_str()
            ),
        )),
    };
    let ok = !matches!(reply, Reply::Error(_));
    state.app.metrics().mcp.request(known.as_str(), ok);
    let stateless = context.version.is_stateless();
    match reply {
        Reply::Http(response) => response,
        Reply::Error(error) => error_response(&id, error, stateless),
        Reply::Result(mut result) => {
            if stateless && let Some(object) = result.as_object_mut() {
                object.insert("resultType".into(), json!("complete"));
            }
            json_response(
                jsonrpc::response(Some(&id), Ok(result)),
                created_session.as_deref(),
            )
        }
        Reply::Tools(result) => tools_response(&id, result, stateless),
    }
}

/// The JSON-RPC error answering request `id`. A 2026-07-28 request is answered with the HTTP
/// status the revision gives the code (400 for a request that cannot be served as sent, 404
/// for an unknown method); a 2025 one with 200, as those revisions do.
pub(super) fn error_response(id: &Id, error: RpcError, stateless: bool) -> Response {
    let status = match error.code {
        _ if !stateless => StatusCode::OK,
        jsonrpc::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        jsonrpc::PARSE_ERROR
        | jsonrpc::INVALID_REQUEST
        | jsonrpc::INVALID_PARAMS
        | stateless::HEADER_MISMATCH
        | stateless::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    };
    let mut response = json_response(jsonrpc::response(Some(id), Err(error)), None);
    *response.status_mut() = status;
    response
}

/// A `tools/list` result besides the JSON-RPC envelope.
struct ToolsResult {
    page: ToolsPage,
    /// How long a 2026-07-28 client may keep the list (`ttlMs`); `None` for a session.
    ttl_ms: Option<u64>,
}

/// `{"jsonrpc":"2.0","id":…,"result":{"tools":<tools>,"nextCursor":…,"ttlMs":…,
/// "cacheScope":"private","_meta":{"toolgate/revision":…},"resultType":"complete"}}`: the page's
/// `tools` sent as they are (shared with the page cache, neither parsed nor copied) between a
/// head and a tail written here.
fn tools_response(id: &Id, result: ToolsResult, stateless: bool) -> Response {
    let ToolsResult { page, ttl_ms } = result;
    let mut head = Vec::with_capacity(64);
    head.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    serde_json::to_writer(&mut head, id).expect("an id always serialises");
    head.extend_from_slice(b",\"result\":{\"tools\":");
    let mut tail = Vec::with_capacity(160);
    if let Some(next) = &page.next_cursor {
        tail.extend_from_slice(b",\"nextCursor\":");
        serde_json::to_writer(&mut tail, next).expect("a string always serialises");
    }
    if let Some(ttl) = ttl_ms {
        tail.extend_from_slice(format!(",\"ttlMs\":{ttl},\"cacheScope\":\"private\"").as_bytes());
    }
    tail.extend_from_slice(
        format!(",\"_meta\":{{\"toolgate/revision\":{}}}", page.revision).as_bytes(),
    );
    if stateless {
        tail.extend_from_slice(b",\"resultType\":\"complete\"");
    }
    tail.extend_from_slice(b"}}");
    let body = Chunks::new([Bytes::from(head), page.tools, Bytes::from(tail)]);
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        Body::new(body),
    )
        .into_response()
}

/// `initialize`: the revision asked for when this server speaks it with sessions, else the
/// newest it does (the client decides whether it can go on); a new session of the caller.
fn initialize(
    state: &AppState,
    agent: &Caller,
    params: &params::Initialize,
) -> (Reply, Option<String>) {
    let version = Version::parse(&params.protocol_version)
        .filter(|version| !version.is_stateless())
        .unwrap_or(Version::NEWEST_WITH_SESSIONS);
    let now = state.app.clock().monotonic();
    let (id, _created) = state.mcp.sessions.create(&agent.identity(), version, now);
    let result = json!({
        "protocolVersion": version.as_str(),
        "capabilities": {"tools": {"listChanged": true}},
        "serverInfo": server_info(),
        "instructions": INSTRUCTIONS,
    });
    (Reply::Result(result), Some(id))
}

/// `server/discover` (2026-07-28): the same answer for everyone, cacheable for an hour (it
/// changes only with the server's version).
fn discover() -> Value {
    json!({
        "supportedVersions": Version::ALL.map(Version::as_str),
        "capabilities": {"tools": {"listChanged": true}},
        "serverInfo": server_info(),
        "instructions": INSTRUCTIONS,
        "ttlMs": 3_600_000,
        "cacheScope": "public",
    })
}

/// The request's manifest options: the URL's, replaced by `_meta`'s (whether the caller may
/// use them is the use case's to say).
fn request_options(
    context: &Context,
    meta: Option<&Map<String, Value>>,
) -> Result<crate::domain::manifest::ManifestOptions, RpcError> {
    options::with_meta(&context.options, meta)
}

/// A refusal before any work, in MCP's words: a spent budget is the HTTP 429 it is on every
/// route; a refused option is -32602.
fn denied(denied: Denied) -> Reply {
    match denied {
        Denied::Limited(limited) => Reply::Http(ApiError::from(limited).into_response()),
        Denied::Refused(refusal) => Reply::Error(RpcError::invalid_params(refusal.to_string())),
    }
}

/// How a run's tools show on this revision: 2026-07-28 lists must not change as a side effect
/// of a call (a run's tools in every state); the revisions with sessions list its current
/// state's and notify on a change.
fn run_surface(context: &Context) -> RunSurface {
    if context.version.is_stateless() {
        RunSurface::EveryState
    } else {
        RunSurface::CurrentState
    }
}

fn tools_list(
    state: &AppState,
    agent: &Caller,
    context: &Context,
    params: params::ToolsList,
) -> Reply {
    let options = match request_options(context, params.meta.as_ref()) {
        Ok(options) => options,
        Err(error) => return Reply::Error(error),
    };
    let cursor = params.cursor.as_deref();
    let page = match state
        .app
        .mcp_list(agent, options, cursor, run_surface(context))
    {
        Ok(Ok(page)) => page,
        Ok(Err(BadCursor)) => {
            return Reply::Error(RpcError::invalid_params(format!(
                "params.cursor: {BadCursor}"
            )));
        }
        Err(refused) => return denied(refused),
    };
    let ttl_ms = context
        .version
        .is_stateless()
        .then(|| u64::try_from(state.mcp.settings.list_ttl.as_millis()).unwrap_or(u64::MAX));
    Reply::Tools(ToolsResult { page, ttl_ms })
}

/// `tools/call`: decided, checked, forwarded ([`crate::service::McpTools::call`]); refusals are
/// -32602, upstream failures are results with `isError`.
async fn tools_call(
    state: &AppState,
    agent: &Caller,
    context: &Context,
    params: params::ToolsCall,
) -> Reply {
    let started = Instant::now();
    let name = params.name.as_str();
    let arguments = params.arguments.unwrap_or_default();
    let arguments = &arguments;
    let options = match request_options(context, params.meta.as_ref()) {
        Ok(options) => options,
        Err(error) => return Reply::Error(error),
    };
    let called = match state.app.mcp_call(agent, options, name, arguments).await {
        Ok(called) => called,
        Err(refused) => return denied(refused),
    };
    let (outcome, reply) = match called {
        Ok(called) => (called.outcome.name(), Reply::Result(called.result)),
        Err(Refused::UnknownTool) => (
            "refused",
            Reply::Error(RpcError::invalid_params(format!("unknown tool: '{name}'"))),
        ),
        Err(Refused::InvalidArguments(error)) => (
            "invalid_arguments",
            Reply::Error(
                RpcError::invalid_params(format!("invalid arguments for tool '{name}': {error}"))
                    .with_data(json!({"field": error.pointer})),
            ),
        ),
        // A run rule's refusal is a tool error the model reads (what to do next), with the
        // reason in `_meta`; nothing was sent upstream.
        Err(Refused::Run(refusal)) => (
            refusal.reason(),
            Reply::Result(json!({
                "content": [{"type": "text", "text": refusal.message(name)}],
                "isError": true,
                "_meta": {"io.toolgate/refusal": refusal.to_json()},
            })),
        ),
        Err(Refused::RunUnavailable) => (
            "run_unavailable",
            Reply::Error(RpcError::new(
                -32603,
                "the run of this token cannot be read now; nothing was sent; try again",
            )),
        ),
    };
    state.app.metrics().mcp.call(outcome, started.elapsed());
    reply
}

/// `subscriptions/listen` (2026-07-28): the answer to this POST is the notification stream.
/// It opens with `notifications/subscriptions/acknowledged` naming what will be sent (of what
/// was asked, only `toolsListChanged`), carries `notifications/tools/list_changed` exactly when
/// the caller's manifest changes, every message stamped with the subscription id (the
/// request's id), and ends with the request's result when the server ends it (token expiry,
/// shutdown).
async fn listen(
    state: &AppState,
    agent: &Caller,
    context: &Context,
    id: &Id,
    params: params::Listen,
) -> Reply {
    let asked = &params.notifications;
    let options = match request_options(context, params.meta.as_ref()) {
        Ok(options) => options,
        Err(error) => return Reply::Error(error),
    };
    let meta = json!({SUBSCRIPTION_ID: id});
    let tools = asked.get("toolsListChanged") == Some(&Value::Bool(true));
    let honored = if tools {
        json!({"toolsListChanged": true})
    } else {
        json!({})
    };
    let acknowledged = jsonrpc::notification(
        "notifications/subscriptions/acknowledged",
        Some(json!({"notifications": honored, "_meta": meta})),
    );
    let closing = jsonrpc::response(
        Some(id),
        Ok(json!({"resultType": "complete", "_meta": meta})),
    );
    let context = Context {
        options,
        ..context.clone()
    };
    let shape = Shape {
        resumed_from: None,
        opening: Opening::Event(notify::event(None, &acknowledged)),
        closing: Some(notify::event(None, &closing)),
        changes: tools,
        params: Some(json!({"_meta": meta})),
    };
    match stream(state, agent, &context, shape).await {
        Ok(response) => Reply::Http(response),
        Err(OpenError::Refused(refusal)) => {
            Reply::Error(RpcError::invalid_params(refusal.to_string()))
        }
        Err(error) => Reply::Http(ApiError::from(error).into_response()),
    }
}

/// How a notification stream starts.
#[derive(Debug, Clone)]
pub(super) enum Opening {
    /// A priming event: the current etag as id, no data (2025-11-25).
    Priming,
    /// A comment (2025-06-18 clients read only `data`).
    Comment,
    /// This event (the acknowledgement of a 2026-07-28 subscription).
    Event(bytes::Bytes),
}

/// The shape of a notification stream besides whose manifest it follows.
pub(super) struct Shape<'a> {
    /// The etag the client last heard of (`Last-Event-ID`).
    pub resumed_from: Option<&'a str>,
    pub opening: Opening,
    /// Sent when the server ends the stream.
    pub closing: Option<bytes::Bytes>,
    /// Whether to tell of changes at all.
    pub changes: bool,
    /// The params of every `list_changed`.
    pub params: Option<Value>,
}

/// A notification stream of `agent`'s manifest for the context's options: told exactly when
/// that manifest changes, ended by the token's `exp` (after a last `list_changed`) and by the
/// end of the session.
pub(super) async fn stream(
    state: &AppState,
    agent: &Caller,
    context: &Context,
    shape: Shape<'_>,
) -> Result<Response, OpenError> {
    let Shape {
        resumed_from,
        opening,
        closing,
        changes,
        params,
    } = shape;
    let read = ReadRequest::of(context.options.clone());
    let opened = state
        .app
        .open_stream(agent, &read, StreamClass::Mcp, run_surface(context))
        .await?;
    let rendered = opened.rendered;
    let ended = context
        .session
        .as_ref()
        .map(|(_, session)| session.ended.clone());
    let watch = Watch::new(
        opened.subscription,
        opened.render,
        &rendered.etag,
        resumed_from,
        state.http.sse_ping,
        opened.expiry,
        ended,
    );
    let opening = match opening {
        Opening::Priming => Some(notify::priming(&rendered.etag)),
        Opening::Comment => Some(bytes::Bytes::from_static(b": stream open\n\n")),
        Opening::Event(event) => Some(event),
    };
    let body = notify::body(
        watch,
        Framing {
            opening,
            closing,
            changes,
        },
        params,
        Arc::clone(state.app.metrics()),
    );
    Ok(crate::transport::sse::event_stream(Body::from_stream(body)))
}
