//! Streams of callers acting in a run (docs/runs.md section 2): their manifest depends on the
//! run's state, which a call moves without any catalog change. When a run moves, the streams
//! of that run alone are moved to the manifest of the new state, each told exactly what
//! changed (`tools_changed`, `notifications/tools/list_changed`); when it ends, its streams
//! end. Streams that show every state (MCP `2026-07-28` subscriptions) have no state in their
//! options and are left as they are.

use std::sync::Arc;

use super::plan::Move;
use super::{StreamHub, change_frame};
use crate::cache::CacheKey;
use crate::domain::claims::{ClaimPath, Claims};
use crate::domain::manifest::ManifestOptions;
use crate::domain::manifest_diff::ManifestSummary;

/// The members of one group that act in the run, and what moving them needs.
struct RunJob {
    from: CacheKey,
    previous: Arc<ManifestSummary>,
    claims: Arc<Claims>,
    ids: Vec<u64>,
}

impl StreamHub {
    /// Moves the streams of run `run` to the manifest of `state` (those already there, or
    /// showing every state, stay). How many streams were told of a change.
    pub fn run_moved(&self, run: &str, state: &str) -> usize {
        let jobs: Vec<RunJob> = self
            .lock()
            .groups
            .iter()
            .filter(|(key, _)| key.options.state.as_deref().is_some_and(|s| s != state))
            .filter_map(|(key, group)| {
                let ids: Vec<u64> = group
                    .members
                    .iter()
                    .filter(|(_, member)| member.run.as_deref() == Some(run))
                    .map(|(&id, _)| id)
                    .collect();
                let claims = group.members.get(ids.first()?)?.claims.clone();
                Some(RunJob {
                    from: key.clone(),
                    previous: Arc::clone(&group.summary),
                    claims,
                    ids,
                })
            })
            .collect();
        if jobs.is_empty() {
            return 0;
        }
        let snapshot = self.catalog.snapshot();
        let paths: Arc<[ClaimPath]> = Arc::from(snapshot.read_paths());
        let moves: Vec<Move> = jobs
            .into_iter()
            .map(|job| {
                let options = ManifestOptions {
                    state: Some(state.to_owned()),
                    ..job.from.options.clone()
                };
                let to = self.manifests.key(&snapshot, &job.claims, options);
                let manifest = snapshot.manifest(&job.claims, &to.options);
                let summary = Arc::new(ManifestSummary::of(&manifest));
                let frame = (summary.etag() != job.previous.etag())
                    .then(|| change_frame(&job.previous, &manifest, &summary));
                Move {
                    from: job.from,
                    previous: job.previous,
                    to,
                    claims: job.claims,
                    summary,
                    frame,
                    members: Some(job.ids),
                }
            })
            .collect();
        let mut state = self.lock();
        moves
            .into_iter()
            .map(|step| self.apply(&mut state, step, &paths))
            .sum()
    }

    /// Ends the streams of run `run` (it ended); how many.
    pub fn run_ended(&self, run: &str) -> usize {
        let state = self.lock();
        let mut ended = 0;
        for member in state
            .groups
            .values()
            .flat_map(|group| group.members.values())
        {
            if member.run.as_deref() == Some(run) {
                member.outbox.close();
                ended += 1;
            }
        }
        ended
    }

    /// The options member `id`'s stream follows now (a run's state moves them).
    pub fn options_of(&self, id: u64) -> Option<ManifestOptions> {
        self.lock()
            .member_keys
            .get(&id)
            .map(|key| key.options.clone())
    }
}
