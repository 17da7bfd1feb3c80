//! What a running gateway counts for itself, registered with its metrics as values read at
//! each collection: cache lookups, open streams and the events they were sent, the revision
//! served, Redis health and rejected shared entries. Held weakly: metrics must not keep a
//! stopped server's store or streams alive.

use std::sync::{Arc, Weak};

use crate::cache::CacheStats;
use crate::cache::redis::SharedCache;
use crate::redis_link::RedisLink;
use crate::service::{CatalogService, Decisions, Manifests, McpTools};
use crate::stream::frame::EventKind;
use crate::stream::{StreamClass, StreamHub};
use crate::telemetry::{Metrics, Reading, ReadingKind};
use crate::transport::AppState;
use crate::transport::mcp::McpEndpoint;

/// The parts of a running gateway whose own counters are observed.
pub(super) struct Observed {
    pub manifests: Weak<Manifests>,
    pub decisions: Weak<Decisions>,
    pub mcp_tools: Weak<McpTools>,
    pub hub: Weak<StreamHub>,
    pub catalog: Weak<CatalogService>,
    pub redis: Option<Weak<RedisLink>>,
    pub shared: Option<Weak<SharedCache>>,
    pub mcp: Weak<McpEndpoint>,
}

impl Observed {
    /// The observed parts of a running gateway, held weakly.
    pub(super) fn of(state: &AppState) -> Observed {
        let app = state.app.internals();
        Observed {
            manifests: Arc::downgrade(app.manifests),
            decisions: Arc::downgrade(app.decisions),
            mcp_tools: Arc::downgrade(app.mcp_tools),
            hub: Arc::downgrade(app.hub),
            catalog: Arc::downgrade(app.catalog),
            redis: app.redis.map(Arc::downgrade),
            shared: app.manifests.shared().map(Arc::downgrade),
            mcp: Arc::downgrade(&state.mcp),
        }
    }
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
            label: Some(("result", "hit".into())),
        },
        Reading {
            value: misses,
            label: Some(("result", "miss".into())),
        },
    ]
}

/// `toolgate.<name>.lookups` (by `result`), `.bytes` and `.evictions` of one cache, whose
/// counters `stats` reads (`None` once it has gone away).
macro_rules! register_cache {
    ($metrics:expr, $name:literal, $what:literal, $stats:expr) => {{
        let stats = $stats;
        let lookups_of = stats.clone();
        $metrics.observe(
            ReadingKind::Counter,
            concat!("toolgate.", $name, ".lookups"),
            concat!("Lookups in ", $what),
            move || {
                lookups_of()
                    .map(|stats: CacheStats| lookups((stats.hits, stats.misses)))
                    .unwrap_or_default()
            },
        );
        let bytes_of = stats.clone();
        $metrics.observe(
            ReadingKind::Gauge,
            concat!("toolgate.", $name, ".bytes"),
            concat!("Bytes held by ", $what, " (bounded by its budget)"),
            move || {
                bytes_of()
                    .map(|stats: CacheStats| vec![Reading::of(stats.bytes as u64)])
                    .unwrap_or_default()
            },
        );
        $metrics.observe(
            ReadingKind::Counter,
            concat!("toolgate.", $name, ".evictions"),
            concat!(
                "Entries evicted from ",
                $what,
                " to stay within its byte budget"
            ),
            move || {
                stats()
                    .map(|stats: CacheStats| vec![Reading::of(stats.evictions)])
                    .unwrap_or_default()
            },
        );
    }};
}

/// Registers every value of `gateway` with `metrics`.
pub(super) fn register(metrics: &Metrics, gateway: Observed) {
    let Observed {
        manifests,
        decisions,
        mcp_tools,
        hub,
        catalog,
        redis,
        shared,
        mcp,
    } = gateway;
    register_caches(metrics, manifests, decisions, mcp_tools);
    register_streams(metrics, hub.clone());
    let revisions = catalog.clone();
    metrics.observe(
        ReadingKind::Gauge,
        "toolgate.catalog.revision",
        "The catalog revision this instance serves",
        move || {
            read(&catalog, |catalog| {
                vec![Reading::of(catalog.snapshot().revision())]
            })
        },
    );
    metrics.observe(
        ReadingKind::Gauge,
        "toolgate.tool.revisions.pending",
        "Revisions of imported tools awaiting an admin's decision, per source",
        move || {
            read(&revisions, |catalog| {
                let snapshot = catalog.snapshot();
                crate::service::revisions::pending_by_source(snapshot.catalog())
                    .into_iter()
                    .map(|(source, count)| Reading {
                        value: count as u64,
                        label: Some(("source_id", source.to_owned().into())),
                    })
                    .collect()
            })
        },
    );
    register_mcp(metrics, mcp, hub);
    if let Some(redis) = redis {
        register_redis(metrics, redis);
    }
    if let Some(shared) = shared {
        metrics.observe(
            ReadingKind::Counter,
            "toolgate.redis.rejected_entries",
            "Shared access entries ignored because they were unreadable or failed the \
             integrity check (tampering, or an instance with another secret)",
            move || read(&shared, |shared| vec![Reading::of(shared.rejected_count())]),
        );
    }
}

/// The caches of the request path: rendered manifests, access decisions (read through the
/// manifests), evaluations and MCP pages.
fn register_caches(
    metrics: &Metrics,
    manifests: Weak<Manifests>,
    decisions: Weak<Decisions>,
    mcp_tools: Weak<McpTools>,
) {
    let access = manifests.clone();
    register_cache!(
        metrics,
        "manifest_cache",
        "this instance's cache of rendered manifests, per access decision and options",
        move || manifests
            .upgrade()
            .map(|manifests| manifests.rendered_stats())
    );
    register_cache!(
        metrics,
        "access_cache",
        "this instance's cache of access decisions (the matching policies) per claims key",
        move || access.upgrade().map(|manifests| manifests.access().stats())
    );
    register_cache!(
        metrics,
        "decision_cache",
        "this instance's cache of evaluations for decisions and MCP listings, per access \
         decision and context",
        move || decisions
            .upgrade()
            .map(|decisions| decisions.evaluation_stats())
    );
    register_cache!(
        metrics,
        "mcp_page_cache",
        "this instance's cache of MCP tools/list pages, per access decision, options and cursor",
        move || mcp_tools.upgrade().map(|tools| tools.page_stats())
    );
}

/// The manifest streams (SSE and MCP share the hub): how many are open, what they were sent,
/// and what their byte budget holds and had to coalesce.
fn register_streams(metrics: &Metrics, hub: Weak<StreamHub>) {
    use ReadingKind::{Counter, Gauge};
    let subscribers = hub.clone();
    metrics.observe(
        Gauge,
        "toolgate.sse.subscribers",
        "Open manifest streams",
        move || {
            read(&subscribers, |hub| {
                vec![Reading::of(hub.subscriber_count_of(StreamClass::Sse) as u64)]
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
                        label: Some(("event", kind.name().into())),
                    })
                    .collect()
            })
        },
    );
    let budget = hub.clone();
    metrics.observe(
        Gauge,
        "toolgate.stream.bytes",
        "Bytes every stream (SSE and MCP) holds, by state: queued events, and events handed \
         to a connection and not yet written (bounded together by TOOLGATE_CACHE_STREAM_TOTAL_BYTES)",
        move || {
            read(&budget, |hub| {
                let budget = hub.budget();
                vec![
                    Reading {
                        value: budget.queued() as u64,
                        label: Some(("state", "queued".into())),
                    },
                    Reading {
                        value: budget.being_written() as u64,
                        label: Some(("state", "writing".into())),
                    },
                ]
            })
        },
    );
    let room = hub.clone();
    metrics.observe(
        Counter,
        "toolgate.stream.budget_coalesced",
        "Streams (SSE and MCP) coalesced to a fresh snapshot to keep all queues within \
         TOOLGATE_CACHE_STREAM_TOTAL_BYTES, largest first",
        move || read(&room, |hub| vec![Reading::of(hub.budget().coalesced())]),
    );
    metrics.observe(
        Counter,
        "toolgate.sse.coalesced",
        "Times a slow stream was coalesced to a fresh snapshot",
        move || read(&hub, |hub| vec![Reading::of(hub.lagged_count())]),
    );
}

fn register_mcp(metrics: &Metrics, mcp: Weak<McpEndpoint>, hub: Weak<StreamHub>) {
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
            read(&hub, |hub| {
                vec![Reading::of(hub.subscriber_count_of(StreamClass::Mcp) as u64)]
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
