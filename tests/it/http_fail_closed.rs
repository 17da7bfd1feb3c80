//! The access holes of issue 12, attacked over real HTTP with real tokens: each case once
//! granted (or kept) tools it must not. docs/semantics.md sections 5, 6.4 and 9; docs/api.md,
//! Authentication.

use crate::support;

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::gateway::Gateway;
use support::sse::SseClient;

const WAIT: Duration = Duration::from_secs(5);
const QUIET: Duration = Duration::from_millis(300);

fn catalog() -> Value {
    json!({
        "sources": [{"id": "crm", "name": "crm-api", "type": "manual"}],
        "tools": [
            {"source_id": "crm", "operation_id": "get_customer", "name": "get_customer", "method": "GET", "path": "/customers/{id}"},
            {"source_id": "crm", "operation_id": "list_orders", "name": "list_orders", "method": "GET", "path": "/items"},
            {"source_id": "crm", "operation_id": "search", "name": "search", "method": "GET", "path": "/search"},
            {"source_id": "crm", "operation_id": "delete_customer", "name": "delete_customer", "method": "DELETE", "path": "/customers/{id}"}
        ],
        "groups": [{"id": "g-read", "name": "reads", "selectors": [{"method_pattern": "GET"}]}],
        "policies": [
            {"id": "p-read", "name": "readers", "priority": 10,
             "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "agent"}],
             "allowed_group_ids": ["g-read"]}
        ]
    })
}

async fn gateway() -> Gateway {
    let gateway = Gateway::start().await;
    gateway.put_catalog(catalog()).await;
    gateway
}

/// The incident policy of the issue: deny reads to the stolen session.
async fn deny_stolen_sessions(gateway: &Gateway) {
    gateway
        .admin_send(
            Method::POST,
            "/admin/policies",
            Some(json!({"id": "deny-stolen", "name": "deny stolen", "priority": 50,
                        "claim_matchers": [{"json_path": "sid", "operator": "equals", "value": "stolen"}],
                        "denied_group_ids": ["g-read"]})),
        )
        .await
        .expect(StatusCode::CREATED);
}

fn session(sid: &str) -> Value {
    json!({"sub": "agent-7", "roles": ["agent"], "sid": sid})
}

const READS: [&str; 3] = ["crm:get_customer", "crm:list_orders", "crm:search"];

#[tokio::test]
async fn a_deny_on_a_volatile_claim_holds_in_either_order() {
    let gateway = gateway().await;
    deny_stolen_sessions(&gateway).await;
    // The allowed session first: its cached manifest must not serve the stolen one.
    assert_eq!(gateway.tool_ids(session("new"), "").await, READS);
    assert!(gateway.tool_ids(session("stolen"), "").await.is_empty());
    // And the other way round, with fresh claims (another sub) so that nothing is cached.
    let stolen = json!({"sub": "agent-8", "roles": ["agent"], "sid": "stolen"});
    let fresh = json!({"sub": "agent-8", "roles": ["agent"], "sid": "new"});
    assert!(gateway.tool_ids(stolen, "").await.is_empty());
    assert_eq!(gateway.tool_ids(fresh, "").await, READS);
    // Tokens that differ in a volatile claim nobody reads still share one cache entry, and
    // a deny on `jti` or `iat` holds like one on `sid`.
    for (path, value) in [("jti", json!("j-stolen")), ("iat", json!(1))] {
        gateway
            .admin_send(
                Method::POST,
                "/admin/policies",
                Some(json!({"id": format!("deny-{path}"), "name": format!("deny {path}"),
                            "priority": 50,
                            "claim_matchers": [{"json_path": path, "operator": "equals", "value": value}],
                            "denied_group_ids": ["g-read"]})),
            )
            .await
            .expect(StatusCode::CREATED);
        let mut claims = session("new");
        assert_eq!(gateway.tool_ids(claims.clone(), "").await, READS);
        claims[path] = value;
        assert!(
            gateway.tool_ids(claims, "").await.is_empty(),
            "a deny on {path}"
        );
    }
}

#[tokio::test]
async fn streams_are_regrouped_when_a_policy_starts_reading_a_volatile_claim() {
    let gateway = gateway().await;
    let path = "/agents/tools/stream";
    let mut new = SseClient::connect(&gateway, path, &Gateway::token(session("new"))).await;
    let mut stolen = SseClient::connect(&gateway, path, &Gateway::token(session("stolen"))).await;
    for stream in [&mut new, &mut stolen] {
        let first = stream.event(WAIT).await;
        assert_eq!(first.event, "tools");
        assert_eq!(first.ids("data"), READS);
    }
    assert_eq!(
        gateway.state().app.internals().hub.group_count(),
        1,
        "no policy reads sid yet: one manifest"
    );
    deny_stolen_sessions(&gateway).await;
    let revoked = stolen.event(WAIT).await;
    assert_eq!(revoked.event, "tools_changed");
    assert_eq!(revoked.ids("removed"), READS);
    new.no_event(QUIET).await;
    assert_eq!(gateway.state().app.internals().hub.group_count(), 2);
    // Both keep following their own manifest afterwards.
    gateway
        .admin_send(
            Method::POST,
            "/admin/tools",
            Some(json!({"source_id": "crm", "operation_id": "export", "name": "export", "method": "GET"})),
        )
        .await
        .expect(StatusCode::CREATED);
    assert_eq!(new.event(WAIT).await.ids("added"), ["crm:export"]);
    stolen.no_event(QUIET).await;
    // The policy goes away: the two streams become one manifest again, and the stolen session
    // gets its tools back in one diff.
    gateway
        .admin_send(Method::DELETE, "/admin/policies/deny-stolen", None)
        .await
        .expect(StatusCode::NO_CONTENT);
    let restored = stolen.event(WAIT).await;
    assert_eq!(restored.ids("added").len(), 4);
    new.no_event(QUIET).await;
    assert_eq!(gateway.state().app.internals().hub.group_count(), 1);
}

#[tokio::test]
async fn the_default_admin_rule_never_matches_a_substring() {
    let gateway = gateway().await;
    for claims in [
        json!({"sub": "x", "roles": "non-admin"}),
        json!({"sub": "x", "roles": "badminton-club"}),
        json!({"sub": "x", "roles": ["administrator"]}),
        json!({"sub": "x", "realm_access": {"roles": "superadministrator"}}),
        json!({"sub": "x", "realm_access": {"roles": ["x-admin-y"]}}),
    ] {
        let token = Gateway::token(claims.clone());
        let reply = gateway.get("/admin/policies", &token).await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{claims}");
        let reply = gateway
            .get("/agents/tools?include_disabled=true", &token)
            .await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{claims}");
    }
    for claims in [
        json!({"sub": "x", "roles": "admin"}),
        json!({"sub": "x", "roles": ["ops", "admin"]}),
        json!({"sub": "x", "realm_access": {"roles": ["admin"]}}),
    ] {
        let reply = gateway
            .get("/admin/policies", &Gateway::token(claims.clone()))
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{claims}");
    }
}

#[tokio::test]
async fn a_token_without_exp_is_refused() {
    let gateway = gateway().await;
    let token = toolgate::auth::mint_hs256(
        support::gateway::SECRET,
        json!({"sub": "forever", "roles": ["agent"]})
            .as_object()
            .expect("object"),
    )
    .expect("mint");
    let reply = gateway.get("/agents/tools", &token).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    let challenge = reply.header("www-authenticate").expect("challenge");
    assert!(challenge.contains("invalid_token"), "{challenge}");
    assert!(challenge.contains("exp"), "{challenge}");
}

/// A group with one selector, granted to every agent, over the base catalog plus GET tools
/// named `extra`.
async fn grant_selector_with(gateway: &Gateway, extra: &[&str], selector: Value) -> Vec<String> {
    let mut catalog = catalog();
    let tools = catalog["tools"].as_array_mut().expect("tools");
    for name in extra {
        tools
            .push(json!({"source_id": "crm", "operation_id": name, "name": name, "method": "GET"}));
    }
    catalog["groups"] = json!([{"id": "g-sel", "name": "selected", "selectors": [selector]}]);
    catalog["policies"][0]["allowed_group_ids"] = json!(["g-sel"]);
    gateway.put_catalog(catalog).await;
    gateway
        .tool_ids(json!({"sub": "a", "roles": ["agent"]}), "")
        .await
}

async fn grant_selector(gateway: &Gateway, selector: Value) -> Vec<String> {
    grant_selector_with(gateway, &[], selector).await
}

#[tokio::test]
async fn patterns_select_less_when_in_doubt() {
    let gateway = gateway().await;
    // `""` source and name patterns match only the empty value: nothing.
    assert!(
        grant_selector(&gateway, json!({"source_pattern": ""}))
            .await
            .is_empty()
    );
    assert!(
        grant_selector(&gateway, json!({"name_pattern": ""}))
            .await
            .is_empty()
    );
    // `""` path and method patterns are not applied.
    assert_eq!(
        grant_selector(&gateway, json!({"path_pattern": "", "method_pattern": ""}))
            .await
            .len(),
        4
    );
    // No globstar: `/**/items` needs two slashes around the run.
    assert!(
        grant_selector(&gateway, json!({"path_pattern": "/**/items"}))
            .await
            .is_empty()
    );
    assert_eq!(
        grant_selector(&gateway, json!({"path_pattern": "/*items"})).await,
        ["crm:list_orders"]
    );
}

#[tokio::test]
async fn question_mark_is_one_character_in_selectors_and_tool_filters() {
    let gateway = gateway().await;
    let names = ["\u{e9}tape_item", "\u{212a}elvin_x"];
    for name in names {
        gateway
            .admin_send(
                Method::POST,
                "/admin/tools",
                Some(json!({"source_id": "crm", "operation_id": name, "name": name, "method": "GET"})),
            )
            .await
            .expect(StatusCode::CREATED);
    }
    let agent = json!({"sub": "a", "roles": ["agent"]});
    assert_eq!(
        gateway.tool_ids(agent.clone(), "?tools=%3Ftape_item").await,
        ["crm:\u{e9}tape_item"]
    );
    assert_eq!(
        gateway.tool_ids(agent.clone(), "?tools=%3Felvin_*").await,
        ["crm:\u{212a}elvin_x"]
    );
    assert_eq!(
        grant_selector_with(&gateway, &names, json!({"name_pattern": "?tape_*"})).await,
        ["crm:\u{e9}tape_item"]
    );
    // Case folding is ASCII: `k*` does not select the Kelvin sign.
    assert!(
        grant_selector_with(&gateway, &names, json!({"name_pattern": "k*"}))
            .await
            .is_empty()
    );
    assert_eq!(
        grant_selector_with(&gateway, &names, json!({"name_pattern": "?elvin_*"})).await,
        ["crm:\u{212a}elvin_x"]
    );
}
