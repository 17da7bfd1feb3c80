//! Whether Redis is up, as the gateway has seen it: recorded by every call, read by `/readyz`,
//! the metrics and the callers that skip Redis while it is down.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use redis::RedisError;

use super::{LinkError, PROBE_INTERVAL};

/// Whether Redis answered the last time it was asked, and how often it did not.
#[derive(Default)]
pub struct RedisHealth {
    down: AtomicBool,
    /// Commands or connections that failed, since start.
    errors: AtomicU64,
    /// Times Redis went from up to down, since start.
    outages: AtomicU64,
    state: Mutex<HealthState>,
}

#[derive(Default)]
struct HealthState {
    last_error: Option<String>,
    last_probe: Option<Instant>,
}

impl RedisHealth {
    /// Records the outcome of a call and passes it on.
    pub fn record<T>(&self, outcome: Result<T, RedisError>) -> Result<T, LinkError> {
        match outcome {
            Ok(value) => {
                self.mark_up();
                Ok(value)
            }
            Err(error) => {
                let message = error.to_string();
                self.mark_down(&message);
                Err(LinkError::Unavailable(message))
            }
        }
    }

    pub fn mark_up(&self) {
        if self.down.swap(false, Ordering::AcqRel) {
            tracing::info!("Redis is reachable again");
        }
    }

    pub fn mark_down(&self, error: &str) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        let mut state = self.lock();
        state.last_error = Some(error.to_owned());
        state.last_probe = Some(Instant::now());
        drop(state);
        if !self.down.swap(true, Ordering::AcqRel) {
            self.outages.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(%error, "Redis is unreachable; serving from the local snapshot");
        }
    }

    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::Acquire)
    }

    /// Whether a request may call Redis now: always while it is up; while it is down, one
    /// caller per [`PROBE_INTERVAL`].
    pub fn may_call(&self) -> bool {
        if !self.is_down() {
            return true;
        }
        let mut state = self.lock();
        let due = state
            .last_probe
            .is_none_or(|at| at.elapsed() >= PROBE_INTERVAL);
        if due {
            state.last_probe = Some(Instant::now());
        }
        due
    }

    /// The last error, while Redis is down.
    pub fn problem(&self) -> Option<String> {
        if !self.is_down() {
            return None;
        }
        self.lock().last_error.clone()
    }

    /// (failed calls, outages) since start.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.errors.load(Ordering::Relaxed),
            self.outages.load(Ordering::Relaxed),
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HealthState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn while_down_only_one_caller_per_interval_probes() {
        let health = RedisHealth::default();
        assert!(health.may_call() && health.may_call(), "up: everyone calls");
        health.mark_down("connection refused");
        assert!(health.is_down());
        assert_eq!(health.problem().as_deref(), Some("connection refused"));
        assert!(
            !health.may_call(),
            "just failed: wait for the probe interval"
        );
        health.lock().last_probe = Some(Instant::now() - PROBE_INTERVAL);
        assert!(health.may_call(), "the probe is due");
        assert!(!health.may_call(), "only one caller probes");
        health.mark_up();
        assert!(health.may_call() && health.problem().is_none());
        assert_eq!(health.counts(), (1, 1));
    }

    #[test]
    fn repeated_failures_are_one_outage() {
        let health = RedisHealth::default();
        health.mark_down("a");
        health.mark_down("b");
        health.mark_up();
        health.mark_down("c");
        assert_eq!(health.counts(), (3, 2));
    }
}
