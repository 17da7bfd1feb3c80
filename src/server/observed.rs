//! What a running gateway counts for itself, registered with its metrics as values read at
//! each collection: cache lookups, open streams and the events they were sent, the revision
//! served, Redis health and rejected shared entries. Held weakly: metrics must not keep a
//! stopped server's store or streams alive.

use std::sync::Weak;

use crate::cache::redis::SharedCache;
use crate::http::mcp::McpEndpoint;
use crate::redis_link::RedisLink;
use crate::service::{CatalogService, Decisions, Manifests};
use crate::stream::StreamHub;
use crate::stream::frame::EventKind;
use crate::telemetry::{Metrics, Reading, ReadingKind};

/// The parts of a running gateway whose own counters are observed.
pub struct Observed {
    pub manifests: Weak<Manifests>,
    pub decisions: Weak<Decisions>,
    pub hub: Weak<StreamHub>,
    pub catalog: Weak<CatalogService>,
    pub redis: Option<Weak<RedisLink>>,
    pub shared: Option<Weak<SharedCache>>,
    pub mcp: Weak<McpEndpoint>,
}

/// The readings of `part`, or none once it has gone away.
fn read<T>(part: &Weak<T>, readings: impl Fn(&T) -> Vec<Reading>) -> Vec<Reading> {
    part.upgrade()
        .map(|part| readings(&part))
        .unwrap_or_default()
}

/// A cache's `(hits, misses)` as readings labelled `result`.
fn lookups((hits, misses): (u64, u64)) -> Vec<Reading> {
    vec![
        Reading {
            value: hits,
            label: Some(("result", "hit")),
        },
        Reading {
            value: misses,
            label: Some(("result", "miss")),
        },
    ]
}

/// Registers every value of `gateway` with `metrics`.
pub fn register(metrics: &Metrics, gateway: Observed) {
    let Observed {
        manifests,
        decisions,
        hub,
        catalog,
        redis,
        shared,
        mcp,
    } = gateway;
    use ReadingKind::{Counter, Gauge};
    metrics.observe(
        Counter,
        "toolgate.manifest_cache.lookups",
        "Lookups in this instance's cache of rendered manifests",
        move || read(&manifests, |manifests| lookups(manifests.cache().stats())),
    );
    metrics.observe(
        Counter,
        "toolgate.decision_cache.lookups",
        "Lookups in this instance's cache of claim evaluations for decisions (one per \
         distinct subject and context of a request; a miss evaluates the claims)",
        move || read(&decisions, |decisions| lookups(decisions.cache().stats())),
    );
    let subscribers = hub.clone();
    metrics.observe(
        Gauge,
        "toolgate.sse.subscribers",
        "Open manifest streams",
        move || {
            read(&subscribers, |hub| {
                vec![Reading::of(hub.subscriber_count() as u64)]
            })
        },
    );
    let events = hub.clone();
    metrics.observe(
        Counter,
        "toolgate.sse.events_sent",
        "Events written to manifest streams, by event (pings excluded)",
        move || {
            read(&events, |hub| {
                EventKind::ALL
                    .iter()
                    .map(|&kind| Reading {
                        value: hub.events_sent(kind),
                        label: Some(("event", kind.name())),
                    })
                    .collect()
            })
        },
    );
    metrics.observe(
        Counter,
        "toolgate.sse.coalesced",
        "Times a slow stream was coalesced to a fresh snapshot",
        move || read(&hub, |hub| vec![Reading::of(hub.lagged_count())]),
    );
    metrics.observe(
        Gauge,
        "toolgate.catalog.revision",
        "The catalog revision this instance serves",
        move || {
            read(&catalog, |catalog| {
                vec![Reading::of(catalog.snapshot().revision())]
            })
        },
    );
    register_mcp(metrics, mcp);
    if let Some(redis) = redis {
        register_redis(metrics, redis);
    }
    if let Some(shared) = shared {
        metrics.observe(
            Counter,
            "toolgate.redis.rejected_entries",
            "Shared access entries ignored because they were unreadable or failed the \
             integrity check (tampering, or an instance with another secret)",
            move || read(&shared, |shared| vec![Reading::of(shared.rejected_count())]),
        );
    }
}

fn register_mcp(metrics: &Metrics, mcp: Weak<McpEndpoint>) {
    let sessions = mcp.clone();
    metrics.observe(
        ReadingKind::Gauge,
        "toolgate.mcp.sessions",
        "Live MCP sessions (2025 revisions) on this instance",
        move || {
            read(&sessions, |mcp| {
                vec![Reading::of(mcp.sessions.count() as u64)]
            })
        },
    );
    metrics.observe(
        ReadingKind::Gauge,
        "toolgate.mcp.streams",
        "Open MCP notification streams (GET /mcp and subscriptions/listen)",
        move || {
            read(&mcp, |mcp| {
                vec![Reading::of(mcp.hub.subscriber_count() as u64)]
            })
        },
    );
}

fn register_redis(metrics: &Metrics, redis: Weak<RedisLink>) {
    use ReadingKind::{Counter, Gauge};
    let errors = redis.clone();
    metrics.observe(
        Counter,
        "toolgate.redis.errors",
        "Redis calls that failed or timed out",
        move || read(&errors, |link| vec![Reading::of(link.health().counts().0)]),
    );
    let outages = redis.clone();
    metrics.observe(
        Counter,
        "toolgate.redis.outages",
        "Times Redis went from reachable to unreachable",
        move || read(&outages, |link| vec![Reading::of(link.health().counts().1)]),
    );
    metrics.observe(
        Gauge,
        "toolgate.redis.degraded",
        "1 while Redis is unreachable (serving from the local snapshot)",
        move || {
            read(&redis, |link| {
                vec![Reading::of(u64::from(link.health().is_down()))]
            })
        },
    );
}
