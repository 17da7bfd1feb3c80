//! Conditional admin writes over HTTP: every admin answer carries the catalog revision as
//! `ETag: "r<revision>"`, and every admin write honours `If-Match`, so that a read-modify-write
//! can never silently revert another admin's acknowledged change (docs/api.md, "Conditional writes").

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::gateway::{Gateway, Reply, config, hs_settings};
use toolgate::service::limits::RateLimits;

fn catalog() -> Value {
    json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual"}],
        "tools": [{"source_id": "billing", "operation_id": "refund", "name": "refund", "method": "POST"}],
        "labels": [{"id": "pii", "name": "pii"}],
        "groups": [{"id": "g-all", "name": "all", "selectors": [{}]}],
        "policies": [{"id": "p-read", "name": "readers", "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "reader"}], "allowed_group_ids": ["g-all"]}]
    })
}

/// An inline OpenAPI document, so that a refresh needs no upstream.
fn inline_spec() -> Value {
    json!({"openapi": "3.0.0", "info": {"title": "t", "version": "1"},
           "paths": {"/items": {"get": {"operationId": "list_items", "responses": {"200": {"description": "ok"}}}}}})
}

/// Sends an admin request with an optional `If-Match` header.
async fn send(
    gateway: &Gateway,
    method: Method,
    path: &str,
    body: Option<Value>,
    if_match: Option<&str>,
) -> Reply {
    send_as(gateway, &Gateway::admin(), method, path, body, if_match).await
}

async fn send_as(
    gateway: &Gateway,
    token: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
    if_match: Option<&str>,
) -> Reply {
    let mut request = gateway
        .client
        .request(method, format!("{}{}", gateway.base, path))
        .bearer_auth(token);
    if let Some(if_match) = if_match {
        request = request.header("if-match", if_match);
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&body).expect("json"));
    }
    let response = request.send().await.expect("request reaches the gateway");
    Reply {
        status: response.status(),
        headers: response.headers().clone(),
        body: response.bytes().await.expect("body").to_vec(),
    }
}

/// The revision an `ETag: "r<n>"` names.
fn etag_revision(reply: &Reply) -> u64 {
    let etag = reply
        .header("etag")
        .unwrap_or_else(|| panic!("no ETag on a {} answer", reply.status));
    etag.strip_prefix("\"r")
        .and_then(|rest| rest.strip_suffix('"'))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("ETag {etag} is not \"r<revision>\""))
}

async fn revision(gateway: &Gateway) -> u64 {
    let reply = send(gateway, Method::GET, "/admin/catalog", None, None).await;
    etag_revision(&reply.expect(StatusCode::OK))
}

async fn gateway_with_catalog() -> Gateway {
    let gateway = Gateway::start().await;
    send(
        &gateway,
        Method::PUT,
        "/admin/catalog",
        Some(catalog()),
        None,
    )
    .await
    .expect(StatusCode::OK);
    gateway
}

#[tokio::test]
async fn every_admin_answer_carries_the_catalog_revision_as_etag() {
    let gateway = gateway_with_catalog().await;
    let current = revision(&gateway).await;
    assert_eq!(current, 1);
    for path in [
        "/admin/sources",
        "/admin/tools",
        "/admin/labels",
        "/admin/groups",
        "/admin/policies",
        "/admin/labels/pii",
        "/admin/groups/g-all/tools",
        "/admin/catalog",
        "/admin/audit",
    ] {
        let reply = send(&gateway, Method::GET, path, None, None).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert_eq!(etag_revision(&reply), current, "{path}");
    }
    let preview = send(
        &gateway,
        Method::POST,
        "/admin/preview",
        Some(json!({"claims": {"roles": ["reader"]}})),
        None,
    )
    .await
    .expect(StatusCode::OK);
    assert_eq!(etag_revision(&preview), current);
    // A problem answer says which revision the catalog is at, too.
    let missing = send(&gateway, Method::GET, "/admin/labels/nope", None, None).await;
    missing.problem(404);
    assert_eq!(etag_revision(&missing), current);

    // A write's ETag is the revision it made.
    let writes: [(Method, &str, Option<Value>, StatusCode); 7] = [
        (
            Method::POST,
            "/admin/labels",
            Some(json!({"id": "ops", "name": "ops"})),
            StatusCode::CREATED,
        ),
        (
            Method::PUT,
            "/admin/labels/ops",
            Some(json!({"name": "ops", "description": "d"})),
            StatusCode::OK,
        ),
        (
            Method::PATCH,
            "/admin/labels/ops",
            Some(json!({"description": "e"})),
            StatusCode::OK,
        ),
        (
            Method::POST,
            "/admin/tools/billing:refund/disable",
            None,
            StatusCode::OK,
        ),
        (
            Method::POST,
            "/admin/tools/billing:refund/enable",
            None,
            StatusCode::OK,
        ),
        (
            Method::DELETE,
            "/admin/labels/ops",
            None,
            StatusCode::NO_CONTENT,
        ),
        (
            Method::PUT,
            "/admin/catalog",
            Some({
                let mut changed = catalog();
                changed["labels"][0]["description"] = json!("changed");
                changed
            }),
            StatusCode::OK,
        ),
    ];
    let mut expected = current;
    for (method, path, body, status) in writes {
        let reply = send(&gateway, method.clone(), path, body, None).await;
        assert_eq!(reply.status, status, "{method} {path}");
        expected += 1;
        assert_eq!(etag_revision(&reply), expected, "{method} {path}");
        assert_eq!(
            reply.header("x-catalog-revision"),
            Some(expected.to_string().as_str())
        );
    }
}

/// One write of every kind, with the body it needs; the entities exist in [`catalog`].
fn every_write() -> Vec<(Method, &'static str, Option<Value>)> {
    vec![
        (
            Method::POST,
            "/admin/labels",
            Some(json!({"id": "new", "name": "new"})),
        ),
        (
            Method::PUT,
            "/admin/labels/pii",
            Some(json!({"name": "pii", "description": "changed"})),
        ),
        (
            Method::PATCH,
            "/admin/labels/pii",
            Some(json!({"description": "patched"})),
        ),
        (Method::DELETE, "/admin/labels/pii", None),
        (Method::POST, "/admin/tools/billing:refund/disable", None),
        (
            Method::PUT,
            "/admin/catalog",
            Some(json!({"labels": [{"id": "only", "name": "only"}]})),
        ),
        (Method::POST, "/admin/sources/spec/refresh", None),
    ]
}

/// The catalog and the audit log, to show that a refused write changed neither.
async fn state_of(gateway: &Gateway) -> (u64, Value, Value) {
    let catalog = send(gateway, Method::GET, "/admin/catalog", None, None)
        .await
        .expect(StatusCode::OK);
    let audit = send(gateway, Method::GET, "/admin/audit?limit=1000", None, None)
        .await
        .expect(StatusCode::OK);
    (
        etag_revision(&catalog),
        catalog.json(),
        audit.json()["data"].clone(),
    )
}

#[tokio::test]
async fn a_write_with_a_stale_if_match_is_refused_with_412_and_changes_nothing() {
    let gateway = gateway_with_catalog().await;
    // An openapi source with an inline document, so that a refresh needs no upstream.
    send(
        &gateway,
        Method::POST,
        "/admin/sources",
        Some(json!({"id": "spec", "name": "spec", "type": "openapi", "config": {"spec": inline_spec()}})),
        None,
    )
    .await
    .expect(StatusCode::CREATED);
    let stale = revision(&gateway).await;
    // Another admin's write moves the catalog on.
    send(
        &gateway,
        Method::POST,
        "/admin/labels",
        Some(json!({"id": "other", "name": "other"})),
        None,
    )
    .await
    .expect(StatusCode::CREATED);
    let before = state_of(&gateway).await;
    let current = before.0;
    assert_eq!(current, stale + 1);

    for (method, path, body) in every_write() {
        for if_match in [
            format!("\"r{stale}\""),
            format!("\"r{}\", \"r{}\"", stale - 1, stale),
            format!("W/\"r{current}\""),
            "\"something-else\"".to_owned(),
        ] {
            let reply = send(
                &gateway,
                method.clone(),
                path,
                body.clone(),
                Some(&if_match),
            )
            .await;
            let problem = reply.problem(412);
            assert!(
                problem["detail"]
                    .as_str()
                    .is_some_and(|d| d.contains(&format!("r{current}"))),
                "{method} {path} ({if_match}): {problem}"
            );
            assert_eq!(etag_revision(&reply), current, "{method} {path}");
            assert_eq!(
                state_of(&gateway).await,
                before,
                "{method} {path} with If-Match {if_match} changed something"
            );
        }
    }

    // A stale create of an importable source is refused before its upstream is fetched (one
    // that nothing listens on would make it a 502).
    let unreachable = json!({"id": "far", "name": "far", "type": "openapi",
                             "config": {"url": "http://127.0.0.1:1/spec.json"}});
    send(
        &gateway,
        Method::POST,
        "/admin/sources",
        Some(unreachable),
        Some(&format!("\"r{stale}\"")),
    )
    .await
    .problem(412);

    // A malformed If-Match is a 400, and changes nothing either.
    for if_match in ["r1", "\"r1", "\"r1\" \"r2\"", "", "*, \"r1\"", "\"r1\",,x"] {
        let reply = send(
            &gateway,
            Method::PATCH,
            "/admin/labels/pii",
            Some(json!({"description": "x"})),
            Some(if_match),
        )
        .await;
        let problem = reply.problem(400);
        assert!(
            problem["detail"]
                .as_str()
                .is_some_and(|d| d.contains("If-Match")),
            "{if_match}: {problem}"
        );
        assert_eq!(state_of(&gateway).await, before, "If-Match {if_match}");
    }
}

#[tokio::test]
async fn a_write_with_a_current_if_match_applies_and_answers_the_new_revision() {
    for (index, (method, path, body)) in every_write().into_iter().enumerate() {
        let gateway = gateway_with_catalog().await;
        send(
            &gateway,
            Method::POST,
            "/admin/sources",
            Some(json!({"id": "spec", "name": "spec", "type": "openapi", "config": {"spec": inline_spec()}})),
            None,
        )
        .await
        .expect(StatusCode::CREATED);
        // The refresh has something to do: the source's tool was removed by hand.
        send(
            &gateway,
            Method::DELETE,
            "/admin/tools/spec:list_items",
            None,
            None,
        )
        .await
        .expect(StatusCode::NO_CONTENT);
        let current = revision(&gateway).await;
        // The forms that hold: the current tag, a list holding it, and `*`.
        let if_match = match index % 3 {
            0 => format!("\"r{current}\""),
            1 => format!("\"r{}\", \"r{current}\"", current - 1),
            _ => "*".to_owned(),
        };
        let reply = send(&gateway, method.clone(), path, body, Some(&if_match)).await;
        assert!(
            reply.status.is_success(),
            "{method} {path} with If-Match {if_match}: {} {}",
            reply.status,
            String::from_utf8_lossy(&reply.body)
        );
        assert_eq!(etag_revision(&reply), current + 1, "{method} {path}");
        assert_eq!(revision(&gateway).await, current + 1, "{method} {path}");
    }
}

/// What one race of read-modify-write rounds did.
#[derive(Debug, Default)]
struct RaceOutcome {
    acknowledged: u64,
    retries_on_412: u64,
    lost: u64,
}

/// `writers` admins each do `rounds` of: read the shared group, add one to their own counter
/// in its description, write the whole group back (with `If-Match` when `conditional`),
/// re-reading and retrying on 412. Lost: acknowledged increments missing at the end.
async fn race(writers: usize, rounds: u64, conditional: bool) -> RaceOutcome {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut settings = config(dir.path(), hs_settings());
    settings.rate_limits = RateLimits::UNLIMITED;
    let gateway = Arc::new(Gateway::start_with(settings).await);
    send(
        &gateway,
        Method::POST,
        "/admin/groups",
        Some(json!({"id": "shared", "name": "shared", "description": "{}"})),
        None,
    )
    .await
    .expect(StatusCode::CREATED);

    let mut tasks = Vec::new();
    for writer in 0..writers {
        let gateway = Arc::clone(&gateway);
        tasks.push(tokio::spawn(async move {
            let token =
                Gateway::token(json!({"sub": format!("writer-{writer}"), "roles": ["admin"]}));
            let me = format!("w{writer}");
            let (mut acknowledged, mut retries) = (0u64, 0u64);
            for _ in 0..rounds {
                loop {
                    let read = send_as(
                        &gateway,
                        &token,
                        Method::GET,
                        "/admin/groups/shared",
                        None,
                        None,
                    )
                    .await
                    .expect(StatusCode::OK);
                    let etag = read.header("etag").map(str::to_owned);
                    let mut group = read.json();
                    let mut counters: BTreeMap<String, u64> =
                        serde_json::from_str(group["description"].as_str().expect("description"))
                            .expect("counters");
                    *counters.entry(me.clone()).or_default() += 1;
                    group["description"] = json!(serde_json::to_string(&counters).expect("json"));
                    let if_match = if conditional { etag.as_deref() } else { None };
                    let write = send_as(
                        &gateway,
                        &token,
                        Method::PUT,
                        "/admin/groups/shared",
                        Some(group),
                        if_match,
                    )
                    .await;
                    match write.status {
                        StatusCode::OK => {
                            acknowledged += 1;
                            break;
                        }
                        StatusCode::PRECONDITION_FAILED if conditional => retries += 1,
                        other => panic!("{other}: {}", String::from_utf8_lossy(&write.body)),
                    }
                }
            }
            (me, acknowledged, retries)
        }));
    }
    let mut outcome = RaceOutcome::default();
    let mut acknowledged_by = BTreeMap::new();
    for task in tasks {
        let (me, acknowledged, retries) = task.await.expect("writer");
        outcome.acknowledged += acknowledged;
        outcome.retries_on_412 += retries;
        acknowledged_by.insert(me, acknowledged);
    }
    let end = send(&gateway, Method::GET, "/admin/groups/shared", None, None)
        .await
        .expect(StatusCode::OK)
        .json();
    let counters: BTreeMap<String, u64> =
        serde_json::from_str(end["description"].as_str().expect("description")).expect("counters");
    for (writer, acknowledged) in acknowledged_by {
        let present = counters.get(&writer).copied().unwrap_or(0);
        outcome.lost += acknowledged.saturating_sub(present);
    }
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_read_modify_writes_with_if_match_lose_nothing() {
    let (writers, rounds) = (4, 40);
    let guarded = race(writers, rounds, true).await;
    let unguarded = race(writers, rounds, false).await;
    eprintln!(
        "{writers} writers x {rounds} rounds: with If-Match {guarded:?}; without {unguarded:?}"
    );
    assert_eq!(guarded.acknowledged, writers as u64 * rounds);
    assert_eq!(guarded.lost, 0, "{guarded:?}");
}
