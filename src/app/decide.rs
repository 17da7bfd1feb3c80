//! Decisions about single tools (the AuthZEN endpoints, and any executor asking before it
//! calls): a request is admitted by charging one request to the caller's `decisions` budget on
//! arrival ([`App::decisions`]); each distinct evaluation a batch needs beyond the first costs
//! one more, before any is made; whose claims a caller may have evaluated, and whether answers
//! carry their reasons, are the read rules'.

use super::App;
use crate::domain::claims::Claims;
use crate::service::Caller;
use crate::service::Refusal;
use crate::service::decisions::{Answer, Found, Plan, Question, Scope, Search, Semantic};
use crate::service::limits::{Limited, RouteClass};
use crate::service::read::{self, Subject};

/// A decision request of one caller, admitted (its arrival paid for).
pub struct DecisionDesk<'a> {
    app: &'a App,
    caller: &'a Caller,
}

impl App {
    /// Admits a decision request of `caller`: one request from its `decisions` budget.
    pub fn decisions<'a>(&'a self, caller: &'a Caller) -> Result<DecisionDesk<'a>, Limited> {
        self.limits.charge(RouteClass::Decisions, caller)?;
        Ok(DecisionDesk { app: self, caller })
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
        let questions = match self.caller.run() {
            None => questions,
            Some(run) => {
                scopes = questions.iter().map(|q| q.scope.in_run(run)).collect();
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
        let search = match self.caller.run() {
            None => search,
            Some(run) => {
                scope = search.scope.in_run(run);
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
