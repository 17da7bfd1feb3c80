//! The in-process cache of rendered manifests: response bytes keyed by (claims key, request
//! options), valid for exactly one catalog revision. The claims key is the projection of the
//! claims onto what the revision's policies and the admin rule read
//! ([`crate::domain::fingerprint`]), so it is meaningful only at its revision.
//!
//! Invalidation is exact, not TTL-based: every entry belongs to the revision it was computed
//! at, and the first insert for a newer revision drops everything older, so a stale manifest
//! can never be served after the snapshot moved on (a lookup names the revision it expects).
//! A hit is one read-lock, one hash lookup and an `Arc` clone: no allocation proportional to
//! the catalog, no store I/O. The cache is bounded; when full it is emptied and refills from
//! the hot keys, which is cheap because a miss costs one manifest computation.
//!
//! Behind it, when Redis is configured, sits the cache shared by all instances
//! ([`redis::SharedCache`]): access decisions that spare a miss the claim evaluation.

pub mod redis;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use bytes::Bytes;

use crate::domain::claims::{ClaimPath, Claims};
use crate::domain::fingerprint::Fingerprint;
use crate::domain::manifest::ManifestOptions;
use crate::domain::snapshot::Snapshot;

/// What identifies one manifest within a revision.
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

/// A manifest ready to send.
#[derive(Debug)]
pub struct RenderedManifest {
    pub body: Bytes,
    /// The strong entity tag, quotes included.
    pub etag: String,
    pub revision: u64,
    pub tool_count: usize,
    /// No policy granted the claims any group (counted as `agent_access_denied`).
    pub denied: bool,
}

struct Entries<V> {
    revision: u64,
    map: HashMap<CacheKey, V>,
}

/// Bounded cache of values that each belong to exactly one revision (rendered manifests here,
/// evaluations for decisions in [`crate::service::decisions`]).
pub struct RevisionCache<V> {
    entries: RwLock<Entries<V>>,
    capacity: usize,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// Bounded, revision-scoped cache of rendered manifests.
pub type ManifestCache = RevisionCache<Arc<RenderedManifest>>;

impl<V: Clone> RevisionCache<V> {
    pub fn new(capacity: usize) -> RevisionCache<V> {
        RevisionCache {
            entries: RwLock::new(Entries {
                revision: 0,
                map: HashMap::new(),
            }),
            capacity: capacity.max(1),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// The value for `key` if one was computed at exactly `revision`.
    pub fn get(&self, key: &CacheKey, revision: u64) -> Option<V> {
        let entries = self
            .entries
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let found = (entries.revision == revision)
            .then(|| entries.map.get(key).cloned())
            .flatten();
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Stores a value computed at `revision`. Entries of older revisions are dropped; a value
    /// older than what the cache holds is not stored.
    pub fn insert_at(&self, key: CacheKey, revision: u64, value: V) {
        let mut entries = self
            .entries
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if revision < entries.revision {
            return;
        }
        if revision > entries.revision || entries.map.len() >= self.capacity {
            entries.map.clear();
            entries.revision = revision;
        }
        entries.map.insert(key, value);
    }

    pub fn len(&self) -> usize {
        self.entries
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .map
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// (hits, misses) since start.
    pub fn stats(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }
}

impl ManifestCache {
    /// Stores a manifest computed at `manifest.revision` (see [`RevisionCache::insert_at`]).
    pub fn insert(&self, key: CacheKey, manifest: Arc<RenderedManifest>) {
        self.insert_at(key, manifest.revision, manifest);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn key(sub: &str) -> CacheKey {
        let claims = json!({"sub": sub}).as_object().expect("object").clone();
        let sub_path = [ClaimPath::parse("sub").expect("valid path")];
        CacheKey {
            fingerprint: Fingerprint::of_projection(&claims, &[&sub_path]),
            options: ManifestOptions::default(),
        }
    }

    fn rendered(revision: u64) -> Arc<RenderedManifest> {
        Arc::new(RenderedManifest {
            body: Bytes::from_static(b"{}"),
            etag: "\"x\"".into(),
            revision,
            tool_count: 0,
            denied: false,
        })
    }

    #[test]
    fn a_hit_needs_the_same_revision() {
        let cache = ManifestCache::new(10);
        cache.insert(key("a"), rendered(3));
        assert!(cache.get(&key("a"), 3).is_some());
        assert!(
            cache.get(&key("a"), 4).is_none(),
            "a newer snapshot never sees older bytes"
        );
        assert!(cache.get(&key("b"), 3).is_none());
        assert_eq!(cache.stats(), (1, 2));
    }

    #[test]
    fn a_newer_revision_drops_older_entries_and_older_inserts_are_ignored() {
        let cache = ManifestCache::new(10);
        cache.insert(key("a"), rendered(3));
        cache.insert(key("b"), rendered(4));
        assert_eq!(cache.len(), 1);
        cache.insert(key("a"), rendered(3));
        assert!(cache.get(&key("a"), 3).is_none());
        assert!(cache.get(&key("b"), 4).is_some());
    }

    #[test]
    fn the_cache_is_bounded() {
        let cache = ManifestCache::new(2);
        for sub in ["a", "b", "c", "d", "e"] {
            cache.insert(key(sub), rendered(1));
            assert!(cache.len() <= 2);
        }
        assert!(cache.get(&key("e"), 1).is_some());
    }
}
