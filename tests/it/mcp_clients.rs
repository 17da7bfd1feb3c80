//! `/mcp` driven by the official MCP SDK clients, which no one here wrote (the Python SDK from
//! PyPI, the TypeScript SDKs v1 and v2 from npm; tests/mcp_clients/): each lists exactly the
//! REST manifest of its token in the same order, is told `tools/list_changed` after an admin
//! change that alters its manifest and not after one that does not, and is refused a tool
//! outside its manifest as if it did not exist. Each client runs at the revision it negotiates
//! by default, and the two that speak 2026-07-28 run there too.

use crate::support;

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::gateway::Gateway;
use support::mcp_driver::{Driver, Sdk};

fn catalog(reader_groups: Value) -> Value {
    json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual"}],
        "tools": [
            {"source_id": "billing", "operation_id": "list_invoices", "name": "list_invoices",
             "method": "GET", "tags": ["read-only"],
             "input_schema": {"type": "object", "properties": {"limit": {"type": "integer"}}}},
            {"source_id": "billing", "operation_id": "get_invoice", "name": "get_invoice",
             "method": "GET"},
            {"source_id": "billing", "operation_id": "refund", "name": "refund", "method": "POST"}
        ],
        "groups": [
            {"id": "g-read", "name": "reads", "selectors": [{"method_pattern": "GET"}]},
            {"id": "g-all", "name": "all", "selectors": [{}]}
        ],
        "policies": [
            {"id": "p-read", "name": "readers", "allowed_group_ids": reader_groups,
             "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "reader"}]},
            {"id": "p-staff", "name": "staff", "allowed_group_ids": ["g-all"],
             "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "staff"}]}
        ]
    })
}

/// The same catalog with the staff policy narrowed: a change that leaves readers alone.
fn staff_narrowed(reader_groups: Value) -> Value {
    let mut catalog = catalog(reader_groups);
    catalog["policies"][1]["allowed_group_ids"] = json!(["g-read"]);
    catalog
}

async fn put(gateway: &Gateway, catalog: Value) {
    gateway.put_catalog(catalog).await;
}

async fn rest_ids(gateway: &Gateway, token: &str) -> Vec<String> {
    gateway
        .get("/agents/tools", token)
        .await
        .expect(StatusCode::OK)
        .json()["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|entry| entry["tool_id"].as_str().expect("id").to_owned())
        .collect()
}

fn listed_ids(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .map(|tool| {
            tool["_meta"]["toolgate/tool_id"]
                .as_str()
                .unwrap_or_else(|| panic!("no tool id in {tool}"))
                .to_owned()
        })
        .collect()
}

/// Runs a blocking driver step without stalling the gateway's runtime.
fn blocking<T>(step: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(step)
}

async fn scenario(sdk: Sdk, env: &[(&str, &str)], expected_version: &str) {
    let gateway = Gateway::start().await;
    put(&gateway, catalog(json!(["g-read"]))).await;
    let token = Gateway::token(json!({"sub": "agent-r", "roles": ["reader"]}));
    let url = format!("{}/mcp", gateway.base);
    let mut driver = blocking(|| Driver::start(sdk, &url, &token, env));
    assert_eq!(driver.ready["ready"], true, "{sdk:?}: {}", driver.ready);
    assert_eq!(
        driver.ready["protocol_version"], expected_version,
        "{sdk:?}"
    );

    // The list is the REST manifest, in its order, with names MCP accepts.
    let tools = blocking(|| driver.list());
    assert_eq!(
        listed_ids(&tools),
        rest_ids(&gateway, &token).await,
        "{sdk:?}"
    );
    assert_eq!(tools[0]["name"], "billing.get_invoice");
    assert_eq!(tools[1]["annotations"]["readOnlyHint"], true);
    blocking(|| driver.changes());

    // A change that leaves this caller's manifest as it was: no notification.
    put(&gateway, staff_narrowed(json!(["g-read"]))).await;
    assert_eq!(
        blocking(|| driver.wait_changed(Duration::from_millis(1500))),
        0,
        "{sdk:?}: told of a change that is not its own"
    );

    // A change to this caller's manifest: told, and the new list is the new manifest.
    put(&gateway, staff_narrowed(json!(["g-all"]))).await;
    assert!(
        blocking(|| driver.wait_changed(Duration::from_secs(10))) >= 1,
        "{sdk:?}: not told of its own change"
    );
    let tools = blocking(|| driver.list());
    assert_eq!(
        listed_ids(&tools),
        rest_ids(&gateway, &token).await,
        "{sdk:?}"
    );
    assert_eq!(tools.len(), 3);

    // Back to reads only: the refund tool is now refused exactly as a tool that never existed.
    put(&gateway, staff_narrowed(json!(["g-read"]))).await;
    blocking(|| driver.wait_changed(Duration::from_secs(10)));
    for name in ["billing.refund", "no.such.tool"] {
        let answer = blocking(|| driver.call(name, json!({})));
        assert_eq!(answer["error"]["code"], -32602, "{sdk:?} {name}: {answer}");
    }
    blocking(|| driver.close());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_speaks_2026_07_28_by_default() {
    scenario(Sdk::Python, &[], "2026-07-28").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_on_a_2025_session() {
    scenario(Sdk::Python, &[("MCP_NEGOTIATION", "legacy")], "2025-11-25").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_1x() {
    scenario(Sdk::Python1, &[], "2025-11-25").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_v1() {
    scenario(Sdk::TypeScript, &[], "2025-11-25").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_client_v2_on_2025_06_18() {
    scenario(
        Sdk::TypeScript2,
        &[("MCP_PROTOCOL_VERSION", "2025-06-18")],
        "2025-06-18",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_client_v2_on_2026_07_28() {
    scenario(
        Sdk::TypeScript2,
        &[("MCP_PROTOCOL_VERSION", "2026-07-28")],
        "2026-07-28",
    )
    .await;
}

/// An `mcp` source (the official Python SDK's server) and an `openapi` source (an echo server)
/// granted to readers: each client calls one tool of each through the gateway and gets the
/// upstream's answer; arguments that do not fit the schema are refused naming the field; the
/// agent's token never reaches an upstream.
async fn calls(sdk: Sdk, env: &[(&str, &str)]) {
    let upstream = support::upstream::McpServer::start(&["summarize", "search_docs"], &[]);
    let echo = support::upstream::echo_server().await;
    let gateway = Gateway::start().await;
    put(
        &gateway,
        json!({
            "groups": [{"id": "g-all", "name": "all", "selectors": [{}]}],
            "policies": [{"id": "p-read", "name": "readers", "allowed_group_ids": ["g-all"],
                          "claim_matchers": [{"json_path": "roles", "operator": "contains",
                                              "value": "reader"}]}]
        }),
    )
    .await;
    let spec = json!({
        "openapi": "3.1.0", "info": {"title": "echo", "version": "1"},
        "servers": [{"url": echo}],
        "paths": {"/items/{id}": {"get": {
            "operationId": "get_item",
            "parameters": [
                {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
                {"name": "q", "in": "query", "schema": {"type": "string"}}],
            "responses": {"200": {"description": "the item"}}}}}
    });
    for source in [
        json!({"id": "docs", "name": "docs", "type": "mcp", "config": {"url": upstream.url}}),
        json!({"id": "echo", "name": "echo", "type": "openapi", "config": {"spec": spec}}),
    ] {
        gateway
            .admin_send(Method::POST, "/admin/sources", Some(source))
            .await
            .expect(StatusCode::CREATED);
    }
    let token = Gateway::token(json!({"sub": "agent-r", "roles": ["reader"]}));
    let url = format!("{}/mcp", gateway.base);
    let mut driver = blocking(|| Driver::start(sdk, &url, &token, env));
    assert_eq!(driver.ready["ready"], true, "{sdk:?}: {}", driver.ready);
    let names: Vec<String> = blocking(|| driver.list())
        .iter()
        .map(|tool| tool["name"].as_str().expect("name").to_owned())
        .collect();
    assert_eq!(
        names,
        ["docs.search_docs", "docs.summarize", "echo.get_item"],
        "{sdk:?}"
    );

    let answer = blocking(|| driver.call("docs.summarize", json!({"text": "one two three"})));
    let result = &answer["result"];
    assert_eq!(result["isError"], false, "{sdk:?}: {answer}");
    assert_eq!(
        result["structuredContent"],
        json!({"text": "one two three", "words": 3}),
        "{sdk:?}"
    );

    let answer = blocking(|| driver.call("echo.get_item", json!({"id": "42", "q": "x y"})));
    let result = &answer["result"];
    assert_eq!(result["isError"], false, "{sdk:?}: {answer}");
    let echoed: Value = serde_json::from_str(
        result["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{sdk:?}: no text in {answer}")),
    )
    .expect("the upstream's JSON");
    assert_eq!(echoed["method"], "GET");
    assert_eq!(echoed["path"], "/api/items/42");
    assert_eq!(echoed["query"], "q=x+y");
    assert!(
        echoed["headers"].get("authorization").is_none(),
        "{sdk:?}: the agent's token reached the upstream: {echoed}"
    );

    let answer = blocking(|| driver.call("docs.summarize", json!({"text": 5})));
    assert_eq!(answer["error"]["code"], -32602, "{sdk:?}: {answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("/text")),
        "{sdk:?}: the field is named: {answer}"
    );
    blocking(|| driver.close());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_calls_tools_through_the_gateway() {
    calls(Sdk::Python, &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_v1_calls_tools_through_the_gateway() {
    calls(Sdk::TypeScript, &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_client_v2_calls_tools_at_2026_07_28() {
    calls(Sdk::TypeScript2, &[("MCP_PROTOCOL_VERSION", "2026-07-28")]).await;
}
