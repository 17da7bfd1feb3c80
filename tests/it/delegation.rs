//! Delegation that only narrows, through the real server (docs/api.md, "Delegation"):
//! `POST /oauth/token` mints a child token from a parent's, and the child sees its parent's
//! live manifest within its scope on every transport (REST, SSE, MCP list and call, AuthZEN),
//! loses what a policy on `act` takes from sub-agents, never passes the admin rule, expires
//! with its parent, and cannot be forged; the keys are published at `/.well-known/jwks.json`
//! and kept in the store across a restart.

use crate::support;

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::gateway::{Gateway, config, hs_settings};
use support::keys::TestKey;
use support::mcp_rpc::{call, initialize};
use support::sse::SseClient;

const PUBLIC_URL: &str = "https://gateway.example.com";
const WAIT: Duration = Duration::from_secs(5);
const EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS: &str = "urn:ietf:params:oauth:token-type:access_token";

fn catalog() -> Value {
    json!({
        "sources": [{"id": "crm", "name": "crm", "type": "manual"}],
        "tools": [
            {"source_id": "crm", "operation_id": "read", "name": "read", "method": "GET"},
            {"source_id": "crm", "operation_id": "write", "name": "write", "method": "POST"},
            {"source_id": "crm", "operation_id": "spawn_agents", "name": "spawn_agents",
             "method": "PUT"}
        ],
        "groups": [
            {"id": "g-read", "name": "reads", "selectors": [{"method_pattern": "GET"}]},
            {"id": "g-write", "name": "writes", "selectors": [{"method_pattern": "POST"}]},
            {"id": "g-coord", "name": "coordination",
             "selectors": [{"name_pattern": "spawn_agents"}]}
        ],
        "policies": [
            {"id": "p-agent", "name": "agents",
             "allowed_group_ids": ["g-read", "g-write", "g-coord"],
             "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "agent"}]},
            {"id": "p-sub-agents", "name": "sub-agents coordinate nothing", "priority": 10,
             "denied_group_ids": ["g-coord"],
             "claim_matchers": [{"json_path": "act", "operator": "exists"}]}
        ]
    })
}

/// A gateway with the catalog, an `openapi` source `api` (an echo server, tool `api:whoami`
/// in `g-read`), and its data dir.
async fn gateway_in(dir: &std::path::Path) -> Gateway {
    let mut settings = config(dir, hs_settings());
    settings.mcp.public_url = Some(PUBLIC_URL.to_owned());
    let gateway = Gateway::start_with(settings).await;
    gateway.put_catalog(catalog()).await;
    let echo = support::upstream::echo_server().await;
    let spec = json!({
        "openapi": "3.1.0", "info": {"title": "api", "version": "1"},
        "servers": [{"url": echo}],
        "paths": {"/whoami": {"get": {"operationId": "whoami",
                                      "responses": {"200": {"description": "ok"}}}}}
    });
    gateway
        .admin_send(
            Method::POST,
            "/admin/sources",
            Some(json!({"id": "api", "name": "api", "type": "openapi",
                        "config": {"spec": spec}})),
        )
        .await
        .expect(StatusCode::CREATED);
    gateway
}

fn agent(sub: &str) -> String {
    Gateway::token(json!({"sub": sub, "roles": ["agent"]}))
}

/// `POST /oauth/token` with `fields`: the status and the JSON answer.
async fn exchange(gateway: &Gateway, fields: &[(&str, &str)]) -> (StatusCode, Value) {
    let body = serde_urlencoded::to_string(fields).expect("a form");
    let response = gateway
        .client
        .post(format!("{}/oauth/token", gateway.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .expect("sent");
    let status = response.status();
    assert_eq!(
        response
            .headers()
            .get("cache-control")
            .and_then(|v| v.to_str().ok()),
        Some("no-store")
    );
    let body = response.bytes().await.expect("a body");
    (status, serde_json::from_slice(&body).expect("JSON"))
}

/// The standard exchange of `subject` for a child keeping `scope`: the status and answer.
async fn ask(gateway: &Gateway, subject: &str, scope: &str) -> (StatusCode, Value) {
    let fields = [
        ("grant_type", EXCHANGE),
        ("subject_token", subject),
        ("subject_token_type", ACCESS),
        ("scope", scope),
    ];
    exchange(gateway, &fields).await
}

/// A child of `parent` keeping `scope`; panics unless issued.
async fn delegate(gateway: &Gateway, parent: &str, scope: &str) -> (String, Value) {
    let (status, body) = ask(gateway, parent, scope).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    (
        body["access_token"].as_str().expect("a token").to_owned(),
        body,
    )
}

async fn manifest(gateway: &Gateway, token: &str) -> Vec<String> {
    let reply = gateway
        .get("/agents/tools", token)
        .await
        .expect(StatusCode::OK);
    reply.json()["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|entry| entry["tool_id"].as_str().expect("id").to_owned())
        .collect()
}

async fn decision(gateway: &Gateway, token: &str, tool: &str) -> bool {
    let body = json!({"action": {"name": "call"}, "resource": {"type": "tool", "id": tool}});
    let reply = gateway
        .request(
            Method::POST,
            "/access/v1/evaluation",
            Some(token),
            Some(body),
        )
        .await
        .expect(StatusCode::OK);
    reply.json()["decision"].as_bool().expect("a decision")
}

fn payload(token: &str) -> Value {
    let part = token.split('.').nth(1).expect("a payload");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).expect("base64")).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_sees_its_parent_within_its_scope_on_every_transport() {
    let dir = tempfile::tempdir().expect("dir");
    let gateway = gateway_in(dir.path()).await;
    let parent = agent("orchestrator");
    assert_eq!(
        manifest(&gateway, &parent).await,
        ["api:whoami", "crm:read", "crm:spawn_agents", "crm:write"]
    );
    let (child, issued) = delegate(
        &gateway,
        &parent,
        "group:g-read tool:crm:spawn_agents tool:crm:nothing",
    )
    .await;
    // What names nothing the parent sees is dropped from the scope.
    assert_eq!(issued["scope"], "group:g-read tool:crm:spawn_agents");
    assert_eq!(issued["token_type"], "Bearer");
    assert_eq!(issued["issued_token_type"], ACCESS);
    let claims = payload(&child);
    assert_eq!(claims["iss"], PUBLIC_URL);
    assert_eq!(claims["sub"], "orchestrator");
    assert_eq!(claims["act"], json!({"sub": "orchestrator"}));
    assert!(claims["exp"].as_i64() <= payload(&parent)["exp"].as_i64());

    // REST: the scope, less what sub-agents are denied (spawn_agents, on `act`).
    let read = ["api:whoami", "crm:read"];
    assert_eq!(manifest(&gateway, &child).await, read);
    // Decisions.
    assert!(decision(&gateway, &child, "crm:read").await);
    assert!(!decision(&gateway, &child, "crm:write").await);
    assert!(!decision(&gateway, &child, "crm:spawn_agents").await);
    assert!(decision(&gateway, &parent, "crm:write").await);
    let search = gateway
        .request(
            Method::POST,
            "/access/v1/search/resource",
            Some(&child),
            Some(json!({"action": {"name": "call"}, "resource": {"type": "tool"}})),
        )
        .await
        .expect(StatusCode::OK)
        .json();
    let found: Vec<&str> = search["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["id"].as_str().expect("id"))
        .collect();
    assert_eq!(found, read);
    // MCP: listed, called, and a tool outside the scope is unknown.
    let (session, _) = initialize(&gateway, &child, "2025-11-25").await;
    let listed = call(&gateway, &child, &session, "tools/list", json!({})).await;
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["api.whoami", "crm.read"]);
    let called = call(
        &gateway,
        &child,
        &session,
        "tools/call",
        json!({"name": "api.whoami", "arguments": {}}),
    )
    .await;
    assert_eq!(called["result"]["isError"], false, "{called}");
    let echoed = called["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    assert!(
        !echoed.contains(&child),
        "the child's token never goes upstream"
    );
    let refused = call(
        &gateway,
        &child,
        &session,
        "tools/call",
        json!({"name": "crm.write", "arguments": {}}),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");

    // SSE: a policy change that takes a tool from the parent takes it from the child at once.
    let mut stream = SseClient::connect(&gateway, "/agents/tools/stream", &child).await;
    assert_eq!(stream.event(WAIT).await.event, "tools");
    gateway
        .admin_send(
            Method::POST,
            "/admin/groups",
            Some(json!({
            "id": "g-withdrawn", "name": "withdrawn", "explicit_tool_ids": ["crm:read"]})),
        )
        .await
        .expect(StatusCode::CREATED);
    gateway
        .admin_send(
            Method::POST,
            "/admin/policies",
            Some(json!({
            "id": "p-withdraw", "name": "withdraw", "priority": 50,
            "denied_group_ids": ["g-withdrawn"],
            "claim_matchers": [{"json_path": "roles", "operator": "contains",
                                "value": "agent"}]})),
        )
        .await
        .expect(StatusCode::CREATED);
    let changed = stream.event(WAIT).await;
    assert_eq!(changed.event, "tools_changed");
    assert_eq!(changed.json()["removed"], json!(["crm:read"]));
    assert!(
        !manifest(&gateway, &parent)
            .await
            .contains(&"crm:read".to_owned())
    );
    assert_eq!(manifest(&gateway, &child).await, ["api:whoami"]);
    assert!(!decision(&gateway, &child, "crm:read").await);
}

#[tokio::test]
async fn chains_narrow_again_stop_at_the_maximum_depth_and_never_pass_the_admin_rule() {
    let dir = tempfile::tempdir().expect("dir");
    let gateway = gateway_in(dir.path()).await;
    let parent = agent("orchestrator");
    let (child, _) = delegate(&gateway, &parent, "group:g-read group:g-write").await;
    assert_eq!(
        manifest(&gateway, &child).await,
        ["api:whoami", "crm:read", "crm:write"]
    );
    // A grandchild: the intersection again, whatever it asks for.
    let (grandchild, issued) =
        delegate(&gateway, &child, "tool:crm:write tool:crm:spawn_agents").await;
    assert_eq!(
        issued["scope"], "tool:crm:write",
        "spawn_agents is not the child's"
    );
    assert_eq!(manifest(&gateway, &grandchild).await, ["crm:write"]);
    let claims = payload(&grandchild);
    assert_eq!(
        claims["act"],
        json!({"sub": "orchestrator", "act": {"sub": "orchestrator"}})
    );
    // Depth 3 is past the default maximum of 2.
    let (status, body) = ask(&gateway, &grandchild, "tool:crm:write").await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_request"))
    );
    assert!(
        body["error_description"]
            .as_str()
            .expect("text")
            .contains("depth 3"),
        "{body}"
    );

    // An admin's child is no admin.
    let admin = Gateway::admin();
    gateway
        .get("/admin/catalog", &admin)
        .await
        .expect(StatusCode::OK);
    let admin_with_tools = Gateway::token(json!({"sub": "root", "roles": ["admin", "agent"]}));
    let (admin_child, _) = delegate(&gateway, &admin_with_tools, "group:g-read").await;
    gateway
        .get("/admin/catalog", &admin_child)
        .await
        .expect(StatusCode::FORBIDDEN);
    gateway
        .get("/agents/tools?include_disabled=true", &admin_child)
        .await
        .expect(StatusCode::FORBIDDEN);

    // The admin preview of the child's claims shows the chain.
    let mut evaluated = payload(&child)["toolgate_delegation"]["claims"].clone();
    evaluated["act"] = payload(&child)["act"].clone();
    evaluated["toolgate_delegation"] = json!({"scopes": [["group:g-read", "group:g-write"]]});
    let preview = gateway
        .admin_send(
            Method::POST,
            "/admin/preview",
            Some(json!({"claims": evaluated})),
        )
        .await
        .expect(StatusCode::OK)
        .json();
    let ids: Vec<&str> = preview["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|e| e["tool_id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["api:whoami", "crm:read", "crm:write"]);
    assert_eq!(
        preview["explanation"]["delegation"],
        json!({"depth": 1, "scopes": [["group:g-read", "group:g-write"]], "removed": []})
    );
}

#[tokio::test]
async fn bad_requests_get_oauth_errors() {
    let dir = tempfile::tempdir().expect("dir");
    let gateway = gateway_in(dir.path()).await;
    let parent = agent("orchestrator");
    let base = [
        ("grant_type", EXCHANGE),
        ("subject_token", parent.as_str()),
        ("subject_token_type", ACCESS),
    ];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut fields: Vec<(&str, &str)> = base.to_vec();
        for (name, value) in extra {
            fields.retain(|(n, _)| n != name);
            fields.push((name, value));
        }
        fields
    };
    for (fields, code) in [
        (
            with(&[("scope", "tool:crm:nothing group:g-none")]),
            "invalid_scope",
        ),
        (with(&[("scope", "admin:everything")]), "invalid_scope"),
        (with(&[("scope", "   ")]), "invalid_scope"),
        (with(&[]), "invalid_request"),
        (
            with(&[
                ("scope", "tool:crm:read"),
                ("grant_type", "client_credentials"),
            ]),
            "unsupported_grant_type",
        ),
        (
            with(&[("scope", "tool:crm:read"), ("subject_token", "not.a.token")]),
            "invalid_grant",
        ),
        (
            with(&[("scope", "tool:crm:read"), ("subject_token_type", "urn:x")]),
            "invalid_request",
        ),
        (
            with(&[("scope", "tool:crm:read"), ("expires_in", "-5")]),
            "invalid_request",
        ),
    ] {
        let (status, body) = exchange(&gateway, &fields).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{fields:?}: {body}");
        assert_eq!(body["error"], code, "{fields:?}: {body}");
        assert!(body["error_description"].is_string());
    }
    // Another grant is that whatever else is (not) sent; forms past their bounds are refused.
    let (status, body) = exchange(&gateway, &[("grant_type", "password")]).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("unsupported_grant_type"))
    );
    let many: Vec<(String, String)> = (0..17).map(|i| (format!("p{i}"), String::new())).collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let (status, body) = exchange(&gateway, &many).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_request"))
    );
    let huge = "x".repeat(70 * 1024);
    let (status, body) = exchange(
        &gateway,
        &with(&[("scope", "tool:crm:read")])
            .into_iter()
            .chain([("padding", huge.as_str())])
            .collect::<Vec<_>>(),
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_request"))
    );
    // A token without the role sees nothing, so can delegate nothing.
    let stranger = Gateway::token(json!({"sub": "x"}));
    let (status, body) = ask(&gateway, &stranger, "tool:crm:read").await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_scope"))
    );
    // expires_in is honoured below the parent's expiry, never beyond it.
    let (_, short) = exchange(
        &gateway,
        &with(&[("scope", "tool:crm:read"), ("expires_in", "60")]),
    )
    .await;
    assert_eq!(short["expires_in"], 60);
    let (_, long) = exchange(
        &gateway,
        &with(&[("scope", "tool:crm:read"), ("expires_in", "999999")]),
    )
    .await;
    assert!(
        long["expires_in"].as_u64().expect("seconds") <= 600,
        "{long}"
    );
    let metrics = gateway.get("/metrics", &parent).await;
    let metrics = String::from_utf8_lossy(&metrics.body);
    assert!(
        metrics.contains(r#"toolgate_delegations_total{outcome="issued"} 2"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"toolgate_delegations_total{outcome="invalid_scope"} 4"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn forged_and_edited_tokens_are_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let gateway = gateway_in(dir.path()).await;
    let (child, _) = delegate(&gateway, &agent("orchestrator"), "tool:crm:read").await;
    assert_eq!(manifest(&gateway, &child).await, ["crm:read"]);
    let header = child.split('.').next().expect("header").to_owned();
    let signature = child.split('.').nth(2).expect("signature").to_owned();
    let kid = serde_json::from_slice::<Value>(&URL_SAFE_NO_PAD.decode(&header).expect("b64"))
        .expect("JSON")["kid"]
        .as_str()
        .expect("kid")
        .to_owned();
    let edited = |edit: &dyn Fn(&mut Value)| {
        let mut claims = payload(&child);
        edit(&mut claims);
        let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).expect("JSON"));
        format!("{header}.{body}.{signature}")
    };
    let refused = |token: String, why: &'static str| {
        let gateway = &gateway;
        async move {
            let reply = gateway.get("/agents/tools", &token).await;
            assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{why}");
        }
    };
    // The scope widened, `act` removed or widened, the claims it was made from changed.
    refused(
        edited(&|c| c["toolgate_delegation"]["scopes"] = json!([["group:g-write"]])),
        "a scope edited",
    )
    .await;
    refused(
        edited(&|c| c["scope"] = json!("group:g-write")),
        "the scope claim edited",
    )
    .await;
    refused(
        edited(&|c| {
            c.as_object_mut().expect("object").remove("act");
        }),
        "act removed",
    )
    .await;
    refused(
        edited(&|c| c["act"] = json!({"sub": "someone-else"})),
        "act changed",
    )
    .await;
    refused(
        edited(&|c| c["toolgate_delegation"]["claims"]["roles"] = json!(["admin"])),
        "the origin claims edited",
    )
    .await;
    // The same claims signed by another key, under toolgate's kid and under its own.
    let other = TestKey::p256("intruder");
    let claims = payload(&child);
    refused(
        other.sign_with_kid(Algorithm::ES256, Some(&kid), &claims),
        "another key, our kid",
    )
    .await;
    refused(
        other.sign_with_kid(Algorithm::ES256, Some("intruder"), &claims),
        "another key",
    )
    .await;
    // An HS256 token (signed with the gateway's own accepted secret) claiming toolgate's
    // issuer, or carrying the delegation claim, or naming toolgate's kid.
    let mut hs = claims.clone();
    hs["roles"] = json!(["agent"]);
    refused(Gateway::token(hs.clone()), "HS256 with toolgate's issuer").await;
    let mut carrying = hs.clone();
    carrying["iss"] = json!("someone");
    refused(Gateway::token(carrying), "HS256 with the delegation claim").await;
    let mut header = jsonwebtoken::Header::new(Algorithm::HS256);
    header.kid = Some(kid.clone());
    let confused = jsonwebtoken::encode(
        &header,
        &json!({"sub": "x", "roles": ["agent"], "exp": support::unix_now() + 60}),
        &jsonwebtoken::EncodingKey::from_secret(support::gateway::SECRET.as_bytes()),
    )
    .expect("signed");
    refused(confused, "HS256 under toolgate's kid").await;
    // And the real one still works.
    assert_eq!(manifest(&gateway, &child).await, ["crm:read"]);
}

#[tokio::test]
async fn keys_are_published_and_kept_across_a_restart() {
    let dir = tempfile::tempdir().expect("dir");
    let mut gateway = gateway_in(dir.path()).await;
    let (child, _) = delegate(&gateway, &agent("orchestrator"), "tool:crm:read").await;
    let jwks = gateway
        .request(Method::GET, "/.well-known/jwks.json", None, None)
        .await
        .expect(StatusCode::OK)
        .json();
    let key = &jwks["keys"][0];
    assert_eq!(
        (key["kty"].as_str(), key["alg"].as_str()),
        (Some("EC"), Some("ES256"))
    );
    assert!(key.get("d").is_none(), "no private part");
    // A relying party verifies a child with the published key.
    let decoding = DecodingKey::from_jwk(&serde_json::from_value(key.clone()).expect("a JWK"))
        .expect("usable");
    let mut validation = Validation::new(Algorithm::ES256);
    validation.set_issuer(&[PUBLIC_URL]);
    validation.validate_aud = false;
    jsonwebtoken::decode::<Value>(&child, &decoding, &validation).expect("verifies");

    gateway.stop().await;
    let gateway = Gateway::start_with({
        let mut settings = config(dir.path(), hs_settings());
        settings.mcp.public_url = Some(PUBLIC_URL.to_owned());
        settings
    })
    .await;
    assert_eq!(
        manifest(&gateway, &child).await,
        ["crm:read"],
        "the same key after a restart"
    );
    let again = gateway
        .request(Method::GET, "/.well-known/jwks.json", None, None)
        .await
        .json();
    assert_eq!(again["keys"], jwks["keys"]);
}

/// `POST /admin/impact` over the claim sets served recently: a delegated token is remembered
/// with its chain, and is told it loses what its parent loses within its scope, and nothing
/// when the parent loses what the child never had.
#[tokio::test]
async fn the_impact_of_a_change_on_a_delegated_token_is_its_own() {
    let dir = tempfile::tempdir().expect("dir");
    let gateway = gateway_in(dir.path()).await;
    let parent = agent("orchestrator");
    let (child, _) = delegate(&gateway, &parent, "group:g-read").await;
    manifest(&gateway, &parent).await;
    manifest(&gateway, &child).await;
    let impact = |allowed: Value| {
        let body = json!({"change": {"collection": "policies", "id": "p-agent", "op": "patch",
                                     "body": {"allowed_group_ids": allowed}}});
        let gateway = &gateway;
        async move {
            gateway
                .admin_send(Method::POST, "/admin/impact", Some(body))
                .await
                .expect(StatusCode::OK)
                .json()
        }
    };
    let lost = |report: &Value, delegated: bool| -> Option<Vec<String>> {
        report["seen"]
            .as_array()
            .expect("seen")
            .iter()
            .find(|seen| seen["claims"].get("toolgate_delegation").is_some() == delegated)
            .map(|seen| {
                seen["lost"]
                    .as_array()
                    .expect("lost")
                    .iter()
                    .map(|id| id.as_str().expect("id").to_owned())
                    .collect()
            })
    };
    // Reads taken from agents: both lose them.
    let report = impact(json!(["g-write", "g-coord"])).await;
    assert_eq!(
        lost(&report, false),
        Some(vec!["api:whoami".into(), "crm:read".into()])
    );
    assert_eq!(
        lost(&report, true),
        Some(vec!["api:whoami".into(), "crm:read".into()])
    );
    // Writes taken: only the parent, the child never had them.
    let report = impact(json!(["g-read", "g-coord"])).await;
    assert_eq!(lost(&report, false), Some(vec!["crm:write".into()]));
    assert_eq!(lost(&report, true), None, "{report}");
}

/// A leaked delegated token is revoked as any token is, by a deny on its `jti`: that token and
/// every token delegated from it lose everything; its parent and its sibling keep theirs.
#[tokio::test]
async fn a_deny_on_a_childs_jti_revokes_it_and_its_descendants_only() {
    let dir = tempfile::tempdir().expect("dir");
    let gateway = gateway_in(dir.path()).await;
    let parent = agent("orchestrator");
    let (leaked, _) = delegate(&gateway, &parent, "group:g-read").await;
    let (sibling, _) = delegate(&gateway, &parent, "group:g-read").await;
    let (grandchild, _) = delegate(&gateway, &leaked, "tool:crm:read").await;
    let jti = payload(&leaked)["jti"].as_str().expect("a jti").to_owned();
    gateway
        .admin_send(
            Method::POST,
            "/admin/groups",
            Some(json!(
            {"id": "g-everything", "name": "everything", "selectors": [{}]})),
        )
        .await
        .expect(StatusCode::CREATED);
    gateway
        .admin_send(
            Method::POST,
            "/admin/policies",
            Some(json!({
            "id": "p-revoked", "name": "leaked token", "priority": 1000,
            "denied_group_ids": ["g-everything"],
            "claim_matchers": [{"json_path": "jti", "operator": "equals", "value": jti}]})),
        )
        .await
        .expect(StatusCode::CREATED);
    assert_eq!(manifest(&gateway, &leaked).await, Vec::<String>::new());
    assert_eq!(manifest(&gateway, &grandchild).await, Vec::<String>::new());
    assert_eq!(
        manifest(&gateway, &sibling).await,
        ["api:whoami", "crm:read"]
    );
    assert_eq!(
        manifest(&gateway, &parent).await,
        ["api:whoami", "crm:read", "crm:spawn_agents", "crm:write"]
    );
}

/// A child token carries, of the claims the chain started from, only what the policies read
/// (and `sub`, `aud`): a sub-agent does not read its parent's e-mail address or groups out of
/// its own token. A policy written later on a claim the token does not carry cannot be decided
/// for it: it then holds nothing, never what that policy would have taken away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_carries_only_the_claims_the_policies_read() {
    let dir = tempfile::tempdir().expect("dir");
    let gateway = gateway_in(dir.path()).await;
    let parent = Gateway::token(json!({"sub": "orchestrator", "roles": ["agent"],
        "email": "alice@corp.example", "groups": ["finance", "hr"], "aud": "toolgate"}));
    let (child, _) = delegate(&gateway, &parent, "group:g-read").await;
    let (grandchild, _) = delegate(&gateway, &child, "tool:crm:read").await;
    for token in [&child, &grandchild] {
        let carried = &payload(token)["toolgate_delegation"];
        assert_eq!(
            carried["claims"],
            json!({"sub": "orchestrator", "roles": ["agent"], "aud": "toolgate"}),
            "{carried}"
        );
        let text = payload(token).to_string();
        assert!(
            !text.contains("alice@corp.example") && !text.contains("finance"),
            "{text}"
        );
    }
    assert_eq!(manifest(&gateway, &child).await, ["api:whoami", "crm:read"]);
    assert_eq!(manifest(&gateway, &grandchild).await, ["crm:read"]);

    // A deny on `email`, which the children do not carry: the parent loses the reads, and the
    // children, which cannot be told apart from any other holder of their claims, hold nothing.
    gateway
        .admin_send(
            Method::POST,
            "/admin/policies",
            Some(
                json!({"id": "p-alice", "name": "no reads for alice", "priority": 100,
                "denied_group_ids": ["g-read"],
                "claim_matchers": [{"json_path": "email", "operator": "equals",
                                    "value": "alice@corp.example"}]}),
            ),
        )
        .await
        .expect(StatusCode::CREATED);
    assert_eq!(
        manifest(&gateway, &parent).await,
        ["crm:spawn_agents", "crm:write"]
    );
    for token in [&child, &grandchild] {
        assert_eq!(manifest(&gateway, token).await, Vec::<String>::new());
        assert!(!decision(&gateway, token, "crm:read").await);
    }
    // A child made now carries `email` and is decided as its parent is.
    let (status, body) = ask(&gateway, &parent, "group:g-read").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"], "invalid_scope");
    let (writer, _) = delegate(&gateway, &parent, "group:g-write").await;
    assert_eq!(
        payload(&writer)["toolgate_delegation"]["claims"]["email"],
        "alice@corp.example"
    );
    assert_eq!(manifest(&gateway, &writer).await, ["crm:write"]);
}

/// A delegated token's times are read from the gateway's clock, the one its verifier checks
/// them against: on a clock two minutes ahead of the system's, `iat` is the clock's, and once
/// the clock passes the token's `exp` and the verifier's leeway for clock skew (30 s) the
/// gateway refuses it, without waiting for it.
#[tokio::test]
async fn delegated_tokens_are_stamped_and_expire_by_the_gateways_clock() {
    let dir = tempfile::tempdir().expect("dir");
    let clock = std::sync::Arc::new(toolgate::clock::ManualClock::at(chrono::Utc::now()));
    let gateway = Gateway::start_clocked(config(dir.path(), hs_settings()), clock.clone()).await;
    gateway.put_catalog(catalog()).await;
    let parent = agent("orchestrator");
    clock.advance(Duration::from_secs(120));
    let now = toolgate::clock::Clock::unix_now(clock.as_ref());
    let (child, issued) = delegate(&gateway, &parent, "group:g-read").await;
    let claims = payload(&child);
    assert_eq!(claims["iat"].as_i64(), Some(now), "{claims}");
    let exp = claims["exp"].as_i64().expect("exp");
    assert_eq!(
        exp - now,
        issued["expires_in"].as_i64().expect("expires_in")
    );
    assert_eq!(manifest(&gateway, &child).await, ["crm:read"]);
    let lifetime = u64::try_from(exp - now).expect("ahead");
    clock.advance(Duration::from_secs(lifetime + 29));
    assert_eq!(
        manifest(&gateway, &child).await,
        ["crm:read"],
        "within the leeway"
    );
    clock.advance(Duration::from_secs(2));
    gateway
        .get("/agents/tools", &child)
        .await
        .expect(StatusCode::UNAUTHORIZED);
}
