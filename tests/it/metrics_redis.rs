//! Redis in the metrics: failed calls, outages and the degraded gauge follow a real
//! `redis-server` being killed and brought back.

use crate::support;

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;
use support::gateway::Gateway;
use support::redis::RedisServer;
use support::scrape::Scrape;

const WAIT: Duration = Duration::from_secs(10);

fn catalog() -> serde_json::Value {
    json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual"}],
        "tools": [{"source_id": "billing", "operation_id": "list", "name": "list", "method": "GET"}],
        "groups": [{"id": "g-all", "name": "all", "selectors": [{}]}],
        "policies": [{"id": "p-read", "name": "readers", "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "reader"}], "allowed_group_ids": ["g-all"]}]
    })
}

#[tokio::test]
async fn redis_errors_outages_and_degradation_are_measured() {
    let mut redis = RedisServer::start();
    let (gateway, _dir) = redis.gateway(catalog()).await;
    let read = |i: usize| Gateway::token(json!({"sub": format!("agent-{i}"), "roles": ["reader"]}));
    gateway
        .get("/agents/tools", &read(0))
        .await
        .expect(StatusCode::OK);
    let healthy = Scrape::of(&gateway).await;
    assert_eq!(
        healthy.get("toolgate_redis_degraded", &[]),
        Some(0.0),
        "{}",
        healthy.text
    );
    assert_eq!(healthy.get("toolgate_redis_outages_total", &[]), Some(0.0));

    // Redis dies: new claims miss the local cache and ask Redis, which fails.
    redis.stop();
    let deadline = Instant::now() + WAIT;
    let mut i = 1;
    let down = loop {
        gateway
            .get("/agents/tools", &read(i))
            .await
            .expect(StatusCode::OK);
        i += 1;
        let scrape = Scrape::of(&gateway).await;
        if scrape.get("toolgate_redis_degraded", &[]) == Some(1.0) {
            break scrape;
        }
        assert!(
            Instant::now() < deadline,
            "Redis is never reported degraded"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(down.get("toolgate_redis_outages_total", &[]), Some(1.0));
    assert!(down.value("toolgate_redis_errors_total", &[]) >= 1.0);

    // Redis comes back: no longer degraded, one outage on record.
    redis.resume();
    let deadline = Instant::now() + WAIT;
    loop {
        gateway.get("/readyz", "").await;
        let scrape = Scrape::of(&gateway).await;
        if scrape.get("toolgate_redis_degraded", &[]) == Some(0.0) {
            assert_eq!(scrape.get("toolgate_redis_outages_total", &[]), Some(1.0));
            break;
        }
        assert!(Instant::now() < deadline, "Redis is never reported back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
