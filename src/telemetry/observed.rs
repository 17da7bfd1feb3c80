//! Values read at collection time, never on a request: the agent counters kept off the
//! OpenTelemetry hot path, and whatever the rest of the gateway counts for itself (cache
//! lookups, streams, events, revision, Redis health), which it registers here as callbacks.
//! Telemetry knows nothing of those parts: the server hands in what to read (instruments are
//! passed in, telemetry imports nothing above it).

use std::borrow::Cow;
use std::sync::Arc;

use opentelemetry::KeyValue;
use opentelemetry::metrics::Meter;

use super::striped::StripedCounter;

/// One value read at collection, with at most one label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    pub value: u64,
    /// `(key, value)` of the label, if any (a value of the catalog, such as a source id, is
    /// owned).
    pub label: Option<(&'static str, Cow<'static, str>)>,
}

impl Reading {
    /// A value without labels.
    pub fn of(value: u64) -> Reading {
        Reading { value, label: None }
    }
}

/// How a read value behaves over time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadingKind {
    /// Only grows (exported with `_total`).
    Counter,
    /// Goes up and down.
    Gauge,
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

/// Registers an instrument whose values `read` returns at each collection. A part of the
/// gateway that has gone away (the callback holds it weakly) simply returns nothing.
pub(super) fn register(
    meter: &Meter,
    kind: ReadingKind,
    name: &'static str,
    description: &'static str,
    read: impl Fn() -> Vec<Reading> + Send + Sync + 'static,
) {
    let observe = move |observer: &dyn Fn(u64, &[KeyValue])| {
        for reading in read() {
            match reading.label {
                Some((key, value)) => observer(reading.value, &[KeyValue::new(key, value)]),
                None => observer(reading.value, &[]),
            }
        }
    };
    match kind {
        ReadingKind::Counter => {
            meter
                .u64_observable_counter(name)
                .with_description(description)
                .with_callback(move |observer| {
                    observe(&|value, labels| observer.observe(value, labels))
                })
                .build();
        }
        ReadingKind::Gauge => {
            meter
                .u64_observable_gauge(name)
                .with_description(description)
                .with_callback(move |observer| {
                    observe(&|value, labels| observer.observe(value, labels))
                })
                .build();
        }
    }
}
