//! The rules over a tree of runs, on records held in memory: starting a run (its budget carved
//! from its ancestors'), beginning a call (alive, in a state the tool may be called in, one
//! unit from every counter that applies, all or nothing), finishing it (the transition and the
//! call's line), ending a subtree (what is left returned upwards) and purging. The embedded run
//! store applies these under one lock; the Redis store's scripts do the same steps in the same
//! order on the same records (`service/runs/redis.rs`), and the model test holds both to them.

use std::collections::{BTreeMap, HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use super::CounterKey;
use super::available_in;

/// Calls a record keeps, newest last.
pub const CALLS_KEPT: usize = 50;

/// Bytes the calls a record keeps may take at most (tool ids and states, and 24 for each
/// line's own fields): with the bounds on children and claims, a record stays within 4 KiB.
pub const CALLS_BYTES: usize = 1024;

/// Bytes the claims a record keeps may take at most (as JSON); claims larger than this are not
/// kept (View as of that run then has none to show).
pub const CLAIMS_BYTES: usize = 1024;

impl CallLine {
    /// What the line costs against [`CALLS_BYTES`].
    pub fn weight(&self) -> usize {
        24 + self.tool_id.len() + self.transition.as_ref().map_or(0, String::len)
    }
}

/// Children a run may have (every start counts, ended ones too: a bound on the record).
pub const MAX_CHILDREN: usize = 64;

/// One counter a run holds itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counter {
    /// What it was started with.
    pub limit: u64,
    /// What is left.
    pub left: u64,
    /// The ancestor it was carved from (which gets back what is left when this run ends);
    /// `None` when no ancestor holds this counter (there it was unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

/// How a call ended, as a run's last calls list it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallMark {
    /// Forwarded, and the upstream answered with a result that is not an error.
    Success,
    /// Forwarded, and the upstream's answer was an error (or none came).
    Error,
}

/// One line of a run's last calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallLine {
    pub tool_id: String,
    pub outcome: CallMark,
    /// The state the call moved the run to, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transition: Option<String>,
    /// Unix seconds.
    pub at: i64,
}

/// A run, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: String,
    pub root: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Every ancestor, the parent first and the root last.
    #[serde(default)]
    pub ancestors: Vec<String>,
    /// `toolgate.depth` of the run's token.
    pub depth: usize,
    /// The `sub` of the token that started it.
    pub sub: String,
    pub state: String,
    pub created_at: i64,
    pub expires_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<i64>,
    /// The counters this run holds itself, by [`CounterKey::name`].
    #[serde(default)]
    pub budget: BTreeMap<String, Counter>,
    /// The digest of its pinned set ([`super::Pinned::digest`]).
    pub pinned: String,
    pub pinned_revision: u64,
    #[serde(default)]
    pub children: Vec<String>,
    #[serde(default)]
    pub calls: VecDeque<CallLine>,
    /// The claims the run's token is evaluated as (without the gateway's computed claims):
    /// what an admin's View as of the run evaluates.
    #[serde(default)]
    pub claims: crate::domain::claims::Claims,
}

impl RunRecord {
    /// Whether the run may be acted in at `now`: not ended, not expired.
    pub fn is_live(&self, now: i64) -> bool {
        self.ended_at.is_none() && now < self.expires_at
    }

    /// Each counter's amount left, by key.
    pub fn left(&self) -> BTreeMap<CounterKey, u64> {
        self.budget
            .iter()
            .filter_map(|(name, counter)| Some((CounterKey::parse(name)?, counter.left)))
            .collect()
    }
}

/// Why a run could not be started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StartRefusal {
    #[error("{max} runs are live, the most this gateway keeps (TOOLGATE_RUNS_MAX)")]
    TooMany { max: usize },
    #[error("the parent run has ended")]
    ParentEnded,
    #[error("the parent run has started {MAX_CHILDREN} child runs, the most a run may")]
    TooManyChildren,
    #[error(
        "budget.{counter}: asks for {asked} but the parent run has {left} left of its {counter}"
    )]
    Overdrawn {
        counter: String,
        asked: u64,
        left: u64,
    },
}

/// Why a call was not forwarded by the run rules (nothing was spent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallRefusal {
    /// Ended, expired, or not known (purged): reason `run_ended`.
    Ended,
    /// The tool is not available in the run's state: reason `run_state`.
    State { state: String },
    /// A counter that applies is at zero: reason `run_budget`.
    Budget { counter: String, limit: u64 },
}

/// What a call that may go ahead saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Begun {
    /// The run's state when the call began.
    pub state: String,
    /// The counters spent, as (owner run, counter name): what a call that is not forwarded
    /// after all gives back.
    pub spent: Vec<(String, String)>,
}

/// Runs in memory, by id.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Forest {
    pub runs: HashMap<String, RunRecord>,
    /// Runs not ended (expired ones included until [`Forest::purge`] ends them): what the bound
    /// on live runs counts, kept as runs start and end so that a start costs no scan.
    open: usize,
}

impl Forest {
    /// The forest of `records` (as read back from disk).
    pub fn of(records: impl IntoIterator<Item = RunRecord>) -> Forest {
        let runs: HashMap<String, RunRecord> = records
            .into_iter()
            .map(|record| (record.id.clone(), record))
            .collect();
        let open = runs.values().filter(|run| run.ended_at.is_none()).count();
        Forest { runs, open }
    }

    /// Live runs at `now` (a scan: for metrics, not for every start).
    pub fn live(&self, now: i64) -> usize {
        self.runs.values().filter(|run| run.is_live(now)).count()
    }

    /// Runs not ended yet (expired ones until they are purged).
    pub fn open(&self) -> usize {
        self.open
    }

    /// Starts `record` (its counters hold what it asks for; `from` is set here). A child's
    /// counters are carved from the nearest ancestor that holds the same counter: all of them
    /// or none.
    pub fn start(
        &mut self,
        mut record: RunRecord,
        now: i64,
        max_live: usize,
    ) -> Result<(), StartRefusal> {
        if self.open >= max_live {
            return Err(StartRefusal::TooMany { max: max_live });
        }
        if let Some(parent) = &record.parent {
            let parent = self.runs.get(parent).ok_or(StartRefusal::ParentEnded)?;
            if !parent.is_live(now) {
                return Err(StartRefusal::ParentEnded);
            }
            if parent.children.len() >= MAX_CHILDREN {
                return Err(StartRefusal::TooManyChildren);
            }
        }
        let mut carve = Vec::new();
        for (name, counter) in &record.budget {
            if let Some(owner) = self.owner(&record.ancestors, name) {
                let left = self.runs[&owner].budget[name].left;
                if left < counter.limit {
                    return Err(StartRefusal::Overdrawn {
                        counter: name.clone(),
                        asked: counter.limit,
                        left,
                    });
                }
                carve.push((owner, name.clone(), counter.limit));
            }
        }
        for (owner, name, amount) in carve {
            if let Some(counter) = self.counter_mut(&owner, &name) {
                counter.left -= amount;
            }
            if let Some(counter) = record.budget.get_mut(&name) {
                counter.from = Some(owner);
            }
        }
        if let Some(parent) = record.parent.clone()
            && let Some(parent) = self.runs.get_mut(&parent)
        {
            parent.children.push(record.id.clone());
        }
        if let Some(old) = self.runs.insert(record.id.clone(), record)
            && old.ended_at.is_none()
        {
            self.open -= 1; // the same id again (never, with 128 random bits): counted once
        }
        self.open += 1;
        Ok(())
    }

    /// The nearest of `chain` (in order) holding the counter `name`.
    fn owner(&self, chain: &[String], name: &str) -> Option<String> {
        chain
            .iter()
            .find(|id| {
                self.runs
                    .get(*id)
                    .is_some_and(|run| run.budget.contains_key(name))
            })
            .cloned()
    }

    fn counter_mut(&mut self, id: &str, name: &str) -> Option<&mut Counter> {
        self.runs.get_mut(id)?.budget.get_mut(name)
    }

    /// The counters of `id`'s chain that have nothing left where they are held: a call that
    /// spends one of them would be refused (`run_budget`).
    pub fn exhausted(&self, id: &str) -> Vec<String> {
        let Some(run) = self.runs.get(id) else {
            return Vec::new();
        };
        let mut chain = vec![id.to_owned()];
        chain.extend(run.ancestors.iter().cloned());
        self.keys_in_chain(id)
            .into_iter()
            .filter(|name| {
                self.owner(&chain, name)
                    .and_then(|owner| self.runs.get(&owner)?.budget.get(name))
                    .is_some_and(|counter| counter.left == 0)
            })
            .collect()
    }

    /// The counter names of `id`'s chain (its own and its ancestors').
    pub fn keys_in_chain(&self, id: &str) -> Vec<String> {
        let Some(run) = self.runs.get(id) else {
            return Vec::new();
        };
        let mut names: Vec<String> = std::iter::once(run)
            .chain(run.ancestors.iter().filter_map(|a| self.runs.get(a)))
            .flat_map(|run| run.budget.keys().cloned())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Begins a call in run `id` at `now`: the run must be live, in a state `states` allows
    /// (`None`: the tool has no `available_in_states`, or the caller does not check them),
    /// and every counter in `counters` (names) must have a unit left where it is held (the
    /// run itself, else the nearest ancestor holding it; held nowhere: unlimited). Then one
    /// unit of each is spent, all at once.
    pub fn begin(
        &mut self,
        id: &str,
        now: i64,
        states: Option<&[String]>,
        counters: &[String],
    ) -> Result<Begun, CallRefusal> {
        let run = self.runs.get(id).ok_or(CallRefusal::Ended)?;
        if !run.is_live(now) {
            return Err(CallRefusal::Ended);
        }
        if !available_in(states, &run.state) {
            return Err(CallRefusal::State {
                state: run.state.clone(),
            });
        }
        let state = run.state.clone();
        let mut chain = vec![id.to_owned()];
        chain.extend(run.ancestors.iter().cloned());
        let mut spend = Vec::new();
        for name in counters {
            if let Some(owner) = self.owner(&chain, name) {
                let counter = &self.runs[&owner].budget[name];
                if counter.left == 0 {
                    return Err(CallRefusal::Budget {
                        counter: name.clone(),
                        limit: counter.limit,
                    });
                }
                spend.push((owner, name.clone()));
            }
        }
        for (owner, name) in &spend {
            if let Some(counter) = self.counter_mut(owner, name) {
                counter.left -= 1;
            }
        }
        Ok(Begun {
            state,
            spent: spend,
        })
    }

    /// Gives back what a begun call spent (it was not forwarded after all).
    pub fn give_back(&mut self, spent: &[(String, String)]) {
        for (owner, name) in spent {
            if let Some(counter) = self.counter_mut(owner, name) {
                counter.left = counter.left.saturating_add(1).min(counter.limit);
            }
        }
    }

    /// Finishes a forwarded call of run `id`: its line kept, and the run moved to `next` (a
    /// successful call of a tool with `next_state`) unless it ended meanwhile. The state after.
    pub fn finish(
        &mut self,
        id: &str,
        now: i64,
        mut line: CallLine,
        next: Option<&str>,
    ) -> Option<String> {
        let run = self.runs.get_mut(id)?;
        if let Some(next) = next
            && run.is_live(now)
        {
            run.state = next.to_owned();
            line.transition = Some(next.to_owned());
        }
        run.calls.push_back(line);
        let mut bytes: usize = run.calls.iter().map(CallLine::weight).sum();
        while run.calls.len() > CALLS_KEPT || (bytes > CALLS_BYTES && run.calls.len() > 1) {
            if let Some(old) = run.calls.pop_front() {
                bytes -= old.weight();
            }
        }
        Some(run.state.clone())
    }

    /// Ends run `id` and every run below it at `now` (those already ended stay as they were),
    /// deepest first, each giving what it has left back to the run it was carved from. The
    /// runs ended now.
    pub fn end(&mut self, id: &str, now: i64) -> Vec<String> {
        let mut order = Vec::new();
        let mut stack = vec![id.to_owned()];
        while let Some(next) = stack.pop() {
            if let Some(run) = self.runs.get(&next) {
                stack.extend(run.children.iter().cloned());
                order.push(next);
            }
        }
        let mut ended = Vec::new();
        for id in order.into_iter().rev() {
            let Some(run) = self.runs.get_mut(&id) else {
                continue;
            };
            if run.ended_at.is_none() {
                run.ended_at = Some(now.min(run.expires_at));
                ended.push(id.clone());
                self.open = self.open.saturating_sub(1);
            }
            self.return_unused(&id);
        }
        ended
    }

    /// Moves what `id` has left of each carved counter back to where it was carved from.
    fn return_unused(&mut self, id: &str) {
        let Some(run) = self.runs.get_mut(id) else {
            return;
        };
        let mut back = Vec::new();
        for (name, counter) in &mut run.budget {
            if let Some(from) = &counter.from
                && counter.left > 0
            {
                back.push((from.clone(), name.clone(), counter.left));
                counter.left = 0;
            }
        }
        for (from, name, amount) in back {
            if let Some(counter) = self.counter_mut(&from, &name) {
                counter.left = counter.left.saturating_add(amount);
            }
        }
    }

    /// Ends what has expired by `now` (returning what it left), then forgets runs ended
    /// `keep` seconds or more before `now` whose ancestors are forgotten or forgettable too
    /// (a record is kept while a live run may still return budget to it). The ids forgotten.
    pub fn purge(&mut self, now: i64, keep: i64) -> Vec<String> {
        let expired: Vec<String> = self
            .runs
            .values()
            .filter(|run| run.ended_at.is_none() && now >= run.expires_at)
            .map(|run| run.id.clone())
            .collect();
        for id in &expired {
            self.end(id, run_expiry(self, id).unwrap_or(now));
        }
        let old = |run: &RunRecord| run.ended_at.is_some_and(|at| now - at >= keep);
        let gone: Vec<String> = self
            .runs
            .values()
            .filter(|run| {
                old(run)
                    && run
                        .children
                        .iter()
                        .all(|c| self.runs.get(c).is_none_or(old))
            })
            .map(|run| run.id.clone())
            .collect();
        for id in &gone {
            self.runs.remove(id);
        }
        gone
    }
}

fn run_expiry(forest: &Forest, id: &str) -> Option<i64> {
    forest.runs.get(id).map(|run| run.expires_at)
}

#[cfg(test)]
mod tests;
