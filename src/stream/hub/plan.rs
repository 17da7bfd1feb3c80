//! The fan-out's computation, off the hub's lock: which manifest each group (or, when the read
//! paths changed, each part of a group) moves to, and the event that takes it there.

use std::collections::HashMap;
use std::sync::Arc;

use super::Frame;
use crate::cache::CacheKey;
use crate::domain::access::Decided;
use crate::domain::claims::Claims;
use crate::domain::manifest::Manifest;
use crate::domain::manifest_diff::{ManifestDiff, ManifestSummary};
use crate::domain::snapshot::Snapshot;
use crate::service::Manifests;
use crate::stream::frame::{EventKind, encode};

/// One group's move to a new revision: from the group at `from`, the members `moving` (all of
/// them when `None`) go to the key `to`.
pub(super) struct Job {
    pub(super) from: CacheKey,
    pub(super) previous: Arc<ManifestSummary>,
    pub(super) claims: Arc<Claims>,
    /// Members with their own claims, when the read paths changed and the group must split.
    pub(super) regroup: Option<Vec<(u64, Arc<Claims>)>>,
}

/// A computed move, applied under the lock.
pub(super) struct Move {
    pub(super) from: CacheKey,
    pub(super) previous: Arc<ManifestSummary>,
    pub(super) to: CacheKey,
    pub(super) claims: Arc<Claims>,
    pub(super) summary: Arc<ManifestSummary>,
    pub(super) frame: Option<Arc<Frame>>,
    /// `None`: every member, the key is unchanged.
    pub(super) members: Option<Vec<u64>>,
}

/// The moves that bring `jobs` to `snapshot`: one manifest per distinct access decision (many
/// claims keys share one), one diff per (previous manifest, new decision).
pub(super) fn plan(snapshot: &Snapshot, resolver: &Manifests, jobs: Vec<Job>) -> Vec<Move> {
    let mut manifests: HashMap<Decided, (Manifest<'_>, Arc<ManifestSummary>)> = HashMap::new();
    let mut frames: HashMap<(Arc<str>, Decided), Option<Arc<Frame>>> = HashMap::new();
    let mut moves = Vec::with_capacity(jobs.len());
    for job in jobs {
        // (new key, claims of the key, members moving there or all of them)
        let targets: Vec<(CacheKey, Arc<Claims>, Option<Vec<u64>>)> = match job.regroup {
            None => vec![(job.from.clone(), Arc::clone(&job.claims), None)],
            Some(members) => {
                let mut split: HashMap<CacheKey, (Arc<Claims>, Vec<u64>)> = HashMap::new();
                for (id, claims) in members {
                    let key = resolver.key(snapshot, &claims, job.from.options.clone());
                    split
                        .entry(key)
                        .or_insert_with(|| (claims, Vec::new()))
                        .1
                        .push(id);
                }
                split
                    .into_iter()
                    .map(|(key, (claims, ids))| (key, claims, Some(ids)))
                    .collect()
            }
        };
        for (to, claims, members) in targets {
            let matched = resolver
                .access()
                .matched(snapshot, &to.fingerprint, &claims);
            let decided = Decided {
                matched,
                options: to.options.clone(),
            };
            let (manifest, summary) = manifests.entry(decided.clone()).or_insert_with(|| {
                let manifest = snapshot
                    .manifest_of(&decided.matched, &decided.options)
                    .unwrap_or_else(|| snapshot.manifest(&claims, &to.options));
                let summary = Arc::new(ManifestSummary::of(&manifest));
                (manifest, summary)
            });
            let frame = frames
                .entry((Arc::clone(job.previous.etag()), decided))
                .or_insert_with(|| {
                    (summary.etag() != job.previous.etag())
                        .then(|| change_frame(&job.previous, manifest, summary))
                })
                .clone();
            moves.push(Move {
                from: job.from.clone(),
                previous: Arc::clone(&job.previous),
                to,
                claims,
                summary: Arc::clone(summary),
                frame,
                members,
            });
        }
    }
    moves
}

/// The `tools_changed` event from `previous` to `manifest`.
pub(super) fn change_frame(
    previous: &ManifestSummary,
    manifest: &Manifest<'_>,
    summary: &ManifestSummary,
) -> Arc<Frame> {
    let diff = ManifestDiff::between(previous, manifest);
    Arc::new(Frame {
        from: Arc::clone(previous.etag()),
        to: Arc::clone(summary.etag()),
        bytes: encode(
            EventKind::ToolsChanged,
            Some(manifest.etag()),
            &diff.to_json(),
        ),
    })
}
