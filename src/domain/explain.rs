//! Why an agent gets what it gets (docs/semantics.md section 7), for admin preview and for
//! `GET /admin/groups/{id}/tools`.
//!
//! Explanations are computed on demand from the same compiled snapshot and the same decision as
//! the manifest, so they cannot disagree with what agents are served. They are admin-only and
//! not on the hot path, so clarity wins over speed here.

use serde::Serialize;

use super::claims::Claims;
use super::decide::{ClaimEvaluation, Decision};
use super::delegation::{Chain, ScopeItem, depth};
use super::manifest::{Manifest, ManifestOptions};
use super::snapshot::{CompiledGroup, Snapshot};
use super::source_config::withheld;

/// One group a tool is a member of ([`Snapshot::groups_of_tool`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolMembership {
    pub group_id: String,
    pub name: String,
    /// As [`GroupMember::via`].
    pub via: Vec<String>,
}

/// The whole story for one set of claims.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// Every policy of the catalog, in evaluation order (priority, highest first); inactive
    /// policies last.
    pub policies: Vec<PolicyExplanation>,
    /// The groups named by matching policies, by id.
    pub groups: Vec<GroupExplanation>,
    /// Every tool a matching policy covers, by id (within the delegation chain, if any).
    pub tools: Vec<ToolExplanation>,
    /// For delegated claims: the chain and what it took away.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegation: Option<DelegationExplanation>,
    /// For claims acting in a run (options with a pinned set): what the run rules took away.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<RunExplanation>,
}

/// What a run's rules did to its claims' tools (docs/runs.md): granted and visible tools that
/// the pinned set does not hold (reason `run_pinned`), and pinned ones the run's state does
/// not allow (reason `run_state`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunExplanation {
    /// The run the claims act in, when they name one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The state the tools were taken in (none: every state).
    pub state: Option<String>,
    /// `run_pinned`: granted now, not when the run started.
    pub run_pinned: Vec<String>,
    /// `run_state`: pinned, but not available in `state`.
    pub run_state: Vec<String>,
}

/// What a delegation chain did to a claim set's tools (docs/semantics.md section 6, step 4).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DelegationExplanation {
    /// Nested `act` levels of the claims.
    pub depth: usize,
    /// The scope of each delegation along the chain, oldest first (empty when the chain
    /// cannot be read, which keeps nothing).
    pub scopes: Vec<Vec<String>>,
    /// Tools the claims' own policies grant that the chain does not keep: outside a scope, or
    /// not held by a delegating token.
    pub removed: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyExplanation {
    pub policy_id: String,
    pub name: String,
    pub priority: i64,
    pub active: bool,
    pub matched: bool,
    /// The first matcher that did not hold (only for active policies that did not match).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_matcher: Option<FailedMatcher>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailedMatcher {
    /// Position in `claim_matchers`.
    pub index: usize,
    pub json_path: String,
    pub operator: String,
    /// Whether the claim was present at all (absent claims fail every operator but
    /// `not_exists`).
    pub claim_present: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupExplanation {
    pub group_id: String,
    pub name: String,
    pub active: bool,
    /// Matching policies that allow this group.
    pub allowed_by: Vec<String>,
    /// Matching policies that deny this group.
    pub denied_by: Vec<String>,
    pub members: Vec<GroupMember>,
    /// Tools that selectors or explicit ids would have added but an exclusion removed.
    pub excluded: Vec<String>,
}

/// One member of a group and what brought it in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupMember {
    pub tool_id: String,
    pub name: String,
    /// `selectors[i]` for each selector it matched (all of them: selectors AND), and
    /// `explicit` when listed in `explicit_tool_ids`.
    pub via: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolExplanation {
    pub tool_id: String,
    /// `granted` or `denied`.
    pub decision: ToolDecision,
    /// The priority of the level that decided.
    pub priority: i64,
    /// The policy that decided (the first by id among those of the deciding level that
    /// granted, or denied, it).
    pub deciding_policy: String,
    /// The groups through which matching policies cover the tool, by id.
    pub groups: Vec<String>,
    /// Visible to agents: enabled, not deprecated, source present and enabled.
    pub visible: bool,
    /// Why it is not visible, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hidden_because: Option<Hidden>,
    /// Whether it is in the manifest computed with the request's options.
    pub in_manifest: bool,
}

/// What the deciding level of policies did with a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolDecision {
    Granted,
    Denied,
}

impl ToolDecision {
    /// The decision as written in explanations.
    pub const fn as_str(self) -> &'static str {
        match self {
            ToolDecision::Granted => "granted",
            ToolDecision::Denied => "denied",
        }
    }
}

/// The values of [`ToolExplanation::decision`].
pub const DECISIONS: [&str; 2] = [
    ToolDecision::Granted.as_str(),
    ToolDecision::Denied.as_str(),
];
/// Why a granted tool is not visible to agents, in the order the reasons are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Hidden {
    #[serde(rename = "disabled")]
    Disabled,
    #[serde(rename = "deprecated")]
    Deprecated,
    #[serde(rename = "source missing")]
    SourceMissing,
    #[serde(rename = "source disabled")]
    SourceDisabled,
    /// The upstream changed the tool and its source's pinning is `hide`.
    #[serde(rename = "awaiting approval")]
    AwaitingApproval,
}

impl Hidden {
    /// The reason as written in explanations and decision details.
    pub const fn as_str(self) -> &'static str {
        match self {
            Hidden::Disabled => "disabled",
            Hidden::Deprecated => "deprecated",
            Hidden::SourceMissing => "source missing",
            Hidden::SourceDisabled => "source disabled",
            Hidden::AwaitingApproval => "awaiting approval",
        }
    }
}

/// The values of [`ToolExplanation::hidden_because`], in the order they are checked.
pub const HIDDEN_BECAUSE: [&str; 5] = [
    Hidden::Disabled.as_str(),
    Hidden::Deprecated.as_str(),
    Hidden::SourceMissing.as_str(),
    Hidden::SourceDisabled.as_str(),
    Hidden::AwaitingApproval.as_str(),
];

/// A manifest together with its explanation.
pub struct Explained<'s> {
    pub manifest: Manifest<'s>,
    pub explanation: Explanation,
}

impl Snapshot {
    /// The manifest and the explanation of every step that led to it.
    pub fn explain(&self, claims: &Claims, options: &ManifestOptions) -> Explained<'_> {
        let decision = self.decide(claims);
        let manifest = self.manifest_from(&decision, options);
        let explanation = Explanation {
            policies: self.explain_policies(claims, &decision),
            groups: self.explain_groups(&decision),
            tools: self.explain_tools(&decision, &manifest),
            delegation: self.explain_delegation(claims, &decision),
            run: self.explain_run(claims, &decision, options),
        };
        Explained {
            manifest,
            explanation,
        }
    }

    fn explain_run(
        &self,
        claims: &Claims,
        decision: &Decision,
        options: &ManifestOptions,
    ) -> Option<RunExplanation> {
        let pinned = options.pinned.as_ref()?;
        let mut visible = decision.granted.clone();
        visible.intersect_with(&self.visible);
        let (mut run_pinned, mut run_state) = (Vec::new(), Vec::new());
        for t in visible.ones() {
            let tool = &self.tools[t];
            if !pinned.contains(&tool.id) {
                run_pinned.push(tool.id.clone());
            } else if let Some(state) = &options.state
                && !super::run::available_in(tool.available_in_states.as_deref(), state)
            {
                run_state.push(tool.id.clone());
            }
        }
        Some(RunExplanation {
            run_id: match super::run::RunClaim::of(claims) {
                Some(Ok(run)) => Some(run.id),
                _ => None,
            },
            state: options.state.clone(),
            run_pinned,
            run_state,
        })
    }

    fn explain_delegation(
        &self,
        claims: &Claims,
        decision: &Decision,
    ) -> Option<DelegationExplanation> {
        let allowed = decision.restriction.as_ref()?;
        let scopes = match Chain::of(claims) {
            Some(Ok(chain)) => chain
                .scopes
                .iter()
                .map(|scope| scope.iter().map(ScopeItem::to_text).collect())
                .collect(),
            _ => Vec::new(),
        };
        let mut removed = self.decide_matched(decision.matched.clone()).granted;
        removed.difference_with(allowed);
        Some(DelegationExplanation {
            depth: depth(claims),
            scopes,
            removed: removed.ones().map(|t| self.tools[t].id.clone()).collect(),
        })
    }

    /// A group's members and what brought each in; `None` for an unknown group id.
    pub fn group_members(&self, group_id: &str) -> Option<Vec<GroupMember>> {
        let group = &self.groups[*self.group_index.get(group_id)? as usize];
        Some(self.members_of(group))
    }

    /// The groups tool `tool_id` is a member of (active ones; an inactive group has none), in
    /// id order, each with how it got in; `None` when there is no such tool.
    pub fn groups_of_tool(&self, tool_id: &str) -> Option<Vec<ToolMembership>> {
        let t = super::snapshot::tool_index(self, tool_id)? as usize;
        let groups = self
            .groups
            .iter()
            .filter(|group| group.members.contains(t))
            .map(|group| {
                let catalog_group = &self.catalog.groups[group.catalog_position];
                let mut via = Vec::new();
                if group.selected.contains(t) {
                    via.extend(
                        (0..catalog_group.selectors.len()).map(|i| format!("selectors[{i}]")),
                    );
                }
                if group.explicit.binary_search(&(t as u32)).is_ok() {
                    via.push("explicit".to_owned());
                }
                ToolMembership {
                    group_id: catalog_group.id.clone(),
                    name: catalog_group.name.clone(),
                    via,
                }
            })
            .collect::<Vec<_>>();
        let mut groups = groups;
        groups.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        Some(groups)
    }

    fn members_of(&self, group: &CompiledGroup) -> Vec<GroupMember> {
        let selector_count = self.catalog.groups[group.catalog_position].selectors.len();
        group
            .members
            .ones()
            .map(|t| {
                let mut via = Vec::new();
                if group.selected.contains(t) {
                    via.extend((0..selector_count).map(|i| format!("selectors[{i}]")));
                }
                if group.explicit.binary_search(&(t as u32)).is_ok() {
                    via.push("explicit".to_owned());
                }
                GroupMember {
                    tool_id: self.tools[t].id.clone(),
                    name: self.tools[t].name.clone(),
                    via,
                }
            })
            .collect()
    }

    fn explain_policies(&self, claims: &Claims, decision: &Decision) -> Vec<PolicyExplanation> {
        let mut evaluation = ClaimEvaluation::new(self, claims);
        let mut out: Vec<PolicyExplanation> = self
            .policies
            .iter()
            .enumerate()
            .map(|(index, compiled)| {
                let policy = &self.catalog.policies[compiled.catalog_position];
                let matched = decision.matched.contains(&(index as u32));
                let failed_matcher = if matched {
                    None
                } else {
                    compiled
                        .matchers
                        .iter()
                        .position(|&m| !evaluation.matcher(self, m))
                        .map(|position| {
                            let shared = &self.matchers[compiled.matchers[position] as usize];
                            let matcher = &policy.claim_matchers[position];
                            FailedMatcher {
                                index: position,
                                json_path: matcher.json_path.clone(),
                                operator: matcher.operator.clone(),
                                claim_present: evaluation.claim(self, shared.path).is_some(),
                            }
                        })
                };
                PolicyExplanation {
                    policy_id: policy.id.clone(),
                    name: policy.name.clone(),
                    priority: policy.priority,
                    active: true,
                    matched,
                    failed_matcher,
                }
            })
            .collect();
        out.extend(
            self.catalog
                .policies
                .iter()
                .filter(|policy| !policy.active)
                .map(|policy| PolicyExplanation {
                    policy_id: policy.id.clone(),
                    name: policy.name.clone(),
                    priority: policy.priority,
                    active: false,
                    matched: false,
                    failed_matcher: None,
                }),
        );
        out
    }

    fn explain_groups(&self, decision: &Decision) -> Vec<GroupExplanation> {
        let mut allowed_by = vec![Vec::new(); self.groups.len()];
        let mut denied_by = vec![Vec::new(); self.groups.len()];
        for &index in &decision.matched {
            let compiled = &self.policies[index as usize];
            let id = &self.catalog.policies[compiled.catalog_position].id;
            for &g in &compiled.allowed {
                allowed_by[g as usize].push(id.clone());
            }
            for &g in &compiled.denied {
                denied_by[g as usize].push(id.clone());
            }
        }
        let mut out = Vec::new();
        for (g, group) in self.groups.iter().enumerate() {
            let mut allowed = std::mem::take(&mut allowed_by[g]);
            let mut denied = std::mem::take(&mut denied_by[g]);
            if allowed.is_empty() && denied.is_empty() {
                continue;
            }
            allowed.sort();
            denied.sort();
            let would_add: Vec<usize> = group
                .excluded
                .iter()
                .map(|&t| t as usize)
                .filter(|&t| {
                    group.selected.contains(t) || group.explicit.binary_search(&(t as u32)).is_ok()
                })
                .collect();
            out.push(GroupExplanation {
                group_id: group.id.clone(),
                name: group.name.clone(),
                active: group.active,
                allowed_by: allowed,
                denied_by: denied,
                members: self.members_of(group),
                excluded: would_add
                    .iter()
                    .map(|&t| self.tools[t].id.clone())
                    .collect(),
            });
        }
        out
    }

    fn explain_tools(&self, decision: &Decision, manifest: &Manifest<'_>) -> Vec<ToolExplanation> {
        let mut covered = decision.granted.clone();
        covered.union_with(&decision.denied);
        covered
            .ones()
            .map(|t| {
                let denied = decision.denied.contains(t);
                // The deciding level is the highest priority among matching policies covering t.
                let mut deciding: Option<(i64, String)> = None;
                let mut groups = Vec::new();
                for &index in &decision.matched {
                    let compiled = &self.policies[index as usize];
                    let covers = |ids: &[u32]| {
                        ids.iter()
                            .any(|&g| self.groups[g as usize].members.contains(t))
                    };
                    let (allows, denies) = (covers(&compiled.allowed), covers(&compiled.denied));
                    for &g in compiled.allowed.iter().chain(&compiled.denied) {
                        let group = &self.groups[g as usize];
                        if group.members.contains(t) && !groups.contains(&group.id) {
                            groups.push(group.id.clone());
                        }
                    }
                    let verdict_matches = if denied { denies } else { allows && !denies };
                    let id = &self.catalog.policies[compiled.catalog_position].id;
                    let better = match &deciding {
                        None => true,
                        Some((priority, best)) => {
                            compiled.priority > *priority
                                || (compiled.priority == *priority && id < best)
                        }
                    };
                    if (allows || denies) && verdict_matches && better {
                        deciding = Some((compiled.priority, id.clone()));
                    }
                }
                groups.sort();
                let (priority, deciding_policy) =
                    deciding.expect("a covered tool has a deciding policy");
                let tool = &self.tools[t];
                ToolExplanation {
                    tool_id: tool.id.clone(),
                    decision: if denied {
                        ToolDecision::Denied
                    } else {
                        ToolDecision::Granted
                    },
                    priority,
                    deciding_policy,
                    groups,
                    visible: self.visible.contains(t),
                    hidden_because: self.hidden_because(t),
                    in_manifest: manifest.groups_of(&tool.id).is_some(),
                }
            })
            .collect()
    }

    /// Why tool `t` is not visible to agents (in [`Hidden`]'s order of precedence), or `None`
    /// when it is.
    pub(super) fn hidden_because(&self, t: usize) -> Option<Hidden> {
        let tool = &self.tools[t];
        let catalog_tool = &self.catalog.tools[tool.catalog_position];
        let source = self
            .catalog
            .sources
            .iter()
            .find(|s| s.id == catalog_tool.source_id);
        if !tool.enabled {
            Some(Hidden::Disabled)
        } else if tool.deprecated {
            Some(Hidden::Deprecated)
        } else {
            match source {
                None => Some(Hidden::SourceMissing),
                Some(source) if !source.enabled => Some(Hidden::SourceDisabled),
                Some(source) if withheld(catalog_tool, source) => Some(Hidden::AwaitingApproval),
                Some(_) => None,
            }
        }
    }
}
