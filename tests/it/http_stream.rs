//! `GET /agents/tools/stream` over real HTTP with real tokens: the first event, per-manifest
//! diffs, silence on unrelated changes, revocation, token expiry, resume, backpressure, pings,
//! the per-subject cap and cleanup on disconnect.

use crate::support;

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::gateway::{Gateway, config, hs_settings};
use support::sse::{Item, Next, SseClient};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const WAIT: Duration = Duration::from_secs(5);
const QUIET: Duration = Duration::from_millis(300);

fn catalog() -> Value {
    json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual"}],
        "tools": [
            {"source_id": "billing", "operation_id": "list_invoices", "name": "list_invoices", "method": "GET", "path": "/invoices"},
            {"source_id": "billing", "operation_id": "refund", "name": "refund", "method": "POST", "path": "/refunds"}
        ],
        "groups": [{"id": "g-read", "name": "reads", "selectors": [{"method_pattern": "GET"}]},
                   {"id": "g-all", "name": "all", "selectors": [{}]}],
        "policies": [
            {"id": "p-read", "name": "readers", "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "reader"}], "allowed_group_ids": ["g-read"]},
            {"id": "p-all", "name": "staff", "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "staff"}], "allowed_group_ids": ["g-all"]}
        ]
    })
}

async fn seeded(gateway: Gateway) -> Gateway {
    gateway.put_catalog(catalog()).await;
    gateway
}

async fn gateway() -> Gateway {
    seeded(Gateway::start().await).await
}

/// A gateway with adjusted stream settings; the temp dir lives as long as the returned guard.
async fn gateway_with(
    adjust: impl FnOnce(&mut toolgate::config::Settings),
) -> (Gateway, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = config(dir.path(), hs_settings());
    adjust(&mut config);
    (seeded(Gateway::start_with(config).await).await, dir)
}

fn staff(sub: &str) -> String {
    Gateway::token(json!({"sub": sub, "roles": ["staff"]}))
}

async fn add_tool(gateway: &Gateway, operation: &str, method: &str) {
    gateway
        .admin_send(
            Method::POST,
            "/admin/tools",
            Some(json!({"source_id": "billing", "operation_id": operation, "name": operation, "method": method})),
        )
        .await
        .expect(StatusCode::CREATED);
}

async fn describe(gateway: &Gateway, tool: &str, description: &str) {
    gateway
        .admin_send(
            Method::PATCH,
            &format!("/admin/tools/{tool}"),
            Some(json!({"description": description})),
        )
        .await
        .expect(StatusCode::OK);
}

async fn set_policy_active(gateway: &Gateway, policy: &str, active: bool) {
    gateway
        .admin_send(
            Method::PATCH,
            &format!("/admin/policies/{policy}"),
            Some(json!({"active": active})),
        )
        .await
        .expect(StatusCode::OK);
}

/// Polls until the hub holds `count` subscribers.
async fn hub_settles_at(gateway: &Gateway, count: usize) {
    let deadline = Instant::now() + WAIT;
    while gateway.state().app.internals().hub.subscriber_count() != count {
        assert!(
            Instant::now() < deadline,
            "the hub still holds {} subscribers, expected {count}",
            gateway.state().app.internals().hub.subscriber_count()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_first_event_is_the_full_manifest_with_its_etag() {
    let gateway = gateway().await;
    let token = Gateway::reader("a");
    let plain = gateway.get("/agents/tools", &token).await;
    for path in [
        "/agents/tools/stream",
        "/agents/stream",
        "/api/agents/stream",
    ] {
        let mut stream = SseClient::connect(&gateway, path, &token).await;
        assert_eq!(
            stream
                .headers
                .get("content-type")
                .and_then(|v| v.to_str().ok()),
            Some("text/event-stream")
        );
        let first = stream.event(WAIT).await;
        assert_eq!(first.event, "tools");
        assert_eq!(first.id.as_deref(), plain.header("etag"));
        assert_eq!(first.json(), plain.json(), "the body of GET /agents/tools");
    }
}

#[tokio::test]
async fn a_change_to_this_manifest_yields_exactly_one_tools_changed() {
    let gateway = gateway().await;
    let token = Gateway::reader("a");
    let mut stream = SseClient::connect(&gateway, "/agents/tools/stream", &token).await;
    stream.event(WAIT).await;
    add_tool(&gateway, "search", "GET").await;
    let changed = stream.event(WAIT).await;
    assert_eq!(changed.event, "tools_changed");
    let data = changed.json();
    assert_eq!(changed.ids("added"), ["billing:search"]);
    assert_eq!(data["added"][0]["groups"], json!(["g-read"]));
    assert_eq!(data["updated"], json!([]));
    assert_eq!(data["removed"], json!([]));
    assert_eq!(data["count"], json!(2));
    let now = gateway.get("/agents/tools", &token).await;
    assert_eq!(data["etag"].as_str(), now.header("etag"));
    assert_eq!(changed.id.as_deref(), now.header("etag"));
    assert_eq!(data["revision"], now.json()["revision"]);
    stream.no_event(QUIET).await;
}

#[tokio::test]
async fn an_unrelated_change_yields_nothing() {
    let gateway = gateway().await;
    let mut reading =
        SseClient::connect(&gateway, "/agents/tools/stream", &Gateway::reader("a")).await;
    let mut staffing = SseClient::connect(&gateway, "/agents/tools/stream", &staff("s")).await;
    reading.event(WAIT).await;
    staffing.event(WAIT).await;
    // Only staff see POST tools.
    add_tool(&gateway, "void", "POST").await;
    assert_eq!(staffing.event(WAIT).await.ids("added"), ["billing:void"]);
    describe(&gateway, "billing:refund", "gives money back").await;
    assert_eq!(
        staffing.event(WAIT).await.ids("updated"),
        ["billing:refund"]
    );
    // Then a change the reader does see: it must be the reader's very next event.
    describe(&gateway, "billing:list_invoices", "lists invoices").await;
    let next = reading.event(WAIT).await;
    assert_eq!(next.event, "tools_changed");
    assert_eq!(next.ids("updated"), ["billing:list_invoices"]);
    assert_eq!(
        next.json()["updated"][0]["description"],
        json!("lists invoices")
    );
    assert_eq!(next.json()["added"], json!([]));
}

#[tokio::test]
async fn revoking_access_removes_everything_and_keeps_the_stream_open() {
    let gateway = gateway().await;
    let mut stream =
        SseClient::connect(&gateway, "/agents/tools/stream", &Gateway::reader("a")).await;
    stream.event(WAIT).await;
    set_policy_active(&gateway, "p-read", false).await;
    let revoked = stream.event(WAIT).await;
    assert_eq!(revoked.event, "tools_changed");
    assert_eq!(revoked.json()["removed"], json!(["billing:list_invoices"]));
    assert_eq!(revoked.json()["count"], json!(0));
    set_policy_active(&gateway, "p-read", true).await;
    let restored = stream.event(WAIT).await;
    assert_eq!(restored.ids("added"), ["billing:list_invoices"]);
}

#[tokio::test]
async fn a_token_with_a_short_exp_gets_token_expired_and_the_stream_ends() {
    let gateway = gateway().await;
    let exp = support::unix_now() + 2;
    let token = Gateway::token(json!({"sub": "short", "roles": ["reader"], "exp": exp}));
    let mut stream = SseClient::connect(&gateway, "/agents/tools/stream", &token).await;
    assert_eq!(stream.event(WAIT).await.event, "tools");
    let expired = stream.event(WAIT).await;
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64();
    assert_eq!(expired.event, "token_expired");
    assert_eq!(expired.json(), json!({"exp": exp}));
    assert!(at >= exp as f64 - 0.05, "not before exp ({at} < {exp})");
    assert!(
        matches!(stream.next(WAIT).await, Next::End),
        "the stream ends"
    );
    hub_settles_at(&gateway, 0).await;
}

#[tokio::test]
async fn resume_with_a_current_and_a_stale_last_event_id() {
    let gateway = gateway().await;
    let token = Gateway::reader("a");
    let etag = gateway
        .get("/agents/tools", &token)
        .await
        .header("etag")
        .expect("etag")
        .to_owned();
    let mut current = SseClient::open(&gateway, "/agents/tools/stream", &token, Some(&etag))
        .await
        .expect("opens");
    let unchanged = current.event(WAIT).await;
    assert_eq!(unchanged.event, "unchanged");
    assert_eq!(unchanged.json()["etag"], json!(etag));
    assert!(unchanged.json()["revision"].as_u64().is_some());
    let mut stale = SseClient::open(&gateway, "/agents/tools/stream", &token, Some("\"0000\""))
        .await
        .expect("opens");
    let tools = stale.event(WAIT).await;
    assert_eq!(tools.event, "tools");
    assert_eq!(tools.id.as_deref(), Some(etag.as_str()));
    // A resumed stream goes on with diffs like any other.
    add_tool(&gateway, "search", "GET").await;
    assert_eq!(current.event(WAIT).await.ids("added"), ["billing:search"]);
}

#[tokio::test]
async fn many_subscribers_with_different_claims_each_get_their_own_diff() {
    let gateway = gateway().await;
    let path = "/agents/tools/stream";
    let mut readers = Vec::new();
    for sub in ["r1", "r2", "r3", "r1"] {
        readers.push(SseClient::connect(&gateway, path, &Gateway::reader(sub)).await);
    }
    let mut staffs = Vec::new();
    for sub in ["s1", "s2"] {
        staffs.push(SseClient::connect(&gateway, path, &staff(sub)).await);
    }
    let mut narrowed =
        SseClient::connect(&gateway, "/agents/tools/stream?tools=refund", &staff("s1")).await;
    for stream in readers
        .iter_mut()
        .chain(staffs.iter_mut())
        .chain([&mut narrowed])
    {
        assert_eq!(stream.event(WAIT).await.event, "tools");
    }
    let hub = &gateway.state().app.internals().hub;
    assert_eq!(hub.subscriber_count(), 7);
    assert_eq!(
        hub.group_count(),
        3,
        "streams whose claims agree on what the policies read (roles) share one manifest, \
         whatever their sub: readers, staff, and staff narrowed to refund"
    );

    add_tool(&gateway, "search", "GET").await;
    for stream in readers.iter_mut().chain(staffs.iter_mut()) {
        let event = stream.event(WAIT).await;
        assert_eq!(event.ids("added"), ["billing:search"]);
    }
    describe(&gateway, "billing:refund", "gives money back").await;
    for stream in staffs.iter_mut() {
        assert_eq!(stream.event(WAIT).await.ids("updated"), ["billing:refund"]);
    }
    // The narrowed stream saw nothing of `search`, only the refund update.
    let event = narrowed.event(WAIT).await;
    assert_eq!(event.ids("updated"), ["billing:refund"]);
    assert_eq!(event.json()["count"], json!(1));
    for stream in readers.iter_mut() {
        stream.no_event(QUIET).await;
    }
}

#[tokio::test]
async fn a_slow_reader_does_not_delay_a_fast_one_and_is_coalesced() {
    let (gateway, _dir) = gateway_with(|config| config.cache.stream_queue_bytes = 300 * 1024).await;
    let token = Gateway::reader("a");
    // The slow reader: a socket with a small receive buffer that reads nothing (yet).
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(64 * 1024).expect("rcvbuf");
    let addr = gateway
        .base
        .trim_start_matches("http://")
        .parse()
        .expect("addr");
    let mut slow = socket.connect(addr).await.expect("connect");
    slow.write_all(
        format!(
            "GET /agents/tools/stream HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {token}\r\n\r\n"
        )
        .as_bytes(),
    )
    .await
    .expect("request");
    let mut fast =
        SseClient::connect(&gateway, "/agents/tools/stream", &Gateway::reader("b")).await;
    fast.event(WAIT).await;
    hub_settles_at(&gateway, 2).await;

    // Each change rewrites 64 tools with 4 KiB descriptions: ~256 KiB into the slow reader's
    // path, so its socket fills, then its buffer.
    let mut worst = Duration::ZERO;
    for round in 0..40 {
        let mut bulky = catalog();
        let tools = bulky["tools"].as_array_mut().expect("tools");
        for i in 0..64 {
            tools.push(
                json!({"source_id": "billing", "operation_id": format!("op{i:02}"),
                "name": format!("op{i:02}"), "method": "GET",
                "description": format!("{round}{}", "x".repeat(4000))}),
            );
        }
        let reply = gateway
            .admin_send(Method::PUT, "/admin/catalog", Some(bulky))
            .await;
        assert_eq!(reply.status, StatusCode::OK);
        let written = Instant::now();
        let event = fast.event(WAIT).await;
        worst = worst.max(written.elapsed());
        assert_eq!(event.event, "tools_changed");
        assert_eq!(event.json()["count"], json!(65));
    }
    assert!(
        worst < Duration::from_millis(500),
        "the fast reader waited {worst:?}"
    );
    assert!(
        gateway.state().app.internals().hub.lagged_count() > 0,
        "the slow reader was coalesced"
    );

    // Once it reads, the slow reader gets a fresh snapshot of the latest state.
    let mut seen = Vec::new();
    let mut buffer = vec![0u8; 1 << 16];
    let deadline = Instant::now() + Duration::from_secs(20);
    let needle = b"event: tools\n";
    while seen.windows(needle.len()).filter(|w| *w == needle).count() < 2 {
        assert!(
            Instant::now() < deadline,
            "no fresh snapshot for the slow reader"
        );
        let n = tokio::time::timeout(WAIT, slow.read(&mut buffer))
            .await
            .expect("reads")
            .expect("read");
        assert!(n > 0, "the slow reader's stream ended");
        seen.extend_from_slice(&buffer[..n]);
    }
    let text = String::from_utf8_lossy(&seen);
    let last_snapshot = text.rfind("event: tools\n").expect("found");
    assert!(
        text[last_snapshot..].contains("\"description\":\"39x"),
        "the snapshot has the latest state"
    );
}

#[tokio::test]
async fn ping_comments_arrive_and_the_request_timeout_does_not_cut_streams() {
    let (gateway, _dir) = gateway_with(|config| {
        config.sse_ping = Duration::from_millis(100);
        config.request_timeout = Duration::from_millis(300);
    })
    .await;
    let mut stream =
        SseClient::connect(&gateway, "/agents/tools/stream", &Gateway::reader("a")).await;
    stream.event(WAIT).await;
    let started = Instant::now();
    let mut pings = 0;
    while started.elapsed() < Duration::from_millis(1000) {
        match stream.next(WAIT).await {
            Next::Item(Item::Comment(comment)) => {
                assert_eq!(comment, "ping");
                pings += 1;
            }
            other => panic!("expected pings, got {other:?}"),
        }
    }
    assert!(pings >= 5, "{pings} pings in a second at 100 ms");
}

#[tokio::test]
async fn streams_beyond_the_per_subject_cap_are_refused_with_429() {
    let (gateway, _dir) = gateway_with(|config| config.max_streams_per_subject = 2).await;
    let path = "/agents/tools/stream";
    let first = SseClient::connect(&gateway, path, &Gateway::reader("capped")).await;
    let _second = SseClient::connect(&gateway, path, &staff("capped")).await;
    let refused = SseClient::open(&gateway, path, &Gateway::reader("capped"), None)
        .await
        .err()
        .expect("refused");
    let problem = refused.problem(429);
    assert_eq!(
        problem["type"],
        json!("urn:toolgate:problem:too-many-requests")
    );
    assert!(refused.header("retry-after").is_some());
    // Another subject is not affected; a closed stream frees its place.
    let _other = SseClient::connect(&gateway, path, &Gateway::reader("other")).await;
    drop(first);
    hub_settles_at(&gateway, 2).await;
    let _third = SseClient::connect(&gateway, path, &Gateway::reader("capped")).await;
    // Same admin rules as GET /agents/tools.
    let forbidden = SseClient::open(
        &gateway,
        "/agents/tools/stream?include_disabled=true",
        &Gateway::reader("x"),
        None,
    )
    .await
    .err()
    .expect("forbidden");
    forbidden.problem(403);
    let unauthenticated = gateway
        .request(Method::GET, "/agents/tools/stream", None, None)
        .await;
    unauthenticated.problem(401);
}

#[tokio::test]
async fn disconnects_free_every_subscription() {
    let (gateway, _dir) = gateway_with(|config| {
        config.sse_ping = Duration::from_millis(100);
        config.max_streams_per_subject = 100;
    })
    .await;
    let mut streams = Vec::new();
    for i in 0..20 {
        let token = if i % 2 == 0 {
            Gateway::reader("many")
        } else {
            staff("many")
        };
        let mut stream = SseClient::connect(&gateway, "/agents/tools/stream", &token).await;
        stream.event(WAIT).await;
        streams.push(stream);
    }
    assert_eq!(gateway.state().app.internals().hub.subscriber_count(), 20);
    assert_eq!(gateway.state().app.internals().hub.group_count(), 2);
    drop(streams);
    hub_settles_at(&gateway, 0).await;
    assert_eq!(gateway.state().app.internals().hub.group_count(), 0);
}

/// `fields=` narrows every entry on every route that lists them, under its own tag: a read, a
/// 304, the stream's snapshot, and a stream that a change to a field it did not ask for leaves
/// silent while one it did ask for reaches it. `/mcp` refuses it (MCP fixes a tool's shape).
#[tokio::test]
async fn fields_narrow_entries_with_their_own_tag_on_reads_and_streams() {
    let gateway = gateway().await;
    let token = Gateway::reader("a");
    let full = gateway.get("/agents/tools", &token).await;
    let narrowed = gateway
        .get("/agents/tools?fields=name&fields=groups", &token)
        .await;
    assert_eq!(narrowed.status, StatusCode::OK);
    assert_eq!(
        narrowed.json()["data"],
        json!([{"tool_id": "billing:list_invoices", "name": "list_invoices", "groups": ["g-read"]}])
    );
    let tag = narrowed.header("etag").expect("etag").to_owned();
    assert_ne!(Some(tag.as_str()), full.header("etag"));
    let again = |if_none_match: String| {
        gateway
            .client
            .get(format!("{}/agents/tools?fields=groups,name", gateway.base))
            .bearer_auth(&token)
            .header("if-none-match", if_none_match)
            .send()
    };
    let not_modified = again(tag.clone()).await.expect("request");
    assert_eq!(not_modified.status(), StatusCode::NOT_MODIFIED);
    let other = again(full.header("etag").expect("etag").to_owned())
        .await
        .expect("request");
    assert_eq!(
        other.status(),
        StatusCode::OK,
        "the full tag is another body"
    );

    let mut stream = SseClient::connect(&gateway, "/agents/tools/stream?fields=name", &token).await;
    let first = stream.event(WAIT).await;
    assert_eq!(
        first.json()["data"],
        json!([{"tool_id": "billing:list_invoices", "name": "list_invoices"}])
    );
    describe(&gateway, "billing:list_invoices", "not asked for").await;
    stream.no_event(QUIET).await;
    gateway
        .admin_send(
            Method::PATCH,
            "/admin/tools/billing:list_invoices",
            Some(json!({"name": "invoices"})),
        )
        .await
        .expect(StatusCode::OK);
    let changed = stream.event(WAIT).await;
    assert_eq!(
        changed.json()["updated"],
        json!([{"tool_id": "billing:list_invoices", "name": "invoices"}])
    );

    let unknown = gateway
        .get("/agents/tools?fields=name,schema", &token)
        .await;
    assert_eq!(
        unknown.problem(400)["detail"],
        json!(
            "query parameter 'fields': 'schema' is not a manifest entry field; expected tool_id, \
             name, title, description, input_schema, output_schema, source_id, source_path, method, \
             tags, version, available_in_states, next_state, groups"
        )
    );
    let mcp = gateway
        .client
        .post(format!("{}/mcp?fields=name", gateway.base))
        .bearer_auth(&token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}})
            .to_string(),
        )
        .send()
        .await
        .expect("request");
    assert_eq!(mcp.status(), StatusCode::BAD_REQUEST);
    let text = mcp.text().await.expect("body");
    assert!(text.contains("fields is not available at /mcp"), "{text}");
}

/// A stream's end is counted by the gateway's clock, the one its verifier checks `exp` with:
/// on a clock an hour behind the system's, a token that expires a second later by that clock
/// (long past by the system's) ends its stream a second after it opens, not at once.
#[tokio::test]
async fn a_stream_ends_at_exp_by_the_gateways_clock() {
    let dir = tempfile::tempdir().expect("temp dir");
    let behind = chrono::Utc::now() - chrono::Duration::hours(1);
    let clock = std::sync::Arc::new(toolgate::clock::ManualClock::at(behind));
    let gateway =
        seeded(Gateway::start_clocked(config(dir.path(), hs_settings()), clock.clone()).await)
            .await;
    let exp = toolgate::clock::Clock::unix_now(clock.as_ref()) + 1;
    let token = Gateway::token(json!({"sub": "short", "roles": ["reader"], "exp": exp}));
    let opened = Instant::now();
    let mut stream = SseClient::connect(&gateway, "/agents/tools/stream", &token).await;
    assert_eq!(stream.event(WAIT).await.event, "tools");
    let expired = stream.event(WAIT).await;
    assert_eq!(expired.event, "token_expired");
    assert_eq!(expired.json(), json!({"exp": exp}));
    assert!(
        opened.elapsed() >= Duration::from_millis(900),
        "at exp by the gateway's clock, not at once: {:?}",
        opened.elapsed()
    );
}
