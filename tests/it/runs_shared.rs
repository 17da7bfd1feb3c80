//! Runs on two instances that share one MongoDB and one Redis (docs/runs.md, "Storage"): a run
//! started on one is acted in on the other, a transition made through one is seen by the
//! other at once, an end through one is refused by the other, 64 callers racing a budget's last
//! units through both spend each unit exactly once, and in random delegation trees no child
//! ever spends more than its parent had left: every unit is accounted for. On a Redis Cluster
//! and behind Sentinels, runs work as on one server.

use crate::support;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::json;
use support::gateway::{Gateway, config, hs_settings};
use support::mcp_rpc::initialize;
use support::mongo::{MongoServer, database_name};
use support::redis::RedisServer;
use support::sse::SseClient;
use toolgate::config::Secret;

use super::runs::{Recorded, agent, call_in, manifest, recording_upstream, run, setup, status};

struct Pair {
    a: Gateway,
    b: Gateway,
    recorded: Recorded,
    _mongo: MongoServer,
    _redis: RedisServer,
}

async fn instance(mongo: &MongoServer, redis: &RedisServer, database: &str) -> Gateway {
    let mut settings = config(
        Path::new("unused-without-the-embedded-store"),
        hs_settings(),
    );
    settings.mongodb_uri = Some(Secret::new(mongo.uri()));
    settings.mongodb_database = database.to_owned();
    settings.redis_url = Some(Secret::new(redis.url.clone()));
    settings.mcp.public_url = Some("https://gateway.example.com".to_owned());
    // What the tests measure is sharing, not the per-subject limits.
    settings.rate_limits = toolgate::service::limits::RateLimits::UNLIMITED;
    Gateway::start_with(settings).await
}

/// Two instances; the catalog written through the first, seen by the second.
async fn pair(test: &str) -> Pair {
    let mongo = MongoServer::start().await;
    let redis = RedisServer::start();
    let database = database_name(test);
    let a = instance(&mongo, &redis, &database).await;
    let (url, recorded) = recording_upstream().await;
    setup(&a, &url).await;
    let b = instance(&mongo, &redis, &database).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while manifest(&b, &agent("probe")).await.len() < 6 {
        assert!(
            Instant::now() < deadline,
            "the second instance never saw the catalog"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Pair {
        a,
        b,
        recorded,
        _mongo: mongo,
        _redis: redis,
    }
}

/// Polls `check` until it holds (at most 2 s); how long it took.
async fn within<F, Fut>(mut check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while !check().await {
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "not seen within 2 s"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_one_run_on_both_instances() {
    let pair = pair("runs_one_run_on_both").await;
    let (id, token) = run(&pair.a, &agent("traveller"), json!({})).await;
    // Acted in on B: its state, its pinned set.
    assert_eq!(
        manifest(&pair.b, &token).await,
        ["api:free", "api:spawn_agents", "api:start"]
    );
    // A transition through B is seen by A (whose view of the run was read before it), and
    // told to the run's streams on A.
    let mut stream = SseClient::connect(&pair.a, "/agents/tools/stream", &token).await;
    assert_eq!(stream.event(Duration::from_secs(5)).await.event, "tools");
    let (session, _) = initialize(&pair.b, &token, "2025-11-25").await;
    let moved = call_in(&pair.b, &token, &session, "api.start").await;
    assert_eq!(
        moved["result"]["_meta"]["io.toolgate/run"]["state"], "draft",
        "{moved}"
    );
    let seen = within(|| async {
        manifest(&pair.a, &token)
            .await
            .contains(&"api:edit".to_owned())
    })
    .await;
    assert!(seen < Duration::from_millis(500), "{seen:?}");
    let changed = stream.event(Duration::from_secs(5)).await;
    assert_eq!(changed.event, "tools_changed");
    assert_eq!(changed.ids("removed"), ["api:start"]);
    assert_eq!(status(&pair.a, &token, &id).await["state"], "draft");
    // Ended through A: refused by B.
    pair.a
        .request(Method::DELETE, &format!("/runs/{id}"), Some(&token), None)
        .await
        .expect(StatusCode::OK);
    within(|| async {
        pair.b.get("/agents/tools", &token).await.status == StatusCode::UNAUTHORIZED
    })
    .await;
    assert_eq!(pair.recorded.names(), ["start"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_racing_the_last_units_through_both_instances_spend_each_once() {
    let pair = pair("runs_race_the_last_units").await;
    let (id, token) = run(&pair.a, &agent("racer"), json!({"budget": {"calls": 10}})).await;
    let (on_a, _) = initialize(&pair.a, &token, "2025-11-25").await;
    let (on_b, _) = initialize(&pair.b, &token, "2025-11-25").await;
    let calls = (0..64).map(|i| {
        let (gateway, session) = if i % 2 == 0 {
            (&pair.a, &on_a)
        } else {
            (&pair.b, &on_b)
        };
        call_in(gateway, &token, session, "api.free")
    });
    let results = futures_util::future::join_all(calls).await;
    let forwarded = results
        .iter()
        .filter(|r| r["result"]["_meta"].get("io.toolgate/run").is_some())
        .count();
    assert_eq!(forwarded, 10);
    assert_eq!(pair.recorded.total.load(Ordering::SeqCst), 10);
    assert_eq!(status(&pair.b, &token, &id).await["budget"]["calls"], 0);
    // Decisions on either instance see the budget spent.
    for gateway in [&pair.a, &pair.b] {
        assert!(!super::runs::decision(gateway, &token, "api:free", json!({})).await);
    }
}

/// A small deterministic generator (the trees are random, and the same on every run).
struct Draw(u64);

impl Draw {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below.max(1)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_random_delegation_trees_no_child_spends_more_than_its_parent_had_left() {
    let pair = pair("runs_random_trees").await;
    let gateways = [&pair.a, &pair.b];
    let mut draw = Draw(0x9e37_79b9_7f4a_7c15);
    for tree in 0..12 {
        let limit = 3 + draw.next(12);
        let before = pair.recorded.total.load(Ordering::SeqCst) as u64;
        let (root, root_token) = run(
            &pair.a,
            &agent(&format!("tree-{tree}")),
            json!({"budget": {"calls": limit}}),
        )
        .await;
        // Nodes: (token, depth); children carve random amounts (some more than is left).
        let mut nodes = vec![(root_token.clone(), 0u64)];
        for _ in 0..4 {
            let (parent, depth) = nodes[draw.next(nodes.len() as u64) as usize].clone();
            if depth >= 2 {
                continue;
            }
            let gateway = gateways[draw.next(2) as usize];
            let asked = draw.next(limit + 2);
            let body = if draw.next(3) == 0 {
                json!({})
            } else {
                json!({"budget": {"calls": asked}})
            };
            let (code, answer) = super::runs::start(gateway, &parent, body).await;
            match code {
                StatusCode::CREATED => nodes.push((
                    answer["access_token"].as_str().expect("token").to_owned(),
                    depth + 1,
                )),
                StatusCode::UNPROCESSABLE_ENTITY => {
                    assert_eq!(answer["errors"][0]["field"], "budget.calls", "{answer}");
                }
                other => panic!("{other}: {answer}"),
            }
        }
        // Every node calls through both instances, more than the whole budget.
        let mut sessions = Vec::new();
        for (token, _) in &nodes {
            for gateway in gateways {
                let (session, _) = initialize(gateway, token, "2025-11-25").await;
                sessions.push((gateway, token.clone(), session));
            }
        }
        let calls = (0..(limit as usize * 2)).flat_map(|_| {
            sessions
                .iter()
                .map(|(gateway, token, session)| call_in(gateway, token, session, "api.free"))
        });
        futures_util::future::join_all(calls).await;
        let spent = pair.recorded.total.load(Ordering::SeqCst) as u64 - before;
        assert!(spent <= limit, "tree {tree}: {spent} forwarded of {limit}");
        // Every unit is accounted for once the tree ends: what is left returns to the root.
        pair.a
            .request(
                Method::DELETE,
                &format!("/runs/{root}"),
                Some(&root_token),
                None,
            )
            .await
            .expect(StatusCode::OK);
        let left = pair
            .b
            .get(&format!("/runs/{root}"), &Gateway::admin())
            .await
            .expect(StatusCode::OK)
            .json()["budget"]["calls"]
            .as_u64()
            .expect("a number");
        assert_eq!(
            left + spent,
            limit,
            "tree {tree}: {left} left + {spent} spent"
        );
    }
}

/// On a Redis Cluster of three masters a run tree lives in one slot (its keys share the root's
/// hash tag), so every script on it runs where its keys are: runs, children, budgets and ends
/// work as on one server, and the trees of several roots spread over the masters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_redis_cluster_each_run_tree_lives_in_one_slot() {
    use support::redis_topologies::RedisCluster;
    let cluster = tokio::task::block_in_place(RedisCluster::start);
    let dir = tempfile::tempdir().expect("dir");
    let mut settings = super::runs::settings(dir.path());
    settings.redis_url = Some(Secret::new(cluster.url()));
    settings.rate_limits = toolgate::service::limits::RateLimits::UNLIMITED;
    let gateway = Gateway::start_with(settings).await;
    let (url, recorded) = recording_upstream().await;
    setup(&gateway, &url).await;
    let mut roots = Vec::new();
    for i in 0..6 {
        let (root, token) = run(
            &gateway,
            &agent(&format!("cluster-{i}")),
            json!({"budget": {"calls": 3}}),
        )
        .await;
        let (_, child) = run(&gateway, &token, json!({"budget": {"calls": 2}})).await;
        let (session, _) = initialize(&gateway, &child, "2025-11-25").await;
        for _ in 0..3 {
            call_in(&gateway, &child, &session, "api.free").await;
        }
        call_in(&gateway, &child, &session, "api.start").await;
        assert_eq!(status(&gateway, &token, &root).await["budget"]["calls"], 1);
        gateway
            .request(Method::DELETE, &format!("/runs/{root}"), Some(&token), None)
            .await
            .expect(StatusCode::OK);
        gateway
            .get("/agents/tools", &child)
            .await
            .expect(StatusCode::UNAUTHORIZED);
        roots.push(root);
    }
    assert_eq!(
        recorded.total.load(Ordering::SeqCst),
        12,
        "2 calls per tree"
    );
    let per_node: Vec<u64> = cluster.nodes.iter().map(|node| node.keys()).collect();
    assert!(
        per_node.iter().filter(|keys| **keys > 0).count() >= 2,
        "trees spread over the masters: {per_node:?}"
    );
}

/// Behind Sentinels, runs live on the master the Sentinels name, as the cache and the bus do:
/// started, spent, moved and ended there (a run's keys are on the master).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_sentinels_runs_live_on_the_master() {
    use support::redis_topologies::SentinelSet;
    let set = tokio::task::block_in_place(SentinelSet::start);
    let dir = tempfile::tempdir().expect("dir");
    let mut settings = super::runs::settings(dir.path());
    settings.redis_url = Some(Secret::new(set.url()));
    let gateway = Gateway::start_with(settings).await;
    let (url, recorded) = recording_upstream().await;
    setup(&gateway, &url).await;
    let (id, token) = run(
        &gateway,
        &agent("sentinel"),
        json!({"budget": {"calls": 1}}),
    )
    .await;
    let (session, _) = initialize(&gateway, &token, "2025-11-25").await;
    let moved = call_in(&gateway, &token, &session, "api.start").await;
    assert_eq!(
        moved["result"]["_meta"]["io.toolgate/run"]["state"], "draft",
        "{moved}"
    );
    let spent = call_in(&gateway, &token, &session, "api.edit").await;
    assert_eq!(
        spent["result"]["_meta"]["io.toolgate/refusal"]["reason"], "run_budget",
        "{spent}"
    );
    assert!(set.master.keys() > 0, "the run's keys are on the master");
    gateway
        .request(Method::DELETE, &format!("/runs/{id}"), Some(&token), None)
        .await
        .expect(StatusCode::OK);
    gateway
        .get("/agents/tools", &token)
        .await
        .expect(StatusCode::UNAUTHORIZED);
    assert_eq!(recorded.names(), ["start"]);
}
