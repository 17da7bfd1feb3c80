//! Tool calls against upstreams that misbehave on purpose, and sources whose config holds
//! credentials: no answer an agent reads names any part of a source's config, no argument
//! moves a request off the configured server, a document that lacks a tool is not fetched
//! again on every call, an endless event costs linear work, and only a response answers a
//! request (issue 24, items 1, 2, 4, 5 and 11).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use serde_json::{Map, Value, json};
use toolgate::domain::model::{Source, Tool};
use toolgate::upstream::{CallLimits, CallOutcome, CallResult, Upstream};

use crate::support::upstream::serve;

const CANARY: &str = "Cr3dCanary";

fn source(id: &str, kind: &str, config: Value) -> Source {
    serde_json::from_value(json!({"id": id, "name": id, "type": kind, "config": config}))
        .expect("a source")
}

fn tool(value: Value) -> Tool {
    serde_json::from_value(value).expect("a tool")
}

fn text(result: &CallResult) -> String {
    result.result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text block: {}", result.result))
        .to_owned()
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// Captures what the calls log, at every level.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("lock")).into_owned()
    }
}

/// The agent's text names the tool and the kind of failure and nothing of the config; the
/// log has the cause with the credentials redacted.
fn assert_hidden(result: &CallResult, tool_id: &str, config_parts: &[&str]) {
    let shown = text(result);
    assert_eq!(result.result["isError"], true);
    assert!(shown.contains(&format!("tool '{tool_id}'")), "{shown}");
    for part in config_parts.iter().chain([&CANARY]) {
        assert!(!shown.contains(part), "{part:?} reached the agent: {shown}");
    }
}

#[tokio::test]
async fn no_failure_an_agent_reads_names_the_sources_config() {
    let log = Captured::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let upstream = Upstream::new(CallLimits {
        timeout: Duration::from_secs(5),
        ..CallLimits::default()
    })
    .expect("the HTTP client builds");

    // An MCP server that cannot be reached, its key in the URL's query and userinfo.
    let port = closed_port();
    let url = format!("http://user:{CANARY}@127.0.0.1:{port}/mcp-path?api_key={CANARY}");
    let mcp = source("docs", "mcp", json!({"url": url}));
    let mcp_tool = tool(
        json!({"id": "docs:x", "source_id": "docs", "operation_id": "x",
                               "name": "x"}),
    );
    let result = upstream.call(&mcp, &mcp_tool, &Map::new()).await;
    assert_eq!(
        result.outcome,
        CallOutcome::Unreachable,
        "{}",
        result.result
    );
    assert_hidden(
        &result,
        "docs:x",
        &[&port.to_string(), "mcp-path", "127.0.0.1"],
    );

    // An MCP server that answers every request with 500 and echoes the URL it was sent to.
    let echoing = serve(
        Router::new().fallback(any(|uri: axum::http::Uri| async move {
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("failed at {uri}"),
            )
        })),
    )
    .await;
    let url = format!("{echoing}/mcp-path?api_key={CANARY}");
    let mcp = source("docs", "mcp", json!({"url": url}));
    let result = upstream.call(&mcp, &mcp_tool, &Map::new()).await;
    assert_eq!(
        result.outcome,
        CallOutcome::BadUpstream,
        "{}",
        result.result
    );
    assert_eq!(result.upstream_status, Some(500));
    assert_hidden(&result, "docs:x", &["mcp-path"]);
    assert!(text(&result).contains("500"), "{}", result.result);

    // An OpenAPI document behind a URL with a token, which cannot be fetched at call time.
    let down =
        serve(Router::new().fallback(any(|| async { (StatusCode::SERVICE_UNAVAILABLE, "down") })))
            .await;
    let api = source(
        "api",
        "openapi",
        json!({"url": format!("{down}/spec-path?token={CANARY}")}),
    );
    let api_tool = tool(
        json!({"id": "api:get", "source_id": "api", "operation_id": "get",
                               "name": "get", "method": "GET", "path": "/x"}),
    );
    let result = upstream.call(&api, &api_tool, &Map::new()).await;
    assert_hidden(&result, "api:get", &["spec-path", &down]);

    // A base URL whose server redirects to itself for ever.
    let looping = serve(
        Router::new().fallback(any(|uri: axum::http::Uri| async move {
            (StatusCode::FOUND, [("location", uri.to_string())])
        })),
    )
    .await;
    let document = json!({"openapi": "3.1.0", "paths": {"/x": {"get": {"operationId": "get",
                          "responses": {"200": {"description": "ok"}}}}}});
    let api = source(
        "api",
        "openapi",
        json!({"spec": document, "base_url": format!("{looping}/base-path"),
               "headers": {"X-Api-Key": CANARY}}),
    );
    let result = upstream.call(&api, &api_tool, &Map::new()).await;
    assert_hidden(&result, "api:get", &["base-", &looping]);

    let logged = log.text();
    assert!(logged.contains("tool call failed"), "{logged}");
    assert!(logged.contains("mcp-path"), "the cause is logged: {logged}");
    assert!(
        !logged.contains(CANARY),
        "a credential was logged: {logged}"
    );
}

/// What a hostile path template with the agent's value reaches: the answer of any server it
/// could reach is the agent's to read, so nothing must be sent.
#[tokio::test]
async fn an_argument_cannot_extend_the_servers_host_or_port() {
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&hits);
    let server = serve(Router::new().fallback(any(move || {
        let counted = Arc::clone(&counted);
        async move {
            counted.fetch_add(1, Ordering::SeqCst);
            "reached"
        }
    })))
    .await;
    let port = server.rsplit(':').next().expect("a port").to_owned();
    // The base ends one digit short of the server's port: "{tail}" = last digit would reach it.
    let (short, last) = port.split_at(port.len() - 1);
    let document = json!({"openapi": "3.1.0", "paths": {"{tail}": {"get": {"operationId": "t",
        "parameters": [{"name": "tail", "in": "path", "required": true,
                        "schema": {"type": "string"}}],
        "responses": {"200": {"description": "ok"}}}}}});
    let api = source(
        "api",
        "openapi",
        json!({"spec": document, "base_url": format!("http://127.0.0.1:{short}"),
               "headers": {"Authorization": format!("Bearer {CANARY}")}}),
    );
    let crafted = tool(
        json!({"id": "api:t", "source_id": "api", "operation_id": "t",
                              "name": "t", "method": "GET", "path": "{tail}"}),
    );
    let upstream = Upstream::new(CallLimits::default()).expect("the HTTP client builds");
    for value in [last, &format!("{last}/x"), &format!("{last}@evil")] {
        let arguments = json!({"tail": value}).as_object().expect("object").clone();
        let result = upstream.call(&api, &crafted, &arguments).await;
        assert_eq!(
            result.outcome,
            CallOutcome::NotExecutable,
            "{}",
            result.result
        );
        assert_eq!(result.upstream_status, None);
    }
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "a request reached the server"
    );
}

/// Serves an OpenAPI document at `/spec` and counts the fetches.
async fn counting_spec(document: Value) -> (String, Arc<AtomicUsize>) {
    let fetches = Arc::new(AtomicUsize::new(0));
    let app = Router::new()
        .route(
            "/spec",
            get(
                |State((document, fetches)): State<(Value, Arc<AtomicUsize>)>| async move {
                    fetches.fetch_add(1, Ordering::SeqCst);
                    axum::Json(document)
                },
            ),
        )
        .with_state((document, Arc::clone(&fetches)));
    (format!("{}/spec", serve(app).await), fetches)
}

#[tokio::test]
async fn a_document_that_lacks_the_tool_is_not_fetched_again_on_every_call() {
    let document = json!({"openapi": "3.1.0", "servers": [{"url": "http://127.0.0.1:9"}],
        "paths": {"/there": {"get": {"operationId": "there",
                  "responses": {"200": {"description": "ok"}}}}}});
    let (url, fetches) = counting_spec(document).await;
    let api = source("api", "openapi", json!({"url": url}));
    let gone = tool(
        json!({"id": "api:gone", "source_id": "api", "operation_id": "gone",
                           "name": "gone", "method": "GET", "path": "/gone"}),
    );
    let upstream = Upstream::new(CallLimits::default()).expect("the HTTP client builds");
    for _ in 0..10 {
        let result = upstream.call(&api, &gone, &Map::new()).await;
        assert_eq!(
            result.outcome,
            CallOutcome::NotExecutable,
            "{}",
            result.result
        );
        assert!(
            text(&result).contains("tool 'api:gone'"),
            "{}",
            result.result
        );
    }
    assert_eq!(fetches.load(Ordering::SeqCst), 1, "one fetch for ten calls");

    // A tool written after the document was read (a refresh found it in a newer document):
    // one more fetch, once.
    let mut newer = gone.clone();
    newer.updated_at = Some(chrono::Utc::now());
    for _ in 0..3 {
        upstream.call(&api, &newer, &Map::new()).await;
    }
    assert_eq!(fetches.load(Ordering::SeqCst), 2);
}

/// A minimal MCP server over Streamable HTTP whose `tools/call` answer is `stream` (SSE),
/// given the request's id.
async fn mcp_server(stream: fn(u64) -> Body) -> String {
    let app = Router::new().route(
        "/mcp",
        any(move |_: HeaderMap, body: String| async move {
            let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            let id = request["id"].as_u64();
            match (request["method"].as_str(), id) {
                (Some("initialize"), Some(id)) => axum::Json(json!({"jsonrpc": "2.0", "id": id,
                    "result": {"protocolVersion": "2025-06-18", "capabilities": {},
                               "serverInfo": {"name": "hostile", "version": "1"}}}))
                .into_response(),
                (Some("tools/call"), Some(id)) => Response::builder()
                    .header("content-type", "text/event-stream")
                    .body(stream(id))
                    .expect("a response"),
                _ => StatusCode::ACCEPTED.into_response(),
            }
        }),
    );
    format!("{}/mcp", serve(app).await)
}

fn mcp_tool() -> Tool {
    tool(json!({"id": "m:t", "source_id": "m", "operation_id": "t", "name": "t"}))
}

#[tokio::test]
async fn a_request_from_the_server_that_reuses_the_id_is_not_the_answer() {
    let url = mcp_server(|id| {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "sampling/createMessage",
                             "params": {"messages": []}});
        let response = json!({"jsonrpc": "2.0", "id": id, "result": {
            "content": [{"type": "text", "text": "the real answer"}], "isError": false}});
        Body::from(format!("data: {request}\n\ndata: {response}\n\n"))
    })
    .await;
    let result = Upstream::new(CallLimits::default())
        .expect("the HTTP client builds")
        .call(
            &source("m", "mcp", json!({"url": url})),
            &mcp_tool(),
            &Map::new(),
        )
        .await;
    assert_eq!(result.outcome, CallOutcome::Ok, "{}", result.result);
    assert_eq!(text(&result), "the real answer");
}

#[tokio::test]
async fn an_endless_event_in_small_writes_costs_linear_work() {
    let url = mcp_server(|_| {
        // 5 MiB of one event that never ends, in 256-byte writes.
        let first =
            futures_util::stream::once(async { Ok::<_, std::io::Error>(b"data: ".to_vec()) });
        let rest = futures_util::stream::iter(
            (0..20_480).map(|_| Ok::<_, std::io::Error>(vec![b'x'; 256])),
        );
        Body::from_stream(futures_util::StreamExt::chain(first, rest))
    })
    .await;
    let upstream = Upstream::new(CallLimits::default()).expect("the HTTP client builds");
    let started = Instant::now();
    let result = upstream
        .call(
            &source("m", "mcp", json!({"url": url})),
            &mcp_tool(),
            &Map::new(),
        )
        .await;
    let took = started.elapsed();
    assert_eq!(result.outcome, CallOutcome::TooLarge, "{}", result.result);
    // Quadratic scanning took about 2.4 s of CPU here; linear takes tens of milliseconds.
    assert!(took < Duration::from_millis(1500), "{took:?}");
}

/// An MCP server whose `tools/list` pages are each within the per-response bound but go on:
/// every page is `page_bytes` of tools (each `tool_bytes` of description), `pages` of them.
async fn listing_server(
    pages: usize,
    tool_bytes: usize,
    page_bytes: usize,
) -> (String, Arc<AtomicUsize>) {
    let served = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&served);
    let app = Router::new().route(
        "/mcp",
        any(move |body: String| {
            let served = Arc::clone(&counter);
            async move {
                let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                let Some(id) = request["id"].as_u64() else {
                    return StatusCode::ACCEPTED.into_response();
                };
                let result = match request["method"].as_str() {
                    Some("initialize") => json!({"protocolVersion": "2025-06-18",
                        "capabilities": {"tools": {}}, "serverInfo": {"name": "big", "version": "1"}}),
                    Some("tools/list") => {
                        let page = served.fetch_add(1, Ordering::SeqCst);
                        let tools: Vec<Value> = (0..page_bytes / tool_bytes)
                            .map(|n| json!({"name": format!("p{page}_t{n}"),
                                "description": "x".repeat(tool_bytes),
                                "inputSchema": {"type": "object"}}))
                            .collect();
                        let mut result = json!({"tools": tools});
                        if page + 1 < pages {
                            result["nextCursor"] = json!(format!("c{}", page + 1));
                        }
                        result
                    }
                    _ => json!({}),
                };
                axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
            }
        }),
    );
    (format!("{}/mcp", serve(app).await), served)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_listing_is_bounded_as_a_whole_and_per_tool() {
    use toolgate::ingest::mcp_server::{MAX_LISTING_BYTES, MAX_TOOL_BYTES, list_tools};
    // 100 pages of 4 MiB (each under the 16 MiB a response may have): refused once the tools
    // kept pass 16 MiB, without reading the pages after.
    let (url, served) = listing_server(100, 128 * 1024, 4 * 1024 * 1024).await;
    let error = list_tools("big", &url, &[]).await.expect_err("refused");
    assert!(
        error.to_string().contains(&MAX_LISTING_BYTES.to_string()),
        "{error}"
    );
    let pages = served.load(Ordering::SeqCst);
    assert!(pages <= 5, "read {pages} pages");
    // A tool past 256 KiB is skipped and reported; the others are imported.
    let (url, _) = listing_server(1, MAX_TOOL_BYTES + 1, MAX_TOOL_BYTES + 1).await;
    let import = list_tools("big", &url, &[]).await.expect("imported");
    assert!(import.tools.is_empty());
    assert_eq!(import.issues.len(), 1);
    assert!(
        import.issues[0]
            .reason
            .contains(&MAX_TOOL_BYTES.to_string()),
        "{:?}",
        import.issues
    );
    let (url, _) = listing_server(3, 1024, 64 * 1024).await;
    let import = list_tools("small", &url, &[]).await.expect("imported");
    assert_eq!(import.tools.len(), 3 * 64);
    assert!(import.issues.is_empty());
}
