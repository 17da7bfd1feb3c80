//! The embedded run store: the forest in memory under one lock (every step atomic by
//! construction), written behind to a redb file in the data dir when one is given, so that runs
//! survive a restart of the gateway. What a request reads of a run (its [`RunView`]) is kept
//! made until the run changes.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

use super::store::{RunFilter, RunStore, RunStoreError, RunView, view_of};
use crate::domain::run::Pinned;
use crate::domain::run::forest::{Begun, CallLine, CallRefusal, Forest, RunRecord, StartRefusal};

const RUNS: TableDefinition<'static, &'static str, &'static [u8]> = TableDefinition::new("runs");
const PINNED: TableDefinition<'static, &'static str, &'static [u8]> =
    TableDefinition::new("pinned");

/// Runs in this process, and on disk when a file is given.
pub struct MemoryRuns {
    inner: Mutex<Inner>,
    disk: Option<Database>,
}

#[derive(Default)]
struct Inner {
    forest: Forest,
    pinned: HashMap<String, Pinned>,
    views: HashMap<String, Arc<RunView>>,
    /// Runs changed (or forgotten) since the last write to disk.
    dirty: HashSet<String>,
    /// Pinned sets made (or forgotten) since the last write to disk.
    pinned_dirty: HashSet<String>,
}

fn failed(error: impl std::fmt::Display) -> RunStoreError {
    RunStoreError(error.to_string())
}

impl MemoryRuns {
    /// Runs in memory only (they end with the process).
    pub fn in_memory() -> MemoryRuns {
        MemoryRuns {
            inner: Mutex::default(),
            disk: None,
        }
    }

    /// Runs kept in `path` too (created when missing), read back now.
    pub fn open(path: &Path) -> Result<MemoryRuns, RunStoreError> {
        let disk = Database::create(path).map_err(failed)?;
        let mut inner = Inner::default();
        let read = disk.begin_read().map_err(failed)?;
        if let Ok(table) = read.open_table(RUNS) {
            let mut records = Vec::new();
            for row in table.iter().map_err(failed)? {
                let (_, value) = row.map_err(failed)?;
                records.push(serde_json::from_slice::<RunRecord>(value.value()).map_err(failed)?);
            }
            inner.forest = Forest::of(records);
        }
        if let Ok(table) = read.open_table(PINNED) {
            for row in table.iter().map_err(failed)? {
                let (_, value) = row.map_err(failed)?;
                let ids: Vec<String> = serde_json::from_slice(value.value()).map_err(failed)?;
                let pinned = Pinned::new(ids.iter().map(String::as_str));
                inner.pinned.insert(pinned.digest(), pinned);
            }
        }
        drop(read);
        Ok(MemoryRuns {
            inner: Mutex::new(inner),
            disk: Some(disk),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes what changed since the last flush (blocking: call off the async workers).
    pub fn flush(&self) -> Result<(), RunStoreError> {
        let Some(disk) = &self.disk else {
            return Ok(());
        };
        let (rows, pinned) = {
            let mut inner = self.lock();
            let dirty: Vec<String> = inner.dirty.drain().collect();
            let rows: Vec<(String, Option<Vec<u8>>)> = dirty
                .into_iter()
                .map(|id| {
                    let row = inner
                        .forest
                        .runs
                        .get(&id)
                        .map(|record| serde_json::to_vec(record).unwrap_or_default());
                    (id, row)
                })
                .collect();
            let digests: Vec<String> = inner.pinned_dirty.drain().collect();
            let pinned: Vec<(String, Option<Vec<u8>>)> = digests
                .into_iter()
                .map(|digest| {
                    let row = inner.pinned.get(&digest).map(|set| {
                        serde_json::to_vec(&set.ids().collect::<Vec<_>>()).unwrap_or_default()
                    });
                    (digest, row)
                })
                .collect();
            (rows, pinned)
        };
        let write = disk.begin_write().map_err(failed)?;
        {
            let mut runs = write.open_table(RUNS).map_err(failed)?;
            for (id, row) in &rows {
                match row {
                    Some(bytes) => runs.insert(id.as_str(), bytes.as_slice()).map(drop),
                    None => runs.remove(id.as_str()).map(drop),
                }
                .map_err(failed)?;
            }
            let mut sets = write.open_table(PINNED).map_err(failed)?;
            for (digest, row) in &pinned {
                match row {
                    Some(bytes) => sets.insert(digest.as_str(), bytes.as_slice()).map(drop),
                    None => sets.remove(digest.as_str()).map(drop),
                }
                .map_err(failed)?;
            }
        }
        write.commit().map_err(failed)
    }

    /// Whether runs are written to disk.
    pub fn persists(&self) -> bool {
        self.disk.is_some()
    }

    /// Writes what changed every [`FLUSH_EVERY`], off the async workers, until the store is
    /// dropped (which writes the rest).
    pub fn spawn_flushing(store: std::sync::Weak<MemoryRuns>) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(FLUSH_EVERY);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                let Some(store) = store.upgrade() else { return };
                if store.lock().dirty.is_empty() {
                    continue;
                }
                let flushed = tokio::task::spawn_blocking(move || store.flush()).await;
                if let Ok(Err(error)) = flushed {
                    tracing::warn!(%error, "writing runs to disk failed; trying again");
                }
            }
        })
    }
}

/// How often changed runs are written to disk: a crash loses at most this much of them.
pub const FLUSH_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

impl Drop for MemoryRuns {
    fn drop(&mut self) {
        if let Err(error) = self.flush() {
            tracing::warn!(%error, "writing runs to disk at shutdown failed");
        }
    }
}

impl Inner {
    fn touch(&mut self, ids: impl IntoIterator<Item = String>) {
        for id in ids {
            self.views.remove(&id);
            self.dirty.insert(id);
        }
    }

    fn view(&mut self, id: &str, now: i64) -> Option<Arc<RunView>> {
        if let Some(view) = self.views.get(id)
            && now < view.expires_at
        {
            return Some(Arc::clone(view));
        }
        let record = self.forest.runs.get(id).filter(|r| r.is_live(now))?;
        let pinned = self.pinned.get(&record.pinned)?.clone();
        let view = Arc::new(view_of(record, pinned, self.forest.keys_in_chain(id)));
        self.views.insert(id.to_owned(), Arc::clone(&view));
        Some(view)
    }
}

#[async_trait::async_trait]
impl RunStore for MemoryRuns {
    async fn start(
        &self,
        record: RunRecord,
        pinned: Pinned,
        now: i64,
        max_live: usize,
    ) -> Result<Result<(), StartRefusal>, RunStoreError> {
        let mut inner = self.lock();
        let mut touched = vec![record.id.clone()];
        touched.extend(record.ancestors.iter().cloned());
        let digest = pinned.digest();
        if !inner.pinned.contains_key(&digest) {
            inner.pinned.insert(digest.clone(), pinned);
            inner.pinned_dirty.insert(digest);
        }
        let started = inner.forest.start(record, now, max_live);
        if started.is_ok() {
            inner.touch(touched);
        }
        Ok(started)
    }

    async fn view(&self, id: &str, now: i64) -> Result<Option<Arc<RunView>>, RunStoreError> {
        Ok(self.lock().view(id, now))
    }

    async fn record(&self, id: &str) -> Result<Option<RunRecord>, RunStoreError> {
        Ok(self.lock().forest.runs.get(id).cloned())
    }

    async fn begin(
        &self,
        id: &str,
        now: i64,
        states: Option<&[String]>,
        counters: &[String],
    ) -> Result<Result<Begun, CallRefusal>, RunStoreError> {
        let mut inner = self.lock();
        let begun = inner.forest.begin(id, now, states, counters);
        if let Ok(begun) = &begun {
            let owners: Vec<String> = begun.spent.iter().map(|(owner, _)| owner.clone()).collect();
            inner.dirty.extend(owners);
        }
        Ok(begun)
    }

    async fn exhausted(&self, id: &str) -> Result<Vec<String>, RunStoreError> {
        Ok(self.lock().forest.exhausted(id))
    }

    async fn give_back(&self, spent: &[(String, String)]) -> Result<(), RunStoreError> {
        let mut inner = self.lock();
        inner.forest.give_back(spent);
        let owners: Vec<String> = spent.iter().map(|(owner, _)| owner.clone()).collect();
        inner.dirty.extend(owners);
        Ok(())
    }

    async fn finish(
        &self,
        id: &str,
        now: i64,
        line: CallLine,
        next: Option<&str>,
    ) -> Result<Option<String>, RunStoreError> {
        let mut inner = self.lock();
        let state = inner.forest.finish(id, now, line, next);
        // The view holds the state only: made again after a transition, not after every call.
        if next.is_some() {
            inner.touch([id.to_owned()]);
        } else {
            inner.dirty.insert(id.to_owned());
        }
        Ok(state)
    }

    async fn end(&self, id: &str, now: i64) -> Result<Vec<String>, RunStoreError> {
        let mut inner = self.lock();
        let ended = inner.forest.end(id, now);
        let mut touched = ended.clone();
        if let Some(record) = inner.forest.runs.get(id) {
            touched.extend(record.ancestors.iter().cloned());
        }
        inner.touch(touched);
        Ok(ended)
    }

    async fn list(
        &self,
        filter: &RunFilter,
        now: i64,
        limit: usize,
    ) -> Result<Vec<RunRecord>, RunStoreError> {
        let inner = self.lock();
        let mut runs: Vec<&RunRecord> = inner
            .forest
            .runs
            .values()
            .filter(|run| filter.sub.as_ref().is_none_or(|sub| *sub == run.sub))
            .filter(|run| !filter.active || run.is_live(now))
            .collect();
        runs.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(runs.into_iter().take(limit).cloned().collect())
    }

    async fn live(&self, now: i64) -> Result<usize, RunStoreError> {
        Ok(self.lock().forest.live(now))
    }

    async fn purge(&self, now: i64, keep: i64) -> Result<usize, RunStoreError> {
        let mut inner = self.lock();
        // Expired runs end now, and give what they leave back to their ancestors: all changed.
        let before: HashSet<String> = inner
            .forest
            .runs
            .values()
            .filter(|run| run.ended_at.is_none() && now >= run.expires_at)
            .flat_map(|run| std::iter::once(&run.id).chain(&run.ancestors).cloned())
            .collect();
        let gone = inner.forest.purge(now, keep);
        let count = gone.len();
        inner.touch(before.into_iter().chain(gone));
        // Pinned sets no run names any more go too (a scan, every purge: not on every write).
        if count > 0 {
            let referenced: HashSet<String> = inner
                .forest
                .runs
                .values()
                .map(|run| run.pinned.clone())
                .collect();
            let unused: Vec<String> = inner
                .pinned
                .keys()
                .filter(|digest| !referenced.contains(*digest))
                .cloned()
                .collect();
            for digest in unused {
                inner.pinned.remove(&digest);
                inner.pinned_dirty.insert(digest);
            }
        }
        Ok(count)
    }
}
