//! Decisions about single tools — "may these claims call tool X?" (the AuthZEN endpoints, and
//! MCP `tools/call` to come) — defined as "X is in the manifest `GET /agents/tools` would list
//! for these claims and options at this revision", and computed by the very steps the manifest
//! is built from ([`Snapshot::listed`]) minus the entries, the etag and the body.
//!
//! An [`Evaluation`] is the claim evaluation, done once: a batch of decisions for one subject
//! costs one evaluation and then one bit test per tool. It keeps the decision it was made
//! from, so that an admin can be told why ([`Verdict`]) without evaluating the claims again.

use fixedbitset::FixedBitSet;

use super::claims::Claims;
use super::decide::Decision;
use super::explain::Hidden;
use super::manifest::ManifestOptions;
use super::snapshot::{Snapshot, tool_index};

/// Claims evaluated under request options at one revision: the tools their manifest lists,
/// and the policy decision behind it. Meaningful only with a snapshot of that revision.
#[derive(Debug)]
pub struct Evaluation {
    revision: u64,
    decision: Decision,
    /// The manifest's tools, as snapshot indices.
    listed: FixedBitSet,
    options: ManifestOptions,
}

impl Evaluation {
    /// The revision the claims were evaluated at.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// How many tools the manifest lists.
    pub fn len(&self) -> usize {
        self.listed.count_ones(..)
    }

    pub fn is_empty(&self) -> bool {
        self.listed.is_clear()
    }

    /// Bytes this evaluation holds on the heap (for caches bounded in bytes): its bitsets,
    /// lists and options.
    pub fn heap_bytes(&self) -> usize {
        let bits = |set: &FixedBitSet| set.len().div_ceil(8);
        let decision = &self.decision;
        bits(&self.listed)
            + bits(&decision.granted)
            + bits(&decision.denied)
            + bits(&decision.granted_group_set)
            + 4 * (decision.matched.capacity() + decision.granted_groups.capacity())
            + self.options.heap_bytes()
    }
}

/// The request option that removed a granted, visible tool from a manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Narrowing {
    Group,
    State,
    Tools,
    /// The caller's delegation chain: a scope, or an ancestor that does not hold the tool.
    Delegation,
}

impl Narrowing {
    /// The option as named in requests and decision details.
    pub const fn as_str(self) -> &'static str {
        match self {
            Narrowing::Group => "group",
            Narrowing::State => "state",
            Narrowing::Tools => "tools",
            Narrowing::Delegation => "delegation",
        }
    }
}

/// Why a tool is, or is not, in the manifest of an [`Evaluation`] (for admins).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict<'s> {
    /// Listed: granted at the deciding priority, visible, kept by every option.
    Granted(Deciding<'s>),
    /// A matching policy at the deciding priority denies it (docs/semantics.md section 4).
    Denied(Deciding<'s>),
    /// No matching policy covers it.
    NotGranted,
    /// Granted, but agents do not see it, for this reason.
    Hidden { by: Deciding<'s>, because: Hidden },
    /// Granted and visible, but this request option removed it.
    Narrowed { by: Deciding<'s>, option: Narrowing },
    /// No tool has this id.
    UnknownTool,
}

impl Verdict<'_> {
    /// Whether the tool is in the manifest.
    pub fn is_granted(&self) -> bool {
        matches!(self, Verdict::Granted(_))
    }
}

/// The policy that decides a tool: the first by id among the matching policies of the highest
/// priority covering it that grant it (or, for a denied tool, deny it), as the explanation's
/// `deciding_policy`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deciding<'s> {
    pub policy_id: &'s str,
    pub priority: i64,
    /// The groups of that policy containing the tool, ascending: its allowed groups for a
    /// grant, its denied groups for a deny.
    pub group_ids: Vec<&'s str>,
}

impl Snapshot {
    /// Evaluates `claims` under `options`: the same decision and the same steps as
    /// [`Snapshot::manifest`], without building the manifest.
    pub fn evaluate(&self, claims: &Claims, options: &ManifestOptions) -> Evaluation {
        self.evaluation_from(self.decide(claims), options)
    }

    pub(super) fn evaluation_from(
        &self,
        decision: Decision,
        options: &ManifestOptions,
    ) -> Evaluation {
        let (listed, _warnings) = self.listed(&decision, options);
        Evaluation {
            revision: self.revision,
            decision,
            listed,
            options: options.clone(),
        }
    }

    /// Whether the manifest of `evaluation` lists `tool_id`. Never for an evaluation of another
    /// revision, whose tool indices mean nothing here.
    pub fn lists(&self, evaluation: &Evaluation, tool_id: &str) -> bool {
        evaluation.revision == self.revision
            && tool_index(self, tool_id).is_some_and(|t| evaluation.listed.contains(t as usize))
    }

    /// The ids the manifest of `evaluation` lists, ascending, from the first one after `after`
    /// (every one when `None`). Nothing for an evaluation of another revision.
    pub fn listed_ids<'s>(
        &'s self,
        evaluation: &'s Evaluation,
        after: Option<&str>,
    ) -> impl Iterator<Item = &'s str> + 's {
        self.listed_indices(evaluation, after)
            .map(|t| self.tools[t].id.as_str())
    }

    /// The snapshot indices of the tools the manifest of `evaluation` lists, ascending, from the
    /// first one whose id comes after `after` (every one when `None`). Nothing for an
    /// evaluation of another revision.
    pub(super) fn listed_indices<'s>(
        &'s self,
        evaluation: &'s Evaluation,
        after: Option<&str>,
    ) -> impl Iterator<Item = usize> + 's {
        let start = match after {
            None => 0,
            Some(after) => self.tools.partition_point(|tool| tool.id.as_str() <= after),
        };
        let same_revision = evaluation.revision == self.revision;
        evaluation
            .listed
            .ones()
            .filter(move |&t| same_revision && t >= start)
    }

    /// Why `tool_id` is or is not in the manifest of `evaluation`. For an evaluation of another
    /// revision, [`Verdict::NotGranted`] (what [`Snapshot::lists`] says of it).
    pub fn verdict(&self, evaluation: &Evaluation, tool_id: &str) -> Verdict<'_> {
        let Some(t) = tool_index(self, tool_id) else {
            return Verdict::UnknownTool;
        };
        if evaluation.revision != self.revision {
            return Verdict::NotGranted;
        }
        let t = t as usize;
        let decision = &evaluation.decision;
        let Some(by) = self.deciding(decision, t) else {
            return Verdict::NotGranted;
        };
        if decision.denied.contains(t) {
            return Verdict::Denied(by);
        }
        if evaluation.listed.contains(t) {
            return Verdict::Granted(by);
        }
        if decision
            .restriction
            .as_ref()
            .is_some_and(|allowed| !allowed.contains(t))
        {
            return Verdict::Narrowed {
                by,
                option: Narrowing::Delegation,
            };
        }
        let options = &evaluation.options;
        if !options.include_disabled
            && let Some(because) = self.hidden_because(t)
        {
            return Verdict::Hidden { by, because };
        }
        // Each narrowing step on its own, in the manifest's order, on this tool alone.
        let mut alone = FixedBitSet::with_capacity(self.tools.len());
        alone.insert(t);
        if let Some(wanted) = &options.groups {
            self.narrow_by_groups(&mut alone, wanted, &decision.granted_groups);
            if !alone.contains(t) {
                return Verdict::Narrowed {
                    by,
                    option: Narrowing::Group,
                };
            }
        }
        if let Some(state) = &options.state {
            self.narrow_by_state(&mut alone, state);
            if !alone.contains(t) {
                return Verdict::Narrowed {
                    by,
                    option: Narrowing::State,
                };
            }
        }
        Verdict::Narrowed {
            by,
            option: Narrowing::Tools,
        }
    }

    /// The policy deciding tool `t`, if a matching policy covers it. `decision.matched` is in
    /// policy order (priority, highest first, then id), so the first covering policy gives the
    /// deciding priority and the first fitting one at that priority has the smallest id.
    fn deciding(&self, decision: &Decision, t: usize) -> Option<Deciding<'_>> {
        let covers = |groups: &[u32]| {
            groups
                .iter()
                .any(|&g| self.groups[g as usize].members.contains(t))
        };
        let mut matched = decision
            .matched
            .iter()
            .map(|&index| &self.policies[index as usize]);
        let priority = matched
            .clone()
            .find(|policy| covers(&policy.allowed) || covers(&policy.denied))?
            .priority;
        let denied = decision.denied.contains(t);
        let policy = matched.find(|policy| {
            policy.priority == priority
                && if denied {
                    covers(&policy.denied)
                } else {
                    covers(&policy.allowed)
                }
        })?;
        let groups = if denied {
            &policy.denied
        } else {
            &policy.allowed
        };
        Some(Deciding {
            policy_id: &self.catalog.policies[policy.catalog_position].id,
            priority,
            group_ids: groups
                .iter()
                .map(|&g| &self.groups[g as usize])
                .filter(|group| group.members.contains(t))
                .map(|group| group.id.as_str())
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::model::Catalog;

    fn snapshot() -> Snapshot {
        let mut catalog: Catalog = serde_json::from_value(json!({
            "sources": [{"id": "s", "name": "s", "type": "manual"},
                        {"id": "off", "name": "off", "type": "manual", "enabled": false}],
            "tools": [
                {"source_id": "s", "operation_id": "read", "name": "read", "method": "GET"},
                {"source_id": "s", "operation_id": "write", "name": "write", "method": "POST",
                 "available_in_states": ["edit"]},
                {"source_id": "s", "operation_id": "admin", "name": "admin", "method": "DELETE"},
                {"source_id": "s", "operation_id": "old", "name": "old", "method": "GET", "enabled": false},
                {"source_id": "off", "operation_id": "x", "name": "x", "method": "GET"},
                {"source_id": "s", "operation_id": "orphan", "name": "orphan", "method": "PUT"}],
            "groups": [
                {"id": "g-all", "name": "all", "selectors": [{"source_pattern": "*"}],
                 "excluded_tool_ids": ["s:orphan"]},
                {"id": "g-reads", "name": "reads", "selectors": [{"method_pattern": "GET"}]},
                {"id": "g-admin", "name": "admin", "explicit_tool_ids": ["s:admin"]}],
            "policies": [
                {"id": "p-staff", "name": "staff", "priority": 10, "allowed_group_ids": ["g-all"],
                 "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "staff"}]},
                {"id": "p-no-admin", "name": "no admin", "priority": 100, "denied_group_ids": ["g-admin"],
                 "claim_matchers": [{"json_path": "depth", "operator": "gt", "value": 0}]},
                {"id": "p-a-reads", "name": "reads", "priority": 10, "allowed_group_ids": ["g-reads", "g-all"],
                 "claim_matchers": [{"json_path": "sub", "operator": "exists"}]}]
        }))
        .expect("catalog");
        catalog.normalize();
        catalog.sort_by_id();
        Snapshot::compile(catalog, 5).expect("compiles")
    }

    use crate::domain::claims::claims_of as claims;

    fn deciding<'s>(policy_id: &'s str, priority: i64, group_ids: &[&'s str]) -> Deciding<'s> {
        Deciding {
            policy_id,
            priority,
            group_ids: group_ids.to_vec(),
        }
    }

    #[test]
    fn an_evaluation_lists_exactly_the_manifest() {
        let snapshot = snapshot();
        for (value, options) in [
            (json!({"sub": "a"}), ManifestOptions::default()),
            (
                json!({"sub": "a", "roles": ["staff"], "depth": 1}),
                ManifestOptions::default(),
            ),
            (
                json!({"roles": ["staff"]}),
                ManifestOptions {
                    state: Some("view".into()),
                    groups: Some(vec!["reads".into(), "g-all".into()]),
                    ..ManifestOptions::default()
                },
            ),
            (json!({}), ManifestOptions::default()),
        ] {
            let claims = claims(value);
            let manifest = snapshot.manifest(&claims, &options);
            let evaluation = snapshot.evaluate(&claims, &options);
            let listed: Vec<&str> = snapshot.listed_ids(&evaluation, None).collect();
            let expected: Vec<&str> = manifest.tool_ids().collect();
            assert_eq!(listed, expected, "{claims:?}");
            assert_eq!(evaluation.len(), manifest.len());
            for tool in &snapshot.catalog().tools {
                assert_eq!(
                    snapshot.lists(&evaluation, &tool.id),
                    manifest.groups_of(&tool.id).is_some(),
                    "{}",
                    tool.id
                );
            }
        }
    }

    #[test]
    fn listed_ids_resume_after_any_id_even_one_not_listed() {
        let snapshot = snapshot();
        let evaluation = snapshot.evaluate(
            &claims(json!({"sub": "a", "roles": ["staff"]})),
            &ManifestOptions::default(),
        );
        let all: Vec<&str> = snapshot.listed_ids(&evaluation, None).collect();
        assert_eq!(all, ["s:admin", "s:read", "s:write"]);
        let after = |id| {
            snapshot
                .listed_ids(&evaluation, Some(id))
                .collect::<Vec<_>>()
        };
        assert_eq!(after("s:admin"), ["s:read", "s:write"]);
        assert_eq!(after("s:old"), ["s:read", "s:write"], "s:old is not listed");
        assert_eq!(after("s:b"), ["s:read", "s:write"], "nor does s:b exist");
        assert!(after("s:write").is_empty());
        assert!(after("zzz").is_empty());
    }

    #[test]
    fn verdicts_name_the_deciding_policy_and_what_removed_a_tool() {
        let snapshot = snapshot();
        let staff = claims(json!({"sub": "a", "roles": ["staff"], "depth": 1}));
        let options = ManifestOptions {
            state: Some("view".into()),
            ..ManifestOptions::default()
        };
        let evaluation = snapshot.evaluate(&staff, &options);
        let cases = [
            (
                "s:read",
                // Two policies at priority 10 grant it: the first by id decides.
                Verdict::Granted(deciding("p-a-reads", 10, &["g-all", "g-reads"])),
            ),
            (
                "s:admin",
                Verdict::Denied(deciding("p-no-admin", 100, &["g-admin"])),
            ),
            (
                "s:old",
                Verdict::Hidden {
                    by: deciding("p-a-reads", 10, &["g-all", "g-reads"]),
                    because: Hidden::Disabled,
                },
            ),
            (
                "off:x",
                Verdict::Hidden {
                    by: deciding("p-a-reads", 10, &["g-all", "g-reads"]),
                    because: Hidden::SourceDisabled,
                },
            ),
            (
                "s:write",
                Verdict::Narrowed {
                    by: deciding("p-a-reads", 10, &["g-all"]),
                    option: Narrowing::State,
                },
            ),
            ("s:orphan", Verdict::NotGranted),
            ("s:nothing", Verdict::UnknownTool),
        ];
        for (tool, expected) in cases {
            let verdict = snapshot.verdict(&evaluation, tool);
            assert_eq!(verdict, expected, "{tool}");
            assert_eq!(
                verdict.is_granted(),
                snapshot.lists(&evaluation, tool),
                "{tool}"
            );
        }
        let grouped = snapshot.evaluate(
            &staff,
            &ManifestOptions {
                groups: Some(vec!["reads".into()]),
                ..ManifestOptions::default()
            },
        );
        assert_eq!(
            snapshot.verdict(&grouped, "s:write"),
            Verdict::Narrowed {
                by: deciding("p-a-reads", 10, &["g-all"]),
                option: Narrowing::Group,
            }
        );
    }

    #[test]
    fn the_deciding_policy_is_the_explanations() {
        let snapshot = snapshot();
        for value in [
            json!({"sub": "a"}),
            json!({"sub": "a", "roles": ["staff"], "depth": 2}),
            json!({"roles": ["staff"], "depth": 2}),
        ] {
            let claims = claims(value);
            let options = ManifestOptions::default();
            let explained = snapshot.explain(&claims, &options);
            let evaluation = snapshot.evaluate(&claims, &options);
            for tool in &explained.explanation.tools {
                let by = match snapshot.verdict(&evaluation, &tool.tool_id) {
                    Verdict::Granted(by) | Verdict::Denied(by) => by,
                    Verdict::Hidden { by, .. } | Verdict::Narrowed { by, .. } => by,
                    other => panic!("{}: covered, yet {other:?}", tool.tool_id),
                };
                assert_eq!(by.policy_id, tool.deciding_policy, "{}", tool.tool_id);
                assert_eq!(by.priority, tool.priority, "{}", tool.tool_id);
            }
        }
    }

    #[test]
    fn an_evaluation_of_another_revision_permits_nothing() {
        let snapshot = snapshot();
        let claims = claims(json!({"sub": "a", "roles": ["staff"]}));
        let evaluation = snapshot.evaluate(&claims, &ManifestOptions::default());
        let newer = Snapshot::compile(snapshot.catalog().clone(), 6).expect("compiles");
        assert!(snapshot.lists(&evaluation, "s:read"));
        assert!(!newer.lists(&evaluation, "s:read"));
        assert_eq!(newer.listed_ids(&evaluation, None).count(), 0);
        assert_eq!(newer.verdict(&evaluation, "s:read"), Verdict::NotGranted);
    }
}
