//! Where runs are kept: a [`RunStore`] applies the rules of [`crate::domain::run::forest`]
//! atomically (one lock in the embedded store, one script per step in Redis), so that every
//! instance on one store sees one state, one set of counters and one end for each run.

use std::sync::Arc;

use crate::domain::run::Pinned;
use crate::domain::run::forest::{Begun, CallLine, CallRefusal, RunRecord, StartRefusal};

/// Why the run store could not answer (not a refusal of the request: nothing is known).
#[derive(Debug, Clone, thiserror::Error)]
#[error("the run store did not answer: {0}")]
pub struct RunStoreError(pub String);

/// What a request acting in a run needs of it, read on every request: small, shared.
#[derive(Debug, Clone)]
pub struct RunView {
    pub id: String,
    pub root: String,
    pub parent: Option<String>,
    /// The run's ancestors, the parent first.
    pub ancestors: Vec<String>,
    pub depth: usize,
    pub state: String,
    pub expires_at: i64,
    pub pinned: Pinned,
    pub pinned_revision: u64,
    /// The counters held along the run's chain (its own and its ancestors').
    pub counters: crate::domain::run::Counters,
}

/// How runs are listed (`GET /admin/runs`).
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    pub sub: Option<String>,
    /// Only the runs live now.
    pub active: bool,
}

/// One store of runs.
#[async_trait::async_trait]
pub trait RunStore: Send + Sync {
    /// Starts `record` with its pinned set (see [`crate::domain::run::forest::Forest::start`]).
    async fn start(
        &self,
        record: RunRecord,
        pinned: Pinned,
        now: i64,
        max_live: usize,
    ) -> Result<Result<(), StartRefusal>, RunStoreError>;

    /// The view of run `id` if it is live at `now`.
    async fn view(&self, id: &str, now: i64) -> Result<Option<Arc<RunView>>, RunStoreError>;

    /// The whole record of run `id`, live or not, while it is kept.
    async fn record(&self, id: &str) -> Result<Option<RunRecord>, RunStoreError>;

    /// Begins a call (see [`crate::domain::run::forest::Forest::begin`]).
    async fn begin(
        &self,
        id: &str,
        now: i64,
        states: Option<&[String]>,
        counters: &[String],
    ) -> Result<Result<Begun, CallRefusal>, RunStoreError>;

    /// The counters of run `id`'s chain with nothing left where they are held.
    async fn exhausted(&self, id: &str) -> Result<Vec<String>, RunStoreError>;

    /// Gives back what a begun call spent when it was not forwarded after all.
    async fn give_back(&self, spent: &[(String, String)]) -> Result<(), RunStoreError>;

    /// Finishes a call: its line, and the transition to `next`. The state after (`None`: the
    /// run is not kept any more).
    async fn finish(
        &self,
        id: &str,
        now: i64,
        line: CallLine,
        next: Option<&str>,
    ) -> Result<Option<String>, RunStoreError>;

    /// Ends run `id` and its subtree; the runs ended now.
    async fn end(&self, id: &str, now: i64) -> Result<Vec<String>, RunStoreError>;

    /// Runs matching `filter`, at most `limit`, by id.
    async fn list(
        &self,
        filter: &RunFilter,
        now: i64,
        limit: usize,
    ) -> Result<Vec<RunRecord>, RunStoreError>;

    /// Runs live at `now`.
    async fn live(&self, now: i64) -> Result<usize, RunStoreError>;

    /// Ends expired runs and forgets those ended `keep` seconds ago; the number forgotten.
    async fn purge(&self, now: i64, keep: i64) -> Result<usize, RunStoreError>;

    /// Where to announce the runs other instances change (ids), when the store hears of
    /// them; set once by [`super::Runs::new`]. A store only this instance writes hears none.
    fn announce_to(&self, _changed: tokio::sync::broadcast::Sender<Vec<String>>) {}
}

/// The view of `record` with its pinned set.
pub fn view_of(record: &RunRecord, pinned: Pinned, counters: Vec<String>) -> RunView {
    RunView {
        id: record.id.clone(),
        root: record.root.clone(),
        parent: record.parent.clone(),
        ancestors: record.ancestors.clone(),
        depth: record.depth,
        state: record.state.clone(),
        expires_at: record.expires_at,
        pinned,
        pinned_revision: record.pinned_revision,
        counters: crate::domain::run::Counters::of(counters.iter().map(String::as_str)),
    }
}
