//! Redis as the instances' shared cache and change bus, against a real `redis-server` per test:
//! announcements between instances (and after Redis restarts), the revision poll as a safety
//! net, the shared access and group entries with their revisions, and agents served without a
//! single failure while Redis is killed and brought back.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::gateway::Gateway;
use support::redis::RedisServer;
use tokio::sync::watch;
use toolgate::bus::{CHANNEL, CatalogChange, ChangeBus, Heard, LocalBus, RedisBus};
use toolgate::cache::redis::SharedKey;
use toolgate::domain::access::Access;
use toolgate::domain::claims::ClaimPath;
use toolgate::domain::fingerprint::Fingerprint;
use toolgate::domain::model::{Catalog, Label};
use toolgate::redis_link::RedisLink;
use toolgate::service::follow;
use toolgate::service::{Actor, AuditAction, AuditNote, CatalogService, Mutation};
use toolgate::store::embedded::EmbeddedStore;
use toolgate::store::{CatalogStore, Subject};

const WAIT: Duration = Duration::from_secs(10);

/// Polls `condition` until it holds, or fails with `what`.
pub(crate) async fn eventually(what: &str, within: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !condition() {
        assert!(Instant::now() < deadline, "{what} within {within:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn heard(receiver: &watch::Receiver<Heard>) -> Heard {
    *receiver.borrow()
}

fn change(revision: u64) -> CatalogChange {
    CatalogChange {
        revision,
        kinds: vec![Subject::Labels],
        ids: vec!["pii".to_owned()],
    }
}

#[tokio::test]
async fn the_bus_carries_revisions_between_instances_and_reconnects_after_redis_restarts() {
    let mut redis = RedisServer::start();
    let link_a = Arc::new(RedisLink::open(&redis.url).expect("url"));
    let link_b = Arc::new(RedisLink::open(&redis.url).expect("url"));
    let a = RedisBus::start(Arc::clone(&link_a));
    let b = RedisBus::start(Arc::clone(&link_b));
    // The listeners connect before anyone subscribes (as in the server, where loading the
    // catalog comes first), and stay subscribed.
    eventually("both listeners subscribed", WAIT, || {
        redis.command(&["PUBSUB", "NUMSUB", CHANNEL]).as_deref() == Some(&format!("{CHANNEL}\n2"))
    })
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (heard_a, heard_b) = (a.subscribe(), b.subscribe());
    eventually("both listeners connected", WAIT, || {
        heard(&heard_a).connections == 1 && heard(&heard_b).connections == 1
    })
    .await;

    a.publish(change(7));
    eventually("b heard revision 7", WAIT, || heard(&heard_b).revision == 7).await;
    // Older announcements never move a subscriber back.
    b.publish(change(5));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(heard(&heard_a).revision, 7);

    // Redis dies: the listeners notice; what is published meanwhile is lost to the other side.
    redis.stop();
    eventually("b noticed Redis is gone", WAIT, || {
        link_b.health().is_down()
    })
    .await;
    a.publish(change(8));
    assert_eq!(
        heard(&heard_a).revision,
        8,
        "a's own followers hear it locally"
    );
    // Redis is back: each reconnection is counted, which makes followers compare revisions
    // with the store (the lost announcement is recovered there, see the next test).
    redis.resume();
    eventually("b reconnected", WAIT, || heard(&heard_b).connections == 2).await;
    assert_eq!(
        heard(&heard_b).revision,
        7,
        "the announcement of 8 was lost"
    );
    assert!(!link_b.health().is_down());
    a.publish(change(9));
    eventually("b heard revision 9", WAIT, || heard(&heard_b).revision == 9).await;

    // A dropped bus takes its listener (and its connection) with it.
    drop((a, b));
    eventually("the listeners unsubscribed", WAIT, || {
        redis.command(&["PUBSUB", "NUMSUB", CHANNEL]).as_deref() == Some(&format!("{CHANNEL}\n0"))
    })
    .await;
}

/// Adds a label through `service`; returns the new revision.
pub(crate) async fn add_label(service: &CatalogService, id: &str) -> u64 {
    let actor = Actor {
        subject: "test".to_owned(),
        request_id: None,
    };
    let id = id.to_owned();
    let ((), revision) = service
        .write(&actor, None, move |catalog: &mut Catalog| {
            catalog.labels.push(
                serde_json::from_value::<Label>(json!({"id": id, "name": id})).expect("a label"),
            );
            Ok(Mutation {
                notes: vec![AuditNote {
                    action: AuditAction::Create,
                    entity: Subject::Labels,
                    id: id.clone(),
                    before: None,
                    after: None,
                }],
                value: (),
            })
        })
        .await
        .expect("the write commits");
    revision
}

pub(crate) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_through_one_instance_reaches_the_other_through_redis() {
    let mut redis = RedisServer::start();
    let dir = tempfile::tempdir().expect("temp dir");
    // Two catalog services on one store, as two instances on one MongoDB would be; each with
    // its own Redis connection.
    let (a, b, _follower) = crate::redis_topologies::two_instances(&redis.url, &dir).await;

    let mut latencies = Vec::new();
    for i in 0..100 {
        let written = Instant::now();
        let revision = add_label(&a, &format!("label-{i:03}")).await;
        let within = Duration::from_millis(100);
        eventually("b has a's write within 100 ms", within, || {
            b.snapshot().revision() == revision
        })
        .await;
        latencies.push(written.elapsed());
    }
    latencies.sort();
    println!(
        "propagation A -> B over Redis, 100 writes: p50 {:?}, p99 {:?}, max {:?}",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies[99]
    );
    assert_eq!(b.snapshot().catalog().labels.len(), 100);

    // A write made while Redis is down is not announced; when Redis comes back, b's listener
    // reconnects and b compares revisions with the store: nothing is lost.
    redis.stop();
    let revision = add_label(&a, "while-redis-was-down").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        b.snapshot().revision() < revision,
        "not heard: Redis is down"
    );
    redis.resume();
    eventually("b caught up after Redis came back", WAIT, || {
        b.snapshot().revision() == revision
    })
    .await;
}

#[tokio::test]
async fn the_revision_poll_catches_up_without_any_announcement() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn CatalogStore> = Arc::new(EmbeddedStore::open(dir.path()).expect("store"));
    let a = Arc::new(CatalogService::open(Arc::clone(&store)).await.expect("a"));
    // b's bus is its own: it never hears a. Only the poll can bring a's writes.
    let b_bus = Arc::new(LocalBus::new(0)) as Arc<dyn ChangeBus>;
    let b = Arc::new(
        CatalogService::open_with_bus(store, Some(b_bus))
            .await
            .expect("b"),
    );
    let _follower = follow(b.bus().as_ref(), &b, Some(Duration::from_millis(50)));
    let revision = add_label(&a, "pii").await;
    eventually("the poll brought a's write", Duration::from_secs(2), || {
        b.snapshot().revision() == revision
    })
    .await;
}

fn catalog() -> Value {
    json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual"}],
        "tools": [
            {"source_id": "billing", "operation_id": "list", "name": "list", "method": "GET"},
            {"source_id": "billing", "operation_id": "refund", "name": "refund", "method": "POST"}
        ],
        "groups": [{"id": "g-read", "name": "reads", "selectors": [{"method_pattern": "GET"}]},
                   {"id": "g-all", "name": "all", "selectors": [{}]}],
        "policies": [
            {"id": "p-read", "name": "readers", "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "reader"}], "allowed_group_ids": ["g-read"]},
            {"id": "p-all", "name": "staff", "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "staff"}], "allowed_group_ids": ["g-all"]}
        ]
    })
}

async fn gateway_on(redis: &RedisServer) -> (Gateway, tempfile::TempDir) {
    redis.gateway(catalog()).await
}

fn reader_claims(sub: &str) -> Value {
    json!({"sub": sub, "roles": ["reader"]})
}

/// The claims key a gateway serving [`catalog`] with the default admin rule computes: the
/// claims projected onto what the policies read (`roles`), then onto the admin rule's paths.
fn fingerprint(claims: &Value) -> String {
    let paths = |texts: &[&str]| {
        let mut paths: Vec<ClaimPath> = texts
            .iter()
            .map(|text| ClaimPath::parse(text).expect("valid path"))
            .collect();
        paths.sort();
        paths
    };
    // What the policies read, and the claims that decide a delegation chain.
    let read = paths(&["roles", "act", "toolgate_delegation"]);
    let admin = paths(&["roles", "realm_access.roles"]);
    Fingerprint::of_projection(claims.as_object().expect("object"), &[&read, &admin]).to_string()
}

/// What an instance with the test gateways' secret stores for `access` under `key`.
fn sealed(key: &str, access: Value) -> String {
    let access: Access = serde_json::from_value(access).expect("an access decision");
    let bytes = SharedKey::derive(support::gateway::SECRET)
        .seal(key, access)
        .expect("serialises");
    String::from_utf8(bytes).expect("JSON")
}

/// A second GET tool: readers see it (a new revision).
async fn add_search_tool(gateway: &Gateway) {
    gateway
        .admin_send(
            Method::POST,
            "/admin/tools",
            Some(json!({"source_id": "billing", "operation_id": "search", "name": "search", "method": "GET"})),
        )
        .await
        .expect(StatusCode::CREATED);
}

async fn tool_ids(gateway: &Gateway, claims: Value) -> Vec<String> {
    gateway.tool_ids(claims, "").await
}

#[tokio::test]
async fn access_and_group_entries_carry_their_revision_and_ttl() {
    let redis = RedisServer::start();
    let (gateway, _dir) = gateway_on(&redis).await;
    let claims = reader_claims("alice");
    assert_eq!(tool_ids(&gateway, claims.clone()).await, ["billing:list"]);
    let key = format!("toolgate:access:{}", fingerprint(&claims));
    let mut entry = None;
    eventually("the access entry is written", WAIT, || {
        entry = redis.json(&key);
        entry.is_some()
    })
    .await;
    let mut entry = entry.expect("written");
    let mac = entry
        .as_object_mut()
        .and_then(|entry| entry.remove("mac"))
        .expect("the entry carries its MAC");
    assert_eq!(mac.as_str().map(str::len), Some(64), "{mac}");
    let policies = gateway
        .state()
        .app
        .internals()
        .catalog
        .snapshot()
        .policies_digest()
        .to_owned();
    assert_eq!(policies.len(), 32);
    assert_eq!(
        entry,
        json!({"revision": 1, "policies": policies, "policy_ids": ["p-read"],
               "group_ids": ["g-read"]})
    );
    let ttl: u64 = redis
        .command(&["TTL", &key])
        .expect("ttl")
        .parse()
        .expect("number");
    assert!((290..=300).contains(&ttl), "access TTL {ttl}");
    let group = redis.json("toolgate:group:g-read").expect("group entry");
    assert_eq!(group, json!({"revision": 1, "tool_ids": ["billing:list"]}));
    let ttl: u64 = redis
        .command(&["TTL", "toolgate:group:g-read"])
        .expect("ttl")
        .parse()
        .expect("number");
    assert!((590..=600).contains(&ttl), "group TTL {ttl}");

    // A new revision: the next decision is shared at it, replacing the old entry.
    add_search_tool(&gateway).await;
    assert_eq!(
        tool_ids(&gateway, claims).await,
        ["billing:list", "billing:search"]
    );
    eventually("entries at revision 2", WAIT, || {
        redis
            .json(&key)
            .is_some_and(|entry| entry["revision"] == json!(2))
            && redis
                .json("toolgate:group:g-read")
                .is_some_and(|entry| entry["tool_ids"] == json!(["billing:list", "billing:search"]))
    })
    .await;
}

#[tokio::test]
async fn a_shared_decision_is_used_only_at_its_own_revision() {
    let redis = RedisServer::start();
    let (gateway, _dir) = gateway_on(&redis).await;
    // Another instance's decision for these claims (here: one that grants the staff policy, to
    // tell it apart from evaluating the claims locally).
    let claims = reader_claims("bob");
    let key = format!("toolgate:access:{}", fingerprint(&claims));
    let stale = json!({"revision": 0, "policy_ids": ["p-all"], "group_ids": ["g-all"]});
    redis
        .command(&["SET", &key, &sealed(&key, stale)])
        .expect("set");
    assert_eq!(
        tool_ids(&gateway, claims.clone()).await,
        ["billing:list"],
        "an entry of another revision is invisible: the claims are evaluated"
    );
    // At this revision, but made against other policies (before the store was restored to
    // an earlier revision that writes then brought back to this number): invisible too.
    let restored = json!({"revision": 1, "policies": "0123456789abcdef0123456789abcdef",
                          "policy_ids": ["p-all"], "group_ids": ["g-all"]});
    let claims = json!({"sub": "dave", "roles": ["reader", "temp"]});
    let key = format!("toolgate:access:{}", fingerprint(&claims));
    redis
        .command(&["SET", &key, &sealed(&key, restored)])
        .expect("set");
    assert_eq!(
        tool_ids(&gateway, claims).await,
        ["billing:list"],
        "an entry made against other policies is invisible"
    );
    let digest = gateway
        .state()
        .app
        .internals()
        .catalog
        .snapshot()
        .policies_digest()
        .to_owned();
    let current = json!({"revision": 1, "policies": digest, "policy_ids": ["p-all"],
                         "group_ids": ["g-all"]});
    // Other roles than bob's: bob's key now holds the decision evaluated for him.
    let claims = json!({"sub": "carol", "roles": ["reader", "intern"]});
    let key = format!("toolgate:access:{}", fingerprint(&claims));
    redis
        .command(&["SET", &key, &sealed(&key, current)])
        .expect("set");
    assert_eq!(
        tool_ids(&gateway, claims).await,
        ["billing:list", "billing:refund"],
        "the decision shared at this revision is used without evaluating the claims"
    );
}

#[tokio::test]
async fn forged_tampered_or_moved_entries_grant_nothing() {
    let redis = RedisServer::start();
    let (gateway, _dir) = gateway_on(&redis).await;
    let grant_all = json!({"revision": 1, "policy_ids": ["p-all"], "group_ids": ["g-all"]});
    let readers = ["billing:list"];

    // The attack of issue 12: an entry written by anyone who can write to Redis.
    let claims = json!({"sub": "mallory", "roles": ["reader", "a"]});
    let key = format!("toolgate:access:{}", fingerprint(&claims));
    redis
        .command(&["SET", &key, &grant_all.to_string()])
        .expect("set");
    assert_eq!(tool_ids(&gateway, claims).await, readers, "no MAC");

    // A genuine entry with one policy added after sealing.
    let claims = json!({"sub": "mallory", "roles": ["reader", "b"]});
    let key = format!("toolgate:access:{}", fingerprint(&claims));
    let mut entry: Value = serde_json::from_str(&sealed(
        &key,
        json!({"revision": 1, "policy_ids": ["p-read"], "group_ids": ["g-read"]}),
    ))
    .expect("json");
    entry["policy_ids"] = json!(["p-all", "p-read"]);
    redis
        .command(&["SET", &key, &entry.to_string()])
        .expect("set");
    assert_eq!(tool_ids(&gateway, claims).await, readers, "tampered");

    // A genuine, granting entry of another identity copied under this one's key.
    let staff = json!({"sub": "sam", "roles": ["staff"]});
    let staff_key = format!("toolgate:access:{}", fingerprint(&staff));
    let claims = json!({"sub": "mallory", "roles": ["reader", "c"]});
    let key = format!("toolgate:access:{}", fingerprint(&claims));
    redis
        .command(&["SET", &key, &sealed(&staff_key, grant_all.clone())])
        .expect("set");
    assert_eq!(tool_ids(&gateway, claims).await, readers, "moved");

    // Sealed with another secret (an instance configured differently).
    let claims = json!({"sub": "mallory", "roles": ["reader", "d"]});
    let key = format!("toolgate:access:{}", fingerprint(&claims));
    let access: Access = serde_json::from_value(grant_all).expect("access");
    let foreign = SharedKey::derive("another secret")
        .seal(&key, access)
        .expect("serialises");
    redis
        .command(&["SET", &key, &String::from_utf8(foreign).expect("json")])
        .expect("set");
    assert_eq!(tool_ids(&gateway, claims).await, readers, "foreign key");

    let metrics = gateway
        .client
        .get(format!("{}/metrics", gateway.base))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    let rejected = metrics
        .lines()
        .find(|line| line.starts_with("toolgate_redis_rejected_entries"))
        .unwrap_or_else(|| panic!("no rejected-entries counter in\n{metrics}"));
    assert!(rejected.ends_with(" 4"), "{rejected}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_are_served_without_a_failure_while_redis_dies_and_returns() {
    let mut redis = RedisServer::start();
    let (gateway, _dir) = gateway_on(&redis).await;
    let ready = gateway.get("/readyz", "").await.json();
    assert_eq!(ready["status"], json!("ready"));
    assert_eq!(ready["checks"]["redis"], json!("ok"));

    // Agents with ever new claims (every request a cache miss, so every one would ask Redis)
    // while Redis is killed mid-way.
    let base = gateway.base.clone();
    let load = tokio::spawn(agent_reads(base, Duration::from_millis(1500), |i| {
        reader_claims(&format!("agent-{i}"))
    }));
    tokio::time::sleep(Duration::from_millis(500)).await;
    redis.stop();
    let results = load.await.expect("load");
    let failed: Vec<_> = results
        .iter()
        .filter(|(status, _)| !matches!(status, Ok(StatusCode::OK)))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} failed: {failed:?}",
        failed.len(),
        results.len()
    );
    let slowest = results
        .iter()
        .map(|(_, took)| *took)
        .max()
        .expect("requests");
    assert!(
        slowest < Duration::from_secs(1),
        "slowest request {slowest:?}"
    );
    assert!(
        gateway
            .state()
            .app
            .internals()
            .redis
            .as_ref()
            .expect("redis")
            .health()
            .counts()
            .1
            >= 1
    );

    // Degraded, not unready; admin writes go on (the store is the truth).
    let ready = gateway.get("/readyz", "").await;
    assert_eq!(ready.status, StatusCode::OK);
    let ready = ready.json();
    assert_eq!(ready["status"], json!("degraded"));
    assert!(
        ready["checks"]["redis"]
            .as_str()
            .is_some_and(|text| text != "ok")
    );
    add_search_tool(&gateway).await;
    assert_eq!(
        tool_ids(&gateway, reader_claims("dave")).await,
        ["billing:list", "billing:search"]
    );

    // Redis returns: ready again, and decisions are shared again, at the current revision.
    redis.resume();
    let deadline = Instant::now() + WAIT;
    loop {
        let ready = gateway.get("/readyz", "").await.json();
        if ready["status"] == json!("ready") {
            break;
        }
        assert!(Instant::now() < deadline, "still {ready}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let deadline = Instant::now() + WAIT;
    for i in 0.. {
        // Each request is a local miss (new roles, which the policies read) that shares its
        // decision once the gateway has seen Redis answer again.
        let claims = json!({"sub": "erin", "roles": ["reader", format!("erin-{i}")]});
        let key = format!("toolgate:access:{}", fingerprint(&claims));
        tool_ids(&gateway, claims).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        if redis
            .json(&key)
            .is_some_and(|entry| entry["revision"] == json!(2))
        {
            break;
        }
        assert!(Instant::now() < deadline, "decisions are not shared again");
    }
}

/// What an agent read answered.
pub(crate) type Read = (Result<StatusCode, reqwest::Error>, Duration);

/// Agent reads of `GET /agents/tools` one after another for `duration`, the `i`-th with the
/// claims `claims(i)` (ever new claims: every read a cache miss that asks Redis).
pub(crate) async fn agent_reads(
    base: String,
    duration: Duration,
    claims: impl Fn(usize) -> Value,
) -> Vec<Read> {
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let mut results = Vec::new();
    let started = Instant::now();
    let mut i = 0;
    while started.elapsed() < duration {
        let token = Gateway::token(claims(i));
        i += 1;
        let sent = Instant::now();
        let status = client
            .get(format!("{base}/agents/tools"))
            .bearer_auth(token)
            .send()
            .await
            .map(|response| response.status());
        results.push((status, sent.elapsed()));
    }
    results
}
