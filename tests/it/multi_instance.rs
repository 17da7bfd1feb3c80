//! Two `toolgate serve` processes on one MongoDB (nx-27017) and one Redis, as users scale out:
//! a write through one is served by the other at once, reaches the other's SSE subscribers,
//! and concurrent writes through both lose nothing.

use crate::support;

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::gateway::Gateway;
use support::mongo::{MongoServer, database_name};
use support::process::Process;
use support::redis::RedisServer;
use support::sse::SseClient;

struct Cluster {
    a: Process,
    b: Process,
    client: reqwest::Client,
    _mongo: MongoServer,
    _redis: RedisServer,
    _dir: tempfile::TempDir,
}

async fn cluster(test: &str) -> Cluster {
    let mongo = MongoServer::start().await;
    let redis = RedisServer::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let database = database_name(test);
    let env = [
        ("TOOLGATE_MONGODB_URI", mongo.uri()),
        ("TOOLGATE_MONGODB_DATABASE", database.as_str()),
        ("TOOLGATE_REDIS_URL", redis.url.as_str()),
        ("TOOLGATE_REVISION_POLL_SECS", "1"),
        // One issuer for the delegated tokens either instance mints.
        ("TOOLGATE_PUBLIC_URL", "https://gateway.example.com"),
        // The test polls B as fast as it answers and writes 100 times in a row: what it
        // measures is propagation, not the per-subject limits.
        ("TOOLGATE_RATE_LIMIT_AGENT_READS_PER_SEC", "100000"),
        ("TOOLGATE_RATE_LIMIT_AGENT_READS_BURST", "100000"),
        ("TOOLGATE_RATE_LIMIT_ADMIN_WRITES_PER_SEC", "100000"),
        ("TOOLGATE_RATE_LIMIT_ADMIN_WRITES_BURST", "100000"),
    ];
    let a = Process::serve_with_env(dir.path(), &[], &env);
    let b = Process::serve_with_env(dir.path(), &[], &env);
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let cluster = Cluster {
        a,
        b,
        client,
        _mongo: mongo,
        _redis: redis,
        _dir: dir,
    };
    let (status, body) = cluster
        .admin(&cluster.a, Method::PUT, "/admin/catalog", Some(catalog()))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    cluster
}

fn catalog() -> Value {
    json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual"}],
        "tools": [{"source_id": "billing", "operation_id": "list", "name": "list", "method": "GET"}],
        "groups": [{"id": "g-read", "name": "reads", "selectors": [{"method_pattern": "GET"}]}],
        "policies": [{"id": "p-read", "name": "readers", "allowed_group_ids": ["g-read"],
                      "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "reader"}]}]
    })
}

fn reader() -> String {
    Gateway::token(json!({"sub": "agent", "roles": ["reader"]}))
}

impl Cluster {
    async fn admin(
        &self,
        on: &Process,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let (status, _, body) = self.admin_with_revision(on, method, path, body).await;
        (status, body)
    }

    /// [`Cluster::admin`] with the catalog revision the write produced (`x-catalog-revision`).
    async fn admin_with_revision(
        &self,
        on: &Process,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Option<u64>, Value) {
        let mut request = self
            .client
            .request(method, format!("{}{path}", on.base))
            .bearer_auth(Gateway::admin());
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        let response = request.send().await.expect("the gateway answers");
        let status = response.status();
        let revision = response
            .headers()
            .get("x-catalog-revision")
            .and_then(|value| value.to_str().ok()?.parse().ok());
        let bytes = response.bytes().await.expect("body");
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, revision, body)
    }

    /// The revision of the manifest `on` serves to a reader.
    async fn served_revision(&self, on: &Process) -> u64 {
        let response = self
            .client
            .get(format!("{}/agents/tools", on.base))
            .bearer_auth(reader())
            .send()
            .await
            .expect("the gateway answers");
        assert_eq!(response.status(), StatusCode::OK);
        let body: Value =
            serde_json::from_slice(&response.bytes().await.expect("body")).expect("json");
        body["revision"].as_u64().expect("revision")
    }

    /// Creates a label through `on`, retrying when another writer won the race (409), as a
    /// client would; returns the revision of the write.
    async fn create_label(&self, on: &Process, id: &str) -> u64 {
        for _ in 0..20 {
            let label = json!({"id": id, "name": id});
            let (status, revision, body) = self
                .admin_with_revision(on, Method::POST, "/admin/labels", Some(label))
                .await;
            match status {
                StatusCode::CREATED => return revision.expect("the write's revision"),
                StatusCode::CONFLICT => tokio::time::sleep(Duration::from_millis(20)).await,
                other => panic!("creating {id}: {other} {body}"),
            }
        }
        panic!("{id} lost every race")
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_through_one_instance_is_served_and_streamed_by_the_other() {
    let cluster = cluster("a_write_through_one_instance").await;
    let deadline = Instant::now() + Duration::from_secs(2);
    while cluster.served_revision(&cluster.b).await < 1 {
        assert!(Instant::now() < deadline, "B never loaded the catalog");
    }
    let mut stream = SseClient::open_url(
        &cluster.client,
        &format!("{}/agents/tools/stream", cluster.b.base),
        &reader(),
        None,
    )
    .await
    .unwrap_or_else(|reply| panic!("stream refused: {}", reply.status));
    let first = stream.event(Duration::from_secs(10)).await;
    assert_eq!(first.event, "tools");

    // Each write's revision is served by the other instance within 100 ms (p99), measured
    // from the write's response.
    let mut latencies = Vec::new();
    for i in 0..100 {
        let revision = cluster
            .create_label(&cluster.a, &format!("label-{i:03}"))
            .await;
        let written = Instant::now();
        while cluster.served_revision(&cluster.b).await < revision {
            assert!(
                written.elapsed() < Duration::from_secs(2),
                "B did not serve revision {revision}"
            );
        }
        latencies.push(written.elapsed());
    }
    latencies.sort();
    let (p50, p99) = (percentile(&latencies, 0.5), percentile(&latencies, 0.99));
    println!(
        "A -> B, 100 writes, from A's response to B serving it: p50 {p50:?}, p99 {p99:?}, max {:?}",
        latencies[99]
    );
    assert!(p99 < Duration::from_millis(100), "p99 {p99:?}");
    // Labels change no manifest: the subscriber on B heard nothing of them.
    stream.no_event(Duration::from_millis(200)).await;

    // A new tool the reader may use, added through A, reaches the subscriber on B.
    let (status, body) = cluster
        .admin(
            &cluster.a,
            Method::POST,
            "/admin/tools",
            Some(json!({"source_id": "billing", "operation_id": "search", "name": "search", "method": "GET"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let written = Instant::now();
    let event = stream.event(Duration::from_secs(1)).await;
    println!("A -> SSE subscriber on B: {:?}", written.elapsed());
    assert_eq!(event.event, "tools_changed");
    assert_eq!(event.ids("added"), ["billing:search"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_through_both_instances_lose_nothing() {
    let cluster = std::sync::Arc::new(cluster("concurrent_writes_through_both").await);
    let mut writers = Vec::new();
    for i in 0..8 {
        for side in ["a", "b"] {
            let cluster = std::sync::Arc::clone(&cluster);
            writers.push(tokio::spawn(async move {
                let on = if side == "a" { &cluster.a } else { &cluster.b };
                cluster.create_label(on, &format!("{side}-{i}")).await
            }));
        }
    }
    let mut revisions = Vec::new();
    for writer in writers {
        revisions.push(writer.await.expect("writer"));
    }
    revisions.sort_unstable();
    revisions.dedup();
    assert_eq!(revisions.len(), 16, "every write has a revision of its own");
    let last = *revisions.last().expect("revisions");
    for on in [&cluster.a, &cluster.b] {
        let deadline = Instant::now() + Duration::from_secs(2);
        while cluster.served_revision(on).await < last {
            assert!(Instant::now() < deadline, "{} is behind", on.base);
        }
    }

    for on in [&cluster.a, &cluster.b] {
        let (_, labels) = cluster
            .admin(on, Method::GET, "/admin/labels?limit=100", None)
            .await;
        let mut ids: Vec<&str> = labels["data"]
            .as_array()
            .expect("labels")
            .iter()
            .map(|label| label["id"].as_str().expect("id"))
            .collect();
        ids.sort_unstable();
        assert_eq!(ids.len(), 16, "{labels}");
        let (_, audit) = cluster
            .admin(
                on,
                Method::GET,
                "/admin/audit?entity=labels&limit=100",
                None,
            )
            .await;
        let created = audit["data"]
            .as_array()
            .expect("records")
            .iter()
            .filter(|record| record["action"] == json!("create"))
            .count();
        assert_eq!(created, 16, "{audit}");
    }
}

/// A token delegated by one instance is accepted by the other (the keys are in the store) and
/// served there within its scope; a change written through the first (the tool disabled) takes it
/// from the child on the second at once (decided there, never shared through Redis).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_delegated_by_one_instance_is_narrowed_by_the_other() {
    let cluster = cluster("a_token_delegated_by_one_instance").await;
    let (status, _) = cluster
        .admin(
            &cluster.a,
            Method::POST,
            "/admin/tools",
            Some(json!(
            {"source_id": "billing", "operation_id": "export", "name": "export", "method": "GET"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let form = serde_urlencoded::to_string([
        (
            "grant_type",
            "urn:ietf:params:oauth:grant-type:token-exchange",
        ),
        ("subject_token", reader().as_str()),
        (
            "subject_token_type",
            "urn:ietf:params:oauth:token-type:access_token",
        ),
        ("scope", "tool:billing:list"),
    ])
    .expect("a form");
    let issued = cluster
        .client
        .post(format!("{}/oauth/token", cluster.a.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .expect("answered");
    assert_eq!(issued.status(), StatusCode::OK);
    let body: Value = serde_json::from_slice(&issued.bytes().await.expect("body")).expect("json");
    let child = body["access_token"].as_str().expect("a token").to_owned();
    let ids = |on: &Process, token: String| {
        let request = cluster
            .client
            .get(format!("{}/agents/tools", on.base))
            .bearer_auth(token);
        async move {
            let response = request.send().await.expect("answered");
            assert_eq!(response.status(), StatusCode::OK);
            let body: Value =
                serde_json::from_slice(&response.bytes().await.expect("body")).expect("json");
            body["data"]
                .as_array()
                .expect("data")
                .iter()
                .map(|entry| entry["tool_id"].as_str().expect("id").to_owned())
                .collect::<Vec<_>>()
        }
    };
    let deadline = Instant::now() + Duration::from_secs(2);
    while ids(&cluster.b, reader()).await.len() < 2 {
        assert!(Instant::now() < deadline, "B never served the new tool");
    }
    assert_eq!(ids(&cluster.a, child.clone()).await, ["billing:list"]);
    assert_eq!(ids(&cluster.b, child.clone()).await, ["billing:list"]);
    let (status, body) = cluster
        .admin(
            &cluster.a,
            Method::PATCH,
            "/admin/tools/billing:list",
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let deadline = Instant::now() + Duration::from_secs(2);
    while !ids(&cluster.b, child.clone()).await.is_empty() {
        assert!(
            Instant::now() < deadline,
            "B still serves the child a tool its parent lost"
        );
    }
    assert_eq!(ids(&cluster.b, reader()).await, ["billing:export"]);
}
