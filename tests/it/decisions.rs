//! The AuthZEN decision endpoints over real HTTP with real signed tokens: every request shape,
//! who may ask about whom, what a deny looks like, batches and their semantics, search paging,
//! discovery, malformed bodies, the deny-status setting, metrics; and a property test that a
//! decision is exactly membership in `GET /agents/tools` for the same token at the same
//! revision, that batches equal singles, and that a search finds exactly the listing.

use crate::support;
use crate::support::random_catalog;

use std::collections::BTreeSet;

use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};
use reqwest::{Method, StatusCode};
use serde_json::{Map, Value, json};
use support::gateway::{Gateway, Reply, config, hs_settings};
use support::scrape::Scrape;
use toolgate::domain::model::Catalog;
use toolgate::service::limits::{Budget, RateLimits};

const EVALUATION: &str = "/access/v1/evaluation";
const EVALUATIONS: &str = "/access/v1/evaluations";
const SEARCH: &str = "/access/v1/search/resource";

fn catalog() -> Value {
    json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual"}],
        "tools": [
            {"source_id": "billing", "operation_id": "list_invoices", "name": "list_invoices",
             "method": "GET", "available_in_states": ["research"]},
            {"source_id": "billing", "operation_id": "get_customer", "name": "get_customer", "method": "GET"},
            {"source_id": "billing", "operation_id": "refund", "name": "refund", "method": "POST"},
            {"source_id": "billing", "operation_id": "purge", "name": "purge", "method": "DELETE",
             "enabled": false}
        ],
        "groups": [
            {"id": "g-read", "name": "reads", "selectors": [{"method_pattern": "GET"}]},
            {"id": "g-all", "name": "all", "selectors": [{}]},
            {"id": "g-money", "name": "money", "explicit_tool_ids": ["billing:refund"]}
        ],
        "policies": [
            {"id": "p-read", "name": "readers", "allowed_group_ids": ["g-read"],
             "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "reader"}]},
            {"id": "p-staff", "name": "staff", "priority": 10, "allowed_group_ids": ["g-all"],
             "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "staff"}]},
            {"id": "p-no-money", "name": "sub-agents handle no money", "priority": 100,
             "denied_group_ids": ["g-money"],
             "claim_matchers": [{"json_path": "depth", "operator": "gte", "value": 1}]}
        ]
    })
}

async fn gateway() -> Gateway {
    let gateway = Gateway::start().await;
    gateway.put_catalog(catalog()).await;
    gateway
}

fn reader() -> String {
    Gateway::token(json!({"sub": "agent-r", "roles": ["reader"]}))
}

fn staff() -> String {
    Gateway::token(json!({"sub": "agent-s", "roles": ["staff"]}))
}

/// `{"action": {"name": "call"}, "resource": {"type": "tool", "id": tool}}` plus `extra`.
fn ask(tool: &str, extra: Value) -> Value {
    let mut body = json!({"action": {"name": "call"}, "resource": {"type": "tool", "id": tool}});
    for (key, value) in extra.as_object().expect("an object") {
        body[key] = value.clone();
    }
    body
}

fn about(claims: Value) -> Value {
    json!({"subject": {"type": "agent", "id": "someone", "properties": {"claims": claims}}})
}

async fn post(gateway: &Gateway, path: &str, token: &str, body: Value) -> Reply {
    gateway
        .request(Method::POST, path, Some(token), Some(body))
        .await
}

/// A 200 decision: its value, and its context.
async fn decide(gateway: &Gateway, token: &str, body: Value) -> (bool, Value) {
    let reply = post(gateway, EVALUATION, token, body)
        .await
        .expect(StatusCode::OK);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(reply.header("cache-control"), Some("no-store"));
    let body = reply.json();
    (
        body["decision"].as_bool().expect("a boolean decision"),
        body["context"].clone(),
    )
}

/// The tool ids `GET /agents/tools{query}` lists for `token`, and its revision.
async fn listed(gateway: &Gateway, token: &str, query: &str) -> (Vec<String>, u64) {
    let body = gateway
        .get(&format!("/agents/tools{query}"), token)
        .await
        .expect(StatusCode::OK)
        .json();
    let ids = body["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|entry| entry["tool_id"].as_str().expect("tool_id").to_owned())
        .collect();
    (ids, body["revision"].as_u64().expect("revision"))
}

#[tokio::test]
async fn without_a_subject_the_caller_is_asked_about() {
    let gateway = gateway().await;
    let (ids, revision) = listed(&gateway, &reader(), "").await;
    assert_eq!(ids, ["billing:get_customer", "billing:list_invoices"]);
    for tool in [
        "billing:list_invoices",
        "billing:refund",
        "billing:get_customer",
    ] {
        let (decision, context) = decide(&gateway, &reader(), ask(tool, json!({}))).await;
        assert_eq!(decision, ids.contains(&tool.to_owned()), "{tool}");
        assert_eq!(
            context,
            json!({"revision": revision}),
            "the revision, and no reason for a non-admin"
        );
    }
}

#[tokio::test]
async fn a_subject_naming_the_caller_is_the_caller_and_another_needs_claims() {
    let gateway = gateway().await;
    let own = json!({"subject": {"type": "agent", "id": "agent-r"}});
    let (decision, _) = decide(&gateway, &reader(), ask("billing:get_customer", own)).await;
    assert!(decision);
    let other = json!({"subject": {"type": "agent", "id": "agent-s"}});
    let problem = post(
        &gateway,
        EVALUATION,
        &reader(),
        ask("billing:get_customer", other),
    )
    .await
    .problem(400);
    assert_eq!(
        problem["errors"][0]["field"],
        json!("subject.properties.claims")
    );
}

#[tokio::test]
async fn claims_other_than_the_callers_need_the_admin_rule() {
    let gateway = gateway().await;
    let staff_claims = json!({"sub": "agent-s", "roles": ["staff"]});
    let problem = post(
        &gateway,
        EVALUATION,
        &reader(),
        ask("billing:refund", about(staff_claims.clone())),
    )
    .await
    .problem(403);
    assert_eq!(problem["type"], json!("urn:toolgate:problem:forbidden"));
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|d| d.contains("admin rule"))
    );

    // Its own claims, sent back whole, are the caller's.
    let verified = json!({"sub": "agent-r", "roles": ["reader"], "exp": 4_000_000_000u64,
                          "iat": 1_700_000_000u64});
    let token = Gateway::token(verified.clone());
    let (decision, _) = decide(&gateway, &token, ask("billing:refund", about(verified))).await;
    assert!(!decision, "a reader may not refund");

    // An admin asks about anyone, and learns why.
    let (decision, context) = decide(
        &gateway,
        &Gateway::admin(),
        ask("billing:refund", about(staff_claims)),
    )
    .await;
    assert!(decision, "staff may refund");
    assert_eq!(context["reason"]["code"], json!("granted"));
    assert_eq!(context["reason"]["policy_id"], json!("p-staff"));
}

#[tokio::test]
async fn admins_are_told_the_deciding_policy_and_group() {
    let gateway = gateway().await;
    let deep_staff = json!({"sub": "sub-agent", "roles": ["staff"], "depth": 1});
    let (decision, context) = decide(
        &gateway,
        &Gateway::admin(),
        ask("billing:refund", about(deep_staff.clone())),
    )
    .await;
    assert!(!decision);
    assert_eq!(
        context["reason"],
        json!({"code": "denied", "policy_id": "p-no-money", "priority": 100,
               "group_ids": ["g-money"],
               "message": "denied by policy 'p-no-money' (priority 100) through group 'g-money'"})
    );
    let (_, context) = decide(
        &gateway,
        &Gateway::admin(),
        ask("billing:get_customer", about(json!({"sub": "x"}))),
    )
    .await;
    assert_eq!(context["reason"]["code"], json!("not_granted"));
}

#[tokio::test]
async fn an_unknown_tool_is_a_deny_that_looks_like_any_other() {
    let gateway = gateway().await;
    let unknown = post(
        &gateway,
        EVALUATION,
        &reader(),
        ask("billing:nope", json!({})),
    )
    .await
    .expect(StatusCode::OK);
    let not_granted = post(
        &gateway,
        EVALUATION,
        &reader(),
        ask("billing:refund", json!({})),
    )
    .await
    .expect(StatusCode::OK);
    assert_eq!(
        unknown.body, not_granted.body,
        "nothing tells a non-admin whether a tool exists"
    );
    assert_eq!(unknown.json()["decision"], json!(false));
    let (_, context) = decide(&gateway, &Gateway::admin(), ask("billing:nope", json!({}))).await;
    assert_eq!(context["reason"]["code"], json!("unknown_tool"));
}

#[tokio::test]
async fn disabled_tools_are_never_permitted_and_a_change_shows_at_once() {
    let gateway = gateway().await;
    let (decision, _) = decide(&gateway, &staff(), ask("billing:purge", json!({}))).await;
    assert!(!decision, "granted to staff, but disabled");
    let (_, context) = decide(
        &gateway,
        &Gateway::admin(),
        ask(
            "billing:purge",
            about(json!({"sub": "agent-s", "roles": ["staff"]})),
        ),
    )
    .await;
    assert_eq!(context["reason"]["code"], json!("hidden"));
    assert_eq!(context["reason"]["detail"], json!("disabled"));

    let (before, earlier) = decide(&gateway, &staff(), ask("billing:refund", json!({}))).await;
    assert!(before);
    gateway
        .admin_send(
            Method::POST,
            "/admin/tools/billing:refund/disable",
            Some(json!({"reason": "audit"})),
        )
        .await
        .expect(StatusCode::OK);
    let (after, context) = decide(&gateway, &staff(), ask("billing:refund", json!({}))).await;
    assert!(!after, "the very next decision sees the disable");
    assert_eq!(
        context["revision"].as_u64(),
        earlier["revision"].as_u64().map(|r| r + 1)
    );
}

#[tokio::test]
async fn context_state_and_group_narrow_as_the_query_options_do() {
    let gateway = gateway().await;
    let tools = [
        "billing:list_invoices",
        "billing:get_customer",
        "billing:refund",
    ];
    let cases = [
        (json!({"state": "research"}), "?state=research"),
        (json!({"state": "billing"}), "?state=billing"),
        (json!({"group": "reads"}), "?group=reads"),
        (json!({"group": ["g-money", "nope"]}), "?group=g-money,nope"),
        (json!({"group": "reads, money"}), "?group=reads&group=money"),
        (json!({"group": []}), "?group="),
        (
            json!({"group": "*", "state": "research", "time": "ignored"}),
            "?group=*&state=research",
        ),
    ];
    for (context, query) in cases {
        let (ids, revision) = listed(&gateway, &staff(), query).await;
        for tool in tools {
            let (decision, answer) = decide(
                &gateway,
                &staff(),
                ask(tool, json!({"context": context.clone()})),
            )
            .await;
            assert_eq!(decision, ids.contains(&tool.to_owned()), "{query} {tool}");
            assert_eq!(answer["revision"], json!(revision));
        }
    }
    let (_, context) = decide(
        &gateway,
        &Gateway::admin(),
        ask(
            "billing:list_invoices",
            json!({"context": {"state": "billing"},
                   "subject": {"type": "agent", "id": "x", "properties": {"claims": {"roles": ["staff"]}}}}),
        ),
    )
    .await;
    assert_eq!(
        (&context["reason"]["code"], &context["reason"]["detail"]),
        (&json!("narrowed"), &json!("state"))
    );
}

#[tokio::test]
async fn other_actions_and_resource_types_are_denies() {
    let gateway = gateway().await;
    let mut listing = ask("billing:get_customer", json!({}));
    listing["action"]["name"] = json!("list");
    let mut document = ask("billing:get_customer", json!({}));
    document["resource"]["type"] = json!("document");
    for body in [listing, document] {
        let (decision, _) = decide(&gateway, &reader(), body.clone()).await;
        assert!(!decision, "{body}");
        let (_, context) = decide(&gateway, &Gateway::admin(), body).await;
        let code = context["reason"]["code"].as_str().expect("a code");
        assert!(code.starts_with("unsupported_"), "{code}");
    }
}

/// The decisions of a batch answer, in order; each carries the revision.
fn batch_decisions(reply: Reply, revision: u64) -> Vec<bool> {
    let body = reply.expect(StatusCode::OK).json();
    body["evaluations"]
        .as_array()
        .expect("evaluations")
        .iter()
        .map(|item| {
            assert_eq!(item["context"]["revision"], json!(revision));
            item["decision"].as_bool().expect("a decision")
        })
        .collect()
}

#[tokio::test]
async fn a_batch_takes_defaults_items_override_them_and_each_semantic_stops_where_it_should() {
    let gateway = gateway().await;
    let (_, revision) = listed(&gateway, &reader(), "").await;
    let items = json!([
        {"resource": {"type": "tool", "id": "billing:get_customer"}},
        {"resource": {"type": "tool", "id": "billing:refund"}},
        {"resource": {"type": "tool", "id": "billing:refund"},
         "subject": {"type": "agent", "id": "s", "properties": {"claims": {"roles": ["staff"]}}}},
        {"resource": {"type": "tool", "id": "billing:list_invoices"}, "context": {"state": "x"}},
        {"resource": {"type": "tool", "id": "billing:list_invoices"}, "action": {"name": "read"}},
        {"resource": {"type": "tool", "id": "billing:list_invoices"}}
    ]);
    let body = |semantic: Option<&str>| {
        let mut body = json!({
            "subject": {"type": "agent", "id": "r", "properties": {"claims": {"roles": ["reader"]}}},
            "action": {"name": "call"},
            "context": {"state": "research"},
            "evaluations": items.clone()
        });
        if let Some(semantic) = semantic {
            body["options"] = json!({"evaluations_semantic": semantic});
        }
        body
    };
    let admin = Gateway::admin();
    let cases = [
        (None, vec![true, false, true, false, false, true]),
        (
            Some("execute_all"),
            vec![true, false, true, false, false, true],
        ),
        (Some("deny_on_first_deny"), vec![true, false]),
        (Some("permit_on_first_permit"), vec![true]),
    ];
    for (semantic, expected) in cases {
        let reply = post(&gateway, EVALUATIONS, &admin, body(semantic)).await;
        assert_eq!(reply.header("cache-control"), Some("no-store"));
        assert_eq!(batch_decisions(reply, revision), expected, "{semantic:?}");
    }
    // Nothing permitted: permit_on_first_permit answers every item.
    let denied = json!({"action": {"name": "call"}, "options": {"evaluations_semantic": "permit_on_first_permit"},
                        "evaluations": [{"resource": {"type": "tool", "id": "billing:refund"}},
                                        {"resource": {"type": "tool", "id": "billing:nope"}}]});
    let reply = post(&gateway, EVALUATIONS, &reader(), denied).await;
    assert_eq!(batch_decisions(reply, revision), [false, false]);
}

#[tokio::test]
async fn a_batch_without_evaluations_is_one_evaluation_and_foreign_items_need_admin() {
    let gateway = gateway().await;
    let reply = post(
        &gateway,
        EVALUATIONS,
        &reader(),
        ask("billing:get_customer", json!({"evaluations": []})),
    )
    .await
    .expect(StatusCode::OK);
    assert_eq!(reply.json()["decision"], json!(true));
    let foreign = json!({"action": {"name": "call"}, "evaluations": [
        {"resource": {"type": "tool", "id": "billing:get_customer"}},
        {"resource": {"type": "tool", "id": "billing:refund"},
         "subject": {"type": "agent", "id": "s", "properties": {"claims": {"roles": ["staff"]}}}}]});
    let problem = post(&gateway, EVALUATIONS, &reader(), foreign)
        .await
        .problem(403);
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("evaluations[1].subject.properties.claims")),
        "{problem}"
    );
}

#[tokio::test]
async fn a_batch_of_a_hundred_tools_for_one_subject_evaluates_its_claims_once() {
    let gateway = gateway().await;
    let evaluations: Vec<Value> = (0..100)
        .map(|i| json!({"resource": {"type": "tool", "id": format!("billing:tool{i}")}}))
        .collect();
    let lookups = |scrape: &Scrape, result| {
        scrape.value(
            "toolgate_decision_cache_lookups_total",
            &[("result", result)],
        )
    };
    let before = Scrape::of(&gateway).await;
    let body = json!({"action": {"name": "call"}, "evaluations": evaluations});
    let reply = post(&gateway, EVALUATIONS, &reader(), body.clone()).await;
    assert_eq!(batch_decisions(reply, 1), vec![false; 100]);
    let after = Scrape::of(&gateway).await;
    assert_eq!(lookups(&after, "miss") - lookups(&before, "miss"), 1.0);
    assert_eq!(lookups(&after, "hit") - lookups(&before, "hit"), 0.0);
    // Again: no evaluation at all.
    post(&gateway, EVALUATIONS, &reader(), body)
        .await
        .expect(StatusCode::OK);
    let again = Scrape::of(&gateway).await;
    assert_eq!(lookups(&again, "miss"), lookups(&after, "miss"));
    assert_eq!(lookups(&again, "hit") - lookups(&after, "hit"), 1.0);
    let decisions = |result| {
        again.value(
            "toolgate_decisions_total",
            &[("endpoint", "evaluations"), ("result", result)],
        )
    };
    assert_eq!((decisions("permit"), decisions("deny")), (0.0, 200.0));
    assert_eq!(
        again.value(
            "toolgate_decision_duration_seconds_count",
            &[("endpoint", "evaluations")]
        ),
        2.0
    );
}

/// Pages through a search with `limit`, checking each page; the ids in order, and `total`.
async fn search_all(gateway: &Gateway, token: &str, body: Value, limit: u64) -> (Vec<String>, u64) {
    let mut ids = Vec::new();
    let mut request = body;
    request["page"] = json!({"limit": limit});
    let mut total = None;
    for _ in 0..1000 {
        let page = post(gateway, SEARCH, token, request.clone())
            .await
            .expect(StatusCode::OK)
            .json();
        let results = page["results"].as_array().expect("results");
        assert!(results.len() as u64 <= limit);
        assert_eq!(page["page"]["count"], json!(results.len()));
        let page_total = page["page"]["total"].as_u64().expect("total");
        assert_eq!(*total.get_or_insert(page_total), page_total, "stable total");
        for result in results {
            assert_eq!(result["type"], json!("tool"));
            ids.push(result["id"].as_str().expect("id").to_owned());
        }
        let next = page["page"]["next_token"].as_str().expect("next_token");
        if next.is_empty() {
            return (ids, page_total);
        }
        request["page"]["token"] = json!(next);
    }
    panic!("the search never ended");
}

#[tokio::test]
async fn a_search_pages_through_exactly_the_manifest() {
    let gateway = Gateway::start().await;
    let tools: Vec<Value> = (0..23)
        .map(|i| {
            json!({"source_id": "svc", "operation_id": format!("op{i:02}"), "name": format!("op{i:02}"),
                   "method": if i % 3 == 0 { "POST" } else { "GET" },
                   "enabled": i != 4})
        })
        .collect();
    gateway
        .put_catalog(
            json!({"sources": [{"id": "svc", "name": "svc", "type": "manual"}], "tools": tools,
               "groups": [{"id": "g-get", "name": "get", "selectors": [{"method_pattern": "GET"}]}],
               "policies": [{"id": "p", "name": "p", "allowed_group_ids": ["g-get"],
                             "claim_matchers": [{"json_path": "sub", "operator": "exists"}]}]}),
        )
        .await;
    let token = Gateway::token(json!({"sub": "agent"}));
    let (expected, _) = listed(&gateway, &token, "").await;
    assert_eq!(expected.len(), 14);
    let body = json!({"subject": {"type": "agent", "id": "agent"}, "action": {"name": "call"},
                      "resource": {"type": "tool"}});
    for limit in [1, 5, 7, 14, 100] {
        let (ids, total) = search_all(&gateway, &token, body.clone(), limit).await;
        assert_eq!(ids, expected, "limit {limit}");
        assert_eq!(total, 14);
    }
    let (ids, _) = search_all(
        &gateway,
        &token,
        json!({"action": {"name": "call"}, "resource": {"type": "tool"}, "context": {"group": "nope"}}),
        10,
    )
    .await;
    assert!(ids.is_empty());

    // A token is taken only with the request it was issued for.
    let mut first = body.clone();
    first["page"] = json!({"limit": 5});
    let page = post(&gateway, SEARCH, &token, first.clone())
        .await
        .expect(StatusCode::OK)
        .json();
    let next = page["page"]["next_token"].clone();
    let mut changed = first.clone();
    changed["page"] = json!({"limit": 6, "token": next});
    let problem = post(&gateway, SEARCH, &token, changed).await.problem(400);
    assert_eq!(problem["errors"][0]["field"], json!("page.token"));
    let mut forged = first;
    forged["page"]["token"] = json!("not-a-token");
    post(&gateway, SEARCH, &token, forged).await.problem(400);
}

#[tokio::test]
async fn the_discovery_document_needs_no_token() {
    let gateway = gateway().await;
    let reply = gateway
        .request(
            Method::GET,
            "/.well-known/authzen-configuration",
            None,
            None,
        )
        .await
        .expect(StatusCode::OK);
    let base = &gateway.base;
    assert_eq!(
        reply.json(),
        json!({"policy_decision_point": base,
               "access_evaluation_endpoint": format!("{base}/access/v1/evaluation"),
               "access_evaluations_endpoint": format!("{base}/access/v1/evaluations"),
               "search_resource_endpoint": format!("{base}/access/v1/search/resource")})
    );
    let behind_tls = gateway
        .client
        .get(format!("{base}/.well-known/authzen-configuration"))
        .header("x-forwarded-proto", "https")
        .header("host", "pdp.example.com")
        .send()
        .await
        .expect("answers");
    let document: Value =
        serde_json::from_slice(&behind_tls.bytes().await.expect("a body")).expect("JSON");
    assert_eq!(
        document["search_resource_endpoint"],
        json!("https://pdp.example.com/access/v1/search/resource")
    );
}

#[tokio::test]
async fn malformed_requests_are_400_problems_naming_the_field() {
    let gateway = gateway().await;
    let cases = [
        (
            EVALUATION,
            json!({"action": {"name": "call"}}),
            vec!["resource"],
        ),
        (
            EVALUATION,
            json!({"action": {"name": "call"}, "resource": {"type": "tool"}}),
            vec!["resource.id"],
        ),
        (
            EVALUATION,
            ask(
                "x",
                json!({"subject": {"id": "a"}, "context": {"state": 1}}),
            ),
            vec!["subject.type", "context.state"],
        ),
        (
            EVALUATIONS,
            json!({"action": {"name": "call"}, "evaluations": [
                {"resource": {"type": "tool", "id": "a"}}, {"resource": {"type": "tool", "id": "b"}},
                {"resource": {"type": "tool", "id": "c"}}, {"resource": {"id": "d"}}]}),
            vec!["evaluations[3].resource.type"],
        ),
        (
            EVALUATIONS,
            json!({"evaluations": [{"action": {"name": "call"}}],
                   "options": {"evaluations_semantic": "first"}}),
            vec!["options.evaluations_semantic"],
        ),
        (
            EVALUATIONS,
            json!({"evaluations": [{"resource": {"type": "tool", "id": "a"}}, {}]}),
            vec![
                "evaluations[0].action",
                "evaluations[1].action",
                "evaluations[1].resource",
            ],
        ),
        (
            SEARCH,
            json!({"resource": {"type": "tool"}, "page": {"limit": "ten"}}),
            vec!["action", "page.limit"],
        ),
    ];
    for (path, body, fields) in cases {
        let problem = post(&gateway, path, &reader(), body.clone())
            .await
            .problem(400);
        assert_eq!(problem["type"], json!("urn:toolgate:problem:malformed"));
        let named: Vec<&str> = problem["errors"]
            .as_array()
            .unwrap_or_else(|| panic!("errors in {problem}"))
            .iter()
            .map(|error| error["field"].as_str().expect("field"))
            .collect();
        assert_eq!(named, fields, "{path} {body}");
    }
    let not_json = gateway
        .client
        .post(format!("{}{EVALUATION}", gateway.base))
        .bearer_auth(reader())
        .body("{\"action\":")
        .send()
        .await
        .expect("answers");
    assert_eq!(not_json.status(), StatusCode::BAD_REQUEST);
    let unauthenticated = gateway
        .request(Method::POST, EVALUATION, None, Some(ask("x", json!({}))))
        .await;
    unauthenticated.problem(401);
}

#[tokio::test]
async fn a_configured_deny_status_answers_single_denies_with_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = config(dir.path(), hs_settings());
    config.authz_deny_status = Some(403);
    let gateway = Gateway::start_with(config).await;
    gateway.put_catalog(catalog()).await;
    let deny = post(
        &gateway,
        EVALUATION,
        &reader(),
        ask("billing:refund", json!({})),
    )
    .await
    .expect(StatusCode::FORBIDDEN);
    assert_eq!(deny.header("content-type"), Some("application/json"));
    assert_eq!(
        deny.json()["decision"],
        json!(false),
        "the body is the decision"
    );
    post(
        &gateway,
        EVALUATION,
        &reader(),
        ask("billing:get_customer", json!({})),
    )
    .await
    .expect(StatusCode::OK);
    let batch = json!({"action": {"name": "call"},
                       "evaluations": [{"resource": {"type": "tool", "id": "billing:refund"}}]});
    let reply = post(&gateway, EVALUATIONS, &reader(), batch).await;
    assert_eq!(batch_decisions(reply, 1), [false], "batches stay 200");
}

#[tokio::test]
async fn decision_requests_spend_the_decisions_budget() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = config(dir.path(), hs_settings());
    config.rate_limits = RateLimits {
        decisions: Budget::new(1, 2),
        ..RateLimits::default()
    };
    let gateway = Gateway::start_with(config).await;
    gateway.put_catalog(catalog()).await;
    for path in [EVALUATION, EVALUATIONS] {
        post(&gateway, path, &reader(), ask("billing:refund", json!({})))
            .await
            .expect(StatusCode::OK);
    }
    let limited = post(
        &gateway,
        SEARCH,
        &reader(),
        json!({"action": {"name": "call"}, "resource": {"type": "tool"}}),
    )
    .await;
    let problem = limited.problem(429);
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|d| d.contains("decisions requests")),
        "{problem}"
    );
    gateway
        .get("/agents/tools", &reader())
        .await
        .expect(StatusCode::OK);
}

// ---------------------------------------------------------------------------------------------
// Property: a decision is membership in GET /agents/tools; batches equal singles.
// ---------------------------------------------------------------------------------------------

/// The catalog as the admin API takes it (it refuses what the engine tolerates: references to
/// what does not exist), plus a lowest-priority policy granting every tool and every group to
/// every subject, so that permits are common; the generated policies still decide every tool
/// they cover.
fn storable(mut catalog: Catalog) -> Catalog {
    let sources: BTreeSet<String> = catalog.sources.iter().map(|s| s.id.clone()).collect();
    let tools: BTreeSet<String> = catalog.tools.iter().map(|t| t.id.clone()).collect();
    let groups: BTreeSet<String> = catalog.groups.iter().map(|g| g.id.clone()).collect();
    for tool in &mut catalog.tools {
        if !sources.contains(&tool.source_id) {
            tool.source_id = "s0".to_owned();
        }
    }
    for group in &mut catalog.groups {
        group.explicit_tool_ids.retain(|id| tools.contains(id));
        group.excluded_tool_ids.retain(|id| tools.contains(id));
    }
    for policy in &mut catalog.policies {
        policy.allowed_group_ids.retain(|id| groups.contains(id));
        policy.denied_group_ids.retain(|id| groups.contains(id));
        if policy.allowed_group_ids.is_empty() && policy.denied_group_ids.is_empty() {
            policy.allowed_group_ids.push("g0".to_owned());
        }
    }
    let mut granted: Vec<String> = groups.into_iter().collect();
    granted.push("g-every".to_owned());
    catalog.groups.push(
        serde_json::from_value(json!({"id": "g-every", "name": "every", "selectors": [{}]}))
            .expect("a group"),
    );
    catalog.policies.push(
        serde_json::from_value(json!({
            "id": "p-everyone", "name": "everyone", "priority": -10,
            "claim_matchers": [{"json_path": "sub", "operator": "exists"}],
            "allowed_group_ids": granted}))
        .expect("a policy"),
    );
    catalog
}

/// `context` for a scope, and the same as a query string.
fn scope_strategy() -> impl Strategy<Value = (Value, String)> {
    let state = prop::option::weighted(0.2, prop::sample::select(vec!["research", "x"]));
    let group = prop::option::weighted(
        0.2,
        prop::sample::subsequence(vec!["g0", "g1", "reads", "all", "*", "nope"], 0..=2),
    );
    (state, group).prop_map(|(state, group)| {
        let mut context = Map::new();
        let mut query = Vec::new();
        if let Some(state) = state {
            context.insert("state".into(), json!(state));
            query.push(format!("state={state}"));
        }
        if let Some(group) = group {
            query.push(format!("group={}", group.join(",")));
            context.insert("group".into(), json!(group));
        }
        let query = if query.is_empty() {
            String::new()
        } else {
            format!("?{}", query.join("&"))
        };
        (Value::Object(context), query)
    })
}

#[derive(Default)]
struct Tally {
    permits: usize,
    denies: usize,
}

async fn check_case(
    gateway: &Gateway,
    catalog: Catalog,
    subjects: Vec<(Map<String, Value>, (Value, String))>,
    tally: &mut Tally,
) -> Result<(), TestCaseError> {
    let catalog = storable(catalog);
    let revision = gateway.put_catalog(&catalog).await;
    let mut ids: Vec<String> = catalog.tools.iter().map(|t| t.id.clone()).collect();
    ids.push("ghost".to_owned());
    for (mut claims, (context, query)) in subjects {
        // Exactly the token's claims, for the batch below to ask about (a policy may read `iat`).
        claims.insert("exp".into(), json!(4_000_000_000u64));
        claims.insert("iat".into(), json!(1_700_000_000u64));
        let token = Gateway::token(Value::Object(claims.clone()));
        let (listed_ids, listed_at) = listed(gateway, &token, &query).await;
        prop_assert_eq!(listed_at, revision);
        let mut singles = Vec::new();
        for id in &ids {
            let (decision, answer) = decide(
                gateway,
                &token,
                ask(id, json!({"context": context.clone()})),
            )
            .await;
            prop_assert_eq!(answer["revision"].as_u64(), Some(revision));
            prop_assert_eq!(
                decision,
                listed_ids.contains(id),
                "{} with claims {:?} and context {}",
                id,
                claims,
                context
            );
            singles.push(decision);
            if decision {
                tally.permits += 1;
            } else {
                tally.denies += 1;
            }
        }
        // The same questions as one batch, asked by an admin about those claims.
        let evaluations: Vec<Value> = ids
            .iter()
            .map(|id| json!({"resource": {"type": "tool", "id": id}}))
            .collect();
        let batch = json!({
            "subject": {"type": "agent", "id": "agent", "properties": {"claims": Value::Object(claims)}},
            "action": {"name": "call"}, "context": context, "evaluations": evaluations});
        let reply = post(gateway, EVALUATIONS, &Gateway::admin(), batch).await;
        prop_assert_eq!(batch_decisions(reply, revision), singles);
        // And a search, page by page, finds exactly the listing.
        let search =
            json!({"action": {"name": "call"}, "resource": {"type": "tool"}, "context": context});
        let (found, total) = search_all(gateway, &token, search, 2).await;
        prop_assert_eq!(&found, &listed_ids);
        prop_assert_eq!(total, listed_ids.len() as u64);
    }
    Ok(())
}

#[test]
fn a_decision_is_membership_in_the_listing_and_batches_equal_singles() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let gateway = runtime.block_on(async {
        let mut config = config(dir.path(), hs_settings());
        config.rate_limits = RateLimits::UNLIMITED;
        Gateway::start_with(config).await
    });
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let strategy = (
        random_catalog::catalog_strategy(),
        prop::collection::vec((random_catalog::claims_strategy(), scope_strategy()), 1..=3),
    );
    let tally = std::cell::RefCell::new(Tally::default());
    let result = runner.run(&strategy, |(catalog, subjects)| {
        runtime.block_on(check_case(
            &gateway,
            catalog,
            subjects,
            &mut tally.borrow_mut(),
        ))
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
    // Agreement means something only if both answers were common.
    let tally = tally.into_inner();
    let total = tally.permits + tally.denies;
    println!("{} permits, {} denies", tally.permits, tally.denies);
    assert!(
        tally.permits * 10 >= total,
        "only {} permits of {total}",
        tally.permits
    );
    assert!(
        tally.denies * 10 >= total,
        "only {} denies of {total}",
        tally.denies
    );
}
