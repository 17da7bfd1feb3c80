//! Decisions about single tools (the AuthZEN endpoints, and any executor asking before it
//! calls): a request is admitted by charging one request to the caller's `decisions` budget on
//! arrival ([`App::decisions`]); each distinct evaluation a batch needs beyond the first costs
//! one more, before any is made; whose claims a caller may have evaluated, and whether answers
//! carry their reasons, are the read rules'.

use std::collections::HashMap;

use super::App;
use crate::domain::claims::Claims;
use crate::domain::run::{Counters, Pinned};
use crate::service::Caller;
use crate::service::Refusal;
use crate::service::decisions::{Answer, Found, Plan, Question, Scope, Search, Semantic};
use crate::service::limits::{Limited, RouteClass};
use crate::service::read::{self, Subject};
use crate::service::runs::RunView;

/// A decision request of one caller, admitted (its arrival paid for).
pub struct DecisionDesk<'a> {
    app: &'a App,
    caller: &'a Caller,
    /// For a run token: the tools its decisions may permit (the pinned set, less those that
    /// would spend a counter with nothing left) and the run's state.
    run: Option<(Pinned, String)>,
}

impl App {
    /// Admits a decision request of `caller`: one request from its `decisions` budget. A run
    /// token's decisions are its run's, read now.
    pub async fn decisions<'a>(&'a self, caller: &'a Caller) -> Result<DecisionDesk<'a>, Limited> {
        self.limits.charge(RouteClass::Decisions, caller)?;
        let run = match caller.run() {
            None => None,
            Some(run) => Some((self.decidable(run).await, run.state.clone())),
        };
        Ok(DecisionDesk {
            app: self,
            caller,
            run,
        })
    }

    /// The tools of `run` a decision may permit: its pinned set, less the tools a call of
    /// which would be refused `run_budget` now. Nothing when the run store does not answer.
    async fn decidable(&self, run: &RunView) -> Pinned {
        let exhausted = match self.runs.store().exhausted(&run.id).await {
            Ok(exhausted) => exhausted,
            Err(error) => {
                tracing::warn!(%error, "a run's budget could not be read; its decisions deny");
                return Pinned::new([]);
            }
        };
        if exhausted.is_empty() {
            return run.pinned.clone();
        }
        let spent = Counters::of(exhausted.iter().map(String::as_str));
        let snapshot = self.catalog.snapshot();
        let labels: HashMap<&str, &[String]> = snapshot
            .catalog()
            .tools
            .iter()
            .map(|tool| (tool.id.as_str(), tool.label_ids.as_slice()))
            .collect();
        Pinned::new(run.pinned.ids().filter(|id| {
            spent
                .spent_by(id, labels.get(id).copied().unwrap_or_default())
                .is_empty()
        }))
    }
}

impl<'a> DecisionDesk<'a> {
    /// The claims `subject` stands for: the caller's own, or (admins only) any given.
    pub fn claims_for(&self, subject: Option<Subject<'a>>) -> Result<&'a Claims, Refusal> {
        read::claims_for(subject, self.caller)
    }

    /// The answers to `questions` at the current snapshot, and its revision, once the budget
    /// has paid for the distinct evaluations beyond the first (none is made otherwise).
    /// Reasons for admin callers only.
    pub fn answer(
        &self,
        questions: &[Question<'_>],
        semantic: Semantic,
    ) -> Result<(Vec<Answer>, u64), Limited> {
        let snapshot = self.app.catalog.snapshot();
        // A run token's decisions are its run's: within its pinned set, in its state.
        let scopes: Vec<Scope>;
        let in_run: Vec<Question<'_>>;
        let questions = match &self.run {
            None => questions,
            Some((pinned, state)) => {
                scopes = questions
                    .iter()
                    .map(|q| q.scope.in_run(pinned, state))
                    .collect();
                in_run = questions
                    .iter()
                    .zip(&scopes)
                    .map(|(question, scope)| Question { scope, ..*question })
                    .collect();
                &in_run
            }
        };
        let plan = Plan::new(&snapshot, questions);
        self.app.limits.charge_more(
            RouteClass::Decisions,
            self.caller,
            plan.evaluations().saturating_sub(1),
        )?;
        let answers =
            self.app
                .decisions
                .answer(&snapshot, &plan, semantic, read::sees_reasons(self.caller));
        Ok((answers, snapshot.revision()))
    }

    /// The tools `search` finds at the current snapshot, and its revision.
    pub fn search(&self, search: &Search<'_>) -> (Found, u64) {
        let snapshot = self.app.catalog.snapshot();
        let scope;
        let in_run;
        let search = match &self.run {
            None => search,
            Some((pinned, state)) => {
                scope = search.scope.in_run(pinned, state);
                in_run = Search {
                    scope: &scope,
                    ..*search
                };
                &in_run
            }
        };
        let found = self.app.decisions.search(&snapshot, search);
        (found, snapshot.revision())
    }
}
