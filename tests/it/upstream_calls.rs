//! Tool calls executed against real upstreams: an MCP server (the official Python SDK, its
//! session pooled and recovered after a restart), an HTTP server described by an inline
//! OpenAPI document (every parameter location, JSON, form and multipart bodies, errors, time
//! and size limits, the source's headers), and the source types toolgate does not execute.

use crate::support;

use std::time::Duration;

use serde_json::{Map, Value, json};
use support::upstream::{McpServer, echo_server};
use toolgate::domain::model::{Source, Tool};
use toolgate::upstream::{CallLimits, CallOutcome, CallResult, Upstream, check_arguments};

fn source(id: &str, kind: &str, config: Value) -> Source {
    serde_json::from_value(json!({"id": id, "name": id, "type": kind, "config": config}))
        .expect("a source")
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().expect("arguments are an object").clone()
}

fn text(result: &CallResult) -> &str {
    result.result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text block: {}", result.result))
}

// ---------------------------------------------------------------------------------------------
// mcp sources

fn mcp_tool(source: &Source, name: &str) -> Tool {
    serde_json::from_value(json!({
        "id": format!("{}:{name}", source.id), "source_id": source.id, "operation_id": name,
        "name": name, "method": "MCP", "path": format!("mcp://{}/{name}", source.name),
        "output_schema": {"type": "object"}
    }))
    .expect("a tool")
}

// Several workers: `restart` blocks its thread while the new server starts, and the client's
// connection tasks must run meanwhile to see the old connections close (else the first call
// after the restart may be sent on a dead connection).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_calls_reuse_one_session_and_recover_when_the_server_forgets_it() {
    let mut server = McpServer::start(&["summarize", "session_id"], &[]);
    let docs = source("docs", "mcp", json!({"url": server.url}));
    let upstream = Upstream::new(CallLimits::default()).expect("the HTTP client builds");

    let summary = upstream
        .call(
            &docs,
            &mcp_tool(&docs, "summarize"),
            &args(json!({"text": "two words"})),
        )
        .await;
    assert_eq!(summary.outcome, CallOutcome::Ok, "{}", summary.result);
    assert_eq!(summary.upstream_status, Some(200));
    assert_eq!(summary.result["isError"], false);
    assert_eq!(
        summary.result["structuredContent"],
        json!({"text": "two words", "words": 2}),
        "structuredContent passed through"
    );
    assert!(text(&summary).contains("\"words\""), "{}", summary.result);

    let session_of = |call: &str, result: CallResult| {
        assert_eq!(result.outcome, CallOutcome::Ok, "{call}: {}", result.result);
        text(&result).to_owned()
    };
    let session_tool = mcp_tool(&docs, "session_id");
    let first = session_of(
        "first",
        upstream.call(&docs, &session_tool, &Map::new()).await,
    );
    let second = session_of(
        "second",
        upstream.call(&docs, &session_tool, &Map::new()).await,
    );
    assert!(!first.is_empty(), "the server hands out session ids");
    assert_eq!(first, second, "the pooled session is reused");
    let no_arguments = Map::new();
    let concurrent = futures_util::future::join_all(
        (0..4).map(|_| upstream.call(&docs, &session_tool, &no_arguments)),
    )
    .await;
    for result in concurrent {
        assert_eq!(
            session_of("concurrent", result),
            first,
            "concurrent calls share the session"
        );
    }

    // A restarted server knows no session: 404, a new handshake, and the call goes through.
    server.restart();
    let after = session_of(
        "after",
        upstream.call(&docs, &session_tool, &Map::new()).await,
    );
    assert_ne!(after, first, "a new session after the restart");
    let again = session_of(
        "again",
        upstream.call(&docs, &session_tool, &Map::new()).await,
    );
    assert_eq!(again, after);

    // The tool's own errors are tool errors.
    let unknown = upstream
        .call(&docs, &mcp_tool(&docs, "no_such_tool"), &Map::new())
        .await;
    assert_eq!(
        unknown.outcome,
        CallOutcome::ToolError,
        "{}",
        unknown.result
    );
    assert_eq!(unknown.result["isError"], true);
    assert!(
        text(&unknown).contains("no_such_tool"),
        "{}",
        unknown.result
    );

    // An edited source (another config) gets its own session.
    let edited = source(
        "docs",
        "mcp",
        json!({"url": server.url, "headers": {"X-Edited": "1"}}),
    );
    let edited_session = session_of(
        "edited_session",
        upstream.call(&edited, &session_tool, &Map::new()).await,
    );
    assert_ne!(edited_session, after);
}

#[tokio::test]
async fn mcp_calls_send_the_configured_authorization_and_nothing_else() {
    let server = McpServer::start(&["search_docs"], &[("MCP_TOKEN", "s3cret")]);
    let upstream = Upstream::new(CallLimits::default()).expect("the HTTP client builds");
    let search = |source: &Source| mcp_tool(source, "search_docs");

    let without = source("open", "mcp", json!({"url": server.url}));
    let refused = upstream
        .call(&without, &search(&without), &args(json!({"query": "q"})))
        .await;
    assert_eq!(
        refused.outcome,
        CallOutcome::BadUpstream,
        "{}",
        refused.result
    );
    assert_eq!(refused.upstream_status, Some(401));
    assert_eq!(refused.result["isError"], true);

    let with = source(
        "guarded",
        "mcp",
        json!({"url": server.url, "headers": {"Authorization": "Bearer s3cret"}}),
    );
    let answered = upstream
        .call(&with, &search(&with), &args(json!({"query": "needle"})))
        .await;
    assert_eq!(answered.outcome, CallOutcome::Ok, "{}", answered.result);
    assert_eq!(text(&answered), "needle");
}

#[tokio::test]
async fn an_unreachable_mcp_server_is_named_as_such() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let gone = source(
        "gone",
        "mcp",
        json!({"url": format!("http://127.0.0.1:{port}/mcp")}),
    );
    let result = Upstream::new(CallLimits::default())
        .expect("the HTTP client builds")
        .call(&gone, &mcp_tool(&gone, "x"), &Map::new())
        .await;
    assert_eq!(
        result.outcome,
        CallOutcome::Unreachable,
        "{}",
        result.result
    );
    assert_eq!(
        text(&result),
        "tool 'gone:x' failed: the upstream cannot be reached",
        "the kind of failure, and nothing of the source's config"
    );
}

// ---------------------------------------------------------------------------------------------
// openapi sources

fn document(server: &str) -> Value {
    let no_body = json!({"200": {"description": "ok"}});
    json!({
        "openapi": "3.1.0",
        "servers": [{"url": server}],
        "components": {"securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}}},
        "paths": {
            "/items/{id}": {"put": {
                "operationId": "putItem",
                "parameters": [
                    {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
                    {"name": "id", "in": "query", "schema": {"type": "string"}},
                    {"name": "tags", "in": "query", "schema": {"type": "array", "items": {"type": "string"}}},
                    {"name": "fields", "in": "query", "explode": false, "schema": {"type": "array", "items": {"type": "string"}}},
                    {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                    {"name": "X-Api-Key", "in": "header", "schema": {"type": "string"}},
                    {"name": "session", "in": "cookie", "schema": {"type": "string"}}
                ],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {
                    "type": "object", "properties": {"n": {"type": "integer"}}}}}},
                "responses": {"200": {"description": "echo", "content": {"application/json": {"schema": {"type": "object"}}}}}
            }},
            "/form": {"post": {"operationId": "postForm", "requestBody": {"content": {
                "application/x-www-form-urlencoded": {"schema": {"type": "object"}}}}, "responses": no_body}},
            "/upload": {"post": {"operationId": "upload", "requestBody": {"content": {
                "multipart/form-data": {"schema": {"type": "object"}}}}, "responses": no_body}},
            "/binary": {"post": {"operationId": "binary", "requestBody": {"content": {
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}, "responses": no_body}},
            "/missing": {"get": {"operationId": "missing", "responses": no_body}},
            "/slow": {"get": {"operationId": "slow", "responses": no_body}},
            "/large": {"get": {"operationId": "large", "responses": no_body}},
            "/large-stream": {"get": {"operationId": "largeStream", "responses": no_body}}
        }
    })
}

/// The tools the importer makes of `document`, as the catalog holds them.
fn imported_tools(source: &Source, document: &Value) -> Vec<Tool> {
    let import = toolgate::ingest::openapi::tools_from_document(document).expect("imports");
    assert!(import.issues.is_empty(), "{:?}", import.issues);
    import
        .tools
        .into_iter()
        .map(|t| {
            serde_json::from_value(json!({
                "id": format!("{}:{}", source.id, t.operation_id), "source_id": source.id,
                "operation_id": t.operation_id, "name": t.name, "method": t.method,
                "path": t.path, "input_schema": t.input_schema, "output_schema": t.output_schema
            }))
            .expect("a tool")
        })
        .collect()
}

fn tool<'t>(tools: &'t [Tool], operation_id: &str) -> &'t Tool {
    tools
        .iter()
        .find(|t| t.operation_id == operation_id)
        .unwrap_or_else(|| panic!("no tool {operation_id}"))
}

/// What the echo server received, from a successful call.
fn echoed(result: &CallResult) -> Value {
    assert_eq!(result.outcome, CallOutcome::Ok, "{}", result.result);
    assert_eq!(result.upstream_status, Some(200));
    serde_json::from_str(text(result)).expect("the echo is JSON text")
}

#[tokio::test]
async fn openapi_calls_place_every_argument_where_the_operation_says() {
    let server = echo_server().await;
    let document = document(&server);
    let items = source(
        "items",
        "openapi",
        json!({"spec": document, "headers": {"X-Api-Key": "k-123", "Cookie": "sid=1"}}),
    );
    let tools = imported_tools(&items, &document);
    let put = tool(&tools, "putItem");
    let properties: Vec<&String> = put.input_schema["properties"]
        .as_object()
        .expect("properties")
        .keys()
        .collect();
    assert_eq!(
        properties,
        ["X-Trace", "body", "fields", "id", "query_id", "tags"],
        "the importer's names: credentials and cookies are not input, the query id is renamed"
    );
    let arguments = json!({
        "id": "a b/1", "query_id": "q&1", "tags": ["x", "y"], "fields": ["f", "g"],
        "X-Trace": "t-1", "body": {"n": 1}
    });
    check_arguments(&put.input_schema, &arguments).expect("valid arguments");
    let upstream = Upstream::new(CallLimits::default()).expect("the HTTP client builds");
    let result = upstream.call(&items, put, &args(arguments)).await;
    let echo = echoed(&result);
    assert_eq!(echo["method"], "PUT");
    assert_eq!(echo["path"], "/api/items/a%20b%2F1");
    assert_eq!(echo["query"], "id=q%261&tags=x&tags=y&fields=f%2Cg");
    let headers = &echo["headers"];
    assert_eq!(headers["x-trace"], "t-1");
    assert_eq!(
        headers["x-api-key"], "k-123",
        "the source's configured header"
    );
    assert_eq!(headers["cookie"], "sid=1");
    assert_eq!(headers["content-type"], "application/json");
    assert!(headers.get("authorization").is_none(), "{headers}");
    assert_eq!(echo["body"], "{\"n\":1}");
    assert_eq!(
        result.result["structuredContent"], echo,
        "an object output schema makes the answer structured content too"
    );

    let form = upstream
        .call(
            &items,
            tool(&tools, "postForm"),
            &args(json!({"body": {"name": "a b", "n": 2, "tags": ["x", "y"]}})),
        )
        .await;
    let echo = echoed(&form);
    assert_eq!(
        echo["headers"]["content-type"],
        "application/x-www-form-urlencoded"
    );
    assert_eq!(echo["body"], "n=2&name=a+b&tags=x&tags=y");
    assert!(
        form.result.get("structuredContent").is_none(),
        "no output schema, no structured content"
    );

    let upload = upstream
        .call(
            &items,
            tool(&tools, "upload"),
            &args(json!({"body": {"note": "hi", "meta": {"k": 1}}})),
        )
        .await;
    let echo = echoed(&upload);
    let content_type = echo["headers"]["content-type"].as_str().expect("a type");
    assert!(
        content_type.starts_with("multipart/form-data; boundary="),
        "{content_type}"
    );
    let body = echo["body"].as_str().expect("text");
    assert!(body.contains("name=\"note\"\r\n\r\nhi\r\n"), "{body}");
    assert!(
        body.contains("name=\"meta\"\r\nContent-Type: application/json\r\n\r\n{\"k\":1}"),
        "{body}"
    );

    let binary = upstream
        .call(
            &items,
            tool(&tools, "binary"),
            &args(json!({"body": "AAEC"})),
        )
        .await;
    assert_eq!(
        binary.outcome,
        CallOutcome::NotExecutable,
        "{}",
        binary.result
    );
    assert!(
        text(&binary).contains("toolgate cannot make this call"),
        "{}",
        binary.result
    );

    let climbing = upstream
        .call(&items, put, &args(json!({"id": "..", "body": {}})))
        .await;
    assert_eq!(
        climbing.outcome,
        CallOutcome::ToolError,
        "{}",
        climbing.result
    );
    assert_eq!(climbing.upstream_status, None, "nothing was sent");
}

#[tokio::test]
async fn openapi_failures_are_results_that_say_what_happened() {
    let server = echo_server().await;
    let document = document(&server);
    let api = source("api", "openapi", json!({"spec": document}));
    let tools = imported_tools(&api, &document);

    let upstream = Upstream::new(CallLimits::default()).expect("the HTTP client builds");
    let missing = upstream
        .call(&api, tool(&tools, "missing"), &Map::new())
        .await;
    assert_eq!(missing.outcome, CallOutcome::ToolError);
    assert_eq!(missing.upstream_status, Some(404));
    assert_eq!(missing.result["isError"], true);
    assert_eq!(
        text(&missing),
        "upstream answered 404 Not Found: no such thing"
    );

    let hasty = Upstream::new(CallLimits {
        timeout: Duration::from_millis(300),
        ..CallLimits::default()
    })
    .expect("the HTTP client builds");
    let started = std::time::Instant::now();
    let slow = hasty.call(&api, tool(&tools, "slow"), &Map::new()).await;
    assert_eq!(slow.outcome, CallOutcome::Timeout, "{}", slow.result);
    assert_eq!(slow.result["isError"], true);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    let small = Upstream::new(CallLimits {
        max_response_bytes: 1024,
        ..CallLimits::default()
    })
    .expect("the HTTP client builds");
    for operation in ["large", "largeStream"] {
        let large = small.call(&api, tool(&tools, operation), &Map::new()).await;
        assert_eq!(
            large.outcome,
            CallOutcome::TooLarge,
            "{operation}: {}",
            large.result
        );
        assert_eq!(large.result["isError"], true);
        assert!(text(&large).contains("1024 bytes"), "{}", large.result);
    }

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let gone = source(
        "gone",
        "openapi",
        json!({"spec": document, "base_url": format!("http://127.0.0.1:{port}")}),
    );
    let unreachable = upstream
        .call(&gone, tool(&tools, "missing"), &Map::new())
        .await;
    assert_eq!(
        unreachable.outcome,
        CallOutcome::Unreachable,
        "{}",
        unreachable.result
    );
    assert_eq!(
        text(&unreachable),
        "tool 'api:missing' failed: the upstream cannot be reached"
    );

    let mut relative = document.clone();
    relative["servers"] = json!([{"url": "/api"}]);
    let inline_relative = source("rel", "openapi", json!({"spec": relative}));
    let nowhere = upstream
        .call(&inline_relative, tool(&tools, "missing"), &Map::new())
        .await;
    assert_eq!(
        nowhere.outcome,
        CallOutcome::NotExecutable,
        "{}",
        nowhere.result
    );
    assert!(
        text(&nowhere).contains("toolgate cannot make this call"),
        "{}",
        nowhere.result
    );
    let rebased = source(
        "rebased",
        "openapi",
        json!({"spec": relative, "base_url": server, "headers": {"Authorization": "Bearer upstream-only"}}),
    );
    let echo = echoed(
        &upstream
            .call(
                &rebased,
                tool(&tools, "postForm"),
                &args(json!({"body": {"a": 1}})),
            )
            .await,
    );
    assert_eq!(echo["path"], "/api/form");
    assert_eq!(
        echo["headers"]["authorization"], "Bearer upstream-only",
        "Authorization is sent when, and only when, the source configures it"
    );

    let not_there: Tool = serde_json::from_value(json!({
        "id": "api:gone", "source_id": "api", "operation_id": "gone", "name": "gone",
        "method": "GET", "path": "/not/in/the/document"
    }))
    .expect("a tool");
    let stale = upstream.call(&api, &not_there, &Map::new()).await;
    assert_eq!(
        stale.outcome,
        CallOutcome::NotExecutable,
        "{}",
        stale.result
    );
    assert!(
        text(&stale).starts_with("tool 'api:gone' failed"),
        "{}",
        stale.result
    );
}

// ---------------------------------------------------------------------------------------------
// sources toolgate does not execute

#[tokio::test]
async fn manual_and_tool_service_tools_are_not_executable() {
    let upstream = Upstream::new(CallLimits::default()).expect("the HTTP client builds");
    for kind in ["manual", "tool-service"] {
        let source = source("s", kind, json!({}));
        let tool: Tool = serde_json::from_value(json!({
            "id": "s:t", "source_id": "s", "operation_id": "t", "name": "t"
        }))
        .expect("a tool");
        let result = upstream.call(&source, &tool, &Map::new()).await;
        assert_eq!(result.outcome, CallOutcome::NotExecutable, "{kind}");
        assert_eq!(result.result["isError"], true);
        assert_eq!(result.upstream_status, None);
        let says = text(&result);
        assert!(
            says.contains(kind) && says.contains("directly"),
            "{kind}: {says}"
        );
    }
}
