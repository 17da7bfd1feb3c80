//! Decisions at call time: "may this subject call this tool?", for every transport that asks
//! (the AuthZEN endpoints, MCP `tools/call` to come).
//!
//! The answer is defined as "the tool is in the manifest `GET /agents/tools` would give for
//! these claims and this scope at this revision", and computed from the same evaluation
//! ([`Snapshot::evaluate`], the manifest's own steps), so that listing and calling can never
//! disagree. Evaluations are cached per (claims key, scope) and revision like rendered
//! manifests, and a batch evaluates each distinct (claims, scope) once: a hundred questions
//! about one subject cost one claim evaluation, or none when it is cached, then one bit test
//! per tool.
//!
//! Only the action `call` on resources of type `tool` is decided; anything else is a deny,
//! never an error, so that a client cannot learn from the answer whether a tool exists. The
//! caller decides who may ask about which claims (the HTTP layer: the caller's own, or any with
//! the admin rule) and whether to show the [`Reason`] (admins only).

use std::sync::Arc;

use serde::Serialize;

use crate::cache::{CacheKey, RevisionCache};
use crate::domain::claims::Claims;
use crate::domain::manifest::ManifestOptions;
use crate::domain::snapshot::Snapshot;
use crate::domain::verdict::{Deciding, Evaluation, Verdict};

/// The one action decided: calling a tool.
pub const CALL: &str = "call";
/// The one resource type decided.
pub const TOOL: &str = "tool";

/// The narrowing a decision takes from its context: the `state` and `group` options of
/// `GET /agents/tools`, with their meaning (SEMANTICS.md section 6). Hidden tools are never
/// permitted (there is no `include_disabled` for decisions), and there is no `tools` filter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    /// Keep tools available in this state.
    pub state: Option<String>,
    /// Keep members of these granted groups (ids or names); `*` keeps all, empty keeps none.
    pub groups: Option<Vec<String>>,
}

impl Scope {
    fn options(&self) -> ManifestOptions {
        ManifestOptions {
            include_disabled: false,
            groups: self.groups.clone(),
            state: self.state.clone(),
            tools: None,
        }
    }
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
    pub code: &'static str,
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

/// The values of [`Reason::code`].
pub const REASON_CODES: [&str; 8] = [
    "granted",
    "denied",
    "not_granted",
    "hidden",
    "narrowed",
    "unknown_tool",
    "unsupported_action",
    "unsupported_resource_type",
];

fn reason_code_schema() -> utoipa::openapi::schema::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(REASON_CODES))
        .build()
}

impl Reason {
    fn plain(code: &'static str, message: String) -> Reason {
        Reason {
            code,
            message,
            policy_id: None,
            priority: None,
            group_ids: Vec::new(),
            detail: None,
        }
    }

    fn decided(code: &'static str, by: &Deciding<'_>, message: String) -> Reason {
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
            Verdict::Granted(by) => Reason::decided("granted", by, policy_words("granted", by)),
            Verdict::Denied(by) => Reason::decided("denied", by, policy_words("denied", by)),
            Verdict::NotGranted => Reason::plain(
                "not_granted",
                "no matching policy grants or denies this tool".to_owned(),
            ),
            Verdict::Hidden { by, because } => Reason {
                detail: Some(*because),
                ..Reason::decided(
                    "hidden",
                    by,
                    format!(
                        "{}, but agents do not see it: {because}",
                        policy_words("granted", by)
                    ),
                )
            },
            Verdict::Narrowed { by, option } => {
                let why = match *option {
                    "group" => format!(
                        "none of the granted groups containing it is in context.group ({})",
                        scope.groups.as_deref().unwrap_or_default().join(", ")
                    ),
                    "state" => format!(
                        "it is not available in the state '{}'",
                        scope.state.as_deref().unwrap_or_default()
                    ),
                    other => format!("the option '{other}' removed it"),
                };
                Reason {
                    detail: Some(*option),
                    ..Reason::decided(
                        "narrowed",
                        by,
                        format!("{}, but {why}", policy_words("granted", by)),
                    )
                }
            }
            Verdict::UnknownTool => Reason::plain("unknown_tool", "no tool has this id".to_owned()),
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

/// Evaluations kept per (claims key, scope), for one revision.
pub type EvaluationCache = RevisionCache<Arc<Evaluation>>;

/// Answers decisions and searches from cached evaluations.
pub struct Decisions {
    cache: EvaluationCache,
}

impl Decisions {
    /// Keeps at most `capacity` evaluations (emptied and refilled when full, as the manifest
    /// cache).
    pub fn new(capacity: usize) -> Decisions {
        Decisions {
            cache: EvaluationCache::new(capacity),
        }
    }

    /// The evaluations kept (for metrics).
    pub fn cache(&self) -> &EvaluationCache {
        &self.cache
    }

    /// Answers `questions` in order at `snapshot`, under `semantic`: all of them, or up to and
    /// including the first deny (or permit). Each distinct (claims, scope) is evaluated once;
    /// `explain` adds the reasons.
    pub fn decide(
        &self,
        snapshot: &Snapshot,
        questions: &[Question<'_>],
        semantic: Semantic,
        explain: bool,
    ) -> Vec<Answer> {
        let mut evaluated: Vec<(&Claims, &Scope, Arc<Evaluation>)> = Vec::new();
        let mut answers = Vec::with_capacity(questions.len());
        for question in questions {
            let answer = if question.action != CALL {
                Answer {
                    permitted: false,
                    reason: explain.then(|| {
                        Reason::plain(
                            "unsupported_action",
                            format!(
                                "only the action '{CALL}' is decided, not '{}'",
                                question.action
                            ),
                        )
                    }),
                }
            } else if question.resource_type != TOOL {
                Answer {
                    permitted: false,
                    reason: explain.then(|| {
                        Reason::plain(
                            "unsupported_resource_type",
                            format!(
                                "only resources of type '{TOOL}' are decided, not '{}'",
                                question.resource_type
                            ),
                        )
                    }),
                }
            } else {
                let evaluation =
                    self.evaluated(snapshot, &mut evaluated, question.claims, question.scope);
                if explain {
                    let verdict = snapshot.verdict(&evaluation, question.tool_id);
                    Answer {
                        permitted: verdict.is_granted(),
                        reason: Some(Reason::of(&verdict, question.scope)),
                    }
                } else {
                    Answer {
                        permitted: snapshot.lists(&evaluation, question.tool_id),
                        reason: None,
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
        if search.action != CALL || search.resource_type != TOOL {
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

    /// The evaluation of `claims` in `scope`, once per distinct pair within one call
    /// (`evaluated` remembers them; claims given once as a batch default are the same
    /// reference, compared without looking inside).
    fn evaluated<'q>(
        &self,
        snapshot: &Snapshot,
        evaluated: &mut Vec<(&'q Claims, &'q Scope, Arc<Evaluation>)>,
        claims: &'q Claims,
        scope: &'q Scope,
    ) -> Arc<Evaluation> {
        let same = |a: &Claims, b: &Claims| std::ptr::eq(a, b) || a == b;
        if let Some((_, _, evaluation)) = evaluated
            .iter()
            .find(|(c, s, _)| same(c, claims) && (std::ptr::eq(*s, scope) || *s == scope))
        {
            return Arc::clone(evaluation);
        }
        let evaluation = self.evaluation(snapshot, claims, scope);
        evaluated.push((claims, scope, Arc::clone(&evaluation)));
        evaluation
    }

    /// The evaluation of `claims` in `scope` at `snapshot`: cached, or made and kept. The key
    /// projects the claims onto what the snapshot's policies read only: a decision, unlike a
    /// manifest, never depends on whether the subject is an admin.
    fn evaluation(&self, snapshot: &Snapshot, claims: &Claims, scope: &Scope) -> Arc<Evaluation> {
        let key = CacheKey::new(snapshot, &[], claims, scope.options());
        if let Some(hit) = self.cache.get(&key, snapshot.revision()) {
            return hit;
        }
        let evaluation = Arc::new(snapshot.evaluate(claims, &key.options));
        self.cache
            .insert_at(key, snapshot.revision(), Arc::clone(&evaluation));
        evaluation
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::domain::model::Catalog;

    fn snapshot(revision: u64) -> Snapshot {
        let mut catalog: Catalog = serde_json::from_value(json!({
            "sources": [{"id": "s", "name": "s", "type": "manual"}],
            "tools": [
                {"source_id": "s", "operation_id": "read", "name": "read", "method": "GET",
                 "available_in_states": ["research"]},
                {"source_id": "s", "operation_id": "write", "name": "write", "method": "POST"},
                {"source_id": "s", "operation_id": "drop", "name": "drop", "method": "DELETE"},
                {"source_id": "s", "operation_id": "off", "name": "off", "method": "GET", "enabled": false}],
            "groups": [
                {"id": "g-all", "name": "all", "selectors": [{}]},
                {"id": "g-reads", "name": "reads", "selectors": [{"method_pattern": "GET"}]},
                {"id": "g-drop", "name": "drop", "explicit_tool_ids": ["s:drop"]}],
            "policies": [
                {"id": "p-staff", "name": "staff", "priority": 10, "allowed_group_ids": ["g-all"],
                 "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "staff"}]},
                {"id": "p-readers", "name": "readers", "allowed_group_ids": ["g-reads"],
                 "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "reader"}]},
                {"id": "p-no-drop", "name": "no drop", "priority": 100, "denied_group_ids": ["g-drop"],
                 "claim_matchers": [{"json_path": "depth", "operator": "gte", "value": 1}]}]
        }))
        .expect("catalog");
        catalog.normalize();
        catalog.sort_by_id();
        Snapshot::compile(catalog, revision).expect("compiles")
    }

    fn claims(value: Value) -> Claims {
        value.as_object().expect("an object").clone()
    }

    fn ask<'q>(claims: &'q Claims, scope: &'q Scope, tool_id: &'q str) -> Question<'q> {
        Question {
            claims,
            scope,
            action: CALL,
            resource_type: TOOL,
            tool_id,
        }
    }

    fn permitted(answers: &[Answer]) -> Vec<bool> {
        answers.iter().map(|answer| answer.permitted).collect()
    }

    #[test]
    fn a_decision_is_membership_in_the_manifest() {
        let snapshot = snapshot(1);
        let decisions = Decisions::new(100);
        let tools = ["s:drop", "s:off", "s:read", "s:write", "s:ghost"];
        for value in [
            json!({"sub": "a", "roles": ["staff"]}),
            json!({"sub": "a", "roles": ["staff"], "depth": 1}),
            json!({"sub": "b", "roles": ["reader"]}),
            json!({"sub": "c"}),
        ] {
            let claims = claims(value);
            for scope in [
                Scope::default(),
                Scope {
                    state: Some("research".into()),
                    groups: None,
                },
                Scope {
                    state: None,
                    groups: Some(vec!["reads".into()]),
                },
            ] {
                let manifest = snapshot.manifest(&claims, &scope.options());
                let questions: Vec<Question<'_>> =
                    tools.iter().map(|id| ask(&claims, &scope, id)).collect();
                let answers = decisions.decide(&snapshot, &questions, Semantic::ExecuteAll, false);
                let expected: Vec<bool> = tools
                    .iter()
                    .map(|id| manifest.groups_of(id).is_some())
                    .collect();
                assert_eq!(permitted(&answers), expected, "{claims:?} {scope:?}");
            }
        }
    }

    #[test]
    fn a_batch_about_one_subject_costs_one_evaluation() {
        let snapshot = snapshot(1);
        let decisions = Decisions::new(100);
        let staff = claims(json!({"sub": "a", "roles": ["staff"]}));
        let scope = Scope::default();
        let ids: Vec<String> = (0..100).map(|i| format!("s:tool{i}")).collect();
        let questions: Vec<Question<'_>> = ids.iter().map(|id| ask(&staff, &scope, id)).collect();
        decisions.decide(&snapshot, &questions, Semantic::ExecuteAll, false);
        assert_eq!(
            decisions.cache().stats(),
            (0, 1),
            "one lookup, one evaluation"
        );
        // Equal claims given separately (not the same reference) share the evaluation too.
        let copy = staff.clone();
        let questions = [ask(&staff, &scope, "s:read"), ask(&copy, &scope, "s:read")];
        decisions.decide(&snapshot, &questions, Semantic::ExecuteAll, true);
        assert_eq!(decisions.cache().stats(), (1, 1), "then a cache hit");
        // Another subject, another scope: one more each.
        let reader = claims(json!({"sub": "b", "roles": ["reader"]}));
        let research = Scope {
            state: Some("research".into()),
            groups: None,
        };
        let questions = [
            ask(&staff, &research, "s:read"),
            ask(&reader, &scope, "s:read"),
            ask(&reader, &scope, "s:write"),
        ];
        decisions.decide(&snapshot, &questions, Semantic::ExecuteAll, false);
        assert_eq!(decisions.cache().stats(), (1, 3));
    }

    #[test]
    fn claims_that_differ_only_where_no_policy_reads_share_an_evaluation() {
        let first = snapshot(1);
        let decisions = Decisions::new(100);
        let scope = Scope::default();
        let token = claims(json!({"sub": "a", "roles": ["staff"], "exp": 1}));
        let refreshed = claims(json!({"sub": "a", "roles": ["staff"], "exp": 2}));
        decisions.decide(
            &first,
            &[ask(&token, &scope, "s:read")],
            Semantic::ExecuteAll,
            false,
        );
        decisions.decide(
            &first,
            &[ask(&refreshed, &scope, "s:read")],
            Semantic::ExecuteAll,
            false,
        );
        assert_eq!(decisions.cache().stats(), (1, 1));
        // A new revision evaluates again: nothing of the old one is used.
        let newer = snapshot(2);
        decisions.decide(
            &newer,
            &[ask(&token, &scope, "s:read")],
            Semantic::ExecuteAll,
            false,
        );
        assert_eq!(decisions.cache().stats(), (1, 2));
    }

    #[test]
    fn semantics_stop_after_the_first_deny_or_permit() {
        let snapshot = snapshot(1);
        let decisions = Decisions::new(100);
        let reader = claims(json!({"sub": "b", "roles": ["reader"]}));
        let scope = Scope::default();
        let questions: Vec<Question<'_>> = ["s:read", "s:write", "s:read", "s:drop"]
            .iter()
            .map(|id| ask(&reader, &scope, id))
            .collect();
        let cases = [
            (Semantic::ExecuteAll, vec![true, false, true, false]),
            (Semantic::DenyOnFirstDeny, vec![true, false]),
            (Semantic::PermitOnFirstPermit, vec![true]),
        ];
        for (semantic, expected) in cases {
            let answers = decisions.decide(&snapshot, &questions, semantic, false);
            assert_eq!(permitted(&answers), expected, "{semantic:?}");
        }
        let all_denied = [
            ask(&reader, &scope, "s:write"),
            ask(&reader, &scope, "s:drop"),
        ];
        let answers =
            decisions.decide(&snapshot, &all_denied, Semantic::PermitOnFirstPermit, false);
        assert_eq!(
            permitted(&answers),
            [false, false],
            "no permit: all answered"
        );
        for name in Semantic::NAMES {
            assert!(Semantic::parse(name).is_some(), "{name}");
        }
        assert_eq!(Semantic::parse("all"), None);
    }

    #[test]
    fn other_actions_and_resource_types_are_denied_with_a_reason() {
        let snapshot = snapshot(1);
        let decisions = Decisions::new(100);
        let staff = claims(json!({"sub": "a", "roles": ["staff"]}));
        let scope = Scope::default();
        let read = ask(&staff, &scope, "s:read");
        let questions = [
            Question {
                action: "list",
                ..read
            },
            Question {
                resource_type: "document",
                ..read
            },
            read,
        ];
        let answers = decisions.decide(&snapshot, &questions, Semantic::ExecuteAll, true);
        assert_eq!(permitted(&answers), [false, false, true]);
        let codes: Vec<&str> = answers
            .iter()
            .map(|answer| answer.reason.as_ref().expect("explained").code)
            .collect();
        assert_eq!(
            codes,
            ["unsupported_action", "unsupported_resource_type", "granted"]
        );
        assert_eq!(
            decisions.cache().stats(),
            (0, 1),
            "only the call was evaluated"
        );
        let plain = decisions.decide(&snapshot, &questions, Semantic::ExecuteAll, false);
        assert!(plain.iter().all(|answer| answer.reason.is_none()));
    }

    #[test]
    fn reasons_name_the_deciding_policy_and_groups() {
        let snapshot = snapshot(1);
        let decisions = Decisions::new(100);
        let deep = claims(json!({"sub": "a", "roles": ["staff"], "depth": 2}));
        let research = Scope {
            state: Some("x".into()),
            groups: None,
        };
        let reason = |scope: &Scope, tool: &str| {
            decisions.decide(
                &snapshot,
                &[ask(&deep, scope, tool)],
                Semantic::ExecuteAll,
                true,
            )[0]
            .reason
            .clone()
            .expect("explained")
        };
        let denied = reason(&Scope::default(), "s:drop");
        assert_eq!(denied.code, "denied");
        assert_eq!(denied.policy_id.as_deref(), Some("p-no-drop"));
        assert_eq!(denied.priority, Some(100));
        assert_eq!(denied.group_ids, ["g-drop"]);
        assert_eq!(
            denied.message,
            "denied by policy 'p-no-drop' (priority 100) through group 'g-drop'"
        );
        let granted = reason(&Scope::default(), "s:write");
        assert_eq!(
            granted.message,
            "granted by policy 'p-staff' (priority 10) through group 'g-all'"
        );
        let hidden = reason(&Scope::default(), "s:off");
        assert_eq!((hidden.code, hidden.detail), ("hidden", Some("disabled")));
        let narrowed = reason(&research, "s:read");
        assert_eq!(
            (narrowed.code, narrowed.detail),
            ("narrowed", Some("state"))
        );
        assert!(narrowed.message.ends_with("not available in the state 'x'"));
        assert_eq!(reason(&Scope::default(), "s:nope").code, "unknown_tool");
        let nobody = claims(json!({"sub": "z"}));
        let answer = &decisions.decide(
            &snapshot,
            &[ask(&nobody, &Scope::default(), "s:read")],
            Semantic::ExecuteAll,
            true,
        )[0];
        assert_eq!(
            answer.reason.as_ref().expect("explained").code,
            "not_granted"
        );
    }

    #[test]
    fn search_pages_through_the_manifest_in_id_order() {
        let snapshot = snapshot(1);
        let decisions = Decisions::new(100);
        let staff = claims(json!({"sub": "a", "roles": ["staff"]}));
        let scope = Scope::default();
        let page = |after: Option<&str>, limit| {
            decisions.search(
                &snapshot,
                &Search {
                    claims: &staff,
                    scope: &scope,
                    action: CALL,
                    resource_type: TOOL,
                    after,
                    limit,
                },
            )
        };
        let first = page(None, 2);
        assert_eq!(first.tool_ids, ["s:drop", "s:read"]);
        assert!(first.more);
        assert_eq!(first.total, 3);
        let second = page(Some("s:read"), 2);
        assert_eq!(second.tool_ids, ["s:write"]);
        assert!(!second.more);
        let exact = page(None, 3);
        assert!(!exact.more, "a full last page says there is no more");
        let other = decisions.search(
            &snapshot,
            &Search {
                claims: &staff,
                scope: &scope,
                action: "delete",
                resource_type: TOOL,
                after: None,
                limit: 10,
            },
        );
        assert_eq!((other.tool_ids.len(), other.total), (0, 0));
    }
}
