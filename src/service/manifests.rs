//! The manifest service: the one resolver every transport calls (`GET /agents/tools`, the SSE
//! stream, the decision and MCP endpoints), so that listing and calling can never disagree.
//!
//! Two cache levels, keyed by what decides. Claims → claims key (the claims projected onto
//! what the snapshot's policies and the admin rule read, [`CacheKey::new`], computed once per
//! request) → the access decision ([`AccessCache`]: which policies matched) → the rendered
//! manifest, kept per (decision, options). Many identities share one decision, so a claim set
//! never seen before costs one claim evaluation and, unless its decision is new too, no render.
//! On a decision miss, the decision another instance shared through Redis at this revision (if
//! any) spares the claim evaluation; otherwise the claims are evaluated here and the decision
//! shared. Both levels are bounded in bytes.

use std::sync::Arc;
use std::time::Instant;

use tracing::field::Empty;

use super::access::AccessCache;
use super::catalog::CarryOver;
use super::seen::SeenClaims;
use crate::cache::redis::SharedCache;
use crate::cache::{CacheKey, CacheStats, RenderedManifest, RevisionCache};
use crate::clock::{Clock, SystemClock};
use crate::domain::access::{Decided, Matched};
use crate::domain::claims::{ClaimPath, Claims};
use crate::domain::continuity::Continuity;
use crate::domain::manifest::{Manifest, ManifestOptions};
use crate::domain::snapshot::Snapshot;
use crate::telemetry::Metrics;

/// How one resolution was served (the `cache` attribute of the `resolve` span).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CacheOutcome {
    /// The decision and its rendered manifest were both kept.
    Hit,
    /// The decision was made now (evaluated here or taken from Redis); its manifest was kept.
    Rendered,
    /// Rendered from a decision another instance shared through Redis.
    Shared,
    /// The claims were evaluated here and the manifest rendered.
    Miss,
}

impl CacheOutcome {
    const fn name(self) -> &'static str {
        match self {
            CacheOutcome::Hit => "hit",
            CacheOutcome::Rendered => "decision",
            CacheOutcome::Shared => "shared",
            CacheOutcome::Miss => "miss",
        }
    }
}

/// Where a decision came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DecidedBy {
    Kept,
    Shared,
    Evaluated,
}

/// Resolves and caches rendered manifests.
pub struct Manifests {
    access: Arc<AccessCache>,
    rendered: RevisionCache<Decided, Arc<RenderedManifest>>,
    /// The cache shared with other instances through Redis, when configured (and keyed).
    shared: Option<Arc<SharedCache>>,
    /// The admin rule's paths: part of every claims key.
    admin_paths: Arc<[ClaimPath]>,
    /// The claim sets served recently (their projections), for impact previews.
    seen: SeenClaims,
    metrics: Arc<Metrics>,
    /// When claim sets are seen and how recent "recent" is: the App's clock.
    clock: Arc<dyn Clock>,
}

impl Manifests {
    /// `access`: the decisions by claims key (shared with the decision service);
    /// `manifest_bytes`: the budget of rendered manifests; `seen_capacity`: how many recently
    /// served claim sets to remember for impact previews.
    pub fn new(
        access: Arc<AccessCache>,
        manifest_bytes: usize,
        shared: Option<Arc<SharedCache>>,
        admin_paths: &[ClaimPath],
        seen_capacity: usize,
        metrics: Arc<Metrics>,
    ) -> Manifests {
        Manifests {
            access,
            rendered: RevisionCache::new(manifest_bytes, |key, rendered| {
                size_of::<Decided>() + key.heap_bytes() + rendered.weight()
            }),
            shared,
            admin_paths: Arc::from(admin_paths),
            seen: SeenClaims::new(seen_capacity),
            metrics,
            clock: Arc::new(SystemClock),
        }
    }

    /// The same, on `clock` (the App's: tests move it).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Manifests {
        self.clock = clock;
        self
    }

    /// The time by the clock claim sets are seen by.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }

    /// The claim sets served recently.
    pub fn seen(&self) -> &SeenClaims {
        &self.seen
    }

    /// The distinct claim sets served in the last 24 hours as `snapshot`'s policies read them,
    /// most recently seen first (`GET /admin/claim-sets`, the console's View as).
    pub fn recent_claim_sets(&self, snapshot: &Snapshot) -> Vec<crate::service::seen::Seen> {
        self.seen.recent(self.clock.now(), snapshot.read_paths())
    }

    /// The key of the manifest for `claims` and `options` at `snapshot`.
    pub fn key(&self, snapshot: &Snapshot, claims: &Claims, options: ManifestOptions) -> CacheKey {
        CacheKey::new(snapshot, &self.admin_paths, claims, options)
    }

    /// Counters of the rendered manifests kept by this instance.
    pub fn rendered_stats(&self) -> CacheStats {
        self.rendered.stats()
    }

    /// The access decisions kept by this instance.
    pub fn access(&self) -> &Arc<AccessCache> {
        &self.access
    }

    /// The cache shared with other instances, when there is one.
    pub fn shared(&self) -> Option<&Arc<SharedCache>> {
        self.shared.as_ref()
    }

    /// The manifest for `claims` under `key` (made by [`Manifests::key`] from the same
    /// snapshot and claims), counted as one resolution: metrics, and a `resolve` span saying how
    /// it was served and how many tools it holds.
    pub async fn resolve(
        &self,
        snapshot: &Snapshot,
        claims: &Claims,
        key: CacheKey,
    ) -> Arc<RenderedManifest> {
        let started = Instant::now();
        self.seen.record(
            &key.fingerprint,
            claims,
            snapshot.read_paths(),
            self.clock.now(),
        );
        let span = tracing::debug_span!(
            "resolve",
            otel.name = "resolve manifest",
            revision = snapshot.revision(),
            cache = Empty,
            tools = Empty,
        );
        let (rendered, outcome) =
            crate::telemetry::in_span(&span, self.lookup(snapshot, claims, key)).await;
        span.record("cache", outcome.name())
            .record("tools", rendered.tool_count);
        self.metrics
            .resolution(rendered.tool_count, rendered.denied, started.elapsed());
        rendered
    }

    /// [`Manifests::resolve`] without the shared cache and uncounted, for callers that cannot
    /// wait (a stream resynchronising from inside its event loop).
    pub fn resolve_local(
        &self,
        snapshot: &Snapshot,
        claims: &Claims,
        options: ManifestOptions,
    ) -> Arc<RenderedManifest> {
        let key = self.key(snapshot, claims, options);
        let matched = self.access.matched(snapshot, &key.fingerprint, claims);
        self.rendered(snapshot, claims, matched, key.options).0
    }

    async fn lookup(
        &self,
        snapshot: &Snapshot,
        claims: &Claims,
        key: CacheKey,
    ) -> (Arc<RenderedManifest>, CacheOutcome) {
        let (matched, decided) = self.decision(snapshot, claims, &key).await;
        let (rendered, was_kept) = self.rendered(snapshot, claims, matched, key.options);
        let outcome = match (decided, was_kept) {
            (DecidedBy::Kept, true) => CacheOutcome::Hit,
            (_, true) => CacheOutcome::Rendered,
            (DecidedBy::Shared, false) => CacheOutcome::Shared,
            (_, false) => CacheOutcome::Miss,
        };
        (rendered, outcome)
    }

    /// The decision for `claims`: kept here, shared by another instance, or evaluated here
    /// (and then kept and shared).
    async fn decision(
        &self,
        snapshot: &Snapshot,
        claims: &Claims,
        key: &CacheKey,
    ) -> (Matched, DecidedBy) {
        if let Some(matched) = self.access.get(snapshot, &key.fingerprint) {
            return (matched, DecidedBy::Kept);
        }
        let mut decided = DecidedBy::Evaluated;
        let mut matched = None;
        // A delegated decision has no shared form (its restriction is not in an `Access`), and
        // an entry under its key from an instance that knew no delegation would widen it.
        let delegated = claims.contains_key(crate::domain::claims::DELEGATION_CLAIM);
        if let Some(shared) = self.shared.as_ref().filter(|_| !delegated) {
            matched = shared
                .access(&key.fingerprint, snapshot.revision())
                .await
                .and_then(|access| snapshot.matched_of_access(&access));
            match &matched {
                Some(_) => decided = DecidedBy::Shared,
                None => {
                    let evaluated = snapshot.matched(claims);
                    shared.remember(&key.fingerprint, snapshot.access_of(&evaluated), snapshot);
                    matched = Some(evaluated);
                }
            }
        }
        let matched = matched.unwrap_or_else(|| snapshot.matched(claims));
        self.access.insert(key.fingerprint, matched.clone());
        (matched, decided)
    }

    /// The manifest `matched` (the decision for `claims`) decides under `options`, and whether
    /// it was kept: kept, or rendered now and kept.
    fn rendered(
        &self,
        snapshot: &Snapshot,
        claims: &Claims,
        matched: Matched,
        options: ManifestOptions,
    ) -> (Arc<RenderedManifest>, bool) {
        let key = Decided { matched, options };
        if let Some(hit) = self.rendered.get(&key, snapshot.revision()) {
            return (hit, true);
        }
        let rendered = match snapshot.manifest_of(&key.matched, &key.options) {
            Some(manifest) => render(&manifest),
            // A decision of another revision (both come from `snapshot`, so never): the
            // claims themselves decide, and nothing is kept under a key that does not fit.
            None => return (render(&snapshot.manifest(claims, &key.options)), false),
        };
        self.rendered
            .insert_at(key, rendered.revision, Arc::clone(&rendered));
        (rendered, false)
    }
}

fn render(manifest: &Manifest<'_>) -> Arc<RenderedManifest> {
    Arc::new(RenderedManifest::of(manifest))
}

/// A write that changed no policy or group carries every access decision to the new revision,
/// and every rendered manifest that grants none of the changed tools (with its new revision
/// number): the first request after such a write is a hit, not a render.
impl CarryOver for Manifests {
    fn carry(&self, continuity: &Continuity) {
        let (from, to) = (continuity.from(), continuity.to());
        let decisions = self.access.carry(continuity);
        let manifests = self.rendered.advance(from, to, |decided, rendered| {
            let carried = rendered.carried(continuity)?;
            let key = Decided {
                matched: continuity.matched(&decided.matched)?,
                options: decided.options.clone(),
            };
            Some((key, Arc::new(carried)))
        });
        tracing::debug!(
            from,
            to,
            changed_tools = continuity.changed_tools(),
            decisions,
            manifests,
            "carried cached decisions and manifests to the new revision"
        );
    }

    fn restart(&self) {
        self.access.reset();
        self.rendered.reset();
    }
}
