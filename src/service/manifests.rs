//! The manifest service: the one resolver every transport calls (`GET /agents/tools`, the SSE
//! stream, and the decision and MCP endpoints to come), so that listing and calling can never
//! disagree.
//!
//! Claims → claims key → cached bytes. The key is the claims projected onto what the snapshot's
//! policies and the admin rule read ([`CacheKey::new`]); it is computed once per request and
//! handed along. A hit is one lookup in this instance's cache of rendered manifests; on a miss
//! the access decision another instance shared through Redis at this revision (if any) spares
//! the claim evaluation, and otherwise the claims are evaluated here and the decision shared.
//! Either way the manifest is rendered once per (key, revision) and kept.

use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;
use tracing::field::Empty;

use super::seen::SeenClaims;
use crate::cache::redis::SharedCache;
use crate::cache::{CacheKey, ManifestCache, RenderedManifest};
use crate::domain::claims::{ClaimPath, Claims};
use crate::domain::manifest::{Manifest, ManifestOptions};
use crate::domain::snapshot::Snapshot;
use crate::telemetry::Metrics;

/// How one resolution was served (the `cache` attribute of the `resolve` span).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CacheOutcome {
    /// The rendered manifest was in this instance's cache.
    Hit,
    /// Rebuilt from an access decision another instance shared through Redis.
    Shared,
    /// The claims were evaluated here.
    Miss,
}

impl CacheOutcome {
    const fn name(self) -> &'static str {
        match self {
            CacheOutcome::Hit => "hit",
            CacheOutcome::Shared => "shared",
            CacheOutcome::Miss => "miss",
        }
    }
}

/// Resolves and caches rendered manifests.
pub struct Manifests {
    cache: ManifestCache,
    /// The cache shared with other instances through Redis, when configured (and keyed).
    shared: Option<Arc<SharedCache>>,
    /// The admin rule's paths: part of every claims key.
    admin_paths: Arc<[ClaimPath]>,
    /// The claim sets served recently (their projections), for impact previews.
    seen: SeenClaims,
    metrics: Arc<Metrics>,
}

impl Manifests {
    /// `seen_capacity`: how many recently served claim sets to remember for impact previews.
    pub fn new(
        cache_capacity: usize,
        shared: Option<Arc<SharedCache>>,
        admin_paths: &[ClaimPath],
        seen_capacity: usize,
        metrics: Arc<Metrics>,
    ) -> Manifests {
        Manifests {
            cache: ManifestCache::new(cache_capacity),
            shared,
            admin_paths: Arc::from(admin_paths),
            seen: SeenClaims::new(seen_capacity),
            metrics,
        }
    }

    /// The claim sets served recently.
    pub fn seen(&self) -> &SeenClaims {
        &self.seen
    }

    /// The key of the manifest for `claims` and `options` at `snapshot`.
    pub fn key(&self, snapshot: &Snapshot, claims: &Claims, options: ManifestOptions) -> CacheKey {
        CacheKey::new(snapshot, &self.admin_paths, claims, options)
    }

    /// The rendered manifests kept by this instance.
    pub fn cache(&self) -> &ManifestCache {
        &self.cache
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
        self.seen
            .record(&key.fingerprint, claims, snapshot.read_paths(), Utc::now());
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
        self.local(snapshot, claims, key).0
    }

    async fn lookup(
        &self,
        snapshot: &Snapshot,
        claims: &Claims,
        key: CacheKey,
    ) -> (Arc<RenderedManifest>, CacheOutcome) {
        let Some(shared) = &self.shared else {
            return self.local(snapshot, claims, key);
        };
        if let Some(hit) = self.cache.get(&key, snapshot.revision()) {
            return (hit, CacheOutcome::Hit);
        }
        let access = shared.access(&key.fingerprint, snapshot.revision()).await;
        let rebuilt = access
            .as_ref()
            .and_then(|access| snapshot.manifest_for_access(access, &key.options));
        let (rendered, outcome) = match rebuilt {
            Some(manifest) => (render(&manifest), CacheOutcome::Shared),
            None => {
                let (manifest, access) = snapshot.manifest_with_access(claims, &key.options);
                shared.remember(&key.fingerprint, access, snapshot);
                (render(&manifest), CacheOutcome::Miss)
            }
        };
        self.cache.insert(key, Arc::clone(&rendered));
        (rendered, outcome)
    }

    fn local(
        &self,
        snapshot: &Snapshot,
        claims: &Claims,
        key: CacheKey,
    ) -> (Arc<RenderedManifest>, CacheOutcome) {
        if let Some(hit) = self.cache.get(&key, snapshot.revision()) {
            return (hit, CacheOutcome::Hit);
        }
        let rendered = render(&snapshot.manifest(claims, &key.options));
        self.cache.insert(key, Arc::clone(&rendered));
        (rendered, CacheOutcome::Miss)
    }
}

fn render(manifest: &Manifest<'_>) -> Arc<RenderedManifest> {
    Arc::new(RenderedManifest {
        body: manifest.to_json().into(),
        etag: manifest.etag().to_owned(),
        revision: manifest.revision(),
        tool_count: manifest.len(),
        denied: manifest.is_denied(),
    })
}
