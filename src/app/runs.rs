//! Runs, whatever the transport (docs/runs.md): starting, reading, listing and ending them,
//! executors' reports, and the run rules every request acting in a run meets. A caller acts
//! in a run when its token is a run token ([`App::caller`] reads the run live); the options of
//! every listing and call it makes are then narrowed here, once: the run's pinned set always,
//! its state where the surface shows the current state's tools.

use std::sync::Arc;

use serde_json::{Value, json};

use super::App;
use crate::domain::manifest::ManifestOptions;
use crate::domain::run::forest::RunRecord;
use crate::service::Caller;
use crate::service::limits::{Limited, RouteClass};
use crate::service::mcp::Refused;
use crate::service::runs::{RunFilter, RunStoreError, Runs, StartError, StartRequest, Started};
use crate::upstream::{CallOutcome, CallResult};

/// Which tools of a run a surface shows (docs/runs.md section 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunSurface {
    /// REST, SSE, and MCP sessions of 2025 revisions: the tools of the run's current state.
    CurrentState,
    /// MCP `2026-07-28`: the run's tools in every state (a list must not change as a side
    /// effect of a call); a call in the wrong state is refused instead.
    EveryState,
}

/// Why a run request was refused.
#[derive(Debug, thiserror::Error)]
pub enum RunDenied {
    #[error(transparent)]
    Limited(#[from] Limited),
    #[error(transparent)]
    Start(#[from] StartError),
    /// No such run for this caller (it may exist: another identity's is not told apart).
    #[error("no run '{}' is visible to this token", shown(.0))]
    NotFound(String),
    /// The caller may not do this (reports: neither admin nor executor).
    #[error("{0}")]
    Forbidden(String),
    /// The request is wrong at `field`.
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error("the run store did not answer: {0}")]
    Unavailable(String),
}

impl From<RunStoreError> for RunDenied {
    fn from(error: RunStoreError) -> RunDenied {
        RunDenied::Unavailable(error.0)
    }
}

/// The most runs `GET /admin/runs` lists at once.
pub(super) const MAX_LISTED: usize = 500;

impl App {
    /// The options a request of `caller` is decided with: the caller's own, narrowed to its
    /// run's pinned set and (on `surface`s that show it) its run's state, which replaces any
    /// `state=` asked for. Unchanged outside a run.
    pub(super) fn run_options(
        caller: &Caller,
        mut options: ManifestOptions,
        surface: RunSurface,
    ) -> ManifestOptions {
        if let Some(run) = caller.run() {
            options.pinned = Some(run.pinned.clone());
            options.state = match surface {
                RunSurface::CurrentState => Some(run.state.clone()),
                RunSurface::EveryState => None,
            };
        }
        options
    }

    /// `POST /runs`: a run for `caller` (a child when it acts in one), and its token.
    pub async fn start_run(&self, caller: &Caller, body: &Value) -> Result<Started, RunDenied> {
        self.limits.charge(RouteClass::AgentReads, caller)?;
        let request = StartRequest::parse(body)?;
        let snapshot = self.catalog.snapshot();
        let keys = self.delegations.keys();
        let started = self
            .runs
            .start(
                &snapshot,
                caller,
                request,
                (keys, self.delegations.settings()),
            )
            .await?;
        self.runs.count(crate::telemetry::runs::RunMetrics::started);
        tracing::info!(run = %started.run_id, depth = started.depth, "started a run");
        Ok(started)
    }

    /// `GET /runs/{id}`: the run as `caller` may see it.
    pub async fn run_status(&self, caller: &Caller, id: &str) -> Result<Value, RunDenied> {
        self.limits.charge(RouteClass::AgentReads, caller)?;
        let record = self.visible_run(caller, id).await?;
        Ok(Runs::describe(&record, self.clock.unix_now()))
    }

    /// `DELETE /runs/{id}`: ends the run and its subtree; the runs ended now.
    pub async fn end_run(&self, caller: &Caller, id: &str) -> Result<Vec<String>, RunDenied> {
        self.limits.charge(RouteClass::AgentReads, caller)?;
        let ended = self
            .runs
            .end(caller, id)
            .await?
            .ok_or_else(|| RunDenied::NotFound(id.to_owned()))?;
        tracing::info!(run = %id, ended = ended.len(), "ended a run");
        Ok(ended)
    }

    /// `GET /admin/runs` (the caller passed the admin rule: the desk checked).
    pub(super) async fn list_runs(&self, filter: &RunFilter) -> Result<Vec<Value>, RunDenied> {
        let now = self.clock.unix_now();
        let runs = self.runs.store().list(filter, now, MAX_LISTED).await?;
        Ok(runs.iter().map(|run| Runs::describe(run, now)).collect())
    }

    /// `POST /runs/{id}/calls`: an executor reports a call of a tool toolgate cannot run. Only
    /// a token passing the admin rule or `TOOLGATE_EXECUTOR_RULE` (never the run's own).
    pub async fn report_call(
        &self,
        caller: &Caller,
        id: &str,
        body: &Value,
    ) -> Result<Value, RunDenied> {
        self.limits.charge(RouteClass::ToolCalls, caller)?;
        let executor = caller.run().is_none()
            && self
                .executor_rule
                .as_ref()
                .is_some_and(|rule| rule.is_admin(caller.claims()));
        if !caller.is_admin() && !executor {
            return Err(RunDenied::Forbidden(
                "only a token passing the admin rule or TOOLGATE_EXECUTOR_RULE reports calls; \
                 a run's own token cannot move its state"
                    .to_owned(),
            ));
        }
        let (tool_id, success) = report_body(body)?;
        let snapshot = self.catalog.snapshot();
        let tool = snapshot
            .catalog()
            .tools
            .iter()
            .find(|tool| tool.id == tool_id)
            .ok_or_else(|| RunDenied::Invalid {
                field: "tool_id".to_owned(),
                message: format!("no tool '{}' in the catalog", shown(&tool_id)),
            })?;
        // A report moves the run only as a call of the run could have: a tool it pinned,
        // available in its state.
        let view = self
            .runs
            .live(id)
            .await?
            .ok_or_else(|| RunDenied::NotFound(id.to_owned()))?;
        let refused = |message: String| RunDenied::Invalid {
            field: "tool_id".to_owned(),
            message,
        };
        if !view.pinned.contains(&tool.id) {
            return Err(refused(format!(
                "tool '{}' is not one of run {id}'s tools (run_pinned)",
                shown(&tool.id)
            )));
        }
        if !crate::domain::run::available_in(tool.available_in_states.as_deref(), &view.state) {
            return Err(refused(format!(
                "tool '{}' is not available in state '{}' of run {id} (run_state)",
                shown(&tool.id),
                view.state
            )));
        }
        let state = self
            .runs
            .report(id, tool, success)
            .await?
            .ok_or_else(|| RunDenied::NotFound(id.to_owned()))?;
        Ok(json!({"run_id": id, "state": state}))
    }

    /// The claims run `id`'s token is evaluated as and the options its rules narrow with;
    /// `None` when it is not live (for an admin's View as).
    pub(super) async fn run_preview(
        &self,
        id: &str,
    ) -> Result<Option<(crate::domain::claims::Claims, ManifestOptions)>, RunDenied> {
        use crate::domain::run::{GATEWAY_CLAIM, RUN_CLAIM, RunClaim, gateway_claim};
        let Some(view) = self.runs.live(id).await? else {
            return Ok(None);
        };
        let Some(record) = self.runs.store().record(id).await? else {
            return Ok(None);
        };
        let mut claims = record.claims.clone();
        claims.insert(GATEWAY_CLAIM.to_owned(), gateway_claim(view.depth));
        let claim = RunClaim {
            id: view.id.clone(),
            root: view.root.clone(),
            depth: view.depth,
        };
        claims.insert(RUN_CLAIM.to_owned(), claim.to_claim());
        let options = ManifestOptions {
            pinned: Some(view.pinned.clone()),
            state: Some(view.state.clone()),
            ..ManifestOptions::default()
        };
        Ok(Some((claims, options)))
    }

    async fn visible_run(&self, caller: &Caller, id: &str) -> Result<RunRecord, RunDenied> {
        self.runs
            .record_for(caller, id)
            .await?
            .ok_or_else(|| RunDenied::NotFound(id.to_owned()))
    }

    /// `tools/call` in `caller`'s run: decided on the run's pinned set (a tool granted now but
    /// not pinned is `run_pinned`), then begun in the run store (alive, state, budget: one
    /// atomic step), forwarded, and finished (a success of a tool with `next_state` moves the
    /// run). A refusal sends nothing and spends nothing.
    pub(super) async fn run_call(
        &self,
        caller: &Caller,
        options: ManifestOptions,
        name: &str,
        arguments: &serde_json::Map<String, Value>,
    ) -> Result<CallResult, Refused> {
        let Some(run) = caller.run() else {
            return Err(Refused::UnknownTool);
        };
        let snapshot = self.catalog.snapshot();
        let prepared = match self
            .mcp_tools
            .prepare(&snapshot, caller, &options, name, arguments)
        {
            Ok(prepared) => prepared,
            Err(Refused::UnknownTool) => {
                let unpinned = ManifestOptions {
                    pinned: None,
                    ..options.clone()
                };
                if self
                    .mcp_tools
                    .callable(&snapshot, caller.claims(), &unpinned, name)
                    .is_some()
                {
                    self.runs.count(|runs| runs.refused("run_pinned"));
                    return Err(Refused::Run(crate::service::runs::RunRefusal::Pinned {
                        run: run.id.clone(),
                    }));
                }
                return Err(Refused::UnknownTool);
            }
            Err(other) => return Err(other),
        };
        let tool = prepared.named.tool;
        let call = match self.runs.begin(run, tool).await {
            Ok(Ok(call)) => call,
            Ok(Err(refusal)) => {
                let evaluation = self.decisions.listing(&snapshot, caller.claims(), options);
                let granted = |id: &str| snapshot.lists(&evaluation, id);
                let refusal = Runs::refusal(run, refusal, tool, &snapshot, granted);
                self.runs.count(|runs| runs.refused(refusal.reason()));
                return Err(Refused::Run(refusal));
            }
            Err(error) => {
                tracing::warn!(%error, "a call in a run could not be begun");
                return Err(Refused::RunUnavailable);
            }
        };
        let mut result = self.mcp_tools.forward(&prepared, caller, arguments).await;
        let state = if result.outcome == CallOutcome::NotExecutable {
            if let Err(error) = self.runs.not_forwarded(&call).await {
                tracing::warn!(%error, "a call not forwarded could not give its units back");
            }
            Some(call.begun.state.clone())
        } else {
            let success = result.outcome == CallOutcome::Ok;
            match self.runs.finish(&call, success).await {
                Ok(state) => state,
                Err(error) => {
                    tracing::warn!(%error, "a forwarded call in a run could not be finished");
                    None
                }
            }
        };
        stamp_run(&mut result.result, &run.id, state.as_deref());
        Ok(result)
    }
}

/// Moves and ends the streams of the runs that move and end, here or on other instances,
/// until the runs or the hub are dropped.
pub(super) fn spawn_following(
    runs: &Arc<Runs>,
    hub: &Arc<crate::stream::StreamHub>,
) -> tokio::task::JoinHandle<()> {
    let mut changes = runs.changes();
    let (runs, hub) = (Arc::downgrade(runs), Arc::downgrade(hub));
    tokio::spawn(async move {
        loop {
            let ids = match changes.recv().await {
                Ok(ids) => ids,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(
                        missed,
                        "run changes were missed; their streams catch up later"
                    );
                    continue;
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            let (Some(runs), Some(hub)) = (runs.upgrade(), hub.upgrade()) else {
                return;
            };
            for id in ids {
                match runs.live(&id).await {
                    Ok(Some(view)) => {
                        hub.run_moved(&id, &view.state);
                    }
                    Ok(None) => {
                        hub.run_ended(&id);
                    }
                    Err(error) => tracing::warn!(%error, "a changed run could not be read"),
                }
            }
        }
    })
}

/// `_meta["io.toolgate/run"] = {"id", "state"}` on a call's result: the state after it.
fn stamp_run(result: &mut Value, id: &str, state: Option<&str>) {
    if let Value::Object(object) = result {
        let meta = object
            .entry("_meta")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(
                "io.toolgate/run".to_owned(),
                json!({"id": id, "state": state}),
            );
        }
    }
}

/// `text` as an error message quotes it: at most 80 characters of it.
fn shown(text: &str) -> String {
    let mut shown: String = text.chars().take(80).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    shown
}

/// `{"tool_id", "outcome": "success" | "error"}`.
fn report_body(body: &Value) -> Result<(String, bool), RunDenied> {
    let invalid = |field: &str, message: &str| RunDenied::Invalid {
        field: field.to_owned(),
        message: message.to_owned(),
    };
    let object = body
        .as_object()
        .ok_or_else(|| invalid("body", "must be a JSON object"))?;
    let tool_id = object
        .get("tool_id")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            invalid(
                "tool_id",
                "is required: the id of the tool the executor ran",
            )
        })?;
    let success = match object.get("outcome").and_then(Value::as_str) {
        Some("success") => true,
        Some("error") => false,
        _ => return Err(invalid("outcome", "must be \"success\" or \"error\"")),
    };
    if let Some(other) = object.keys().find(|k| *k != "tool_id" && *k != "outcome") {
        return Err(invalid(
            other,
            "unknown member: a report has tool_id and outcome",
        ));
    }
    Ok((tool_id.to_owned(), success))
}
