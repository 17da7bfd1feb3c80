//! An access decision in a form other gateway instances can reuse: which policies matched a
//! set of claims, and the groups they grant, at one catalog revision.
//!
//! Everything a manifest depends on beyond the request options is decided by *which policies
//! matched*: priorities, denies and group members are fixed by the snapshot. So the matched
//! policy ids, stamped with the revision they were evaluated at, are an exact and compact
//! summary of a decision, and a snapshot of the same revision rebuilds the decision from them
//! without evaluating a single claim. The granted group ids ride along for people and tools
//! that inspect the shared cache; rebuilding does not need them.

use serde::{Deserialize, Serialize};

use super::claims::Claims;
use super::manifest::{Manifest, ManifestOptions};
use super::snapshot::Snapshot;

/// The policies that matched some claims at one revision, in priority order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Access {
    /// The revision the claims were evaluated at; the access is meaningless at any other.
    pub revision: u64,
    /// Ids of the matching policies, in the snapshot's policy order (priority, then position).
    pub policy_ids: Vec<String>,
    /// Ids of the groups those policies allow, ascending by snapshot order.
    pub group_ids: Vec<String>,
}

impl Snapshot {
    /// The manifest for `claims` and the access decision behind it.
    pub fn manifest_with_access(
        &self,
        claims: &Claims,
        options: &ManifestOptions,
    ) -> (Manifest<'_>, Access) {
        let decision = self.decide(claims);
        let access = Access {
            revision: self.revision,
            policy_ids: decision
                .matched
                .iter()
                .map(|&index| self.policy_id(index).to_owned())
                .collect(),
            group_ids: decision
                .granted_groups
                .iter()
                .map(|&group| self.groups[group as usize].id.clone())
                .collect(),
        };
        (self.manifest_from(&decision, options), access)
    }

    /// The manifest an earlier evaluation decided, without looking at claims. `None` when
    /// `access` belongs to another revision or does not name policies of this snapshot in its
    /// order (it was not made by a snapshot of this revision): evaluate the claims instead.
    pub fn manifest_for_access(
        &self,
        access: &Access,
        options: &ManifestOptions,
    ) -> Option<Manifest<'_>> {
        if access.revision != self.revision {
            return None;
        }
        // One pass over the policies in order: ids are listed in that same order.
        let mut wanted = access.policy_ids.iter().peekable();
        let mut matched = Vec::with_capacity(access.policy_ids.len());
        for index in 0..self.policies.len() as u32 {
            let Some(id) = wanted.peek() else { break };
            if self.policy_id(index) == id.as_str() {
                matched.push(index);
                wanted.next();
            }
        }
        if wanted.peek().is_some() {
            return None;
        }
        let decision = self.decide_matched(matched);
        Some(self.manifest_from(&decision, options))
    }

    fn policy_id(&self, index: u32) -> &str {
        let position = self.policies[index as usize].catalog_position;
        &self.catalog.policies[position].id
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
                {"source_id": "s", "operation_id": "read", "name": "read", "method": "GET"},
                {"source_id": "s", "operation_id": "write", "name": "write", "method": "POST"},
                {"source_id": "s", "operation_id": "admin", "name": "admin", "method": "DELETE"}],
            "groups": [
                {"id": "g-all", "name": "all", "selectors": [{}]},
                {"id": "g-reads", "name": "reads", "selectors": [{"method_pattern": "GET"}]},
                {"id": "g-admin", "name": "admin", "explicit_tool_ids": ["s:admin"]}],
            "policies": [
                {"id": "p-staff", "name": "staff", "priority": 10, "allowed_group_ids": ["g-all"],
                 "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "staff"}]},
                {"id": "p-no-admin", "name": "no admin", "priority": 100, "denied_group_ids": ["g-admin"],
                 "claim_matchers": [{"json_path": "depth", "operator": "gt", "value": 0}]},
                {"id": "p-reads", "name": "reads", "priority": 10, "allowed_group_ids": ["g-reads"],
                 "claim_matchers": [{"json_path": "sub", "operator": "exists"}]}]
        }))
        .expect("catalog");
        catalog.normalize();
        catalog.sort_by_id();
        Snapshot::compile(catalog, revision).expect("compiles")
    }

    fn claims(value: Value) -> Claims {
        match value {
            Value::Object(map) => map,
            other => panic!("claims are an object, not {other}"),
        }
    }

    fn ids(manifest: &Manifest<'_>) -> Vec<String> {
        manifest.tool_ids().map(str::to_owned).collect()
    }

    #[test]
    fn the_access_names_matching_policies_in_priority_order_and_their_groups() {
        let snapshot = snapshot(7);
        let claims = claims(json!({"sub": "a", "roles": ["staff"], "depth": 1}));
        let (_, access) = snapshot.manifest_with_access(&claims, &ManifestOptions::default());
        assert_eq!(access.revision, 7);
        // Priority first, then catalog order (ids, once stored).
        assert_eq!(access.policy_ids, ["p-no-admin", "p-reads", "p-staff"]);
        assert_eq!(access.group_ids, ["g-all", "g-reads"]);
    }

    #[test]
    fn a_shared_access_rebuilds_exactly_the_evaluated_manifest() {
        let snapshot = snapshot(3);
        let options = ManifestOptions {
            include_disabled: true,
            ..ManifestOptions::default()
        };
        for value in [
            json!({"sub": "a"}),
            json!({"sub": "a", "roles": ["staff"]}),
            json!({"sub": "a", "roles": ["staff"], "depth": 2}),
            json!({"roles": ["staff"], "depth": 2}),
            json!({}),
        ] {
            let claims = claims(value);
            let (evaluated, access) = snapshot.manifest_with_access(&claims, &options);
            // Through JSON, as it travels between instances.
            let access: Access =
                serde_json::from_slice(&serde_json::to_vec(&access).expect("json")).expect("json");
            let rebuilt = snapshot
                .manifest_for_access(&access, &options)
                .expect("same revision");
            assert_eq!(ids(&rebuilt), ids(&evaluated));
            assert_eq!(rebuilt.etag(), evaluated.etag());
            assert_eq!(rebuilt.to_json(), evaluated.to_json());
        }
    }

    #[test]
    fn an_access_of_another_revision_or_with_unknown_policies_is_not_used() {
        let snapshot = snapshot(3);
        let options = ManifestOptions::default();
        let (_, access) = snapshot.manifest_with_access(&claims(json!({"sub": "a"})), &options);
        let older = Access {
            revision: 2,
            ..access.clone()
        };
        assert!(snapshot.manifest_for_access(&older, &options).is_none());
        for policy_ids in [
            vec!["p-gone".to_owned()],
            // Out of the snapshot's order: not something this revision produced.
            vec!["p-staff".to_owned(), "p-no-admin".to_owned()],
        ] {
            let foreign = Access {
                policy_ids,
                ..access.clone()
            };
            assert!(snapshot.manifest_for_access(&foreign, &options).is_none());
        }
    }
}
