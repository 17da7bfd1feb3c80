//! Why a tool is not among the tools some claims get, from the same [`Explanation`] that
//! `GET /agents/tools?explain=true` and `POST /admin/preview` answer with: a typed reason, and
//! its one rendering as a sentence (the console's "Why not?" shows it). Nothing is decided
//! here: every fact comes from the explanation and the compiled snapshot.

use std::fmt;

use super::explain::{Explanation, FailedMatcher, Hidden, ToolDecision};
use super::snapshot::Snapshot;

/// Why a tool is not among the tools of explained claims.
#[derive(Debug, Clone, PartialEq)]
pub enum WhyNot {
    /// The deciding level of policies denies it.
    Denied {
        policy: String,
        priority: i64,
        groups: Vec<String>,
    },
    /// Granted, but its state hides it from agents.
    Hidden {
        policy: String,
        priority: i64,
        hidden: Hidden,
    },
    /// Granted and visible, but the request's options left it out.
    LeftOut,
    /// Granted now, but not when the run the claims act in started (`run_pinned`).
    RunPinned,
    /// Pinned by the run, but not available in its state (`run_state`).
    RunState { state: String, needs: Vec<String> },
    /// No policy these claims match covers it.
    NotGranted {
        /// Its active groups, by id (none: no policy can grant it).
        groups: Vec<String>,
        /// Active policies allowing one of those groups that these claims do not match.
        would: Vec<WouldGrant>,
        /// Groups (by name) that exclude it.
        excluded_from: Vec<String>,
    },
}

/// A policy that would grant the tool if the claims matched it.
#[derive(Debug, Clone, PartialEq)]
pub struct WouldGrant {
    pub name: String,
    pub priority: i64,
    /// The first of its matchers that does not hold, when one is known.
    pub failed: Option<FailedMatcher>,
}

impl Snapshot {
    /// Why a granted, visible tool was left out: a run rule, else the request's options.
    fn left_out(&self, explanation: &Explanation, tool_id: &str) -> WhyNot {
        let Some(run) = &explanation.run else {
            return WhyNot::LeftOut;
        };
        if run.run_pinned.iter().any(|id| id == tool_id) {
            return WhyNot::RunPinned;
        }
        if run.run_state.iter().any(|id| id == tool_id) {
            let needs = self
                .catalog()
                .tools
                .iter()
                .find(|tool| tool.id == tool_id)
                .and_then(|tool| tool.available_in_states.clone())
                .unwrap_or_default();
            return WhyNot::RunState {
                state: run.state.clone().unwrap_or_default(),
                needs,
            };
        }
        WhyNot::LeftOut
    }

    /// Why `tool_id` is not among the tools `explanation` explains the grants of.
    pub fn why_not(&self, explanation: &Explanation, tool_id: &str) -> WhyNot {
        if let Some(tool) = explanation.tools.iter().find(|t| t.tool_id == tool_id) {
            return match (tool.decision, tool.hidden_because) {
                (ToolDecision::Denied, _) => WhyNot::Denied {
                    policy: tool.deciding_policy.clone(),
                    priority: tool.priority,
                    groups: tool.groups.clone(),
                },
                (ToolDecision::Granted, Some(hidden)) => WhyNot::Hidden {
                    policy: tool.deciding_policy.clone(),
                    priority: tool.priority,
                    hidden,
                },
                (ToolDecision::Granted, None) => self.left_out(explanation, tool_id),
            };
        }
        let catalog = self.catalog();
        let excluded_from = catalog
            .groups
            .iter()
            .filter(|group| group.excluded_tool_ids.iter().any(|id| id == tool_id))
            .map(|group| group.name.clone())
            .collect();
        let groups: Vec<String> = self
            .groups_of_tool(tool_id)
            .unwrap_or_default()
            .into_iter()
            .map(|membership| membership.group_id)
            .collect();
        let would = if groups.is_empty() {
            Vec::new()
        } else {
            explanation
                .policies
                .iter()
                .filter(|policy| policy.active && !policy.matched)
                .filter(|policy| {
                    catalog.policies.iter().any(|p| {
                        p.id == policy.policy_id
                            && p.allowed_group_ids.iter().any(|g| groups.contains(g))
                    })
                })
                .map(|policy| WouldGrant {
                    name: policy.name.clone(),
                    priority: policy.priority,
                    failed: policy.failed_matcher.clone(),
                })
                .collect()
        };
        WhyNot::NotGranted {
            groups,
            would,
            excluded_from,
        }
    }
}

impl fmt::Display for WhyNot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WhyNot::Denied {
                policy,
                priority,
                groups,
            } => write!(
                f,
                "denied by policy '{policy}' at priority {priority} (through group {})",
                groups.join(", ")
            ),
            WhyNot::Hidden {
                policy,
                priority,
                hidden,
            } => write!(
                f,
                "granted by policy '{policy}' at priority {priority}, but its state hides it \
                 from agents: {}",
                hidden.as_str()
            ),
            WhyNot::LeftOut => f.write_str("granted, but left out by the options of the request"),
            WhyNot::RunPinned => f.write_str(
                "granted now, but not when the run started: a run keeps the tools it started \
                 with (run_pinned)",
            ),
            WhyNot::RunState { state, needs } => write!(
                f,
                "not available in the run's state '{state}': it needs one of [{}] (run_state)",
                needs.join(", ")
            ),
            WhyNot::NotGranted {
                groups,
                would,
                excluded_from,
            } => {
                if groups.is_empty() {
                    f.write_str("it is in no active group, so no policy can grant it")?;
                } else {
                    write!(
                        f,
                        "no policy these claims match allows its groups ({})",
                        groups.join(", ")
                    )?;
                    for policy in would {
                        write!(f, "; {policy}")?;
                    }
                }
                if !excluded_from.is_empty() {
                    write!(
                        f,
                        "; it is excluded from group {}",
                        excluded_from.join(", ")
                    )?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for WouldGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let WouldGrant {
            name,
            priority,
            failed,
        } = self;
        match failed {
            Some(failed) => write!(
                f,
                "'{name}' (priority {priority}) would, but its claim_matchers[{}] ({} {}) does \
                 not hold",
                failed.index, failed.json_path, failed.operator
            ),
            None => write!(
                f,
                "'{name}' (priority {priority}) would, but does not match"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::claims::claims_of;
    use crate::domain::manifest::ManifestOptions;
    use crate::domain::model::Catalog;

    /// Four tools, each kept from `{"sub": "a"}` for another reason: denied at a higher
    /// priority, hidden by its state, in a group no matching policy allows (one policy would,
    /// were `role` admin), and in no group at all (and excluded from one); and one granted.
    fn snapshot() -> Snapshot {
        let mut catalog: Catalog = serde_json::from_value(json!({
            "sources": [{"id": "s", "name": "s", "type": "manual"}],
            "tools": [
                {"source_id": "s", "operation_id": "denied", "name": "denied"},
                {"source_id": "s", "operation_id": "off", "name": "off", "enabled": false},
                {"source_id": "s", "operation_id": "admin", "name": "admin"},
                {"source_id": "s", "operation_id": "lone", "name": "lone"},
                {"source_id": "s", "operation_id": "ok", "name": "ok"}
            ],
            "groups": [
                {"id": "g-all", "name": "all", "explicit_tool_ids": ["s:denied", "s:off", "s:ok"],
                 "excluded_tool_ids": ["s:lone"]},
                {"id": "g-deny", "name": "deny", "explicit_tool_ids": ["s:denied"]},
                {"id": "g-admin", "name": "admin", "explicit_tool_ids": ["s:admin"]}
            ],
            "policies": [
                {"id": "p-all", "name": "all", "priority": 0, "allowed_group_ids": ["g-all"],
                 "claim_matchers": [{"json_path": "sub", "operator": "exists"}]},
                {"id": "p-deny", "name": "deny", "priority": 5, "denied_group_ids": ["g-deny"],
                 "claim_matchers": [{"json_path": "sub", "operator": "exists"}]},
                {"id": "p-admin", "name": "admins", "priority": 0,
                 "allowed_group_ids": ["g-admin"],
                 "claim_matchers": [{"json_path": "role", "operator": "equals", "value": "admin"}]}
            ]
        }))
        .expect("parses");
        catalog.normalize();
        Snapshot::compile(catalog, 1).expect("compiles")
    }

    #[test]
    fn each_reason_is_found_and_told() {
        let snapshot = snapshot();
        let explained =
            snapshot.explain(&claims_of(json!({"sub": "a"})), &ManifestOptions::default());
        let cases = [
            (
                "s:denied",
                "denied by policy 'p-deny' at priority 5 (through group g-all, g-deny)",
            ),
            (
                "s:off",
                "granted by policy 'p-all' at priority 0, but its state hides it from agents: \
                 disabled",
            ),
            (
                "s:admin",
                "no policy these claims match allows its groups (g-admin); 'admins' (priority 0) \
                 would, but its claim_matchers[0] (role equals) does not hold",
            ),
            (
                "s:lone",
                "it is in no active group, so no policy can grant it; it is excluded from group \
                 all",
            ),
        ];
        for (tool, told) in cases {
            let why = snapshot.why_not(&explained.explanation, tool);
            assert_eq!(why.to_string(), told, "{tool}: {why:?}");
        }
    }

    #[test]
    fn a_granted_tool_left_out_by_the_options_says_so() {
        let snapshot = snapshot();
        let claims = claims_of(json!({"sub": "a"}));
        let all = snapshot.explain(&claims, &ManifestOptions::default());
        assert!(all.manifest.tool_ids().any(|id| id == "s:ok"));
        let options = ManifestOptions {
            tools: Some(vec!["nothing*".to_owned()]),
            ..ManifestOptions::default()
        };
        let narrowed = snapshot.explain(&claims, &options);
        let why = snapshot.why_not(&narrowed.explanation, "s:ok");
        assert_eq!(why, WhyNot::LeftOut);
        assert_eq!(
            why.to_string(),
            "granted, but left out by the options of the request"
        );
    }
}
