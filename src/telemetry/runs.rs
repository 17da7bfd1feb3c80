//! The instruments of runs (docs/runs.md): live runs, runs started and ended, transitions, and
//! calls the run rules refused by reason. Labels are closed sets (the reason codes); never a
//! run id, a tool or a subject.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Meter};

/// The refusal reasons of the run rules, as metric labels.
pub const REASONS: [&str; 4] = ["run_state", "run_budget", "run_pinned", "run_ended"];

/// Instruments of runs.
pub struct RunMetrics {
    started: Counter<u64>,
    ended: Counter<u64>,
    transitions: Counter<u64>,
    refused: Counter<u64>,
    /// Live runs, as last counted (by the purge, every few seconds).
    live: Arc<AtomicU64>,
}

impl RunMetrics {
    pub(super) fn new(meter: &Meter) -> RunMetrics {
        let live = Arc::new(AtomicU64::new(0));
        let read = Arc::clone(&live);
        meter
            .u64_observable_gauge("toolgate.runs.live")
            .with_description("Runs live in the run store, as last counted (every 10 s)")
            .with_callback(move |observer| observer.observe(read.load(Ordering::Relaxed), &[]))
            .build();
        RunMetrics {
            started: meter
                .u64_counter("toolgate.runs.started")
                .with_description("Runs started here (POST /runs), roots and children")
                .build(),
            ended: meter
                .u64_counter("toolgate.runs.ended")
                .with_description("Runs ended here (DELETE /runs/{id}, with their subtrees)")
                .build(),
            transitions: meter
                .u64_counter("toolgate.runs.transitions")
                .with_description(
                    "Calls that moved a run to another state (forwarded and successful, or \
                     reported by an executor)",
                )
                .build(),
            refused: meter
                .u64_counter("toolgate.runs.refusals")
                .with_description(
                    "Calls the run rules refused, by reason: run_state, run_budget, run_pinned, \
                     run_ended",
                )
                .build(),
            live,
        }
    }

    pub fn started(&self) {
        self.started.add(1, &[]);
    }

    pub fn ended(&self, runs: usize) {
        self.ended.add(u64::try_from(runs).unwrap_or(u64::MAX), &[]);
    }

    pub fn transition(&self) {
        self.transitions.add(1, &[]);
    }

    /// A call refused for `reason` (one of [`REASONS`]).
    pub fn refused(&self, reason: &'static str) {
        self.refused.add(1, &[KeyValue::new("reason", reason)]);
    }

    /// The live runs counted now.
    pub fn live(&self, runs: usize) {
        self.live
            .store(u64::try_from(runs).unwrap_or(u64::MAX), Ordering::Relaxed);
    }
}
