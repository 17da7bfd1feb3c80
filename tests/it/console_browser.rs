//! The admin console in a real browser: Debian's Chromium driven by Playwright for Python
//! (`tests/console/drive.py`, installed in `.venv-console` by scripts/test.sh), by the accessible
//! names docs/console.md fixes: sign-in refusals, keyboard-only sign-in, search, a disable with a
//! reason whose impact is shown before Apply, a conflicting write, a write from another origin,
//! View as with `Why not?`, Audit, the entity editors, the Live page updating by itself, sign-out,
//! and no request to any other origin. Here: the disable reaches an agent's open SSE
//! stream.
//!
//! `TOOLGATE_SCREENSHOTS=<dir>` saves the main pages' screenshots there (docs/ holds the
//! committed ones: `TOOLGATE_SCREENSHOTS=docs cargo test --test it console_browser`).

use crate::support;

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use support::gateway::Gateway;
use support::sse::SseClient;

fn catalog() -> serde_json::Value {
    json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual"}],
        "tools": [
            {"source_id": "billing", "operation_id": "list_invoices", "name": "list_invoices",
             "description": "Lists the invoices of a customer", "method": "GET",
             "input_schema": {"type": "object", "properties": {"customer": {"type": "string"}}}},
            {"source_id": "billing", "operation_id": "search", "name": "search",
             "description": "Searches invoices", "method": "GET"},
            {"source_id": "billing", "operation_id": "refund", "name": "refund",
             "description": "Refunds a payment", "method": "POST"}
        ],
        "groups": [{"id": "g-read", "name": "reads", "selectors": [{"method_pattern": "GET"}]},
                   {"id": "g-all", "name": "all", "selectors": [{}]}],
        "policies": [{"id": "p-read", "name": "readers", "allowed_group_ids": ["g-read"], "priority": 10,
                      "claim_matchers": [{"json_path": "roles", "operator": "contains",
                                          "value": "reader"}]},
                     {"id": "p-staff", "name": "staff", "allowed_group_ids": ["g-all"],
                      "claim_matchers": [{"json_path": "roles", "operator": "contains",
                                          "value": "staff"}]}]
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_drives_the_console_in_chromium() {
    let gateway = Gateway::start().await;
    gateway.put_catalog(catalog()).await;
    let reader = Gateway::reader("agent-1");
    // The agent is served once (so the impact preview knows it) and keeps a stream open.
    gateway
        .get("/agents/tools", &reader)
        .await
        .expect(StatusCode::OK);
    let mut stream = SseClient::connect(&gateway, "/agents/tools/stream", &reader).await;
    let first = stream.event(Duration::from_secs(5)).await;
    assert!(
        first
            .ids("data")
            .contains(&"billing:list_invoices".to_owned())
    );

    let expired = Gateway::token(json!({
        "sub": "admin-1", "roles": ["admin"], "exp": support::unix_now() - 60
    }));
    let figures = support::browser::run(
        "drive.py",
        vec![
            ("CONSOLE_BASE", gateway.base.clone()),
            ("ADMIN_TOKEN", Gateway::admin()),
            ("READER_TOKEN", reader.clone()),
            ("EXPIRED_TOKEN", expired),
        ],
    )
    .await;
    eprintln!("console figures: {figures}");

    // The disable applied in the browser reached the agent's stream (then the group edit took
    // billing:search away, and the Live check gave billing:list_invoices back).
    let changed = stream.event(Duration::from_secs(5)).await;
    assert_eq!(changed.event, "tools_changed");
    assert_eq!(changed.json()["removed"], json!(["billing:list_invoices"]));
    let changed = stream.event(Duration::from_secs(5)).await;
    assert_eq!(changed.json()["removed"], json!(["billing:search"]));
    let changed = stream.event(Duration::from_secs(5)).await;
    assert_eq!(changed.ids("added"), ["billing:list_invoices"]);
}
