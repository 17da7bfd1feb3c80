//! `toolgate demo-upstream`: a small HTTP service with its OpenAPI document, so that the quick
//! start can import real tools and end with a real `tools/call` through the gateway.
//!
//! It is a separate process on its own port, never routes of the gateway: a production gateway
//! serves nothing it was not configured for, and the demo is imported exactly as any `openapi`
//! source is (`config.url` pointing at `/openapi.json`). Every input is bounded: `text` at
//! [`MAX_TEXT_CHARS`] characters, `a` and `b` to 64-bit integers whose sum must not overflow.

use std::net::SocketAddr;

use axum::Json;
use axum::Router;
use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use serde_json::{Value, json};

/// The longest `text` `echo` answers, in characters.
pub(super) const MAX_TEXT_CHARS: usize = 1_000;

/// The default listen address of `toolgate demo-upstream`.
pub(super) const DEFAULT_LISTEN: &str = "127.0.0.1:9090";

/// Serves the demo until SIGINT or SIGTERM, printing `demo upstream listening on http://ADDR`
/// (the bound address, for `--listen 127.0.0.1:0`) once it accepts connections.
pub async fn run_demo_upstream(listen: SocketAddr) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|error| anyhow::anyhow!("cannot listen on {listen}: {error}"))?;
    let address = listener.local_addr()?;
    // One line, as `serve` prints: scripts read the address from it (and may close the pipe).
    {
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stdout(),
            "demo upstream listening on http://{address} (its OpenAPI document: \
             http://{address}/openapi.json)"
        );
    }
    axum::serve(listener, router())
        .with_graceful_shutdown(crate::server::shutdown_signal())
        .await?;
    Ok(())
}

/// The demo's routes: the document and its three operations.
pub fn router() -> Router {
    Router::new()
        .route("/openapi.json", get(document))
        .route("/time", get(time))
        .route("/echo", get(echo))
        .route("/add", get(add))
}

/// The OpenAPI 3.1 document. Relative `servers` (`/`): the gateway resolves it against the
/// document's own URL, so the demo works on whatever address it listens on.
async fn document() -> Json<Value> {
    Json(json!({
        "openapi": "3.1.0",
        "info": {"title": "toolgate demo service", "version": "1.0.0",
                 "description": "A small service to try tool calls through toolgate."},
        "servers": [{"url": "/"}],
        "paths": {
            "/time": {"get": {
                "operationId": "get_time",
                "summary": "Current time",
                "description": "Returns the current time in UTC.",
                "responses": {"200": {"description": "The time", "content": {"application/json": {
                    "schema": {"type": "object", "required": ["utc"],
                               "properties": {"utc": {"type": "string", "format": "date-time"}}}}}}}
            }},
            "/echo": {"get": {
                "operationId": "echo",
                "summary": "Echo a text",
                "description": "Returns the text it is given.",
                "parameters": [{"name": "text", "in": "query", "required": true,
                                "schema": {"type": "string", "maxLength": MAX_TEXT_CHARS}}],
                "responses": {"200": {"description": "The same text", "content": {"application/json": {
                    "schema": {"type": "object", "required": ["text"],
                               "properties": {"text": {"type": "string"}}}}}}}
            }},
            "/add": {"get": {
                "operationId": "add",
                "summary": "Add two integers",
                "description": "Returns the sum of a and b.",
                "parameters": [
                    {"name": "a", "in": "query", "required": true, "schema": {"type": "integer"}},
                    {"name": "b", "in": "query", "required": true, "schema": {"type": "integer"}}
                ],
                "responses": {"200": {"description": "The sum", "content": {"application/json": {
                    "schema": {"type": "object", "required": ["sum"],
                               "properties": {"sum": {"type": "integer"}}}}}}}
            }}
        }
    }))
}

async fn time() -> Json<Value> {
    Json(json!({"utc": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)}))
}

#[derive(Deserialize)]
struct EchoQuery {
    text: String,
}

async fn echo(
    query: Result<Query<EchoQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Ok(Query(EchoQuery { text })) = query else {
        return bad_request("text: required, a string");
    };
    if text.chars().count() > MAX_TEXT_CHARS {
        return bad_request(&format!("text: longer than {MAX_TEXT_CHARS} characters"));
    }
    Json(json!({"text": text})).into_response()
}

#[derive(Deserialize)]
struct AddQuery {
    a: i64,
    b: i64,
}

async fn add(query: Result<Query<AddQuery>, axum::extract::rejection::QueryRejection>) -> Response {
    let Ok(Query(AddQuery { a, b })) = query else {
        return bad_request("a, b: required, 64-bit integers");
    };
    match a.checked_add(b) {
        Some(sum) => Json(json!({"sum": sum})).into_response(),
        None => bad_request("a + b: does not fit a 64-bit integer"),
    }
}

/// A problem JSON 400 (RFC 9457) naming the parameter at fault.
fn bad_request(detail: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        [(axum::http::header::CONTENT_TYPE, "application/problem+json")],
        Json(
            json!({"type": "about:blank", "title": "Bad Request", "status": 400, "detail": detail}),
        ),
    )
        .into_response()
}
