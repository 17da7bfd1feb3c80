//! What the gateway already counts for itself (cache lookups, streams, events, revision, Redis
//! health) and the agent counters kept off the OpenTelemetry hot path, registered as
//! observable instruments: read at each collection, never on a request.

use std::sync::{Arc, Weak};

use opentelemetry::KeyValue;
use opentelemetry::metrics::Meter;

use super::striped::StripedCounter;
use crate::cache::ManifestCache;
use crate::cache::redis::SharedCache;
use crate::redis_link::RedisLink;
use crate::service::CatalogService;
use crate::stream::StreamHub;
use crate::stream::frame::EventKind;

/// The parts of a running gateway whose own counters are observed at collection time. Weak:
/// metrics must not keep a stopped server's store or streams alive.
pub struct Observed {
    pub cache: Weak<ManifestCache>,
    pub hub: Weak<StreamHub>,
    pub catalog: Weak<CatalogService>,
    pub redis: Option<Weak<RedisLink>>,
    pub shared: Option<Weak<SharedCache>>,
}

/// The reference design's counters, counted on the hot path and observed at collection.
#[derive(Default)]
pub(super) struct AgentCounts {
    pub(super) resolutions: StripedCounter,
    pub(super) denied: StripedCounter,
    pub(super) tools: StripedCounter,
}

/// Registers the reference design's counters over the striped counts they read.
pub(super) fn agent_counts(meter: &Meter) -> Arc<AgentCounts> {
    let counts = Arc::new(AgentCounts::default());
    observe_count(
        meter,
        "agent_access_resolutions",
        "Manifest resolutions for agents (GET /agents/tools, stream openings), however served",
        &counts,
        |counts| &counts.resolutions,
    );
    observe_count(
        meter,
        "agent_access_denied",
        "Resolutions whose claims no policy grants any group",
        &counts,
        |counts| &counts.denied,
    );
    observe_count(
        meter,
        "agent_tools_resolved",
        "Tools returned to agents, summed over resolutions",
        &counts,
        |counts| &counts.tools,
    );
    counts
}

/// A monotonic counter named `name` reporting the count `pick` selects.
fn observe_count(
    meter: &Meter,
    name: &'static str,
    description: &'static str,
    counts: &Arc<AgentCounts>,
    pick: fn(&AgentCounts) -> &StripedCounter,
) {
    let counts = Arc::clone(counts);
    meter
        .u64_observable_counter(name)
        .with_description(description)
        .with_callback(move |observer| observer.observe(pick(&counts).get(), &[]))
        .build();
}

/// Registers the values the gateway counts itself, read at each collection.
pub(super) fn register(meter: &Meter, gateway: Observed) {
    let Observed {
        cache,
        hub,
        catalog,
        redis,
        shared,
    } = gateway;
    meter
        .u64_observable_counter("toolgate.manifest_cache.lookups")
        .with_description("Lookups in this instance's cache of rendered manifests")
        .with_callback(move |observer| {
            if let Some(cache) = cache.upgrade() {
                let (hits, misses) = cache.stats();
                observer.observe(hits, &[KeyValue::new("result", "hit")]);
                observer.observe(misses, &[KeyValue::new("result", "miss")]);
            }
        })
        .build();
    let subscribers = hub.clone();
    meter
        .u64_observable_gauge("toolgate.sse.subscribers")
        .with_description("Open manifest streams")
        .with_callback(move |observer| {
            if let Some(hub) = subscribers.upgrade() {
                observer.observe(hub.subscriber_count() as u64, &[]);
            }
        })
        .build();
    let events = hub.clone();
    meter
        .u64_observable_counter("toolgate.sse.events_sent")
        .with_description("Events written to manifest streams, by event (pings excluded)")
        .with_callback(move |observer| {
            if let Some(hub) = events.upgrade() {
                for kind in EventKind::ALL {
                    observer.observe(
                        hub.events_sent(kind),
                        &[KeyValue::new("event", kind.name())],
                    );
                }
            }
        })
        .build();
    meter
        .u64_observable_counter("toolgate.sse.coalesced")
        .with_description("Times a slow stream was coalesced to a fresh snapshot")
        .with_callback(move |observer| {
            if let Some(hub) = hub.upgrade() {
                observer.observe(hub.lagged_count(), &[]);
            }
        })
        .build();
    meter
        .u64_observable_gauge("toolgate.catalog.revision")
        .with_description("The catalog revision this instance serves")
        .with_callback(move |observer| {
            if let Some(catalog) = catalog.upgrade() {
                observer.observe(catalog.snapshot().revision(), &[]);
            }
        })
        .build();
    if let Some(redis) = redis {
        observe_redis(meter, redis);
    }
    if let Some(shared) = shared {
        meter
            .u64_observable_counter("toolgate.redis.rejected_entries")
            .with_description(
                "Shared access entries ignored because they were unreadable or failed the \
                 integrity check (tampering, or an instance with another secret)",
            )
            .with_callback(move |observer| {
                if let Some(shared) = shared.upgrade() {
                    observer.observe(shared.rejected_count(), &[]);
                }
            })
            .build();
    }
}

fn observe_redis(meter: &Meter, redis: Weak<RedisLink>) {
    let errors = redis.clone();
    meter
        .u64_observable_counter("toolgate.redis.errors")
        .with_description("Redis calls that failed or timed out")
        .with_callback(move |observer| {
            if let Some(link) = errors.upgrade() {
                observer.observe(link.health().counts().0, &[]);
            }
        })
        .build();
    let outages = redis.clone();
    meter
        .u64_observable_counter("toolgate.redis.outages")
        .with_description("Times Redis went from reachable to unreachable")
        .with_callback(move |observer| {
            if let Some(link) = outages.upgrade() {
                observer.observe(link.health().counts().1, &[]);
            }
        })
        .build();
    meter
        .u64_observable_gauge("toolgate.redis.degraded")
        .with_description("1 while Redis is unreachable (serving from the local snapshot)")
        .with_callback(move |observer| {
            if let Some(link) = redis.upgrade() {
                observer.observe(u64::from(link.health().is_down()), &[]);
            }
        })
        .build();
}
