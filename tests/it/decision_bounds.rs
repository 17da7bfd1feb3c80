//! The AuthZEN endpoints do bounded work per request (issue 24): a batch holds at most 1,000
//! items, each distinct (claims, context) evaluation a batch needs is paid for from the
//! caller's `decisions` budget, and a search page of no results is refused (it would hand out
//! the same `next_token` forever).

use crate::support;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::gateway::{Gateway, Reply, config, hs_settings};
use toolgate::service::limits::{Budget, RateLimits};

const EVALUATIONS: &str = "/access/v1/evaluations";
const EVALUATION: &str = "/access/v1/evaluation";
const SEARCH: &str = "/access/v1/search/resource";

fn catalog() -> Value {
    json!({
        "sources": [{"id": "svc", "name": "svc", "type": "manual"}],
        "tools": [
            {"source_id": "svc", "operation_id": "read", "name": "read", "method": "GET",
             "available_in_states": ["research"]},
            {"source_id": "svc", "operation_id": "write", "name": "write", "method": "POST"}],
        "groups": [{"id": "g-all", "name": "all", "selectors": [{}]}],
        "policies": [{"id": "p", "name": "p", "allowed_group_ids": ["g-all"],
                      "claim_matchers": [{"json_path": "sub", "operator": "exists"}]}]
    })
}

/// A gateway with `rate_limits` and the catalog, and its data dir (kept while it runs).
async fn gateway_with(rate_limits: RateLimits) -> (Gateway, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = config(dir.path(), hs_settings());
    config.rate_limits = rate_limits;
    let gateway = Gateway::start_with(config).await;
    gateway.put_catalog(catalog()).await;
    (gateway, dir)
}

fn agent() -> String {
    Gateway::token(json!({"sub": "agent-1"}))
}

async fn post(gateway: &Gateway, path: &str, body: Value) -> Reply {
    gateway
        .request(Method::POST, path, Some(&agent()), Some(body))
        .await
}

/// A batch of `n` items about `svc:read`, item `i` in context `context(i)`.
fn batch(n: usize, context: impl Fn(usize) -> Value) -> Value {
    let items: Vec<Value> = (0..n)
        .map(|i| json!({"resource": {"type": "tool", "id": "svc:read"}, "context": context(i)}))
        .collect();
    json!({"action": {"name": "call"}, "evaluations": items})
}

#[tokio::test]
async fn a_batch_over_a_thousand_items_is_refused_naming_evaluations_and_the_limit() {
    let (gateway, _dir) = gateway_with(RateLimits::UNLIMITED).await;
    let most = post(&gateway, EVALUATIONS, batch(1000, |_| json!({}))).await;
    let answers = most.expect(StatusCode::OK).json();
    assert_eq!(answers["evaluations"].as_array().map(Vec::len), Some(1000));

    let problem = post(&gateway, EVALUATIONS, batch(1001, |_| json!({})))
        .await
        .problem(400);
    assert_eq!(problem["errors"][0]["field"], json!("evaluations"));
    let message = problem["errors"][0]["message"].as_str().expect("message");
    assert!(
        message.contains("at most 1000") && message.contains("1001"),
        "{message}"
    );
}

#[tokio::test]
async fn each_distinct_context_of_a_batch_spends_the_decisions_budget() {
    let (gateway, _dir) = gateway_with(RateLimits {
        decisions: Budget::new(1, 20),
        ..RateLimits::UNLIMITED
    })
    .await;
    // A hundred items about one subject in one context cost what one request does.
    post(&gateway, EVALUATIONS, batch(100, |_| json!({})))
        .await
        .expect(StatusCode::OK);
    // Nineteen distinct contexts (among 38 items): nineteen requests' worth, the rest of the
    // burst.
    let contexts = batch(38, |i| json!({"group": [format!("g-{}", i % 19)]}));
    post(&gateway, EVALUATIONS, contexts)
        .await
        .expect(StatusCode::OK);
    let limited = post(
        &gateway,
        EVALUATION,
        json!({"action": {"name": "call"}, "resource": {"type": "tool", "id": "svc:read"}}),
    )
    .await;
    let problem = limited.problem(429);
    assert!(limited.header("retry-after").is_some());
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|d| d.contains("decisions requests")),
        "{problem}"
    );
}

#[tokio::test]
async fn a_search_page_of_zero_results_is_refused_naming_page_limit() {
    let (gateway, _dir) = gateway_with(RateLimits::UNLIMITED).await;
    let body = |limit: Value| {
        json!({"action": {"name": "call"}, "resource": {"type": "tool"},
               "page": {"limit": limit}})
    };
    let problem = post(&gateway, SEARCH, body(json!(0))).await.problem(400);
    assert_eq!(problem["errors"][0]["field"], json!("page.limit"));
    let message = problem["errors"][0]["message"].as_str().expect("message");
    assert!(message.contains("at least 1"), "{message}");

    let page = post(&gateway, SEARCH, body(json!(1)))
        .await
        .expect(StatusCode::OK)
        .json();
    assert_eq!(page["page"]["count"], json!(1));
    assert!(
        !page["page"]["next_token"]
            .as_str()
            .expect("next_token")
            .is_empty()
    );
}
