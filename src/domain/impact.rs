//! The impact of a catalog change on claim sets: for each, the tools its manifest would gain
//! and lose if the snapshot `after` replaced `before`.
//!
//! Only *which policies matched* decides a manifest (beyond the request options), so each
//! claim set is evaluated down to its matched policies under both snapshots, and a manifest is
//! computed once per distinct matched set: ten thousand identities that fall into a few dozen
//! decisions cost ten thousand cheap matcher evaluations and a few dozen manifests. Manifests
//! are the default ones (`GET /agents/tools` with no options: enabled tools only).

use std::collections::HashMap;
use std::sync::Arc;

use super::claims::Claims;
use super::manifest::ManifestOptions;
use super::snapshot::Snapshot;

/// What one claim set gains and loses, tool ids ascending.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Difference {
    pub gained: Vec<String>,
    pub lost: Vec<String>,
}

impl Difference {
    pub fn is_empty(&self) -> bool {
        self.gained.is_empty() && self.lost.is_empty()
    }
}

/// The difference for each of `claim_sets`, in order.
pub fn compare(before: &Snapshot, after: &Snapshot, claim_sets: &[&Claims]) -> Vec<Difference> {
    let mut old = Decisions::new(before);
    let mut new = Decisions::new(after);
    let mut memo: HashMap<(usize, usize), Difference> = HashMap::new();
    claim_sets
        .iter()
        .map(|claims| {
            let pair = (old.index_of(claims), new.index_of(claims));
            memo.entry(pair)
                .or_insert_with(|| difference(&old.tools[pair.0], &new.tools[pair.1]))
                .clone()
        })
        .collect()
}

/// The distinct decisions of one snapshot met so far, with their manifests' tool ids.
struct Decisions<'s> {
    snapshot: &'s Snapshot,
    index: HashMap<Vec<u32>, usize>,
    tools: Vec<Arc<[&'s str]>>,
}

impl<'s> Decisions<'s> {
    fn new(snapshot: &'s Snapshot) -> Decisions<'s> {
        Decisions {
            snapshot,
            index: HashMap::new(),
            tools: Vec::new(),
        }
    }

    /// The index of the decision `claims` get (its tool ids in `tools`).
    fn index_of(&mut self, claims: &Claims) -> usize {
        let matched = self.snapshot.matching_policies(claims);
        if let Some(&index) = self.index.get(&matched) {
            return index;
        }
        let decision = self.snapshot.decide_matched(matched.clone());
        let manifest = self
            .snapshot
            .manifest_from(&decision, &ManifestOptions::default());
        let mut ids: Vec<&'s str> = manifest.tool_ids().collect();
        ids.sort_unstable();
        self.tools.push(Arc::from(ids));
        let index = self.tools.len() - 1;
        self.index.insert(matched, index);
        index
    }
}

/// `after` minus `before` and `before` minus `after`, both ascending.
fn difference(before: &[&str], after: &[&str]) -> Difference {
    let (mut i, mut j) = (0, 0);
    let mut result = Difference::default();
    while i < before.len() || j < after.len() {
        match (before.get(i), after.get(j)) {
            (Some(a), Some(b)) if a == b => {
                i += 1;
                j += 1;
            }
            (Some(a), Some(b)) if a < b => {
                result.lost.push((*a).to_owned());
                i += 1;
            }
            (Some(a), None) => {
                result.lost.push((*a).to_owned());
                i += 1;
            }
            (_, Some(b)) => {
                result.gained.push((*b).to_owned());
                j += 1;
            }
            (None, None) => break,
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::domain::model::Catalog;

    fn snapshot(policies: Value, revision: u64) -> Snapshot {
        let mut catalog: Catalog = serde_json::from_value(json!({
            "sources": [{"id": "s", "name": "s", "type": "manual"}],
            "tools": [
                {"source_id": "s", "operation_id": "read", "name": "read", "method": "GET"},
                {"source_id": "s", "operation_id": "write", "name": "write", "method": "POST"},
                {"source_id": "s", "operation_id": "off", "name": "off", "enabled": false}],
            "groups": [
                {"id": "g-all", "name": "all", "selectors": [{}]},
                {"id": "g-writes", "name": "writes", "selectors": [{"method_pattern": "POST"}]}],
            "policies": policies
        }))
        .expect("catalog");
        catalog.normalize();
        catalog.sort_by_id();
        Snapshot::compile(catalog, revision).expect("compiles")
    }

    fn claims(value: Value) -> Claims {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("claims are objects"),
        }
    }

    fn staff() -> Value {
        json!({"id": "p-staff", "name": "staff", "priority": 10, "allowed_group_ids": ["g-all"],
               "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "staff"}]})
    }

    #[test]
    fn a_new_deny_takes_exactly_its_tools_from_exactly_the_claims_it_matches() {
        let before = snapshot(json!([staff()]), 1);
        let deny = json!({"id": "p-no-writes", "name": "no writes", "priority": 100,
            "denied_group_ids": ["g-writes"],
            "claim_matchers": [{"json_path": "depth", "operator": "gt", "value": 0}]});
        let after = snapshot(json!([staff(), deny]), 2);
        let deep = claims(json!({"roles": ["staff"], "depth": 1}));
        let top = claims(json!({"roles": ["staff"], "depth": 0}));
        let outsider = claims(json!({"roles": ["guest"], "depth": 3}));
        let result = compare(&before, &after, &[&deep, &top, &outsider, &deep]);
        let lost_write = Difference {
            gained: vec![],
            lost: vec!["s:write".to_owned()],
        };
        assert_eq!(
            result,
            [
                lost_write.clone(),
                Difference::default(),
                Difference::default(),
                lost_write
            ]
        );
    }

    #[test]
    fn the_same_snapshot_changes_nothing_and_disabled_tools_never_count() {
        let before = snapshot(json!([staff()]), 1);
        let after = snapshot(json!([staff()]), 2);
        let staff = claims(json!({"roles": ["staff"]}));
        assert!(compare(&before, &after, &[&staff])[0].is_empty());
        let nobody = snapshot(json!([]), 3);
        let gained = &compare(&nobody, &after, &[&staff])[0];
        assert_eq!(gained.gained, ["s:read", "s:write"], "not s:off (disabled)");
        assert!(gained.lost.is_empty());
    }

    #[test]
    fn differences_of_sorted_lists() {
        let result = difference(&["a", "c", "d"], &["b", "c", "e"]);
        assert_eq!(result.gained, ["b", "e"]);
        assert_eq!(result.lost, ["a", "d"]);
        assert!(difference(&[], &[]).is_empty());
    }
}
