//! The run store on Redis, shared by every instance on it (docs/runs.md, "Storage"): each step
//! of [`crate::domain::run::forest`] is one Lua script over the run tree's keys, which share a
//! hash tag (the root run's id), so that a tree lives in one slot of a Redis Cluster and every
//! step is atomic across instances: two instances never spend one unit twice, nor see two
//! states of one run.
//!
//! Layout: a run is a hash `toolgate:run:{<root>}:<id>` (`meta`: what never changes, as JSON;
//! `state`; `exp`; `ended`; `c:<counter>` what is left, `l:<counter>` its limit, `f:<counter>`
//! the ancestor it was carved from), with lists `…:children` and `…:calls` (the last 50, newest
//! first). Pinned sets are `toolgate:pinned:<digest>` (content-addressed, shared). Indexes:
//! `toolgate:runs:{index}:roots` (id → root), `…:live` and `…:kept` (id by expiry). Every key expires on its own once no run can need it.
//!
//! What a request reads of a run ([`RunView`]) is kept here for [`VIEW_TTL`] at most and
//! forgotten at once when any instance changes the run: the scripts publish the ids they
//! change on [`CHANNEL`], which every instance listens to (a reconnection forgets every view).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use redis::{AsyncCommands, Script};
use tokio::sync::Notify;

mod listen;
mod record;

use super::store::{RunFilter, RunStore, RunStoreError, RunView};
use crate::domain::run::Pinned;
use crate::domain::run::forest::{
    Begun, CallLine, CallRefusal, MAX_CHILDREN, RunRecord, StartRefusal,
};
use crate::redis_link::RedisLink;
use record::{Meta, record_of};

/// Where changed run ids are announced.
pub const CHANNEL: &str = "toolgate:runs";

/// The longest a view is used without asking Redis again (a missed announcement costs this).
pub const VIEW_TTL: Duration = Duration::from_secs(1);

/// Views and pinned sets kept at most; past it, they are forgotten and read again.
const MAX_KEPT: usize = 200_000;

/// Ids looked at by one listing at most.
const MAX_SCANNED: usize = 5_000;

// One hash tag for the indexes: one slot, so that they can be written in one pipeline on a
// Redis Cluster.
const ROOTS: &str = "toolgate:runs:{index}:roots";
const LIVE: &str = "toolgate:runs:{index}:live";
const KEPT: &str = "toolgate:runs:{index}:kept";

fn prefix(root: &str) -> String {
    format!("toolgate:run:{{{root}}}:")
}

fn pinned_key(digest: &str) -> String {
    format!("toolgate:pinned:{digest}")
}

/// The scripts, loaded once (EVALSHA, with the script sent again when Redis lost it).
struct Scripts {
    start: Script,
    begin: Script,
    give_back: Script,
    finish: Script,
    end: Script,
}

/// Runs on Redis.
pub struct RedisRuns {
    link: Arc<RedisLink>,
    scripts: Scripts,
    /// Seconds an ended run is kept after it ends (its keys expire after that).
    keep: i64,
    views: Mutex<HashMap<String, (Arc<RunView>, Instant)>>,
    pinned: Mutex<HashMap<String, Pinned>>,
    stop: Arc<Notify>,
    /// Where the ids heard on [`CHANNEL`] go (the runs' streams move by them).
    changed: std::sync::OnceLock<tokio::sync::broadcast::Sender<Vec<String>>>,
}

impl Drop for RedisRuns {
    fn drop(&mut self) {
        self.stop.notify_one();
    }
}

fn failed(error: impl std::fmt::Display) -> RunStoreError {
    RunStoreError(error.to_string())
}

impl RedisRuns {
    /// Runs on `link`, ended ones kept `keep` seconds; listens for other instances' changes
    /// until dropped.
    pub fn start(link: Arc<RedisLink>, keep: Duration) -> Arc<RedisRuns> {
        let runs = Arc::new(RedisRuns {
            link,
            scripts: Scripts {
                start: Script::new(include_str!("start.lua")),
                begin: Script::new(include_str!("begin.lua")),
                give_back: Script::new(include_str!("give_back.lua")),
                finish: Script::new(include_str!("finish.lua")),
                end: Script::new(include_str!("end.lua")),
            },
            keep: i64::try_from(keep.as_secs()).unwrap_or(i64::MAX),
            views: Mutex::default(),
            pinned: Mutex::default(),
            stop: Arc::new(Notify::new()),
            changed: std::sync::OnceLock::new(),
        });
        tokio::spawn(listen::listen(
            Arc::clone(&runs.link),
            Arc::downgrade(&runs),
            Arc::clone(&runs.stop),
        ));
        runs
    }

    fn forget(&self, ids: &[String]) {
        let mut views = self.views.lock().unwrap_or_else(PoisonError::into_inner);
        for id in ids {
            views.remove(id);
        }
    }

    fn forget_all(&self) {
        self.views
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// The root of run `id`: from its view when one is kept, else from the index.
    async fn root(&self, id: &str) -> Result<Option<String>, RunStoreError> {
        if let Some((view, _)) = self
            .views
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
        {
            return Ok(Some(view.root.clone()));
        }
        self.root_of(id).await
    }

    async fn root_of(&self, id: &str) -> Result<Option<String>, RunStoreError> {
        let mut connection = self.link.commands();
        connection.hget(ROOTS, id).await.map_err(failed)
    }

    async fn pinned_set(&self, digest: &str) -> Result<Option<Pinned>, RunStoreError> {
        if let Some(set) = self
            .pinned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(digest)
        {
            return Ok(Some(set.clone()));
        }
        let mut connection = self.link.commands();
        let text: Option<String> = connection.get(pinned_key(digest)).await.map_err(failed)?;
        let Some(text) = text else { return Ok(None) };
        let ids: Vec<String> = serde_json::from_str(&text).map_err(failed)?;
        let set = Pinned::new(ids.iter().map(String::as_str));
        let mut kept = self.pinned.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() >= MAX_KEPT {
            kept.clear();
        }
        kept.insert(digest.to_owned(), set.clone());
        Ok(Some(set))
    }

    /// Keeps `pinned` for `secs` at least (content-addressed: writing it again changes
    /// nothing but how long it is kept).
    async fn keep_pinned(&self, pinned: &Pinned, secs: u64) -> Result<(), RunStoreError> {
        let ids: Vec<&str> = pinned.ids().collect();
        let mut connection = self.link.commands();
        connection
            .set_ex::<_, _, ()>(
                pinned_key(&pinned.digest()),
                serde_json::to_string(&ids).map_err(failed)?,
                secs.max(1),
            )
            .await
            .map_err(failed)
    }

    /// The run's hash and lists, read at once.
    async fn read(
        &self,
        root: &str,
        id: &str,
    ) -> Result<Option<(HashMap<String, String>, Vec<String>, Vec<String>)>, RunStoreError> {
        let key = format!("{}{id}", prefix(root));
        let mut connection = self.link.commands();
        let (fields, children, calls): (HashMap<String, String>, Vec<String>, Vec<String>) =
            redis::pipe()
                .hgetall(&key)
                .lrange(format!("{key}:children"), 0, -1)
                .lrange(format!("{key}:calls"), 0, -1)
                .query_async(&mut connection)
                .await
                .map_err(failed)?;
        Ok((!fields.is_empty()).then_some((fields, children, calls)))
    }
}

#[async_trait::async_trait]
impl RunStore for RedisRuns {
    async fn start(
        &self,
        record: RunRecord,
        pinned: Pinned,
        now: i64,
        max_live: usize,
    ) -> Result<Result<(), StartRefusal>, RunStoreError> {
        let mut connection = self.link.commands();
        let live: usize = connection
            .zcount(LIVE, now + 1, "+inf")
            .await
            .map_err(failed)?;
        if live >= max_live {
            return Ok(Err(StartRefusal::TooMany { max: max_live }));
        }
        let mut counters: Vec<String> = record.budget.keys().cloned().collect();
        if let Some(parent) = &record.parent
            && let Some(parent) = self.view(parent, now).await?
        {
            counters.extend(parent.counters.names().map(str::to_owned));
        }
        counters.sort();
        counters.dedup();
        let meta = Meta::of(&record, counters);
        let expire_at = record.expires_at.saturating_add(self.keep);
        self.keep_pinned(&pinned, u64::try_from(expire_at - now).unwrap_or(1))
            .await?;
        let prefix = prefix(&record.root);
        let mut invocation = self.scripts.start.key(format!("{prefix}{}", record.id));
        invocation
            .arg(&prefix)
            .arg(&record.id)
            .arg(now)
            .arg(serde_json::to_string(&meta).map_err(failed)?)
            .arg(&record.state)
            .arg(record.expires_at)
            .arg(record.parent.as_deref().unwrap_or(""))
            .arg(expire_at)
            .arg(MAX_CHILDREN)
            .arg(record.budget.len());
        for (name, counter) in &record.budget {
            invocation.arg(name).arg(counter.limit);
        }
        for ancestor in &record.ancestors {
            invocation.arg(ancestor);
        }
        let answer: Vec<String> = invocation
            .invoke_async(&mut connection)
            .await
            .map_err(failed)?;
        let refusal = match answer.first().map(String::as_str) {
            Some("ok") => None,
            Some("parent_ended") => Some(StartRefusal::ParentEnded),
            Some("too_many_children") => Some(StartRefusal::TooManyChildren),
            Some("overdrawn") => Some(StartRefusal::Overdrawn {
                counter: answer.get(1).cloned().unwrap_or_default(),
                asked: answer.get(2).and_then(|n| n.parse().ok()).unwrap_or(0),
                left: answer.get(3).and_then(|n| n.parse().ok()).unwrap_or(0),
            }),
            _ => return Err(failed("the start script gave an unknown answer")),
        };
        if let Some(refusal) = refusal {
            return Ok(Err(refusal));
        }
        let _: () = redis::pipe()
            .hset(ROOTS, &record.id, &record.root)
            .zadd(LIVE, &record.id, record.expires_at)
            .zadd(KEPT, &record.id, record.expires_at)
            .query_async(&mut connection)
            .await
            .map_err(failed)?;
        if let Some(parent) = &record.parent {
            self.forget(std::slice::from_ref(parent));
        }
        Ok(Ok(()))
    }

    async fn view(&self, id: &str, now: i64) -> Result<Option<Arc<RunView>>, RunStoreError> {
        if let Some((view, at)) = self
            .views
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            && at.elapsed() < VIEW_TTL
            && now < view.expires_at
        {
            return Ok(Some(Arc::clone(view)));
        }
        let Some(root) = self.root_of(id).await? else {
            return Ok(None);
        };
        let key = format!("{}{id}", prefix(&root));
        let mut connection = self.link.commands();
        let (meta, state, exp, ended): (Option<String>, Option<String>, Option<i64>, Option<i64>) =
            redis::cmd("HMGET")
                .arg(&key)
                .arg(&["meta", "state", "exp", "ended"][..])
                .query_async(&mut connection)
                .await
                .map_err(failed)?;
        let (Some(meta), Some(state), Some(exp)) = (meta, state, exp) else {
            return Ok(None);
        };
        if ended.is_some() || now >= exp {
            return Ok(None);
        }
        let meta: Meta = serde_json::from_str(&meta).map_err(failed)?;
        let Some(pinned) = self.pinned_set(&meta.pinned).await? else {
            return Ok(None);
        };
        let view = Arc::new(RunView {
            id: meta.id,
            root: meta.root,
            parent: meta.parent,
            ancestors: meta.ancestors,
            depth: meta.depth,
            state,
            expires_at: exp,
            pinned,
            pinned_revision: meta.pinned_revision,
            counters: crate::domain::run::Counters::of(meta.counters.iter().map(String::as_str)),
        });
        let mut views = self.views.lock().unwrap_or_else(PoisonError::into_inner);
        if views.len() >= MAX_KEPT {
            views.clear();
        }
        views.insert(id.to_owned(), (Arc::clone(&view), Instant::now()));
        Ok(Some(view))
    }

    async fn record(&self, id: &str) -> Result<Option<RunRecord>, RunStoreError> {
        let Some(root) = self.root_of(id).await? else {
            return Ok(None);
        };
        match self.read(&root, id).await? {
            Some((fields, children, calls)) => record_of(&fields, children, calls).map(Some),
            None => Ok(None),
        }
    }

    async fn begin(
        &self,
        id: &str,
        now: i64,
        states: Option<&[String]>,
        counters: &[String],
    ) -> Result<Result<Begun, CallRefusal>, RunStoreError> {
        let Some(view) = self.view(id, now).await? else {
            return Ok(Err(CallRefusal::Ended));
        };
        let prefix = prefix(&view.root);
        let mut connection = self.link.commands();
        let mut invocation = self.scripts.begin.key(format!("{prefix}{id}"));
        invocation.arg(&prefix).arg(now);
        match states {
            None => {
                invocation.arg(-1);
            }
            Some(states) => {
                invocation.arg(states.len());
                for state in states {
                    invocation.arg(state);
                }
            }
        }
        invocation.arg(counters.len());
        for counter in counters {
            invocation.arg(counter);
        }
        for ancestor in &view.ancestors {
            invocation.arg(ancestor);
        }
        let answer: Vec<String> = invocation
            .invoke_async(&mut connection)
            .await
            .map_err(failed)?;
        let text = |i: usize| answer.get(i).cloned().unwrap_or_default();
        Ok(match answer.first().map(String::as_str) {
            Some("ok") => Ok(Begun {
                state: text(1),
                spent: answer[2..]
                    .chunks(2)
                    .filter_map(|pair| Some((pair.first()?.clone(), pair.get(1)?.clone())))
                    .collect(),
            }),
            Some("ended") => {
                self.forget(&[id.to_owned()]);
                Err(CallRefusal::Ended)
            }
            Some("state") => Err(CallRefusal::State { state: text(1) }),
            Some("budget") => Err(CallRefusal::Budget {
                counter: text(1),
                limit: text(2).parse().unwrap_or(0),
            }),
            _ => return Err(failed("the begin script gave an unknown answer")),
        })
    }

    async fn exhausted(&self, id: &str) -> Result<Vec<String>, RunStoreError> {
        // Any time: the run's chain is what is asked, whether or not it is live now.
        let Some(view) = self.view(id, i64::MIN).await? else {
            return Ok(Vec::new());
        };
        // The chain's hashes in one pipeline (one slot: they share the root's hash tag).
        let prefix = prefix(&view.root);
        let mut pipe = redis::pipe();
        for run in std::iter::once(id).chain(view.ancestors.iter().map(String::as_str)) {
            pipe.hgetall(format!("{prefix}{run}"));
        }
        let mut connection = self.link.commands();
        let chain: Vec<HashMap<String, String>> =
            pipe.query_async(&mut connection).await.map_err(failed)?;
        Ok(view
            .counters
            .names()
            .filter(|name| {
                let field = format!("c:{name}");
                chain
                    .iter()
                    .find_map(|fields| fields.get(&field))
                    .is_some_and(|left| left.parse::<i64>().map_or(true, |left| left <= 0))
            })
            .map(str::to_owned)
            .collect())
    }

    async fn give_back(&self, spent: &[(String, String)]) -> Result<(), RunStoreError> {
        let Some((owner, _)) = spent.first() else {
            return Ok(());
        };
        let Some(root) = self.root(owner).await? else {
            return Ok(());
        };
        let prefix = prefix(&root);
        let mut connection = self.link.commands();
        let mut invocation = self.scripts.give_back.key(format!("{prefix}{owner}"));
        invocation.arg(&prefix);
        for (owner, name) in spent {
            invocation.arg(owner).arg(name);
        }
        let _: String = invocation
            .invoke_async(&mut connection)
            .await
            .map_err(failed)?;
        Ok(())
    }

    async fn finish(
        &self,
        id: &str,
        now: i64,
        line: CallLine,
        next: Option<&str>,
    ) -> Result<Option<String>, RunStoreError> {
        let Some(root) = self.root(id).await? else {
            return Ok(None);
        };
        let key = format!("{}{id}", prefix(&root));
        let plain = serde_json::to_string(&line).map_err(failed)?;
        let moved = CallLine {
            transition: next.map(str::to_owned),
            ..line
        };
        let mut connection = self.link.commands();
        let answer: Vec<String> = self
            .scripts
            .finish
            .key(&key)
            .arg(now)
            .arg(next.unwrap_or(""))
            .arg(plain)
            .arg(serde_json::to_string(&moved).map_err(failed)?)
            .arg(crate::domain::run::forest::CALLS_KEPT)
            .arg(CHANNEL)
            .arg(id)
            .arg(crate::domain::run::forest::CALLS_BYTES * 2)
            .invoke_async(&mut connection)
            .await
            .map_err(failed)?;
        if next.is_some() {
            self.forget(&[id.to_owned()]);
        }
        Ok(answer.into_iter().next())
    }

    async fn end(&self, id: &str, now: i64) -> Result<Vec<String>, RunStoreError> {
        let Some(root) = self.root(id).await? else {
            return Ok(Vec::new());
        };
        let prefix = prefix(&root);
        let mut connection = self.link.commands();
        let ended: Vec<String> = self
            .scripts
            .end
            .key(format!("{prefix}{id}"))
            .arg(&prefix)
            .arg(id)
            .arg(now)
            .arg(CHANNEL)
            .invoke_async(&mut connection)
            .await
            .map_err(failed)?;
        if !ended.is_empty() {
            let _: () = connection.zrem(LIVE, &ended).await.map_err(failed)?;
        }
        self.forget(&ended);
        Ok(ended)
    }

    async fn list(
        &self,
        filter: &RunFilter,
        now: i64,
        limit: usize,
    ) -> Result<Vec<RunRecord>, RunStoreError> {
        let mut connection = self.link.commands();
        let mut ids: Vec<String> = connection
            .zrange(if filter.active { LIVE } else { KEPT }, 0, -1)
            .await
            .map_err(failed)?;
        ids.sort();
        let mut runs = Vec::new();
        for id in ids.iter().take(MAX_SCANNED) {
            if runs.len() >= limit {
                break;
            }
            let Some(record) = self.record(id).await? else {
                continue;
            };
            if filter.sub.as_ref().is_some_and(|sub| *sub != record.sub)
                || (filter.active && !record.is_live(now))
            {
                continue;
            }
            runs.push(record);
        }
        Ok(runs)
    }

    async fn live(&self, now: i64) -> Result<usize, RunStoreError> {
        let mut connection = self.link.commands();
        connection
            .zcount(LIVE, now + 1, "+inf")
            .await
            .map_err(failed)
    }

    fn announce_to(&self, changed: tokio::sync::broadcast::Sender<Vec<String>>) {
        let _ = self.changed.set(changed);
    }

    async fn purge(&self, now: i64, keep: i64) -> Result<usize, RunStoreError> {
        let mut connection = self.link.commands();
        let expired: Vec<(String, i64)> = connection
            .zrangebyscore_withscores(LIVE, "-inf", now)
            .await
            .map_err(failed)?;
        for (id, exp) in &expired {
            self.end(id, *exp).await?;
        }
        let old: Vec<String> = connection
            .zrangebyscore(KEPT, "-inf", now.saturating_sub(keep))
            .await
            .map_err(failed)?;
        if !old.is_empty() {
            let _: () = redis::pipe()
                .zrem(KEPT, &old)
                .zrem(LIVE, &old)
                .hdel(ROOTS, &old)
                .query_async(&mut connection)
                .await
                .map_err(failed)?;
        }
        Ok(old.len())
    }
}
