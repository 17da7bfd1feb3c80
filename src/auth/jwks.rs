//! The live JWKS: the current key set, refetched periodically and on unknown keys.
//!
//! Readers take a cheap `Arc` snapshot of the current set. Fetches are serialised by one async
//! lock, so concurrent callers that miss the same key share a single fetch, and refetches on a
//! miss are rate-limited. A failed fetch never replaces the set in use.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock, Weak};
use std::time::Duration;

use jsonwebtoken::Algorithm;
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

use super::jwks_source::JwksSource;
use super::key_set::KeySet;
use super::{AuthError, AuthSetupError, JwksError};

/// The key set in use plus what is needed to renew it.
#[derive(Debug)]
pub(crate) struct JwksCache {
    source: JwksSource,
    current: RwLock<Arc<KeySet>>,
    /// Bumped after every key set made current: what a verification was made with.
    generation: AtomicU64,
    /// Held for the duration of a fetch; stores when the last fetch started (the clock's
    /// monotonic reading).
    fetch_gate: Mutex<Option<Duration>>,
    refresh_interval: Duration,
    min_refetch_interval: Duration,
    /// What the refetch interval is measured by: the verifier's clock.
    clock: Arc<dyn crate::clock::Clock>,
}

impl JwksCache {
    /// Loads the key set for the first time.
    ///
    /// An unreadable or invalid file is a set-up error; an unreachable URL only logs a warning
    /// and starts with no keys, to be filled by later refetches.
    pub(super) async fn load(
        source: JwksSource,
        refresh_interval: Duration,
        min_refetch_interval: Duration,
        clock: Arc<dyn crate::clock::Clock>,
    ) -> Result<Arc<Self>, AuthSetupError> {
        let cache = Arc::new(Self {
            source,
            current: RwLock::new(Arc::new(KeySet::default())),
            generation: AtomicU64::new(0),
            fetch_gate: Mutex::new(None),
            refresh_interval,
            min_refetch_interval,
            clock,
        });
        if let Err(error) = cache.fetch_now().await {
            match &cache.source {
                JwksSource::File(path) => {
                    return Err(AuthSetupError::JwksFile {
                        path: path.clone(),
                        source: error,
                    });
                }
                JwksSource::Http { .. } => tracing::warn!(
                    source = %cache.source,
                    %error,
                    "JWKS unavailable at start; starting without asymmetric keys and retrying"
                ),
            }
        }
        Ok(cache)
    }

    /// Counts the key sets made current. A token verified while it read `g` may have used the
    /// set of `g` or a newer one, never an older one (the set is stored before the bump).
    pub(super) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The key set in use now.
    fn current(&self) -> Arc<KeySet> {
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Checks an asymmetric signature, refetching the JWKS once if no key fits (a key
    /// rotation at the IdP shows up as a new `kid`).
    pub(super) async fn verify(
        &self,
        alg: Algorithm,
        kid: Option<&str>,
        signing_input: &[u8],
        signature_b64: &str,
    ) -> Result<(), AuthError> {
        let seen = self.current();
        match seen.verify(alg, kid, signing_input, signature_b64) {
            Err(AuthError::UnknownKey) => match self.refetch_after_miss(&seen).await {
                Some(renewed) => renewed.verify(alg, kid, signing_input, signature_b64),
                None => Err(AuthError::UnknownKey),
            },
            outcome => outcome,
        }
    }

    /// Returns a key set newer than `seen`, fetching one unless another caller just did or the
    /// rate limit forbids it; `None` when nothing newer is available.
    async fn refetch_after_miss(&self, seen: &Arc<KeySet>) -> Option<Arc<KeySet>> {
        let mut last_fetch = self.fetch_gate.lock().await;
        let current = self.current();
        if !Arc::ptr_eq(&current, seen) {
            return Some(current);
        }
        let now = self.clock.monotonic();
        if last_fetch.is_some_and(|at| now.saturating_sub(at) < self.min_refetch_interval) {
            return None;
        }
        *last_fetch = Some(now);
        match self.fetch_and_store().await {
            Ok(renewed) => Some(renewed),
            Err(error) => {
                tracing::warn!(
                    source = %self.source,
                    %error,
                    "JWKS refetch failed; keeping previous keys"
                );
                None
            }
        }
    }

    /// Fetches unconditionally (start-up and periodic refresh), still one fetch at a time.
    async fn fetch_now(&self) -> Result<Arc<KeySet>, JwksError> {
        let mut last_fetch = self.fetch_gate.lock().await;
        *last_fetch = Some(self.clock.monotonic());
        self.fetch_and_store().await
    }

    /// Fetches and parses the document and makes it current; callers hold the fetch gate.
    async fn fetch_and_store(&self) -> Result<Arc<KeySet>, JwksError> {
        let document = self.source.fetch().await?;
        let renewed = Arc::new(KeySet::parse(&document)?);
        tracing::info!(source = %self.source, keys = renewed.len(), "JWKS loaded");
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::clone(&renewed);
        self.generation.fetch_add(1, Ordering::Release);
        Ok(renewed)
    }

    /// Starts the background refresh: every `refresh_interval`, and after a failure sooner
    /// (from `min_refetch_interval`, doubling up to `refresh_interval`). The task holds only a
    /// weak reference and ends once the cache is dropped.
    pub(super) fn spawn_refresh(self: &Arc<Self>) -> JoinHandle<()> {
        let cache: Weak<Self> = Arc::downgrade(self);
        let every = self.refresh_interval.max(Duration::from_secs(1));
        let retry = self
            .min_refetch_interval
            .clamp(Duration::from_secs(1), every);
        let mut failures: u32 = u32::from(self.current().len() == 0);
        tokio::spawn(async move {
            loop {
                let delay = match failures {
                    0 => every,
                    n => retry.saturating_mul(1 << (n - 1).min(16)).min(every),
                };
                tokio::time::sleep(delay).await;
                let Some(cache) = cache.upgrade() else { return };
                match cache.fetch_now().await {
                    Ok(_) => failures = 0,
                    Err(error) => {
                        failures = failures.saturating_add(1);
                        tracing::warn!(
                            source = %cache.source,
                            %error,
                            "JWKS refresh failed; keeping previous keys"
                        );
                    }
                }
            }
        })
    }
}
