//! Claims → access decision: the first of the two cache levels every read goes through.
//!
//! Serving a manifest, answering a decision or listing MCP tools all start by asking which
//! policies match the caller's claims ([`Matched`]). That depends on the claims only through
//! the claims key ([`Fingerprint`]: the projection onto what the policies read), so it is kept
//! per key and revision, and what comes next — rendered manifests, evaluations — is kept per
//! decision: many identities share one decision, and only a new *decision* costs a render.
//!
//! Keys made from different path lists (the manifests' include the admin rule's paths, the
//! decisions' do not) never collide, so both kinds share this one cache safely.

use crate::cache::{CacheStats, RevisionCache};
use crate::domain::access::Matched;
use crate::domain::claims::Claims;
use crate::domain::continuity::Continuity;
use crate::domain::fingerprint::Fingerprint;
use crate::domain::snapshot::Snapshot;

/// Access decisions by claims key, for one revision, bounded in bytes.
pub struct AccessCache {
    cache: RevisionCache<Fingerprint, Matched>,
}

impl AccessCache {
    /// Keeps at most `budget` bytes of decisions (a few hundred bytes each).
    pub fn new(budget: usize) -> AccessCache {
        AccessCache {
            cache: RevisionCache::new(budget, |fingerprint, matched| {
                size_of_val(fingerprint) + size_of::<Matched>() + matched.heap_bytes()
            }),
        }
    }

    /// The decision kept for `fingerprint` at `snapshot`'s revision.
    pub fn get(&self, snapshot: &Snapshot, fingerprint: &Fingerprint) -> Option<Matched> {
        self.cache.get(fingerprint, snapshot.revision())
    }

    /// Forgets every decision (the catalog's revisions went back).
    pub fn reset(&self) {
        self.cache.reset();
    }

    /// Keeps `matched` (made at its own revision) for `fingerprint`.
    pub fn insert(&self, fingerprint: Fingerprint, matched: Matched) {
        let revision = matched.revision();
        self.cache.insert_at(fingerprint, revision, matched);
    }

    /// The decision for `claims`, whose key at `snapshot` is `fingerprint`: kept, or evaluated
    /// here and kept.
    pub fn matched(
        &self,
        snapshot: &Snapshot,
        fingerprint: &Fingerprint,
        claims: &Claims,
    ) -> Matched {
        if let Some(matched) = self.get(snapshot, fingerprint) {
            return matched;
        }
        let matched = snapshot.matched(claims);
        self.insert(*fingerprint, matched.clone());
        matched
    }

    /// Carries every decision to the revision `continuity` leads to (the same policies match
    /// the same claims there). Returns how many were carried.
    pub fn carry(&self, continuity: &Continuity) -> usize {
        self.cache.advance(
            continuity.from(),
            continuity.to(),
            |fingerprint, matched| Some((*fingerprint, continuity.matched(matched)?)),
        )
    }

    pub fn stats(&self) -> CacheStats {
        self.cache.stats()
    }

    pub fn budget(&self) -> usize {
        self.cache.budget()
    }
}
