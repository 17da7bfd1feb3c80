//! `/mcp` on the wire, over real HTTP with real signed tokens: sessions and who they answer to,
//! revision negotiation, the stateless 2026-07-28 checks, the 401 challenge and the
//! protected-resource document, `tools/list` (the REST manifest, same order, paged), the
//! notification streams of both eras (told exactly when the caller's manifest changes, and
//! not otherwise), origins and admin-only options. The official SDK clients are driven in
//! `mcp_clients.rs`.

use crate::support;

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::gateway::{Gateway, config, hs_settings};
use support::mcp_rpc::{call, initialize, post, request};
use support::sse::{Item, Next, SseClient};

const WAIT: Duration = Duration::from_secs(5);
const QUIET: Duration = Duration::from_millis(600);

fn catalog() -> Value {
    json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual"},
                    {"id": "crm", "name": "crm", "type": "manual"}],
        "tools": [
            {"source_id": "billing", "operation_id": "list_invoices", "name": "list_invoices",
             "method": "GET", "tags": ["read-only"]},
            {"source_id": "billing", "operation_id": "refund", "name": "refund", "method": "POST",
             "tags": ["destructive"]},
            {"source_id": "crm", "operation_id": "get customer", "name": "get_customer",
             "method": "GET"},
            {"source_id": "crm", "operation_id": "purge", "name": "purge", "enabled": false}
        ],
        "groups": [
            {"id": "g-read", "name": "reads", "selectors": [{"method_pattern": "GET"}]},
            {"id": "g-all", "name": "all", "selectors": [{}]}
        ],
        "policies": [
            {"id": "p-read", "name": "readers", "allowed_group_ids": ["g-read"],
             "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "reader"}]},
            {"id": "p-staff", "name": "staff", "priority": 10, "allowed_group_ids": ["g-all"],
             "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "staff"}]}
        ]
    })
}

async fn gateway_with(page_size: usize) -> Gateway {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = config(dir.path(), hs_settings());
    config.mcp.page_size = page_size;
    config.jwt_issuer = Some("https://idp.example.com/realms/agents".to_owned());
    let gateway = Gateway::start_with(config).await;
    std::mem::forget(dir); // the gateway's data lives for the test process
    put_catalog(&gateway, catalog()).await;
    gateway
}

async fn put_catalog(gateway: &Gateway, catalog: Value) {
    gateway
        .request(Method::PUT, "/admin/catalog", Some(&admin()), Some(catalog))
        .await
        .expect(StatusCode::OK);
}

/// An admin (and staff) token of the configured issuer.
fn admin() -> String {
    token("admin-1", &["admin", "staff"])
}

fn token(sub: &str, roles: &[&str]) -> String {
    Gateway::token(json!({"sub": sub, "roles": roles,
                          "iss": "https://idp.example.com/realms/agents"}))
}

fn reader() -> String {
    token("agent-r", &["reader"])
}

/// `DELETE /mcp` of `session` with `token`: the status.
async fn end_session(gateway: &Gateway, token: &str, session: &str) -> StatusCode {
    gateway
        .client
        .delete(format!("{}/mcp", gateway.base))
        .bearer_auth(token)
        .header("mcp-session-id", session)
        .send()
        .await
        .expect("sent")
        .status()
}

/// The headers of a 2026-07-28 request.
fn modern(method: &'static str) -> [(&'static str, &'static str); 2] {
    [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ]
}

fn envelope(mut params: Value) -> Value {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}});
    params
}

/// Every tool of `tools/list`, following cursors: (name, tool id) in order.
async fn list_all(gateway: &Gateway, token: &str, session: &str) -> Vec<(String, String)> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..20 {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let answer = call(gateway, token, session, "tools/list", params).await;
        let result = &answer["result"];
        for tool in result["tools"].as_array().expect("tools") {
            tools.push((
                tool["name"].as_str().expect("name").to_owned(),
                tool["_meta"]["toolgate/tool_id"]
                    .as_str()
                    .expect("id")
                    .to_owned(),
            ));
        }
        match result.get("nextCursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_owned()),
            None => return tools,
        }
    }
    panic!("tools/list never ended");
}

#[tokio::test]
async fn initialize_negotiates_a_revision_and_opens_a_session_of_the_caller() {
    let gateway = gateway_with(100).await;
    let (_, result) = initialize(&gateway, &reader(), "2025-06-18").await;
    assert_eq!(result["protocolVersion"], "2025-06-18");
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(result["serverInfo"]["name"], "toolgate");
    for unknown in ["2099-01-01", "2024-11-05", "2026-07-28"] {
        let (_, result) = initialize(&gateway, &reader(), unknown).await;
        assert_eq!(
            result["protocolVersion"], "2025-11-25",
            "{unknown}: the newest revision with sessions is offered"
        );
    }
}

#[tokio::test]
async fn tools_list_is_the_rest_manifest_in_the_same_order_across_pages() {
    let gateway = gateway_with(1).await; // one tool per page
    for roles in [&["reader"][..], &["staff"][..], &["nobody"][..]] {
        let token = token("agent", roles);
        let (session, _) = initialize(&gateway, &token, "2025-11-25").await;
        let listed = list_all(&gateway, &token, &session).await;
        let rest: Vec<String> = gateway
            .get("/agents/tools", &token)
            .await
            .expect(StatusCode::OK)
            .json()["data"]
            .as_array()
            .expect("data")
            .iter()
            .map(|entry| entry["tool_id"].as_str().expect("id").to_owned())
            .collect();
        let ids: Vec<String> = listed.iter().map(|(_, id)| id.clone()).collect();
        assert_eq!(ids, rest, "{roles:?}");
    }
    let staff = token("agent-s", &["staff"]);
    let (session, _) = initialize(&gateway, &staff, "2025-11-25").await;
    assert_eq!(
        list_all(&gateway, &staff, &session).await,
        [
            (
                "billing.list_invoices".to_owned(),
                "billing:list_invoices".to_owned()
            ),
            ("billing.refund".to_owned(), "billing:refund".to_owned()),
            ("crm.get_customer".to_owned(), "crm:get customer".to_owned()),
        ],
        "names derived from ids; the disabled tool is not listed"
    );
    let answer = call(
        &gateway,
        &staff,
        &session,
        "tools/list",
        json!({"cursor": "nonsense"}),
    )
    .await;
    assert_eq!(answer["error"]["code"], -32602);
}

#[tokio::test]
async fn a_session_answers_only_to_its_own_subject_and_ends_when_deleted() {
    let gateway = gateway_with(100).await;
    let (session, _) = initialize(&gateway, &reader(), "2025-11-25").await;
    let headers = [("mcp-session-id", session.as_str())];
    let other = token("agent-other", &["reader"]);
    let list = request(3, "tools/list", json!({}));
    post(&gateway, Some(&other), &headers, list.clone())
        .await
        .problem(404);
    post(&gateway, Some(&reader()), &[], list.clone())
        .await
        .problem(400);
    post(
        &gateway,
        Some(&reader()),
        &[("mcp-session-id", "nope")],
        list.clone(),
    )
    .await
    .problem(404);
    post(
        &gateway,
        Some(&reader()),
        &[
            ("mcp-session-id", &session),
            ("mcp-protocol-version", "2025-06-18"),
        ],
        list.clone(),
    )
    .await
    .problem(400);
    assert_eq!(
        end_session(&gateway, &other, &session).await,
        StatusCode::NOT_FOUND,
        "not another subject's to end"
    );
    assert_eq!(
        end_session(&gateway, &reader(), &session).await,
        StatusCode::NO_CONTENT
    );
    post(&gateway, Some(&reader()), &headers, list)
        .await
        .problem(404);
}

#[tokio::test]
async fn tokens_without_a_string_sub_cannot_use_or_end_each_others_sessions() {
    let gateway = gateway_with(100).await;
    let iss = "https://idp.example.com/realms/agents";
    let first = Gateway::token(json!({"roles": ["reader"], "tenant": "t1", "iss": iss}));
    let second = Gateway::token(json!({"roles": ["reader"], "tenant": "t2", "iss": iss}));
    let numeric = Gateway::token(json!({"sub": 7, "roles": ["reader"], "iss": iss}));
    let (session, _) = initialize(&gateway, &first, "2025-11-25").await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let list = request(3, "tools/list", json!({}));
    for other in [&second, &numeric] {
        post(&gateway, Some(other), &headers, list.clone())
            .await
            .problem(404);
        assert_eq!(
            end_session(&gateway, other, &session).await,
            StatusCode::NOT_FOUND
        );
    }
    // A new token of the same identity (another iat and exp) keeps the session.
    let later = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs()
        + 900;
    let refreshed = Gateway::token(
        json!({"roles": ["reader"], "tenant": "t1", "iss": iss, "exp": later, "jti": "j2"}),
    );
    assert_ne!(refreshed, first);
    post(&gateway, Some(&refreshed), &headers, list)
        .await
        .expect(StatusCode::OK);
}

#[tokio::test]
async fn every_request_needs_a_token_and_a_401_names_the_metadata_document() {
    let gateway = gateway_with(100).await;
    let (session, _) = initialize(&gateway, &reader(), "2025-11-25").await;
    let metadata = format!("{}/.well-known/oauth-protected-resource", gateway.base);
    let reply = post(
        &gateway,
        None,
        &[("mcp-session-id", &session)],
        request(2, "tools/list", json!({})),
    )
    .await;
    reply.problem(401);
    assert_eq!(
        reply.header("www-authenticate"),
        Some(format!("Bearer resource_metadata=\"{metadata}\"").as_str()),
        "a session never stands in for a token"
    );
    let reply = post(
        &gateway,
        Some("not-a-token"),
        &[],
        request(1, "initialize", json!({})),
    )
    .await;
    reply.problem(401);
    let challenge = reply.header("www-authenticate").expect("a challenge");
    assert!(
        challenge.starts_with(&format!(
            "Bearer resource_metadata=\"{metadata}\", error=\"invalid_token\""
        )),
        "{challenge}"
    );
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let document = gateway
            .request(Method::GET, path, None, None)
            .await
            .expect(StatusCode::OK)
            .json();
        assert_eq!(document["resource"], format!("{}/mcp", gateway.base));
        assert_eq!(
            document["authorization_servers"],
            json!(["https://idp.example.com/realms/agents"])
        );
        assert_eq!(document["bearer_methods_supported"], json!(["header"]));
    }
}

#[tokio::test]
async fn stateless_requests_pass_the_revision_checks_and_carry_cache_hints() {
    let gateway = gateway_with(100).await;
    let discover = post(
        &gateway,
        Some(&reader()),
        &modern("server/discover"),
        request(1, "server/discover", envelope(json!({}))),
    )
    .await
    .expect(StatusCode::OK)
    .json();
    let result = &discover["result"];
    assert_eq!(
        result["supportedVersions"],
        json!(["2025-06-18", "2025-11-25", "2026-07-28"])
    );
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(result["cacheScope"], "public", "the same for everyone");
    assert!(result["ttlMs"].is_u64());

    let listed = post(
        &gateway,
        Some(&reader()),
        &modern("tools/list"),
        request(2, "tools/list", envelope(json!({}))),
    )
    .await
    .expect(StatusCode::OK)
    .json();
    let result = &listed["result"];
    assert_eq!(result["cacheScope"], "private");
    assert_eq!(result["ttlMs"], 5000);
    assert_eq!(result["resultType"], "complete");
    let names: Vec<&str> = result["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| tool["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["billing.list_invoices", "crm.get_customer"]);

    // The checks, in order, each with its code and status.
    let cases = [
        (
            vec![("mcp-protocol-version", "2026-07-28")],
            envelope(json!({})),
            -32020,
            400,
        ),
        (
            modern("tools/list").to_vec(),
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
            -32602,
            400,
        ),
        (
            vec![
                ("mcp-protocol-version", "2027-01-01"),
                ("mcp-method", "tools/list"),
            ],
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2027-01-01",
                             "io.modelcontextprotocol/clientCapabilities": {}}}),
            -32022,
            400,
        ),
    ];
    for (headers, params, code, status) in cases {
        let reply = post(
            &gateway,
            Some(&reader()),
            &headers,
            request(3, "tools/list", params),
        )
        .await;
        assert_eq!(
            reply.status.as_u16(),
            status,
            "{}",
            String::from_utf8_lossy(&reply.body)
        );
        assert_eq!(reply.json()["error"]["code"], code);
    }
    let unknown = post(
        &gateway,
        Some(&reader()),
        &modern("resources/list"),
        request(4, "resources/list", envelope(json!({}))),
    )
    .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.json()["error"]["code"], -32601);
    // 2026-07-28 has no initialize.
    let initialize = post(
        &gateway,
        Some(&reader()),
        &modern("initialize"),
        request(5, "initialize", envelope(json!({}))),
    )
    .await;
    assert_eq!(initialize.status, StatusCode::NOT_FOUND);
    assert_eq!(initialize.json()["error"]["code"], -32601);
}

#[tokio::test]
async fn admin_options_need_an_admin_and_origins_are_checked() {
    let gateway = gateway_with(100).await;
    let disabled = envelope(json!({}));
    let mut disabled = disabled;
    disabled["_meta"]["toolgate/include_disabled"] = json!(true);
    let refused = post(
        &gateway,
        Some(&reader()),
        &modern("tools/list"),
        request(1, "tools/list", disabled.clone()),
    )
    .await
    .json();
    assert_eq!(refused["error"]["code"], -32602);
    let preview = post(
        &gateway,
        Some(&admin()),
        &modern("tools/list"),
        request(1, "tools/list", disabled),
    )
    .await
    .expect(StatusCode::OK)
    .json();
    let ids: Vec<&str> = preview["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| tool["_meta"]["toolgate/tool_id"].as_str().expect("id"))
        .collect();
    assert!(
        ids.contains(&"crm:purge"),
        "the admin preview shows the disabled tool: {ids:?}"
    );
    post(
        &gateway,
        Some(&reader()),
        &[("origin", "http://evil.example")],
        request(1, "initialize", json!({"protocolVersion": "2025-11-25"})),
    )
    .await
    .problem(403);
    // DNS rebinding: the page's own host as both Host and Origin proves nothing.
    post(
        &gateway,
        Some(&reader()),
        &[
            ("host", "evil.example.com"),
            ("origin", "http://evil.example.com"),
        ],
        request(1, "initialize", json!({"protocolVersion": "2025-11-25"})),
    )
    .await
    .problem(403);
    let own_origin = gateway.base.clone();
    post(
        &gateway,
        Some(&reader()),
        &[("origin", &own_origin)],
        request(1, "initialize", json!({"protocolVersion": "2025-11-25"})),
    )
    .await
    .expect(StatusCode::OK);
}

/// Opens the GET stream of `session`.
async fn open_stream(
    gateway: &Gateway,
    token: &str,
    session: &str,
    last: Option<&str>,
) -> SseClient {
    let mut request = gateway
        .client
        .get(format!("{}/mcp", gateway.base))
        .bearer_auth(token)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(last) = last {
        request = request.header("last-event-id", last);
    }
    let response = request.send().await.expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
    SseClient::from_response(response)
}

/// The next `tools/list_changed` notification's event id.
async fn list_changed(stream: &mut SseClient) -> Option<String> {
    let event = stream.event(WAIT).await;
    assert_eq!(
        event.json()["method"],
        "notifications/tools/list_changed",
        "{}",
        event.data
    );
    event.id
}

/// The catalog with `policy`'s allowed groups replaced.
fn with_allowed(policy: &str, groups: Value) -> Value {
    let mut catalog = catalog();
    for entry in catalog["policies"].as_array_mut().expect("policies") {
        if entry["id"] == policy {
            entry["allowed_group_ids"] = groups.clone();
        }
    }
    catalog
}

#[tokio::test]
async fn a_tool_whose_id_makes_a_listed_tools_mcp_name_is_refused_not_renamed() {
    let gateway = gateway_with(100).await;
    let (session, _) = initialize(&gateway, &reader(), "2025-11-25").await;
    let names = |listed: Value| -> Vec<String> {
        listed["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|tool| tool["name"].as_str().expect("a name").to_owned())
            .collect()
    };
    let before = names(call(&gateway, &reader(), &session, "tools/list", json!({})).await);
    assert!(
        before.contains(&"billing.list_invoices".to_owned()),
        "{before:?}"
    );
    let twin = json!({"id": "billing.list_invoices", "source_id": "billing",
                      "operation_id": "twin", "name": "twin", "method": "GET"});
    let problem = gateway
        .request(Method::POST, "/admin/tools", Some(&admin()), Some(twin))
        .await
        .problem(409);
    assert_eq!(problem["errors"][0]["field"], "id", "{problem}");
    assert!(
        problem["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("MCP name 'billing.list_invoices'")),
        "{problem}"
    );
    let after = names(call(&gateway, &reader(), &session, "tools/list", json!({})).await);
    assert_eq!(before, after, "no name moved");
}

#[tokio::test]
async fn a_new_title_of_a_listed_tool_is_a_list_change() {
    let gateway = gateway_with(100).await;
    let (session, _) = initialize(&gateway, &reader(), "2025-11-25").await;
    let mut stream = open_stream(&gateway, &reader(), &session, None).await;
    stream.event(WAIT).await; // priming
    let mut titled = catalog();
    titled["tools"][0]["title"] = json!("List invoices");
    put_catalog(&gateway, titled).await;
    list_changed(&mut stream).await.expect("an event id");
    let listed = call(&gateway, &reader(), &session, "tools/list", json!({})).await;
    let titles: Vec<&Value> = listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| &tool["title"])
        .collect();
    assert!(titles.contains(&&json!("List invoices")), "{listed}");
    // A title of a tool the reader does not see changes nothing for it.
    let mut hidden = catalog();
    hidden["tools"][0]["title"] = json!("List invoices");
    hidden["tools"][1]["title"] = json!("Refund");
    put_catalog(&gateway, hidden).await;
    stream.no_event(QUIET).await;
}

#[tokio::test]
async fn the_session_stream_tells_exactly_when_the_callers_manifest_changed() {
    let gateway = gateway_with(100).await;
    let (session, _) = initialize(&gateway, &reader(), "2025-11-25").await;
    let mut stream = open_stream(&gateway, &reader(), &session, None).await;
    let priming = stream.event(WAIT).await;
    assert!(priming.data.is_empty(), "a priming event has no data");
    let first = priming.id.expect("the priming event names the manifest");

    // Staff's manifest changes, the reader's does not: nothing is sent.
    put_catalog(&gateway, with_allowed("p-staff", json!(["g-read"]))).await;
    stream.no_event(QUIET).await;

    // The reader's manifest changes: one notification.
    put_catalog(&gateway, with_allowed("p-read", json!(["g-all"]))).await;
    let changed = list_changed(&mut stream).await.expect("an event id");
    assert_ne!(changed, first);
    stream.no_event(QUIET).await;

    // A client that resumes from an older manifest is told at once; from the current, not.
    let mut resumed = open_stream(&gateway, &reader(), &session, Some(&first)).await;
    assert!(resumed.event(WAIT).await.data.is_empty(), "priming first");
    assert_eq!(
        list_changed(&mut resumed).await.as_deref(),
        Some(changed.as_str())
    );
    let mut current = open_stream(&gateway, &reader(), &session, Some(&changed)).await;
    current.event(WAIT).await;
    current.no_event(QUIET).await;

    // Ending the session ends its streams.
    end_session(&gateway, &reader(), &session).await;
    loop {
        match stream.next(WAIT).await {
            Next::End => break,
            Next::Item(Item::Comment(_)) => continue,
            other => panic!("expected the stream to end, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_2026_subscription_is_acknowledged_and_stamped_with_its_id() {
    let gateway = gateway_with(100).await;
    let response = gateway
        .client
        .post(format!("{}/mcp", gateway.base))
        .bearer_auth(reader())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(
            serde_json::to_vec(&request(
                "7".parse().expect("7"),
                "subscriptions/listen",
                envelope(json!({"notifications": {"toolsListChanged": true,
                                                  "promptsListChanged": true}})),
            ))
            .expect("json"),
        )
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"],
        "text/event-stream",
        "the answer is the stream"
    );
    let mut stream = SseClient::from_response(response);
    let ack = stream.event(WAIT).await.json();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true}),
        "only what this server sends is acknowledged"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );

    put_catalog(&gateway, with_allowed("p-staff", json!(["g-read"]))).await;
    stream.no_event(QUIET).await;
    put_catalog(&gateway, with_allowed("p-read", json!(["g-all"]))).await;
    let event = stream.event(WAIT).await.json();
    assert_eq!(event["method"], "notifications/tools/list_changed");
    assert_eq!(
        event["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
}

#[tokio::test]
async fn calls_are_decided_first_and_a_manual_tool_says_it_cannot_run() {
    let gateway = gateway_with(100).await;
    let (session, _) = initialize(&gateway, &reader(), "2025-11-25").await;
    // Not in the reader's manifest, hidden, or no such tool: the same refusal, word for word
    // but for the name.
    for name in ["billing.refund", "crm.purge", "no.such.tool"] {
        let answer = call(
            &gateway,
            &reader(),
            &session,
            "tools/call",
            json!({"name": name, "arguments": {}}),
        )
        .await;
        assert_eq!(answer["error"]["code"], -32602, "{name}");
        assert_eq!(
            answer["error"]["message"],
            format!("unknown tool: '{name}'")
        );
    }
    let answer = call(
        &gateway,
        &reader(),
        &session,
        "tools/call",
        json!({"name": "billing.list_invoices", "arguments": []}),
    )
    .await;
    assert_eq!(
        answer["error"]["code"], -32602,
        "arguments must be an object"
    );
    let answer = call(
        &gateway,
        &reader(),
        &session,
        "tools/call",
        json!({"name": "billing.list_invoices"}),
    )
    .await;
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "{answer}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("manual")),
        "says why: {answer}"
    );
    let metrics = gateway
        .request(Method::GET, "/metrics", None, None)
        .await
        .expect(StatusCode::OK);
    let text = String::from_utf8_lossy(&metrics.body).into_owned();
    assert!(
        text.contains("toolgate_tool_calls_total{outcome=\"refused\"} 3"),
        "{text}"
    );
    assert!(
        text.contains("toolgate_tool_calls_total{outcome=\"not_executable\"} 1"),
        "{text}"
    );
}
