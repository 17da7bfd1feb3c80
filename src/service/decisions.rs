//! Decisions at call time: "may this subject call this tool?", for every transport that asks
//! (the AuthZEN endpoints, and MCP listings and `tools/call` through
//! [`McpTools`](crate::service::McpTools)).
//!
//! The answer is defined as "the tool is in the manifest `GET /agents/tools` would give for
//! these claims and this scope at this revision", and computed from the same evaluation
//! ([`Snapshot::evaluate`], the manifest's own steps), so that listing and calling can never
//! disagree. Evaluations are cached per (claims key, scope) and revision like rendered
//! manifests, and a batch evaluates each distinct (claims key, scope) once ([`Plan`], which
//! also says how many that is before any is made, for the caller to charge): a hundred
//! questions about one subject cost one claim evaluation, or none when it is cached, then one
//! bit test per tool.
//!
//! Only the action `call` on resources of type `tool` is decided; anything else is a deny,
//! never an error, so that a client cannot learn from the answer whether a tool exists. The
//! caller decides who may ask about which claims (the HTTP layer: the caller's own, or any with
//! the admin rule) and whether to show the [`Reason`] (admins only).

use std::sync::Arc;

use serde::Serialize;

pub use self::plan::Plan;
use super::access::AccessCache;
use crate::cache::{CacheStats, RevisionCache};
use crate::domain::access::Decided;
use crate::domain::claims::Claims;
use crate::domain::fingerprint::Fingerprint;
use crate::domain::manifest::ManifestOptions;
use crate::domain::snapshot::Snapshot;
use crate::domain::verdict::{Deciding, Evaluation, Narrowing, Verdict};

/// The actions decided (AuthZEN `action.name`): calling a tool, and nothing else. Any other
/// name is a question answered "no" with the reason `unsupported_action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Call,
}

impl Action {
    /// The action named `name`, if it is one toolgate decides.
    pub fn parse(name: &str) -> Option<Action> {
        (name == Action::Call.as_str()).then_some(Action::Call)
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Action::Call => "call",
        }
    }
}

/// The resource types decided (AuthZEN `resource.type`): tools. Any other type is answered
/// "no" with the reason `unsupported_resource_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceType {
    Tool,
}

impl ResourceType {
    /// The type named `name`, if it is one toolgate decides.
    pub fn parse(name: &str) -> Option<ResourceType> {
        (name == ResourceType::Tool.as_str()).then_some(ResourceType::Tool)
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            ResourceType::Tool => "tool",
        }
    }
}

/// The one action decided, as named on the wire.
pub const CALL: &str = Action::Call.as_str();
/// The one resource type decided, as named on the wire.
pub const TOOL: &str = ResourceType::Tool.as_str();

/// The narrowing a decision takes from its context: the `state` and `group` options of
/// `GET /agents/tools`, with their meaning (docs/semantics.md section 6). Hidden tools are never
/// permitted (there is no `include_disabled` for decisions), and there is no `tools` filter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Scope {
    /// Keep tools available in this state.
    pub state: Option<String>,
    /// Keep members of these granted groups (ids or names); `*` keeps all, empty keeps none.
    pub groups: Option<Vec<String>>,
    /// A run's pinned set (docs/runs.md): set by the gateway for a run token, never by a
    /// request.
    pub pinned: Option<crate::domain::run::Pinned>,
}

impl Scope {
    fn options(&self) -> ManifestOptions {
        ManifestOptions {
            include_disabled: false,
            groups: self.groups.clone(),
            state: self.state.clone(),
            tools: None,
            pinned: self.pinned.clone(),
            ..ManifestOptions::default()
        }
    }

    /// This scope for a caller acting in a run: within `pinned`, in `state` (which replaces
    /// any `context.state` asked for).
    pub fn in_run(&self, pinned: &crate::domain::run::Pinned, state: &str) -> Scope {
        Scope {
            state: Some(state.to_owned()),
            groups: self.groups.clone(),
            pinned: Some(pinned.clone()),
        }
    }
}

/// Whether toolgate decides `action` on resources of `resource_type` (calling tools).
pub fn decided(action: &str, resource_type: &str) -> bool {
    Action::parse(action).is_some() && ResourceType::parse(resource_type).is_some()
}

/// One question: may `claims` do `action` on the resource `resource_type`/`tool_id` in `scope`?
#[derive(Debug, Clone, Copy)]
pub struct Question<'q> {
    pub claims: &'q Claims,
    pub scope: &'q Scope,
    pub action: &'q str,
    pub resource_type: &'q str,
    pub tool_id: &'q str,
}

/// How a batch is answered (AuthZEN `options.evaluations_semantic`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Semantic {
    /// Every question, in order.
    #[default]
    ExecuteAll,
    /// In order, up to and including the first deny.
    DenyOnFirstDeny,
    /// In order, up to and including the first permit.
    PermitOnFirstPermit,
}

impl Semantic {
    /// The names, as AuthZEN spells them.
    pub const NAMES: [&'static str; 3] = [
        "execute_all",
        "deny_on_first_deny",
        "permit_on_first_permit",
    ];

    pub fn parse(name: &str) -> Option<Semantic> {
        match name {
            "execute_all" => Some(Semantic::ExecuteAll),
            "deny_on_first_deny" => Some(Semantic::DenyOnFirstDeny),
            "permit_on_first_permit" => Some(Semantic::PermitOnFirstPermit),
            _ => None,
        }
    }

    /// Whether the batch ends with this answer.
    fn stops_at(self, permitted: bool) -> bool {
        match self {
            Semantic::ExecuteAll => false,
            Semantic::DenyOnFirstDeny => !permitted,
            Semantic::PermitOnFirstPermit => permitted,
        }
    }
}

/// The answer to one question.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub permitted: bool,
    /// Why, when asked for (admins only: it names policies and groups, and tells an unknown
    /// tool from a tool not granted).
    pub reason: Option<Reason>,
}

/// Why a decision went the way it did, for admins: a stable `code`, a sentence, and the
/// deciding policy with its priority and groups where one decided.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Reason {
    /// `granted`, `denied`, `not_granted`, `hidden`, `narrowed`, `unknown_tool`,
    /// `unsupported_action` or `unsupported_resource_type`.
    #[schema(schema_with = reason_code_schema)]
    pub code: ReasonCode,
    /// The reason in words, e.g. `denied by policy 'p-deny' (priority 100) through group
    /// 'g-admin'`.
    pub message: String,
    /// The deciding policy (a grant: the first by id among those granting the tool at the
    /// highest priority covering it; a deny: the first denying it there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// The deciding policy's groups that contain the tool (allowed ones for a grant, denied
    /// ones for a deny).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub group_ids: Vec<String>,
    /// For `hidden`: `disabled`, `deprecated`, `source missing` or `source disabled`; for
    /// `narrowed`: the option that removed the tool, `group` or `state`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<&'static str>,
}

/// What decided an answer: [`Reason::code`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasonCode {
    Granted,
    Denied,
    NotGranted,
    Hidden,
    Narrowed,
    UnknownTool,
    UnsupportedAction,
    UnsupportedResourceType,
}

impl ReasonCode {
    pub const ALL: [ReasonCode; 8] = [
        ReasonCode::Granted,
        ReasonCode::Denied,
        ReasonCode::NotGranted,
        ReasonCode::Hidden,
        ReasonCode::Narrowed,
        ReasonCode::UnknownTool,
        ReasonCode::UnsupportedAction,
        ReasonCode::UnsupportedResourceType,
    ];

    /// The code as sent.
    pub const fn as_str(self) -> &'static str {
        match self {
            ReasonCode::Granted => "granted",
            ReasonCode::Denied => "denied",
            ReasonCode::NotGranted => "not_granted",
            ReasonCode::Hidden => "hidden",
            ReasonCode::Narrowed => "narrowed",
            ReasonCode::UnknownTool => "unknown_tool",
            ReasonCode::UnsupportedAction => "unsupported_action",
            ReasonCode::UnsupportedResourceType => "unsupported_resource_type",
        }
    }
}

fn reason_code_schema() -> utoipa::openapi::schema::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(ReasonCode::ALL.map(ReasonCode::as_str)))
        .build()
}

impl Reason {
    fn plain(code: ReasonCode, message: String) -> Reason {
        Reason {
            code,
            message,
            policy_id: None,
            priority: None,
            group_ids: Vec::new(),
            detail: None,
        }
    }

    fn decided(code: ReasonCode, by: &Deciding<'_>, message: String) -> Reason {
        Reason {
            code,
            message,
            policy_id: Some(by.policy_id.to_owned()),
            priority: Some(by.priority),
            group_ids: by.group_ids.iter().map(|&id| id.to_owned()).collect(),
            detail: None,
        }
    }

    fn of(verdict: &Verdict<'_>, scope: &Scope) -> Reason {
        match verdict {
            Verdict::Granted(by) => {
                Reason::decided(ReasonCode::Granted, by, policy_words("granted", by))
            }
            Verdict::Denied(by) => {
                Reason::decided(ReasonCode::Denied, by, policy_words("denied", by))
            }
            Verdict::NotGranted => Reason::plain(
                ReasonCode::NotGranted,
                "no matching policy grants or denies this tool".to_owned(),
            ),
            Verdict::Hidden { by, because } => Reason {
                detail: Some(because.as_str()),
                ..Reason::decided(
                    ReasonCode::Hidden,
                    by,
                    format!(
                        "{}, but agents do not see it: {}",
                        policy_words("granted", by),
                        because.as_str()
                    ),
                )
            },
            Verdict::Narrowed { by, option } => {
                let why = match option {
                    Narrowing::Group => format!(
                        "none of the granted groups containing it is in context.group ({})",
                        scope.groups.as_deref().unwrap_or_default().join(", ")
                    ),
                    Narrowing::State => format!(
                        "it is not available in the state '{}'",
                        scope.state.as_deref().unwrap_or_default()
                    ),
                    Narrowing::Tools => "the option 'tools' removed it".to_owned(),
                    Narrowing::Delegation => "the delegation chain of these claims does not \
                                              keep it (a scope along the chain, or a delegating \
                                              token that does not hold it)"
                        .to_owned(),
                };
                Reason {
                    detail: Some(option.as_str()),
                    ..Reason::decided(
                        ReasonCode::Narrowed,
                        by,
                        format!("{}, but {why}", policy_words("granted", by)),
                    )
                }
            }
            Verdict::UnknownTool => {
                Reason::plain(ReasonCode::UnknownTool, "no tool has this id".to_owned())
            }
        }
    }
}

/// `granted by policy 'p' (priority 10) through groups 'a', 'b'`.
fn policy_words(verb: &str, by: &Deciding<'_>) -> String {
    let groups: Vec<String> = by.group_ids.iter().map(|id| format!("'{id}'")).collect();
    let through = match groups.len() {
        0 => String::new(),
        1 => format!(" through group {}", groups[0]),
        _ => format!(" through groups {}", groups.join(", ")),
    };
    format!(
        "{verb} by policy '{}' (priority {}){through}",
        by.policy_id, by.priority
    )
}

/// The deny for a question about another action than `call` or another resource type than
/// `tool`, with its reason when `explain`.
fn unsupported(question: &Question<'_>, explain: bool) -> Answer {
    let reason = || {
        if Action::parse(question.action).is_none() {
            Reason::plain(
                ReasonCode::UnsupportedAction,
                format!(
                    "only the action '{CALL}' is decided, not '{}'",
                    question.action
                ),
            )
        } else {
            Reason::plain(
                ReasonCode::UnsupportedResourceType,
                format!(
                    "only resources of type '{TOOL}' are decided, not '{}'",
                    question.resource_type
                ),
            )
        }
    };
    Answer {
        permitted: false,
        reason: explain.then(reason),
    }
}

/// One page of the tools a subject may call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Tool ids, ascending.
    pub tool_ids: Vec<String>,
    /// Whether more follow the last one.
    pub more: bool,
    /// How many the subject may call in all.
    pub total: usize,
}

/// A search: the tools `claims` may `action` in `scope`, after `after`, at most `limit`.
#[derive(Debug, Clone, Copy)]
pub struct Search<'q> {
    pub claims: &'q Claims,
    pub scope: &'q Scope,
    pub action: &'q str,
    pub resource_type: &'q str,
    /// The last id of the previous page: the page starts after it.
    pub after: Option<&'q str>,
    pub limit: usize,
}

/// Answers decisions and searches from cached evaluations.
pub struct Decisions {
    /// Access decisions by claims key (shared with the manifest service).
    access: Arc<AccessCache>,
    /// Evaluations per (decision, options), for one revision.
    evaluations: RevisionCache<Decided, Arc<Evaluation>>,
}

impl Decisions {
    /// Takes access decisions from `access` and keeps at most `budget` bytes of evaluations
    /// (a few bitsets of the catalog's size each), least recently used first out.
    pub fn new(access: Arc<AccessCache>, budget: usize) -> Decisions {
        Decisions {
            access,
            evaluations: RevisionCache::new(budget, |key, evaluation| {
                size_of::<Decided>()
                    + key.heap_bytes()
                    + size_of::<Evaluation>()
                    + evaluation.heap_bytes()
            }),
        }
    }

    /// Counters of the evaluations kept (for metrics).
    pub fn evaluation_stats(&self) -> CacheStats {
        self.evaluations.stats()
    }

    /// Answers `questions` in order at `snapshot`, under `semantic`: all of them, or up to and
    /// including the first deny (or permit). Each distinct (claims key, scope) is evaluated
    /// once; `explain` adds the reasons.
    pub fn decide(
        &self,
        snapshot: &Snapshot,
        questions: &[Question<'_>],
        semantic: Semantic,
        explain: bool,
    ) -> Vec<Answer> {
        self.answer(snapshot, &Plan::new(snapshot, questions), semantic, explain)
    }

    /// Answers the questions of `plan` (made at `snapshot`) as [`Decisions::decide`] does.
    /// An evaluation is made when the first question needing it is reached, so a semantic that
    /// stops early spares the rest.
    pub fn answer(
        &self,
        snapshot: &Snapshot,
        plan: &Plan<'_>,
        semantic: Semantic,
        explain: bool,
    ) -> Vec<Answer> {
        let mut made: Vec<Option<Arc<Evaluation>>> = vec![None; plan.needed.len()];
        let mut answers = Vec::with_capacity(plan.questions.len());
        for (question, need) in plan.questions.iter().zip(&plan.needs) {
            let answer = match need {
                None => unsupported(question, explain),
                Some(at) => {
                    let evaluation = made[*at].get_or_insert_with(|| {
                        let needed = &plan.needed[*at];
                        self.listing_keyed(
                            snapshot,
                            &needed.fingerprint,
                            needed.claims,
                            needed.scope.options(),
                        )
                    });
                    if explain {
                        let verdict = snapshot.verdict(evaluation, question.tool_id);
                        Answer {
                            permitted: verdict.is_granted(),
                            reason: Some(Reason::of(&verdict, question.scope)),
                        }
                    } else {
                        Answer {
                            permitted: snapshot.lists(evaluation, question.tool_id),
                            reason: None,
                        }
                    }
                }
            };
            let stop = semantic.stops_at(answer.permitted);
            answers.push(answer);
            if stop {
                break;
            }
        }
        answers
    }

    /// One page of the tools `search.claims` may call in its scope, ascending by id.
    pub fn search(&self, snapshot: &Snapshot, search: &Search<'_>) -> Found {
        if !decided(search.action, search.resource_type) {
            return Found {
                tool_ids: Vec::new(),
                more: false,
                total: 0,
            };
        }
        let evaluation = self.evaluation(snapshot, search.claims, search.scope);
        let mut page = snapshot.listed_ids(&evaluation, search.after);
        let tool_ids: Vec<String> = page
            .by_ref()
            .take(search.limit)
            .map(str::to_owned)
            .collect();
        Found {
            tool_ids,
            more: page.next().is_some(),
            total: evaluation.len(),
        }
    }

    /// The evaluation of `claims` in `scope` at `snapshot`: cached, or made and kept.
    fn evaluation(&self, snapshot: &Snapshot, claims: &Claims, scope: &Scope) -> Arc<Evaluation> {
        self.listing(snapshot, claims, scope.options())
    }

    /// The evaluation of `claims` under the full request `options` of a listing (MCP
    /// `tools/list`), from the same caches: the claims' decision (keyed by the projection onto
    /// what the snapshot's policies read only: the evaluation, unlike a manifest, never
    /// depends on whether the subject is an admin — whether it may ask for `include_disabled`
    /// is the caller's business), then the evaluation per (decision, options).
    pub fn listing(
        &self,
        snapshot: &Snapshot,
        claims: &Claims,
        options: ManifestOptions,
    ) -> Arc<Evaluation> {
        let fingerprint = Fingerprint::of_projection(claims, &[snapshot.read_paths()]);
        self.listing_keyed(snapshot, &fingerprint, claims, options)
    }

    /// [`Decisions::listing`] for a caller that has the claims key already (any projection of
    /// `claims` at `snapshot` that covers what its policies read, e.g. a manifest's key):
    /// the key is not computed twice.
    pub fn listing_keyed(
        &self,
        snapshot: &Snapshot,
        fingerprint: &Fingerprint,
        claims: &Claims,
        options: ManifestOptions,
    ) -> Arc<Evaluation> {
        let matched = self.access.matched(snapshot, fingerprint, claims);
        self.listing_of(snapshot, &Decided { matched, options }, claims)
    }

    /// The evaluation of `decided`, the decision for `claims` at `snapshot` (from
    /// [`AccessCache::matched`]): kept, or made now and kept.
    pub fn listing_of(
        &self,
        snapshot: &Snapshot,
        decided: &Decided,
        claims: &Claims,
    ) -> Arc<Evaluation> {
        if let Some(hit) = self.evaluations.get(decided, snapshot.revision()) {
            return hit;
        }
        match snapshot.evaluation_of(&decided.matched, &decided.options) {
            Some(evaluation) => {
                let evaluation = Arc::new(evaluation);
                self.evaluations.insert_at(
                    decided.clone(),
                    snapshot.revision(),
                    Arc::clone(&evaluation),
                );
                evaluation
            }
            // A decision of another revision (both come from `snapshot`, so never): the claims
            // themselves decide, and nothing is kept.
            None => Arc::new(snapshot.evaluate(claims, &decided.options)),
        }
    }
}

mod plan;
/// Evaluations are kept for one revision and never carried: nothing to do when a snapshot
/// continues the last, and everything to drop when the revisions went back.
impl super::catalog::CarryOver for Decisions {
    fn carry(&self, _continuity: &crate::domain::continuity::Continuity) {}

    fn restart(&self) {
        self.evaluations.reset();
    }
}

#[cfg(test)]
mod tests;
