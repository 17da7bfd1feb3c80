//! Runs (docs/runs.md): starting one (`POST /runs`), reading and ending it, and the rules a
//! call in a run meets before it is forwarded (alive, state, budget) and after (the
//! transition). All of them here, once; `app` applies them for every transport.
//!
//! A run token is signed with toolgate's own key like a delegated token and carries the claims
//! it was made from (`toolgate_run.claims`), so the verifier rebuilds exactly the claims the
//! domain decides for: a root run's are its starter's; a child run's are a delegation of its
//! parent's (one more `act` level, its scope in the chain, `*` when none was asked), so that
//! policies reading `toolgate.depth` or `act` apply and an ancestor's loss is the child's.

pub mod memory;
pub mod redis;
pub mod start;
pub mod store;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::Caller;
use crate::clock::Clock;
use crate::domain::model::Tool;
use crate::domain::run::Budget;
use crate::domain::run::forest::{Begun, CallLine, CallMark, CallRefusal, RunRecord};
use crate::domain::snapshot::Snapshot;

pub use start::{StartError, StartRequest, Started};
pub use store::{RunFilter, RunStore, RunStoreError, RunView};

/// How many runs, how long, how much (docs/operations.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSettings {
    /// Live runs at most (`TOOLGATE_RUNS_MAX`).
    pub max_live: usize,
    /// The longest a run lives (`TOOLGATE_RUN_MAX_LIFETIME_SECS`).
    pub max_lifetime: Duration,
    /// The most calls a root run may forward (`TOOLGATE_RUN_MAX_CALLS`); `None`: unlimited.
    pub max_calls: Option<u64>,
    /// How long an ended run's record is kept for `GET /runs/{id}` and the console.
    pub keep_ended: Duration,
}

impl Default for RunSettings {
    fn default() -> Self {
        RunSettings {
            max_live: 100_000,
            max_lifetime: Duration::from_secs(3600),
            max_calls: None,
            keep_ended: Duration::from_secs(600),
        }
    }
}

/// A call the run rules refused: nothing was sent, nothing spent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunRefusal {
    /// `run_ended`.
    Ended { run: String },
    /// `run_state`: the tool needs one of `needs`; `leads` are the granted tools whose
    /// `next_state` is one of them.
    State {
        run: String,
        state: String,
        needs: Vec<String>,
        leads: Vec<String>,
    },
    /// `run_budget`: `counter` is spent (`limit` was its amount).
    Budget {
        run: String,
        counter: String,
        limit: u64,
    },
    /// `run_pinned`: granted now, but not when the run started.
    Pinned { run: String },
}

impl RunRefusal {
    /// The reason code (docs/runs.md).
    pub fn reason(&self) -> &'static str {
        match self {
            RunRefusal::Ended { .. } => "run_ended",
            RunRefusal::State { .. } => "run_state",
            RunRefusal::Budget { .. } => "run_budget",
            RunRefusal::Pinned { .. } => "run_pinned",
        }
    }

    /// What the agent is told (a tool error's text).
    pub fn message(&self, tool: &str) -> String {
        match self {
            RunRefusal::Ended { run } => {
                format!("run {run} has ended: no call is made in it (run_ended)")
            }
            RunRefusal::State {
                run,
                state,
                needs,
                leads,
            } => {
                let needs = if needs.is_empty() {
                    "no state (its available_in_states is empty)".to_owned()
                } else {
                    format!("one of [{}]", needs.join(", "))
                };
                let first = if leads.is_empty() {
                    "no granted tool leads there".to_owned()
                } else {
                    format!("call one of [{}] first", leads.join(", "))
                };
                format!(
                    "tool '{tool}' is not available in state '{state}' of run {run}: it needs \
                     {needs}; {first} (run_state)"
                )
            }
            RunRefusal::Budget {
                run,
                counter,
                limit,
            } => format!(
                "the budget of run {run} is spent: {counter} allowed {limit} calls \
                 (run_budget)"
            ),
            RunRefusal::Pinned { run } => format!(
                "tool '{tool}' was not granted when run {run} started: a run keeps the tools \
                 it started with; start a new run to use it (run_pinned)"
            ),
        }
    }

    /// The refusal as `_meta` of a tool error (`io.toolgate/refusal`).
    pub fn to_json(&self) -> Value {
        let mut out = json!({"reason": self.reason()});
        match self {
            RunRefusal::State {
                state,
                needs,
                leads,
                ..
            } => {
                out["state"] = json!(state);
                out["needs"] = json!(needs);
                out["leads"] = json!(leads);
            }
            RunRefusal::Budget { counter, limit, .. } => {
                out["counter"] = json!(counter);
                out["limit"] = json!(limit);
            }
            RunRefusal::Ended { .. } | RunRefusal::Pinned { .. } => {}
        }
        out
    }
}

/// A call the run rules let through: what it spent, and what finishing it needs.
#[derive(Debug)]
pub struct RunCall {
    pub run: Arc<RunView>,
    pub begun: Begun,
    pub tool_id: String,
    pub next_state: Option<String>,
}

/// Every run, through one store.
pub struct Runs {
    store: Arc<dyn RunStore>,
    settings: RunSettings,
    clock: Arc<dyn Clock>,
    /// The ids of runs that moved or ended, here or (heard by the store) on other instances:
    /// what moves and ends their streams.
    changed: tokio::sync::broadcast::Sender<Vec<String>>,
    /// Where starts, ends, transitions, refusals and the live count are counted.
    metrics: Option<Arc<crate::telemetry::Metrics>>,
}

/// Changes kept for a slow listener before it misses some (it then moves nothing it missed:
/// its streams catch up at the next change or end with their tokens).
const CHANGES_KEPT: usize = 1024;

impl Runs {
    pub fn new(store: Arc<dyn RunStore>, settings: RunSettings, clock: Arc<dyn Clock>) -> Runs {
        let (changed, _) = tokio::sync::broadcast::channel(CHANGES_KEPT);
        store.announce_to(changed.clone());
        Runs {
            store,
            settings,
            clock,
            changed,
            metrics: None,
        }
    }

    /// The same runs, counted in `metrics`.
    pub fn observed(mut self, metrics: Arc<crate::telemetry::Metrics>) -> Runs {
        self.metrics = Some(metrics);
        self
    }

    /// Counts what `count` does to the run instruments, when there are some.
    pub fn count(&self, count: impl FnOnce(&crate::telemetry::runs::RunMetrics)) {
        if let Some(metrics) = &self.metrics {
            count(&metrics.runs);
        }
    }

    /// The ids of runs that move or end from now on.
    pub fn changes(&self) -> tokio::sync::broadcast::Receiver<Vec<String>> {
        self.changed.subscribe()
    }

    fn announce(&self, ids: Vec<String>) {
        if !ids.is_empty() {
            let _ = self.changed.send(ids);
        }
    }

    pub fn settings(&self) -> RunSettings {
        self.settings
    }

    pub fn store(&self) -> &Arc<dyn RunStore> {
        &self.store
    }

    fn now(&self) -> i64 {
        self.clock.unix_now()
    }

    /// The live view of run `id` (for the caller whose token names it).
    pub async fn live(&self, id: &str) -> Result<Option<Arc<RunView>>, RunStoreError> {
        self.store.view(id, self.now()).await
    }

    /// Whether `caller` may read or end run `record`: its own token, an ancestor run's token,
    /// or the admin rule. Anyone else is told nothing of it.
    pub fn may_see(caller: &Caller, record: &RunRecord) -> bool {
        if caller.is_admin() {
            return true;
        }
        caller
            .run()
            .is_some_and(|own| own.id == record.id || record.ancestors.contains(&own.id))
    }

    /// Run `id`'s record if `caller` may see it.
    pub async fn record_for(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<Option<RunRecord>, RunStoreError> {
        let record = self.store.record(id).await?;
        Ok(record.filter(|record| Runs::may_see(caller, record)))
    }

    /// Ends run `id` and its subtree, if `caller` may; the runs ended now (`None`: no such
    /// run for this caller).
    pub async fn end(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<Option<Vec<String>>, RunStoreError> {
        if self.record_for(caller, id).await?.is_none() {
            return Ok(None);
        }
        let ended = self.store.end(id, self.now()).await?;
        self.count(|runs| runs.ended(ended.len()));
        self.announce(ended.clone());
        Ok(Some(ended))
    }

    /// Begins a call of `tool` in `run`: alive, in a state the tool may be called in, one
    /// unit of every counter that applies, all at once in the store.
    pub async fn begin(
        &self,
        run: &Arc<RunView>,
        tool: &Tool,
    ) -> Result<Result<RunCall, CallRefusal>, RunStoreError> {
        let counters = run.counters.spent_by(&tool.id, &tool.label_ids);
        let states = tool.available_in_states.as_deref();
        let begun = self
            .store
            .begin(&run.id, self.now(), states, &counters)
            .await?;
        Ok(begun.map(|begun| RunCall {
            run: Arc::clone(run),
            begun,
            tool_id: tool.id.clone(),
            next_state: tool.next_state.clone(),
        }))
    }

    /// The refusal of a call of `tool` in `run` as the agent is told it; `granted` says which
    /// tools the caller may call now (for the tools leading to the state it needs).
    pub fn refusal(
        run: &RunView,
        refusal: CallRefusal,
        tool: &Tool,
        snapshot: &Snapshot,
        granted: impl Fn(&str) -> bool,
    ) -> RunRefusal {
        let id = run.id.clone();
        match refusal {
            CallRefusal::Ended => RunRefusal::Ended { run: id },
            CallRefusal::Budget { counter, limit } => RunRefusal::Budget {
                run: id,
                counter,
                limit,
            },
            CallRefusal::State { state } => {
                let needs = tool.available_in_states.clone().unwrap_or_default();
                let leads = leads_to(snapshot, &needs, &granted);
                RunRefusal::State {
                    run: id,
                    state,
                    needs,
                    leads,
                }
            }
        }
    }

    /// Gives back a begun call's units: it was not forwarded after all.
    pub async fn not_forwarded(&self, call: &RunCall) -> Result<(), RunStoreError> {
        self.store.give_back(&call.begun.spent).await
    }

    /// Finishes a forwarded call: a success of a tool with `next_state` moves the run. The
    /// state after.
    pub async fn finish(
        &self,
        call: &RunCall,
        success: bool,
    ) -> Result<Option<String>, RunStoreError> {
        let next = call.next_state.as_deref().filter(|_| success);
        let line = CallLine {
            tool_id: call.tool_id.clone(),
            outcome: if success {
                CallMark::Success
            } else {
                CallMark::Error
            },
            transition: None,
            at: self.now(),
        };
        let state = self
            .store
            .finish(&call.run.id, self.now(), line, next)
            .await?;
        if next.is_some() {
            self.count(crate::telemetry::runs::RunMetrics::transition);
            self.announce(vec![call.run.id.clone()]);
        }
        Ok(state)
    }

    /// An executor's report of a call of `tool` it ran in run `id` after a permit: a success
    /// moves the run as a forwarded call's would. The state after (`None`: no such live run).
    pub async fn report(
        &self,
        id: &str,
        tool: &Tool,
        success: bool,
    ) -> Result<Option<String>, RunStoreError> {
        let now = self.now();
        if self.store.view(id, now).await?.is_none() {
            return Ok(None);
        }
        let next = tool.next_state.as_deref().filter(|_| success);
        let line = CallLine {
            tool_id: tool.id.clone(),
            outcome: if success {
                CallMark::Success
            } else {
                CallMark::Error
            },
            transition: None,
            at: now,
        };
        let state = self.store.finish(id, now, line, next).await?;
        if next.is_some() {
            self.count(crate::telemetry::runs::RunMetrics::transition);
            self.announce(vec![id.to_owned()]);
        }
        Ok(state)
    }

    /// `GET /runs/{id}`'s body.
    pub fn describe(record: &RunRecord, now: i64) -> Value {
        let calls: Vec<Value> = record
            .calls
            .iter()
            .rev()
            .map(|line| {
                let mut out = json!({"tool_id": line.tool_id, "outcome": line.outcome,
                                     "at": line.at});
                if let Some(state) = &line.transition {
                    out["transition"] = json!(state);
                }
                out
            })
            .collect();
        json!({
            "run_id": record.id,
            "root_run_id": record.root,
            "parent_run_id": record.parent,
            "sub": record.sub,
            "depth": record.depth,
            "state": record.state,
            "active": record.is_live(now),
            "created_at": record.created_at,
            "expires_at": record.expires_at,
            "ended_at": record.ended_at,
            "budget": Budget::to_json(&record.left()),
            "flow": [],
            "pinned_revision": record.pinned_revision,
            "children": record.children,
            "pending_approvals": [],
            "calls": calls,
        })
    }

    /// Ends expired runs and forgets old ended ones, then counts the live ones; the number
    /// forgotten.
    pub async fn purge(&self) -> Result<usize, RunStoreError> {
        let keep = i64::try_from(self.settings.keep_ended.as_secs()).unwrap_or(i64::MAX);
        let forgotten = self.store.purge(self.now(), keep).await?;
        let live = self.store.live(self.now()).await?;
        self.count(|runs| runs.live(live));
        Ok(forgotten)
    }

    /// Purges every `every` until the runs are dropped.
    pub fn spawn_purging(
        runs: std::sync::Weak<Runs>,
        every: Duration,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                let Some(runs) = runs.upgrade() else { return };
                if let Err(error) = runs.purge().await {
                    tracing::warn!(%error, "purging ended runs failed; trying again later");
                }
            }
        })
    }
}

/// The tools `granted` keeps whose `next_state` is one of `states`, by id (at most 16).
fn leads_to(
    snapshot: &Snapshot,
    states: &[String],
    granted: &impl Fn(&str) -> bool,
) -> Vec<String> {
    snapshot
        .catalog()
        .tools
        .iter()
        .filter(|tool| {
            tool.next_state
                .as_ref()
                .is_some_and(|next| states.iter().any(|s| s == next || s == "*"))
        })
        .filter(|tool| granted(&tool.id))
        .map(|tool| tool.id.clone())
        .take(16)
        .collect()
}
