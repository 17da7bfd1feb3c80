//! `/mcp` over plain HTTP: one JSON-RPC request at a time, a 2025 session, with real tokens.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::gateway::{Gateway, Reply};

/// One POST to `/mcp` with `headers` besides the JSON content type.
pub async fn post(
    gateway: &Gateway,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: Value,
) -> Reply {
    let mut request = gateway
        .client
        .post(format!("{}/mcp", gateway.base))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(serde_json::to_vec(&body).expect("json"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("request reaches the gateway");
    Reply {
        status: response.status(),
        headers: response.headers().clone(),
        body: response.bytes().await.expect("body").to_vec(),
    }
}

pub fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A 2025 session: `initialize` at `version`, then `notifications/initialized`.
pub async fn initialize(gateway: &Gateway, token: &str, version: &str) -> (String, Value) {
    let reply = post(
        gateway,
        Some(token),
        &[],
        request(
            1,
            "initialize",
            json!({"protocolVersion": version, "capabilities": {},
                                        "clientInfo": {"name": "test", "version": "1"}}),
        ),
    )
    .await
    .expect(StatusCode::OK);
    let session = reply
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let result = reply.json()["result"].clone();
    let negotiated = result["protocolVersion"]
        .as_str()
        .expect("a version")
        .to_owned();
    post(
        gateway,
        Some(token),
        &[
            ("mcp-session-id", &session),
            ("mcp-protocol-version", &negotiated),
        ],
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await
    .expect(StatusCode::ACCEPTED);
    (session, result)
}

/// A request of a 2025 session.
pub async fn call(
    gateway: &Gateway,
    token: &str,
    session: &str,
    method: &str,
    params: Value,
) -> Value {
    post(
        gateway,
        Some(token),
        &[
            ("mcp-session-id", session),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        request(2, method, params),
    )
    .await
    .expect(StatusCode::OK)
    .json()
}

/// The headers of a 2026-07-28 request of `method` (`Mcp-Name`: the tool a call names).
pub fn modern<'a>(method: &'a str, name: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if let Some(name) = name {
        headers.push(("mcp-name", name));
    }
    headers
}

/// `params` with the `_meta` every 2026-07-28 request carries.
pub fn envelope(mut params: Value) -> Value {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}});
    params
}
