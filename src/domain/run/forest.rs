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
}

impl Forest {
    /// Live runs at `now`.
    pub fn live(&self, now: i64) -> usize {
        self.runs.values().filter(|run| run.is_live(now)).count()
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
        if self.live(now) >= max_live {
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
        self.runs.insert(record.id.clone(), record);
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

    /// The counter names of `id`'s tree (its own and its ancestors') that a call of a tool
    /// spends, given which keys apply to it (`applies`).
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
        while run.calls.len() > CALLS_KEPT {
            run.calls.pop_front();
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
mod tests {
    use super::*;

    const ROOT: &str = "root";

    fn record(id: &str, parent: Option<&RunRecord>, budget: &[(&str, u64)]) -> RunRecord {
        let mut ancestors = Vec::new();
        if let Some(parent) = parent {
            ancestors.push(parent.id.clone());
            ancestors.extend(parent.ancestors.iter().cloned());
        }
        RunRecord {
            id: id.to_owned(),
            root: parent.map_or_else(|| id.to_owned(), |p| p.root.clone()),
            parent: parent.map(|p| p.id.clone()),
            ancestors,
            depth: parent.map_or(0, |p| p.depth + 1),
            sub: "u".to_owned(),
            state: "s0".to_owned(),
            created_at: 0,
            expires_at: 100,
            ended_at: None,
            budget: budget
                .iter()
                .map(|(name, n)| {
                    (
                        (*name).to_owned(),
                        Counter {
                            limit: *n,
                            left: *n,
                            from: None,
                        },
                    )
                })
                .collect(),
            pinned: String::new(),
            pinned_revision: 1,
            children: Vec::new(),
            calls: VecDeque::new(),
            claims: Default::default(),
        }
    }

    fn left(forest: &Forest, id: &str, name: &str) -> u64 {
        forest.runs[id].budget[name].left
    }

    #[test]
    fn children_are_carved_from_the_parent_and_give_back_what_they_leave() {
        let mut forest = Forest::default();
        let root = record(ROOT, None, &[("calls", 10)]);
        forest.start(root.clone(), 0, 10).expect("root");
        let child = record("child", Some(&root), &[("calls", 4)]);
        forest.start(child.clone(), 0, 10).expect("child");
        assert_eq!(left(&forest, ROOT, "calls"), 6);
        let greedy = record("greedy", Some(&root), &[("calls", 7)]);
        assert_eq!(
            forest.start(greedy, 0, 10),
            Err(StartRefusal::Overdrawn {
                counter: "calls".into(),
                asked: 7,
                left: 6
            })
        );
        let calls = vec!["calls".to_owned()];
        forest.begin("child", 1, None, &calls).expect("a unit");
        assert_eq!(left(&forest, "child", "calls"), 3);
        assert_eq!(left(&forest, ROOT, "calls"), 6, "the child spends its own");
        assert_eq!(forest.end("child", 2), vec!["child".to_owned()]);
        assert_eq!(left(&forest, ROOT, "calls"), 9, "3 unused come back");
        assert_eq!(
            forest.begin("child", 3, None, &calls),
            Err(CallRefusal::Ended)
        );
    }

    #[test]
    fn absent_keys_spend_the_ancestors_counter_and_a_refusal_spends_nothing() {
        let mut forest = Forest::default();
        let root = record(ROOT, None, &[("calls", 1), ("per_tool.db:*", 5)]);
        forest.start(root.clone(), 0, 10).expect("root");
        let child = record("child", Some(&root), &[("per_tool.db:*", 2)]);
        forest.start(child, 0, 10).expect("child");
        let both = vec!["calls".to_owned(), "per_tool.db:*".to_owned()];
        forest.begin("child", 1, None, &both).expect("one call");
        assert_eq!(left(&forest, ROOT, "calls"), 0);
        assert_eq!(left(&forest, "child", "per_tool.db:*"), 1);
        assert_eq!(
            forest.begin("child", 1, None, &both),
            Err(CallRefusal::Budget {
                counter: "calls".into(),
                limit: 1
            })
        );
        assert_eq!(left(&forest, "child", "per_tool.db:*"), 1, "all or nothing");
    }

    #[test]
    fn state_gates_and_transitions_apply_to_live_runs_only() {
        let mut forest = Forest::default();
        forest.start(record(ROOT, None, &[]), 0, 10).expect("root");
        let needs_s1 = vec!["s1".to_owned()];
        assert_eq!(
            forest.begin(ROOT, 1, Some(&needs_s1), &[]),
            Err(CallRefusal::State { state: "s0".into() })
        );
        let line = CallLine {
            tool_id: "t".into(),
            outcome: CallMark::Success,
            transition: None,
            at: 1,
        };
        assert_eq!(
            forest.finish(ROOT, 1, line.clone(), Some("s1")),
            Some("s1".to_owned())
        );
        assert!(forest.begin(ROOT, 1, Some(&needs_s1), &[]).is_ok());
        assert_eq!(forest.runs[ROOT].calls[0].transition.as_deref(), Some("s1"));
        forest.end(ROOT, 2);
        assert_eq!(
            forest.finish(ROOT, 3, line, Some("s2")),
            Some("s1".to_owned())
        );
    }

    #[test]
    fn ending_a_parent_ends_the_subtree_and_bounds_hold() {
        let mut forest = Forest::default();
        let root = record(ROOT, None, &[("calls", 3)]);
        forest.start(root.clone(), 0, 3).expect("root");
        let child = record("child", Some(&root), &[("calls", 2)]);
        forest.start(child.clone(), 0, 3).expect("child");
        let grandchild = record("grand", Some(&child), &[("calls", 1)]);
        forest.start(grandchild, 0, 3).expect("grandchild");
        assert_eq!(
            forest.start(record("x", None, &[]), 0, 3),
            Err(StartRefusal::TooMany { max: 3 })
        );
        let mut ended = forest.end(ROOT, 5);
        ended.sort();
        assert_eq!(ended, ["child", "grand", "root"]);
        assert_eq!(left(&forest, ROOT, "calls"), 3, "everything came back up");
        assert_eq!(forest.purge(5 + 59, 60), Vec::<String>::new());
        let mut gone = forest.purge(5 + 60, 60);
        gone.sort();
        assert_eq!(gone, ["child", "grand", "root"]);
    }

    #[test]
    fn expiry_ends_a_run_and_returns_its_budget() {
        let mut forest = Forest::default();
        let root = record(ROOT, None, &[("calls", 5)]);
        forest.start(root.clone(), 0, 10).expect("root");
        let mut child = record("child", Some(&root), &[("calls", 5)]);
        child.expires_at = 10;
        forest.start(child, 0, 10).expect("child");
        assert_eq!(left(&forest, ROOT, "calls"), 0);
        forest.purge(10, 600);
        assert_eq!(left(&forest, ROOT, "calls"), 5);
        assert_eq!(forest.runs["child"].ended_at, Some(10));
    }
}
