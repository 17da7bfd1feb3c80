//! The Redis people run at scale, made of real `redis-server` processes: a Redis Cluster of three
//! masters (`redis+cluster://`) and a master with a replica behind three Sentinels
//! (`redis+sentinel://`). On each: writes through one instance reach another through the bus,
//! and shared access entries are written and read; on the cluster the keys spread over the
//! masters; under Sentinel, the master is killed while agents read: no read fails, and once the
//! Sentinels have promoted the replica, changes reach the other instance again and entries are
//! written on the new master.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::gateway::{Gateway, config, hs_settings};
use support::redis_topologies::{RedisCluster, SentinelSet};
use toolgate::bus::{ChangeBus, RedisBus};
use toolgate::redis_link::RedisLink;
use toolgate::service::CatalogService;
use toolgate::service::follow;
use toolgate::store::CatalogStore;
use toolgate::store::embedded::EmbeddedStore;

use crate::redis_shared::{add_label, agent_reads, eventually, percentile};

const WAIT: Duration = Duration::from_secs(20);

/// Two catalog services on one store, as two instances on one MongoDB, each with its own link
/// to the Redis at `url`; the second follows what the bus tells it (no revision poll).
pub(crate) async fn two_instances(
    url: &str,
    dir: &tempfile::TempDir,
) -> (
    Arc<CatalogService>,
    Arc<CatalogService>,
    tokio::task::JoinHandle<()>,
) {
    let store: Arc<dyn CatalogStore> = Arc::new(EmbeddedStore::open(dir.path()).expect("store"));
    let open = |store: Arc<dyn CatalogStore>| {
        let link = Arc::new(RedisLink::open(url).expect("url"));
        async move {
            let bus = RedisBus::start(link) as Arc<dyn ChangeBus>;
            Arc::new(
                CatalogService::open_with_bus(store, Some(bus))
                    .await
                    .expect("opens"),
            )
        }
    };
    let a = open(Arc::clone(&store)).await;
    let b = open(store).await;
    let follower = follow(b.bus().as_ref(), &b, None);
    let connected = b.bus().subscribe();
    eventually("b listens", WAIT, || connected.borrow().connections >= 1).await;
    (a, b, follower)
}

fn catalog() -> Value {
    json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual"}],
        "tools": [{"source_id": "billing", "operation_id": "list", "name": "list", "method": "GET"}],
        "groups": [{"id": "g-read", "name": "reads", "selectors": [{"method_pattern": "GET"}]}],
        "policies": [{"id": "p-read", "name": "readers", "claim_matchers": [
            {"json_path": "roles", "operator": "contains", "value": "reader"}],
            "allowed_group_ids": ["g-read"]}]
    })
}

async fn gateway_on(url: &str) -> (Gateway, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = config(dir.path(), hs_settings());
    config.redis_url = Some(toolgate::config::Secret::new(url.to_owned()));
    let gateway = Gateway::start_with(config).await;
    gateway.put_catalog(catalog()).await;
    (gateway, dir)
}

/// A reader whose claims differ from every other's (its own access entry, on its own slot).
fn reader(i: usize) -> Value {
    json!({"sub": format!("agent-{i}"), "roles": ["reader", format!("team-{i}")]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_redis_cluster_changes_reach_every_instance_and_entries_spread_over_the_masters() {
    let cluster = tokio::task::block_in_place(RedisCluster::start);
    let dir = tempfile::tempdir().expect("temp dir");
    let (a, b, _follower) = two_instances(&cluster.url(), &dir).await;
    let mut latencies = Vec::new();
    for i in 0..50 {
        let written = Instant::now();
        let revision = add_label(&a, &format!("label-{i:03}")).await;
        eventually("b has a's write", Duration::from_secs(2), || {
            b.snapshot().revision() == revision
        })
        .await;
        latencies.push(written.elapsed());
    }
    latencies.sort();
    println!(
        "propagation A -> B over a 3-master Redis Cluster, 50 writes: p50 {:?}, p99 {:?}",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99)
    );

    let (gateway, _gateway_dir) = gateway_on(&cluster.url()).await;
    assert_eq!(
        gateway.get("/readyz", "").await.json()["checks"]["redis"],
        "ok"
    );
    for i in 0..40 {
        assert_eq!(gateway.tool_ids(reader(i), "").await, ["billing:list"]);
    }
    let mut per_node = Vec::new();
    eventually("the access entries are written", WAIT, || {
        per_node = cluster.nodes.iter().map(|node| node.keys()).collect();
        per_node.iter().sum::<u64>() >= 41 // 40 access entries and the group's
    })
    .await;
    println!("keys per cluster master: {per_node:?}");
    assert!(
        per_node.iter().filter(|keys| **keys > 0).count() >= 2,
        "keys spread over the masters' slots: {per_node:?}"
    );
    let health = gateway
        .state()
        .app
        .internals()
        .redis
        .as_ref()
        .expect("redis")
        .health();
    assert_eq!(health.counts().0, 0, "no failed Redis call");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_sentinel_a_failover_fails_no_agent_read_and_leaves_no_stale_manifest() {
    let mut set = tokio::task::block_in_place(SentinelSet::start);
    let old_master = set.master.port;
    let dir = tempfile::tempdir().expect("temp dir");
    let (a, b, _follower) = two_instances(&set.url(), &dir).await;
    let revision = add_label(&a, "before").await;
    eventually("b hears a before the failover", WAIT, || {
        b.snapshot().revision() == revision
    })
    .await;

    let (gateway, _gateway_dir) = gateway_on(&set.url()).await;
    let base = gateway.base.clone();
    let load = tokio::spawn(agent_reads(base, Duration::from_secs(12), reader));
    tokio::time::sleep(Duration::from_millis(500)).await;
    set.master.kill();
    let failed_over = Instant::now();
    eventually("the Sentinels promote the replica", WAIT, || {
        tokio::task::block_in_place(|| set.master_port()) == Some(set.replica.port)
    })
    .await;
    println!(
        "the Sentinels promoted the replica in {:?}",
        failed_over.elapsed()
    );
    assert_ne!(set.replica.port, old_master);

    // Every write after the failover reaches b through the new master: no stale manifest.
    let mut revision = 0;
    for i in 0..5 {
        revision = add_label(&a, &format!("after-{i}")).await;
    }
    eventually("b hears a through the new master", WAIT, || {
        b.snapshot().revision() == revision
    })
    .await;

    let results = load.await.expect("load");
    let failed: Vec<_> = results
        .iter()
        .filter(|(status, _)| !matches!(status, Ok(StatusCode::OK)))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} agent reads failed: {failed:?}",
        failed.len(),
        results.len()
    );
    let slowest = results.iter().map(|(_, took)| *took).max().expect("reads");
    println!(
        "{} agent reads during the failover, none failed, slowest {slowest:?}",
        results.len()
    );
    assert!(slowest < Duration::from_secs(2), "slowest read {slowest:?}");

    // The gateway follows the new master: healthy again, and writing its entries there.
    let health = gateway
        .state()
        .app
        .internals()
        .redis
        .as_ref()
        .expect("redis")
        .health();
    eventually("the gateway's Redis is up again", WAIT, || {
        !health.is_down()
    })
    .await;
    let before = set.replica.keys();
    for i in 1_000_000..1_000_010 {
        assert_eq!(gateway.tool_ids(reader(i), "").await, ["billing:list"]);
    }
    eventually("entries are written on the new master", WAIT, || {
        set.replica.keys() >= before + 10
    })
    .await;
}

/// Sentinels and servers with `requirepass`, as managed deployments run them: the URL's
/// credentials are the master's and `sentinel_password` the Sentinels'; without the latter the
/// master cannot be found, and no error repeats a password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinels_and_a_master_that_require_passwords() {
    let password = "s3cret-pw";
    let set = tokio::task::block_in_place(|| SentinelSet::start_with(Some(password)));
    let credentials = format!(":{password}@");
    let url = set.url_with(&credentials, &format!("?sentinel_password={password}"));
    let link = RedisLink::open(&url).expect("url");
    link.ping().await.expect("the master answers");
    let mut connection = link.commands();
    let () = redis::cmd("SET")
        .arg("toolgate:probe")
        .arg("1")
        .query_async(&mut connection)
        .await
        .expect("a write on the master");
    assert_eq!(
        set.master.command(&["GET", "toolgate:probe"]).as_deref(),
        Some("1")
    );

    let refused = RedisLink::open(&set.url_with(&credentials, "")).expect("url");
    let error = refused
        .ping()
        .await
        .expect_err("the Sentinels want their password");
    assert!(!error.to_string().contains(password), "{error}");
}
