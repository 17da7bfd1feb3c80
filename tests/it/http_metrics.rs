//! `GET /metrics` after a known sequence of requests: exact counter values, exact histogram
//! counts and bucket invariants, route templates (never raw paths) and no identities in labels.

use crate::support;

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::gateway::Gateway;
use support::scrape::Scrape;
use support::sse::SseClient;

const WAIT: Duration = Duration::from_secs(5);

fn catalog() -> Value {
    json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual"}],
        "tools": [
            {"source_id": "billing", "operation_id": "list_invoices", "name": "list_invoices", "method": "GET", "path": "/invoices"},
            {"source_id": "billing", "operation_id": "refund", "name": "refund", "method": "POST", "path": "/refunds"}
        ],
        "groups": [{"id": "g-all", "name": "all", "selectors": [{}]}],
        "policies": [
            {"id": "p-read", "name": "readers", "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "reader"}], "allowed_group_ids": ["g-all"]}
        ]
    })
}

const DURATION: &str = "http_server_request_duration_seconds";

fn requests(scrape: &Scrape, method: &str, route: &str, status: &str) -> f64 {
    scrape.value(
        &format!("{DURATION}_count"),
        &[
            ("http_request_method", method),
            ("http_response_status_code", status),
            ("http_route", route),
        ],
    )
}

/// Every histogram series: cumulative buckets that never decrease and end at `_count`.
fn assert_histograms_are_consistent(scrape: &Scrape) {
    let mut buckets: std::collections::BTreeMap<String, Vec<(f64, f64)>> = Default::default();
    for (series, value) in scrape
        .series_of(DURATION)
        .into_iter()
        .chain(scrape.series_of("agent_resolution_time_milliseconds"))
    {
        let Some((name, labels)) = series.split_once('{') else {
            continue;
        };
        if !name.ends_with("_bucket") {
            continue;
        }
        let (rest, le) = labels.rsplit_once(",le=\"").unwrap_or(("", labels));
        let le = le
            .trim_start_matches("le=\"")
            .trim_end_matches("\"}")
            .replace("+Inf", "inf");
        let family = format!("{}{{{rest}}}", name.trim_end_matches("_bucket"));
        buckets
            .entry(family)
            .or_default()
            .push((le.parse().expect("a bound"), value));
    }
    assert!(!buckets.is_empty());
    for (family, mut points) in buckets {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert!(
            points.windows(2).all(|pair| pair[0].1 <= pair[1].1),
            "{family}: buckets are cumulative: {points:?}"
        );
        let count_series = family
            .replacen('{', "_count{", 1)
            .replace("_count{}", "_count");
        let count = scrape
            .text
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{count_series} ")))
            .unwrap_or_else(|| panic!("{count_series} is written"));
        assert_eq!(
            points.last().map(|p| p.1),
            Some(count.parse::<f64>().expect("count")),
            "{family}: +Inf is the count"
        );
    }
}

#[tokio::test]
async fn a_known_sequence_of_requests_gives_exact_metrics() {
    let gateway = Gateway::start().await;
    let revision = gateway
        .admin_send(Method::PUT, "/admin/catalog", Some(catalog()))
        .await
        .expect(StatusCode::OK)
        .json()["revision"]
        .as_u64()
        .expect("revision");

    // Three reads by one agent (a miss, then two hits), one by an agent no policy grants
    // anything (a miss, denied), one with a forged token (401).
    for _ in 0..3 {
        gateway
            .get("/agents/tools", &Gateway::reader("alice@example.com"))
            .await
            .expect(StatusCode::OK);
    }
    let nobody = Gateway::token(json!({"sub": "nobody", "roles": ["guest"]}));
    gateway
        .get("/agents/tools", &nobody)
        .await
        .expect(StatusCode::OK);
    let forged = format!("{}x", Gateway::reader("mallory"));
    gateway
        .get("/agents/tools", &forged)
        .await
        .expect(StatusCode::UNAUTHORIZED);
    // An admin write on a templated route, and a path no route matches.
    gateway
        .admin_send(Method::POST, "/admin/tools/billing:refund/disable", None)
        .await
        .expect(StatusCode::OK);
    gateway
        .request(Method::GET, "/no/such/route/alice", None, None)
        .await
        .expect(StatusCode::NOT_FOUND);
    // A stream: one more resolution (a miss: the write made a new revision), one event.
    let mut stream = SseClient::connect(
        &gateway,
        "/agents/tools/stream",
        &Gateway::reader("alice@example.com"),
    )
    .await;
    assert_eq!(stream.event(WAIT).await.event, "tools");

    let scrape = Scrape::of(&gateway).await;
    let text = &scrape.text;

    // The reference design's four.
    assert_eq!(
        scrape.get("agent_access_resolutions_total", &[]),
        Some(5.0),
        "{text}"
    );
    assert_eq!(
        scrape.get("agent_access_denied_total", &[]),
        Some(1.0),
        "{text}"
    );
    // 2 tools × 3 reads + 0 for nobody + 1 on the stream (refund was disabled).
    assert_eq!(
        scrape.get("agent_tools_resolved_total", &[]),
        Some(7.0),
        "{text}"
    );
    let resolution = "agent_resolution_time_milliseconds";
    assert_eq!(scrape.get(&format!("{resolution}_count"), &[]), Some(5.0));
    // Every resolution here took less than the largest finite bound (250 ms).
    assert_eq!(
        scrape.get(&format!("{resolution}_bucket"), &[("le", "250")]),
        Some(5.0)
    );

    // HTTP requests by method, route template and status.
    assert_eq!(requests(&scrape, "GET", "/agents/tools", "200"), 4.0);
    assert_eq!(requests(&scrape, "GET", "/agents/tools", "401"), 1.0);
    assert_eq!(requests(&scrape, "PUT", "/admin/catalog", "200"), 1.0);
    assert_eq!(
        requests(&scrape, "POST", "/admin/tools/{id}/disable", "200"),
        1.0
    );
    assert_eq!(requests(&scrape, "GET", "unmatched", "404"), 1.0);
    assert_eq!(requests(&scrape, "GET", "/agents/tools/stream", "200"), 1.0);
    assert_eq!(
        scrape.get(
            &format!("{DURATION}_bucket"),
            &[
                ("http_request_method", "GET"),
                ("http_response_status_code", "200"),
                ("http_route", "/agents/tools"),
                ("le", "10"),
            ]
        ),
        Some(4.0)
    );
    assert_histograms_are_consistent(&scrape);

    // Values the gateway counts itself.
    assert_eq!(
        scrape.get(
            "toolgate_manifest_cache_lookups_total",
            &[("result", "hit")]
        ),
        Some(2.0)
    );
    assert_eq!(
        scrape.get(
            "toolgate_manifest_cache_lookups_total",
            &[("result", "miss")]
        ),
        Some(3.0)
    );
    // The caches report what they hold (within their budgets) and, so far, no evictions.
    for cache in ["manifest_cache", "access_cache"] {
        let bytes = scrape
            .get(&format!("toolgate_{cache}_bytes"), &[])
            .expect("bytes held");
        assert!(bytes > 0.0, "{cache} holds something after the reads");
        assert_eq!(
            scrape.get(&format!("toolgate_{cache}_evictions_total"), &[]),
            Some(0.0)
        );
    }
    assert_eq!(scrape.get("toolgate_sse_subscribers", &[]), Some(1.0));
    assert_eq!(
        scrape.get("toolgate_sse_events_sent_total", &[("event", "tools")]),
        Some(1.0)
    );
    assert_eq!(
        scrape.get(
            "toolgate_sse_events_sent_total",
            &[("event", "tools_changed")]
        ),
        Some(0.0)
    );
    assert_eq!(
        scrape.get("toolgate_catalog_revision", &[]),
        Some((revision + 1) as f64)
    );
    assert_eq!(scrape.get("toolgate_store_errors_total", &[]), None);
    assert_eq!(
        scrape.get("toolgate_rate_limited_total", &[("class", "agent_reads")]),
        Some(0.0),
        "written at 0 from the start"
    );
    assert!(
        !text.contains("toolgate_redis"),
        "no Redis configured, no Redis metrics"
    );

    // Labels carry templates and enums only: no subject, no tool id, no raw path.
    for identity in [
        "alice",
        "example.com",
        "nobody",
        "billing:refund",
        "/no/such",
    ] {
        assert!(!text.contains(identity), "{identity} in\n{text}");
    }

    // A change reaches the stream: exactly one tools_changed, counted; the scrape itself was
    // one request on /metrics.
    gateway
        .admin_send(Method::POST, "/admin/tools/billing:refund/enable", None)
        .await
        .expect(StatusCode::OK);
    assert_eq!(stream.event(WAIT).await.event, "tools_changed");
    let after = Scrape::of(&gateway).await;
    assert_eq!(
        after.get(
            "toolgate_sse_events_sent_total",
            &[("event", "tools_changed")]
        ),
        Some(1.0)
    );
    assert_eq!(requests(&after, "GET", "/metrics", "200"), 1.0);
    assert_eq!(
        after.get("agent_access_resolutions_total", &[]),
        Some(5.0),
        "a stream's pushed change is not a resolution"
    );
    drop(stream);
    let deadline = std::time::Instant::now() + WAIT;
    while Scrape::of(&gateway)
        .await
        .get("toolgate_sse_subscribers", &[])
        != Some(0.0)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the closed stream is not counted"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn increments_between_two_scrapes_are_exact() {
    let gateway = Gateway::start().await;
    gateway.put_catalog(catalog()).await;
    let token = Gateway::reader("bob");
    gateway
        .get("/agents/tools", &token)
        .await
        .expect(StatusCode::OK);
    let before = Scrape::of(&gateway).await;
    for _ in 0..25 {
        gateway
            .get("/agents/tools", &token)
            .await
            .expect(StatusCode::OK);
    }
    let after = Scrape::of(&gateway).await;
    let diff = |name: &str, labels: &[(&str, &str)]| {
        after.value(name, labels) - before.value(name, labels)
    };
    assert_eq!(diff("agent_access_resolutions_total", &[]), 25.0);
    assert_eq!(diff("agent_tools_resolved_total", &[]), 50.0);
    assert_eq!(diff("agent_resolution_time_milliseconds_count", &[]), 25.0);
    assert_eq!(
        diff(
            "agent_resolution_time_milliseconds_bucket",
            &[("le", "+Inf")]
        ),
        25.0
    );
    assert_eq!(
        diff(
            &format!("{DURATION}_count"),
            &[
                ("http_request_method", "GET"),
                ("http_response_status_code", "200"),
                ("http_route", "/agents/tools"),
            ]
        ),
        25.0
    );
    assert_eq!(
        diff(
            "toolgate_manifest_cache_lookups_total",
            &[("result", "hit")]
        ),
        25.0
    );
    assert_eq!(
        diff(
            "toolgate_manifest_cache_lookups_total",
            &[("result", "miss")]
        ),
        0.0
    );
}

/// A write that touches no tool of a manifest leaves that manifest cached (carried to the new
/// revision, its `revision` member updated); a write that touches one renders it again, without
/// the tool. Counted by the manifest cache's own metric.
#[tokio::test]
async fn a_write_outside_a_manifest_keeps_it_cached_and_one_inside_renders_it() {
    let gateway = Gateway::start().await;
    let mut catalog = catalog();
    catalog["sources"]
        .as_array_mut()
        .expect("sources")
        .push(json!({"id": "hr", "name": "hr-api", "type": "manual"}));
    catalog["tools"].as_array_mut().expect("tools").push(
        json!({"source_id": "hr", "operation_id": "fire", "name": "fire", "method": "POST", "path": "/fire"}),
    );
    catalog["groups"][0]["selectors"] = json!([{"source_pattern": "billing*"}]);
    gateway.put_catalog(catalog).await;
    let token = Gateway::reader("bob");
    let read = || async {
        let body = gateway
            .get("/agents/tools", &token)
            .await
            .expect(StatusCode::OK)
            .json();
        let ids: Vec<String> = body["data"]
            .as_array()
            .expect("data")
            .iter()
            .map(|entry| entry["tool_id"].as_str().expect("tool_id").to_owned())
            .collect();
        (ids, body["revision"].as_u64().expect("revision"))
    };
    let (before_ids, before_revision) = read().await;
    assert_eq!(before_ids, ["billing:list_invoices", "billing:refund"]);
    let lookups = |scrape: &Scrape, result: &str| {
        scrape.value(
            "toolgate_manifest_cache_lookups_total",
            &[("result", result)],
        )
    };

    let before = Scrape::of(&gateway).await;
    gateway
        .admin_send(
            Method::POST,
            "/admin/tools/hr:fire/disable",
            Some(json!({"reason": "x"})),
        )
        .await
        .expect(StatusCode::OK);
    let (ids, revision) = read().await;
    let after = Scrape::of(&gateway).await;
    assert_eq!(ids, before_ids);
    assert!(
        revision > before_revision,
        "the carried body names the new revision"
    );
    assert_eq!(lookups(&after, "hit") - lookups(&before, "hit"), 1.0);
    assert_eq!(lookups(&after, "miss") - lookups(&before, "miss"), 0.0);

    gateway
        .admin_send(
            Method::POST,
            "/admin/tools/billing:refund/disable",
            Some(json!({"reason": "x"})),
        )
        .await
        .expect(StatusCode::OK);
    let (ids, _) = read().await;
    let last = Scrape::of(&gateway).await;
    assert_eq!(
        ids,
        ["billing:list_invoices"],
        "the disabled tool is gone at once"
    );
    assert_eq!(lookups(&last, "miss") - lookups(&after, "miss"), 1.0);
}
