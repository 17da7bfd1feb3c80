//! The gateway's connection to Redis, shared by the cache and the change bus, and the one
//! place that knows whether Redis is up.
//!
//! Redis is an accelerator and a messenger, never the source of truth: when it is down, agent
//! reads go on from the local snapshot and cache, and the catalog store's revision (polled)
//! keeps instances in step. So every call here is bounded by short timeouts, fails into "no
//! answer" rather than into an error for the request, and is recorded in [`RedisHealth`] for
//! `/readyz` and the metrics. While Redis is down, cache lookups are skipped outright except for
//! one probe per [`PROBE_INTERVAL`], so a dead Redis costs agents nothing.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, RedisError};

/// Longest wait for one command; a cache answer slower than this is worth less than computing.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_millis(250);
/// Longest wait for a TCP connection to Redis.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// While Redis is down, how often one request may try it again.
pub const PROBE_INTERVAL: Duration = Duration::from_secs(1);

/// A connection to Redis that reconnects by itself.
pub struct RedisLink {
    client: Client,
    commands: ConnectionManager,
    health: RedisHealth,
}

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

/// Why the gateway could not use Redis.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("invalid Redis URL: {0}")]
    Url(String),
    #[error("Redis did not answer: {0}")]
    Unavailable(String),
}

impl RedisLink {
    /// A link to the Redis at `url`. Connecting is lazy: the gateway starts (degraded) even if
    /// Redis is down, and catches up when it comes back.
    pub fn open(url: &str) -> Result<RedisLink, LinkError> {
        let client = Client::open(url).map_err(|error| LinkError::Url(error.to_string()))?;
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(2));
        let commands = ConnectionManager::new_lazy_with_config(client.clone(), config)
            .map_err(|error| LinkError::Url(error.to_string()))?;
        Ok(RedisLink {
            client,
            commands,
            health: RedisHealth::default(),
        })
    }

    /// A connection for commands (cheap to clone; multiplexed).
    pub fn commands(&self) -> ConnectionManager {
        self.commands.clone()
    }

    /// The client, for connections of their own (pub/sub).
    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn health(&self) -> &RedisHealth {
        &self.health
    }

    /// Asks Redis whether it is there (for `/readyz`).
    pub async fn ping(&self) -> Result<(), LinkError> {
        let mut connection = self.commands();
        let answer: Result<String, RedisError> =
            redis::cmd("PING").query_async(&mut connection).await;
        self.health.record(answer.map(drop))
    }
}

/// The span of one Redis call, a child of what the caller is doing: `debug`, so free unless
/// traces are exported.
pub fn command_span(name: &'static str, operation: &'static str) -> tracing::Span {
    tracing::debug_span!(
        "redis",
        otel.name = name,
        otel.kind = "client",
        db.system.name = "redis",
        db.operation.name = operation,
    )
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
