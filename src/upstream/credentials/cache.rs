//! Issued upstream tokens, kept until shortly before they expire.
//!
//! Invariants:
//! - an entry is keyed by everything that made it: the grant, the source, a digest of the
//!   source's `auth` config and, for a token exchange, the caller's identity. A token is
//!   therefore never handed to another identity, nor kept past an edit of the config;
//! - one request per key at a time (single flight): callers of a key wait for the request in
//!   progress and share its token, or its failure (a burst of calls makes one exchange, and a
//!   failing endpoint is asked once per burst, not once per waiting call);
//! - bounded in bytes: past [`MAX_BYTES`] of tokens, expired entries go first, then those
//!   used longest ago.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};

use super::endpoint::TokenFailure;
use crate::clock::{Clock, SystemClock};

/// Bytes of tokens kept at most (a token of 1–2 KiB: a few thousand callers).
pub(super) const MAX_BYTES: usize = 8 << 20;

/// Keys held at most (slots that never got a token count too: failures for many callers).
const MAX_ENTRIES: usize = 32 * 1024;

/// What identifies one cached token (a digest of the parts named in the module docs).
pub(super) type Key = [u8; 32];

/// A usable token and until when.
#[derive(Clone)]
pub(super) struct Token {
    pub bearer: Arc<str>,
    /// By the cache's clock (the App's: the one callers' tokens expire by).
    pub until: DateTime<Utc>,
}

#[derive(Default)]
struct Held {
    token: Option<Token>,
    /// The last failure and when it came: shared with whoever waited for that request (an
    /// order of events, so the monotonic clock, not the App's, which tests hold still).
    failed: Option<(Instant, TokenFailure)>,
}

struct Slot {
    held: tokio::sync::Mutex<Held>,
}

struct Entry {
    slot: Arc<Slot>,
    bytes: usize,
    used: u64,
    until: Option<DateTime<Utc>>,
}

#[derive(Default)]
struct State {
    entries: HashMap<Key, Entry>,
    bytes: usize,
    clock: u64,
}

/// See the module documentation.
pub(super) struct TokenCache {
    state: Mutex<State>,
    /// What tokens expire by.
    clock: Arc<dyn Clock>,
}

impl Default for TokenCache {
    fn default() -> TokenCache {
        TokenCache::new(Arc::new(SystemClock))
    }
}

/// Whether a token came from the cache or was just issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Got {
    Cached,
    Issued,
}

impl TokenCache {
    /// An empty cache whose tokens expire by `clock`.
    pub(super) fn new(clock: Arc<dyn Clock>) -> TokenCache {
        TokenCache {
            state: Mutex::default(),
            clock,
        }
    }

    /// What the cache's tokens expire by; callers' token expiries are read against it too.
    pub(super) fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Bookkeeping only under this lock; a panic elsewhere leaves it consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The token of `key`: the cached one while it is valid at `now`, else the one `issue`
    /// makes (which answers the token and how long it may be used).
    pub(super) async fn get<F>(
        &self,
        key: Key,
        issue: impl FnOnce() -> F,
    ) -> Result<(Arc<str>, Got), TokenFailure>
    where
        F: Future<Output = Result<(Arc<str>, Duration), TokenFailure>>,
    {
        let asked = Instant::now();
        let slot = self.slot(key);
        let mut held = slot.held.lock().await;
        let now = self.clock.now();
        if let Some(token) = &held.token
            && now < token.until
        {
            return Ok((Arc::clone(&token.bearer), Got::Cached));
        }
        if let Some((at, failure)) = &held.failed
            && *at >= asked
        {
            return Err(failure.clone());
        }
        match issue().await {
            Ok((bearer, usable_for)) => {
                let issued = self.clock.now();
                let until = TimeDelta::from_std(usable_for)
                    .ok()
                    .and_then(|usable| issued.checked_add_signed(usable))
                    .unwrap_or(issued);
                held.token = Some(Token {
                    bearer: Arc::clone(&bearer),
                    until,
                });
                held.failed = None;
                drop(held);
                self.account(key, bearer.len(), until);
                Ok((bearer, Got::Issued))
            }
            Err(failure) => {
                held.token = None;
                held.failed = Some((Instant::now(), failure.clone()));
                Err(failure)
            }
        }
    }

    /// The slot of `key`, made if there is none.
    fn slot(&self, key: Key) -> Arc<Slot> {
        let mut state = self.lock();
        if state.entries.len() >= MAX_ENTRIES {
            make_room(&mut state, self.clock.now());
        }
        state.clock += 1;
        let clock = state.clock;
        let entry = state.entries.entry(key).or_insert_with(|| Entry {
            slot: Arc::new(Slot {
                held: tokio::sync::Mutex::new(Held::default()),
            }),
            bytes: 0,
            used: clock,
            until: None,
        });
        entry.used = clock;
        Arc::clone(&entry.slot)
    }

    /// Records that `key` now holds a token of `bytes` until `until`, and makes room.
    fn account(&self, key: Key, bytes: usize, until: DateTime<Utc>) {
        let mut state = self.lock();
        let Some(entry) = state.entries.get_mut(&key) else {
            return;
        };
        let before = std::mem::replace(&mut entry.bytes, bytes);
        entry.until = Some(until);
        state.bytes = state.bytes - before + bytes;
        make_room(&mut state, self.clock.now());
    }

    /// Bytes of tokens held (for tests and the bound).
    #[cfg(test)]
    pub(super) fn bytes(&self) -> usize {
        self.lock().bytes
    }
}

/// Drops entries until the tokens fit [`MAX_BYTES`]: the expired first, then the least
/// recently used. Also drops slots that never got a token once they are many.
fn make_room(state: &mut State, now: DateTime<Utc>) {
    if state.bytes <= MAX_BYTES && state.entries.len() < MAX_ENTRIES {
        return;
    }
    state.entries.retain(|_, entry| {
        entry.until.is_some_and(|until| until > now) || Arc::strong_count(&entry.slot) > 1
    });
    let mut order: Vec<(u64, Key)> = state
        .entries
        .iter()
        .map(|(key, entry)| (entry.used, *key))
        .collect();
    order.sort_unstable();
    let mut bytes: usize = state.entries.values().map(|entry| entry.bytes).sum();
    let mut count = state.entries.len();
    for (_, key) in order {
        if bytes <= MAX_BYTES && count < MAX_ENTRIES {
            break;
        }
        count -= 1;
        if let Some(entry) = state.entries.remove(&key) {
            bytes -= entry.bytes;
        }
    }
    state.bytes = bytes;
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn key(n: u8) -> Key {
        [n; 32]
    }

    #[tokio::test]
    async fn a_burst_makes_one_request_and_shares_its_token() {
        let cache = Arc::new(TokenCache::default());
        let made = Arc::new(AtomicUsize::new(0));
        let mut calls = Vec::new();
        for _ in 0..20 {
            let (cache, made) = (Arc::clone(&cache), Arc::clone(&made));
            calls.push(tokio::spawn(async move {
                cache
                    .get(key(1), || async {
                        made.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        Ok((Arc::from("t1"), Duration::from_secs(60)))
                    })
                    .await
            }));
        }
        for call in calls {
            let (token, _) = call.await.expect("joined").expect("a token");
            assert_eq!(&*token, "t1");
        }
        assert_eq!(made.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_failure_is_shared_with_waiters_but_not_kept() {
        let cache = TokenCache::default();
        let failure = || async { Err(TokenFailure::Timeout) };
        assert!(cache.get(key(2), failure).await.is_err());
        // A later call asks again.
        let (token, got) = cache
            .get(key(2), || async {
                Ok((Arc::from("t"), Duration::from_secs(9)))
            })
            .await
            .expect("asked again");
        assert_eq!((&*token, got), ("t", Got::Issued));
        let (_, got) = cache
            .get(key(2), || async { Err(TokenFailure::Timeout) })
            .await
            .expect("cached");
        assert_eq!(got, Got::Cached);
    }

    #[tokio::test]
    async fn an_expired_token_is_issued_again_and_keys_never_mix() {
        let cache = TokenCache::default();
        let issue = |text: &'static str, secs| {
            move || async move { Ok((Arc::from(text), Duration::from_secs(secs))) }
        };
        cache.get(key(3), issue("a", 0)).await.expect("a");
        let (token, got) = cache.get(key(3), issue("b", 60)).await.expect("b");
        assert_eq!(
            (&*token, got),
            ("b", Got::Issued),
            "the first one had expired"
        );
        let (token, _) = cache.get(key(4), issue("c", 60)).await.expect("c");
        assert_eq!(&*token, "c", "another key never gets b");
    }

    #[tokio::test]
    async fn the_cache_is_bounded_in_bytes() {
        let cache = TokenCache::default();
        let big: Arc<str> = Arc::from("x".repeat(MAX_BYTES / 4 + 1));
        for n in 0..10 {
            let token = Arc::clone(&big);
            cache
                .get(
                    key(n),
                    || async move { Ok((token, Duration::from_secs(60))) },
                )
                .await
                .expect("issued");
            assert!(cache.bytes() <= MAX_BYTES, "{}", cache.bytes());
        }
        // The newest is kept, the oldest gave way.
        let again = |n| cache.get(key(n), || async { Err(TokenFailure::Timeout) });
        assert_eq!(again(9).await.expect("kept").1, Got::Cached);
        assert!(again(0).await.is_err());
    }
}
