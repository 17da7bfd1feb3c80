//! The in-process caches: values keyed within one catalog revision, bounded in bytes.
//!
//! Invalidation is exact, not TTL-based: every entry belongs to the revision it was computed
//! at, and the first insert for a newer revision drops everything older, so a stale value can
//! never be served after the snapshot moved on (a lookup names the revision it expects).
//!
//! Each cache has a budget in bytes (what its keys and values hold, plus a fixed overhead per
//! entry) and evicts the least recently used entries to stay within it, so a flood of distinct
//! claim sets costs CPU, never unbounded memory; a value larger than the whole budget is
//! served but not kept. A hit is one short lock, one hash lookup and a clone of an `Arc` or a
//! small key: no allocation proportional to the catalog, no store I/O.
//!
//! Behind them, when Redis is configured, sits the cache shared by all instances
//! ([`redis::SharedCache`]): access decisions that spare a miss the claim evaluation.

pub mod redis;
pub mod rendered;

pub use rendered::{Coding, RenderedManifest};

use std::hash::Hash;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use lru::LruCache;

use crate::domain::claims::{ClaimPath, Claims};
use crate::domain::fingerprint::Fingerprint;
use crate::domain::manifest::ManifestOptions;
use crate::domain::snapshot::Snapshot;

/// What identifies one manifest request within a revision: the claims key and the options.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey {
    pub fingerprint: Fingerprint,
    pub options: ManifestOptions,
}

impl CacheKey {
    /// The key of the manifest for `claims` and `options` at `snapshot`: the claims projected
    /// onto the paths the snapshot's policies read, then onto `admin_paths` (the admin rule's).
    /// Tokens that differ in any claim one of those reads get different keys; tokens that
    /// differ only elsewhere share one.
    pub fn new(
        snapshot: &Snapshot,
        admin_paths: &[ClaimPath],
        claims: &Claims,
        options: ManifestOptions,
    ) -> CacheKey {
        CacheKey {
            fingerprint: Fingerprint::of_projection(claims, &[snapshot.read_paths(), admin_paths]),
            options,
        }
    }
}

/// Byte budgets of the in-process caches. The defaults fit a gateway in a 512 MiB container
/// with room to spare for the snapshot, streams and connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheBudgets {
    /// Rendered manifests (their bodies, mostly), per (access decision, options).
    pub manifest_bytes: usize,
    /// MCP `tools/list` pages, per (access decision, options, cursor): a manifest's tools as
    /// MCP objects, page by page.
    pub mcp_page_bytes: usize,
    /// Access decisions by claims key (a few hundred bytes each).
    pub access_bytes: usize,
    /// Evaluations for decisions and MCP listings, per (access decision, options): a few
    /// bitsets of the catalog's size each.
    pub evaluation_bytes: usize,
    /// Events queued per stream (SSE and MCP) before it counts as lagging and is coalesced to
    /// a snapshot: a few diffs of a large manifest, and a bound on what a reader that stopped
    /// reading can pin. Events are shared between the streams of one manifest.
    pub stream_queue_bytes: usize,
    /// Every stream's queue (SSE and MCP) and the events being written to them, together:
    /// past it the largest queues are coalesced first, so the number of streams cannot
    /// multiply what stalled readers pin.
    pub stream_total_bytes: usize,
}

/// Bytes a cache entry costs beyond its key and value: the hash table's slot and the LRU
/// list's links (an estimate on the safe side).
pub const ENTRY_OVERHEAD: usize = 64;

/// Counters of one cache, since start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    /// Entries dropped to stay within the budget (not those a newer revision replaced).
    pub evictions: u64,
    /// Bytes held now.
    pub bytes: usize,
    /// Entries held now.
    pub entries: usize,
}

struct Entries<K: Hash + Eq, V> {
    revision: u64,
    lru: LruCache<K, (V, usize)>,
    bytes: usize,
}

/// A cache of values that each belong to exactly one revision, bounded in bytes, evicting the
/// least recently used: rendered manifests, access decisions and evaluations.
pub struct RevisionCache<K: Hash + Eq, V> {
    entries: Mutex<Entries<K, V>>,
    budget: usize,
    /// The bytes an entry holds besides [`ENTRY_OVERHEAD`].
    weigh: fn(&K, &V) -> usize,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
    /// Mirrors `entries.bytes` for readers that should not take the lock (metrics).
    bytes: AtomicUsize,
    len: AtomicUsize,
}

impl<K: Hash + Eq, V: Clone> RevisionCache<K, V> {
    /// A cache holding at most `budget` bytes, as `weigh` counts them per entry.
    pub fn new(budget: usize, weigh: fn(&K, &V) -> usize) -> RevisionCache<K, V> {
        RevisionCache {
            entries: Mutex::new(Entries {
                revision: 0,
                lru: LruCache::unbounded(),
                bytes: 0,
            }),
            budget,
            weigh,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            bytes: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Entries<K, V>> {
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The value for `key` if one was computed at exactly `revision` (and is still kept); it
    /// becomes the most recently used.
    pub fn get(&self, key: &K, revision: u64) -> Option<V> {
        let found = {
            let mut entries = self.lock();
            if entries.revision == revision {
                entries.lru.get(key).map(|(value, _)| value.clone())
            } else {
                None
            }
        };
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Stores a value computed at `revision`, evicting the least recently used entries to make
    /// room. Entries of older revisions are dropped; a value older than what the cache holds,
    /// or larger than the whole budget, is not stored.
    pub fn insert_at(&self, key: K, revision: u64, value: V) {
        let weight = (self.weigh)(&key, &value) + ENTRY_OVERHEAD;
        let mut entries = self.lock();
        if revision < entries.revision {
            return;
        }
        if revision > entries.revision {
            entries.lru.clear();
            entries.bytes = 0;
            entries.revision = revision;
        }
        if let Some((_, (_, old))) = entries.lru.pop_entry(&key) {
            entries.bytes -= old;
        }
        if weight <= self.budget {
            let mut evicted = 0;
            while entries.bytes + weight > self.budget {
                let Some((_, (_, bytes))) = entries.lru.pop_lru() else {
                    break;
                };
                entries.bytes -= bytes;
                evicted += 1;
            }
            entries.lru.put(key, (value, weight));
            entries.bytes += weight;
            self.evictions.fetch_add(evicted, Ordering::Relaxed);
        }
        self.bytes.store(entries.bytes, Ordering::Relaxed);
        self.len.store(entries.lru.len(), Ordering::Relaxed);
    }

    /// Moves the cache from revision `from` to `to`, keeping what `carry` maps to an entry of
    /// `to` (in the same order of use) and dropping the rest; the budget still holds. Does
    /// nothing unless the cache is at `from`. Returns how many entries were carried.
    pub fn advance(
        &self,
        from: u64,
        to: u64,
        mut carry: impl FnMut(&K, &V) -> Option<(K, V)>,
    ) -> usize {
        let mut entries = self.lock();
        if entries.revision != from || to <= from {
            return 0;
        }
        let old = std::mem::replace(&mut entries.lru, LruCache::unbounded());
        entries.revision = to;
        entries.bytes = 0;
        // Least recently used first, so that each `put` leaves the order as it was.
        for (key, (value, _)) in old.iter().rev() {
            let Some((key, value)) = carry(key, value) else {
                continue;
            };
            let weight = (self.weigh)(&key, &value) + ENTRY_OVERHEAD;
            entries.bytes += weight;
            if let Some((_, (_, replaced))) = entries.lru.push(key, (value, weight)) {
                entries.bytes -= replaced;
            }
        }
        let mut evicted = 0;
        while entries.bytes > self.budget {
            let Some((_, (_, bytes))) = entries.lru.pop_lru() else {
                break;
            };
            entries.bytes -= bytes;
            evicted += 1;
        }
        self.evictions.fetch_add(evicted, Ordering::Relaxed);
        self.bytes.store(entries.bytes, Ordering::Relaxed);
        self.len.store(entries.lru.len(), Ordering::Relaxed);
        entries.lru.len()
    }

    /// Drops every entry and forgets the revision: the catalog's revisions went back (a store
    /// restored from a backup), so a revision number may come again with other content.
    pub fn reset(&self) {
        let mut entries = self.lock();
        entries.lru.clear();
        entries.bytes = 0;
        entries.revision = 0;
        self.bytes.store(0, Ordering::Relaxed);
        self.len.store(0, Ordering::Relaxed);
    }

    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The budget in bytes.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Counters since start, and what is held now.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            entries: self.len.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys and values that weigh what they say: a value `n` holds `n` bytes.
    fn cache(budget: usize) -> RevisionCache<u32, usize> {
        RevisionCache::new(budget, |_, &value| value)
    }

    const ENTRY: usize = 100 - ENTRY_OVERHEAD;

    #[test]
    fn a_hit_needs_the_same_revision() {
        let cache = cache(1000);
        cache.insert_at(1, 3, ENTRY);
        assert_eq!(cache.get(&1, 3), Some(ENTRY));
        assert_eq!(
            cache.get(&1, 4),
            None,
            "a newer snapshot never sees older values"
        );
        assert_eq!(cache.get(&2, 3), None);
        let stats = cache.stats();
        assert_eq!((stats.hits, stats.misses), (1, 2));
    }

    #[test]
    fn a_newer_revision_drops_older_entries_and_older_inserts_are_ignored() {
        let cache = cache(1000);
        cache.insert_at(1, 3, ENTRY);
        cache.insert_at(2, 4, ENTRY);
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.stats().bytes, 100);
        cache.insert_at(1, 3, ENTRY);
        assert_eq!(cache.get(&1, 3), None);
        assert_eq!(cache.get(&2, 4), Some(ENTRY));
        assert_eq!(
            cache.stats().evictions,
            0,
            "a revision change is not an eviction"
        );
    }

    #[test]
    fn the_least_recently_used_entries_make_room_and_the_budget_holds() {
        let cache = cache(350);
        for key in 0..3 {
            cache.insert_at(key, 1, ENTRY);
        }
        assert_eq!(cache.stats().bytes, 300);
        // 0 is used again: 1 is now the least recently used.
        assert!(cache.get(&0, 1).is_some());
        cache.insert_at(3, 1, ENTRY);
        assert_eq!(cache.get(&1, 1), None, "the least recently used went");
        for kept in [0, 2, 3] {
            assert!(cache.get(&kept, 1).is_some(), "{kept} stays");
        }
        // A heavier value takes as many entries as it needs.
        cache.insert_at(4, 1, 250 - ENTRY_OVERHEAD);
        let stats = cache.stats();
        assert!(stats.bytes <= 350, "{stats:?}");
        assert_eq!(stats.evictions, 3);
        assert_eq!(cache.get(&4, 1), Some(250 - ENTRY_OVERHEAD));
        assert_eq!(cache.get(&3, 1), Some(ENTRY), "the most recent one stays");
    }

    #[test]
    fn a_value_larger_than_the_budget_is_not_kept_and_evicts_nothing() {
        let cache = cache(350);
        cache.insert_at(1, 1, ENTRY);
        cache.insert_at(2, 1, 1000);
        assert_eq!(cache.get(&2, 1), None);
        assert_eq!(cache.get(&1, 1), Some(ENTRY));
        assert_eq!(cache.stats().bytes, 100);
    }

    #[test]
    fn replacing_a_key_counts_its_bytes_once() {
        let cache = cache(1000);
        cache.insert_at(1, 1, ENTRY);
        cache.insert_at(1, 1, 2 * ENTRY);
        let stats = cache.stats();
        assert_eq!(
            (stats.entries, stats.bytes),
            (1, 2 * ENTRY + ENTRY_OVERHEAD)
        );
    }
}
