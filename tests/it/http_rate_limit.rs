//! Rate limits per subject and route class, over HTTP: the request after the burst gets 429
//! problem JSON with `Retry-After`; other subjects and other classes are unaffected; the
//! bucket refills; refusals are counted.

use crate::support;

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::gateway::{Gateway, config, hs_settings};
use support::scrape::Scrape;
use support::sse::SseClient;
use toolgate::clock::ManualClock;
use toolgate::service::limits::{Budget, RateLimits};

const BURST: u32 = 3;

fn catalog() -> Value {
    json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual"}],
        "tools": [{"source_id": "billing", "operation_id": "list_invoices", "name": "list_invoices", "method": "GET"}],
        "groups": [{"id": "g-all", "name": "all", "selectors": [{}]}],
        "policies": [{"id": "p-read", "name": "readers", "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "reader"}], "allowed_group_ids": ["g-all"]}]
    })
}

/// Every class: one request per second sustained, bursts of [`BURST`]; on a clock the tests
/// move, so that buckets refill without waiting.
async fn limited_gateway() -> (Gateway, tempfile::TempDir, std::sync::Arc<ManualClock>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = config(dir.path(), hs_settings());
    let budget = Budget::new(1, BURST);
    config.rate_limits = RateLimits {
        agent_reads: budget,
        streams: budget,
        admin_writes: budget,
        decisions: budget,
        tool_calls: budget,
    };
    let clock = std::sync::Arc::new(ManualClock::at(chrono::Utc::now()));
    let gateway = Gateway::start_clocked(config, clock.clone()).await;
    (gateway, dir, clock)
}

/// A 429 as the API promises it: problem JSON, `Retry-After` in whole seconds.
fn assert_limited(reply: &support::gateway::Reply, class_words: &str) {
    let problem = reply.problem(429);
    assert_eq!(
        problem["type"],
        json!("urn:toolgate:problem:too-many-requests")
    );
    let detail = problem["detail"].as_str().expect("detail");
    assert!(detail.contains(class_words), "{detail}");
    assert_eq!(reply.header("retry-after"), Some("1"), "{detail}");
}

#[tokio::test]
async fn agent_reads_past_the_burst_get_429_for_that_subject_only() {
    let (gateway, _dir, clock) = limited_gateway().await;
    // One admin write (of the burst of 3) to set the catalog up.
    gateway.put_catalog(catalog()).await;
    let alice = Gateway::reader("alice");
    for _ in 0..BURST {
        gateway
            .get("/agents/tools", &alice)
            .await
            .expect(StatusCode::OK);
    }
    let refused = gateway.get("/agents/tools", &alice).await;
    assert_limited(&refused, "agent reads");
    // The alias shares the budget: same class.
    assert_limited(
        &gateway.get("/api/agents/tools", &alice).await,
        "agent reads",
    );

    // Another subject has its own bucket; a fresh token of the same subject does not.
    gateway
        .get("/agents/tools", &Gateway::reader("bob"))
        .await
        .expect(StatusCode::OK);
    assert_limited(
        &gateway
            .get("/agents/tools", &Gateway::reader("alice"))
            .await,
        "agent reads",
    );

    // Another class has its own budget: alice may still open streams.
    let mut stream = SseClient::connect(&gateway, "/agents/tools/stream", &alice).await;
    assert_eq!(stream.event(Duration::from_secs(5)).await.event, "tools");

    // Unauthenticated requests are never limited (no subject): they are refused as such.
    gateway
        .request(Method::GET, "/agents/tools", None, None)
        .await
        .problem(401);

    // The bucket refills at one request per second, by the gateway's clock.
    clock.advance(Duration::from_millis(1100));
    gateway
        .get("/agents/tools", &alice)
        .await
        .expect(StatusCode::OK);
    assert_limited(&gateway.get("/agents/tools", &alice).await, "agent reads");

    let scrape = Scrape::of(&gateway).await;
    assert_eq!(
        scrape.get("toolgate_rate_limited_total", &[("class", "agent_reads")]),
        Some(4.0),
        "{}",
        scrape.text
    );
}

#[tokio::test]
async fn stream_opens_have_their_own_budget() {
    let (gateway, _dir, _clock) = limited_gateway().await;
    gateway.put_catalog(catalog()).await;
    let carol = Gateway::reader("carol");
    let mut streams = Vec::new();
    for _ in 0..BURST {
        streams.push(SseClient::connect(&gateway, "/agents/tools/stream", &carol).await);
    }
    let refused = SseClient::open(&gateway, "/agents/tools/stream", &carol, None)
        .await
        .err()
        .expect("the fourth open in a second is refused");
    assert_limited(&refused, "streams");
    // Reads are another class.
    gateway
        .get("/agents/tools", &carol)
        .await
        .expect(StatusCode::OK);
    let scrape = Scrape::of(&gateway).await;
    assert_eq!(
        scrape.get("toolgate_rate_limited_total", &[("class", "streams")]),
        Some(1.0)
    );
    assert_eq!(
        scrape.get("toolgate_sse_subscribers", &[]),
        Some(f64::from(BURST))
    );
}

#[tokio::test]
async fn admin_writes_are_limited_and_admin_reads_are_not() {
    let (gateway, _dir, _clock) = limited_gateway().await;
    let admin = Gateway::admin();
    for n in 0..BURST {
        gateway
            .request(
                Method::POST,
                "/admin/labels",
                Some(&admin),
                Some(json!({"id": format!("l-{n}"), "name": format!("l{n}")})),
            )
            .await
            .expect(StatusCode::CREATED);
    }
    let refused = gateway
        .request(
            Method::POST,
            "/admin/labels",
            Some(&admin),
            Some(json!({"id": "l-over", "name": "over"})),
        )
        .await;
    assert_limited(&refused, "admin writes");
    // Nothing was written by the refused request.
    gateway
        .request(Method::GET, "/admin/labels/l-over", Some(&admin), None)
        .await
        .problem(404);
    // Reads of the admin API are not writes.
    for _ in 0..10 {
        gateway
            .request(Method::GET, "/admin/audit", Some(&admin), None)
            .await
            .expect(StatusCode::OK);
    }
    // Another admin has a budget of their own.
    let other_admin = Gateway::token(json!({"sub": "admin-2", "roles": ["admin"]}));
    gateway
        .request(
            Method::DELETE,
            "/admin/labels/l-0",
            Some(&other_admin),
            None,
        )
        .await
        .expect(StatusCode::NO_CONTENT);
    // A non-admin gets 403, never 429, and spends no admin budget.
    for _ in 0..5 {
        gateway
            .request(
                Method::DELETE,
                "/admin/labels/l-1",
                Some(&Gateway::reader("eve")),
                None,
            )
            .await
            .problem(403);
    }
}
