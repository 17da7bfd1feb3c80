//! The impact of a catalog change on claim sets: for each, the tools its manifest would gain
//! and lose if the snapshot `after` replaced `before`.
//!
//! Only *which policies matched* decides a manifest (beyond the request options), so each
//! claim set is evaluated down to its matched policies under both snapshots, and the tools a
//! decision lists are worked out once per distinct matched set while it is remembered: ten
//! thousand identities that fall into a few dozen decisions cost ten thousand cheap matcher
//! evaluations and a few dozen listings. Manifests are the default ones (`GET /agents/tools`
//! with no options: enabled tools only).
//!
//! A [`Comparison`] takes claim sets one at a time, so that a caller can keep only what it
//! reports. What it remembers is bounded in bytes: a decision's listing is a bitset over the
//! tools of both snapshots (a bit per tool, not an id), and beyond the budget the least
//! recently met one is forgotten (and worked out again if met again). A run over any number of
//! claim sets, each with a decision of its own, therefore holds the budget and one difference
//! at a time, never a manifest per claim set.

use std::num::NonZeroUsize;
use std::sync::Arc;

use fixedbitset::FixedBitSet;
use lru::LruCache;

use super::access::Matched;
use super::claims::Claims;
use super::manifest::ManifestOptions;
use super::snapshot::Snapshot;

/// What a comparison remembers of the decisions it met, both snapshots together, when not
/// told otherwise: 16 MiB (for 10,000 tools, about 6,000 decisions per snapshot).
pub const DEFAULT_BUDGET: usize = 16 << 20;

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

/// The difference for each of `claim_sets`, in order (a [`Comparison`] with the default
/// budget).
pub fn compare(before: &Snapshot, after: &Snapshot, claim_sets: &[&Claims]) -> Vec<Difference> {
    let mut comparison = Comparison::new(before, after, DEFAULT_BUDGET);
    claim_sets
        .iter()
        .map(|claims| comparison.difference(claims))
        .collect()
}

/// Compares claim sets between two snapshots, one at a time.
pub struct Comparison<'s> {
    /// The ids of the tools of either snapshot, ascending: bit `i` of every listing is
    /// `ids[i]`.
    ids: Vec<&'s str>,
    before: Side<'s>,
    after: Side<'s>,
}

/// One snapshot's side of a comparison.
struct Side<'s> {
    snapshot: &'s Snapshot,
    /// Snapshot tool index → index in [`Comparison::ids`].
    to_common: Vec<u32>,
    /// The listing of each decision met recently, by its matched policies.
    listings: LruCache<Matched, Arc<FixedBitSet>>,
}

impl<'s> Comparison<'s> {
    /// A comparison of `before` with `after` that remembers at most about `budget` bytes of
    /// listings (at least a few, whatever the budget).
    pub fn new(before: &'s Snapshot, after: &'s Snapshot, budget: usize) -> Comparison<'s> {
        let (ids, to_before, to_after) = common_ids(before, after);
        // A listing's bits, its key (a few dozen policies) and the map's own share.
        let per_listing = ids.len().div_ceil(8) + 64 * size_of::<u32>() + 64;
        let capacity =
            NonZeroUsize::new((budget / 2 / per_listing).max(4)).expect("at least four listings");
        Comparison {
            ids,
            before: Side {
                snapshot: before,
                to_common: to_before,
                listings: LruCache::new(capacity),
            },
            after: Side {
                snapshot: after,
                to_common: to_after,
                listings: LruCache::new(capacity),
            },
        }
    }

    /// What `claims` gain and lose.
    pub fn difference(&mut self, claims: &Claims) -> Difference {
        let before = self.before.listing(claims, self.ids.len());
        let after = self.after.listing(claims, self.ids.len());
        if before == after {
            return Difference::default();
        }
        let ids = |bits: fixedbitset::Difference<'_>| -> Vec<String> {
            bits.map(|i| self.ids[i].to_owned()).collect()
        };
        Difference {
            gained: ids(after.difference(&before)),
            lost: ids(before.difference(&after)),
        }
    }
}

impl Side<'_> {
    /// The tools the default manifest of `claims` lists, as bits over the common ids.
    fn listing(&mut self, claims: &Claims, common: usize) -> Arc<FixedBitSet> {
        let matched = self.snapshot.matched(claims);
        if let Some(listing) = self.listings.get(&matched) {
            return Arc::clone(listing);
        }
        let decision = self.snapshot.decide_of(&matched);
        let (listed, _warnings) = self.snapshot.listed(&decision, &ManifestOptions::default());
        let mut bits = FixedBitSet::with_capacity(common);
        for t in listed.ones() {
            bits.insert(self.to_common[t] as usize);
        }
        let listing = Arc::new(bits);
        self.listings.put(matched, Arc::clone(&listing));
        listing
    }
}

/// The ids of the tools of either snapshot, ascending, and where each snapshot's tools are
/// among them (both snapshots keep their tools in id order).
fn common_ids<'s>(before: &'s Snapshot, after: &'s Snapshot) -> (Vec<&'s str>, Vec<u32>, Vec<u32>) {
    let (old, new) = (before.tool_ids_ascending(), after.tool_ids_ascending());
    let mut ids = Vec::with_capacity(old.len().max(new.len()));
    let (mut to_before, mut to_after) =
        (Vec::with_capacity(old.len()), Vec::with_capacity(new.len()));
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        let at = ids.len() as u32;
        match (old.get(i), new.get(j)) {
            (Some(a), Some(b)) if a == b => {
                ids.push(*a);
                to_before.push(at);
                to_after.push(at);
                i += 1;
                j += 1;
            }
            (Some(a), Some(b)) if a < b => {
                ids.push(*a);
                to_before.push(at);
                i += 1;
            }
            (Some(a), None) => {
                ids.push(*a);
                to_before.push(at);
                i += 1;
            }
            (_, Some(b)) => {
                ids.push(*b);
                to_after.push(at);
                j += 1;
            }
            (None, None) => break,
        }
    }
    (ids, to_before, to_after)
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
    fn tools_only_one_snapshot_has_are_gained_or_lost() {
        let before = snapshot(json!([staff()]), 1);
        let mut catalog = before.catalog().clone();
        catalog.tools.retain(|tool| tool.operation_id != "read");
        let mut new_tool = catalog
            .tools
            .iter()
            .find(|tool| tool.operation_id == "write")
            .expect("the write tool")
            .clone();
        new_tool.operation_id = "append".to_owned();
        new_tool.name = "append".to_owned();
        new_tool.id = "s:append".to_owned();
        catalog.tools.push(new_tool);
        catalog.sort_by_id();
        let after = Snapshot::compile(catalog, 2).expect("compiles");
        let staff = claims(json!({"roles": ["staff"]}));
        let difference = &compare(&before, &after, &[&staff])[0];
        assert_eq!(difference.gained, ["s:append"]);
        assert_eq!(difference.lost, ["s:read"]);
    }

    #[test]
    fn a_budget_of_nothing_still_compares_every_claim_set_right() {
        let before = snapshot(json!([staff()]), 1);
        let deny = json!({"id": "p-no-writes", "name": "no writes", "priority": 100,
            "denied_group_ids": ["g-writes"],
            "claim_matchers": [{"json_path": "depth", "operator": "gt", "value": 0}]});
        let after = snapshot(json!([staff(), deny]), 2);
        let mut comparison = Comparison::new(&before, &after, 0);
        for depth in [0, 1, 2, 3, 4, 5, 0, 1] {
            let claims = claims(json!({"roles": ["staff"], "depth": depth, "n": depth}));
            let difference = comparison.difference(&claims);
            let lost: &[&str] = if depth > 0 { &["s:write"] } else { &[] };
            assert_eq!(difference.lost, lost, "depth {depth}");
            assert!(difference.gained.is_empty());
        }
    }
}
