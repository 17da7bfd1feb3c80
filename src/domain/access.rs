//! Access decisions: which policies matched a set of claims at one catalog revision.
//!
//! Everything a manifest depends on beyond the request options is decided by *which policies
//! matched*: priorities, denies and group members are fixed by the snapshot. So the matched
//! policies, stamped with the revision they were evaluated at, are an exact and compact
//! summary of a decision ([`Matched`]): many identities share one, and a snapshot of the same
//! revision builds the manifest from it without evaluating a single claim. That is what lets
//! caches key rendered manifests by decision rather than by claims.
//!
//! [`Access`] is the same decision by policy ids, in a form other gateway instances can reuse
//! (shared through Redis). The granted group ids ride along for people and tools that inspect
//! the shared cache; rebuilding does not need them.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use fixedbitset::FixedBitSet;
use serde::{Deserialize, Serialize};

use super::claims::Claims;
use super::decide::Decision;
use super::manifest::{Manifest, ManifestOptions};
use super::snapshot::Snapshot;
use super::verdict::Evaluation;

/// The policies whose matchers all hold for some claims, at one revision: the decision a
/// manifest is built from. Cheap to clone and to hash (it is a cache key on the hot path: its
/// hash is computed once, when it is made); meaningless with a snapshot of another revision,
/// which every method taking one checks.
#[derive(Debug, Clone)]
pub struct Matched {
    revision: u64,
    /// Indices into the snapshot's policies, ascending (= priority order).
    policies: Arc<[u32]>,
    /// For delegated claims, the tools their chain allows at most ([`super::delegation`]):
    /// part of the decision, so part of every key made from it.
    restriction: Option<Arc<FixedBitSet>>,
    /// A hash of `revision` and `policies`, for hash maps (equality compares the lists).
    digest: u64,
}

impl PartialEq for Matched {
    fn eq(&self, other: &Matched) -> bool {
        self.digest == other.digest
            && self.revision == other.revision
            && self.policies == other.policies
            && self.restriction == other.restriction
    }
}

impl Eq for Matched {}

impl Hash for Matched {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.digest);
    }
}

impl Matched {
    fn new(revision: u64, policies: Arc<[u32]>, restriction: Option<Arc<FixedBitSet>>) -> Matched {
        let mut hasher = std::hash::DefaultHasher::new();
        revision.hash(&mut hasher);
        policies.hash(&mut hasher);
        if let Some(restriction) = &restriction {
            restriction.as_slice().hash(&mut hasher);
        }
        Matched {
            revision,
            policies,
            restriction,
            digest: hasher.finish(),
        }
    }

    /// Whether these are the policies of delegated claims (whose decision is not shared with
    /// other instances: [`Access`] has no room for the restriction).
    pub fn is_delegated(&self) -> bool {
        self.restriction.is_some()
    }
}

impl Matched {
    /// The same policies as a decision of `revision`: only valid when the policies of both
    /// revisions are the same (what a continuity between them establishes). A restriction is
    /// carried too: it depends on the policies and group members only, and a continuity keeps
    /// the tool indices.
    pub(super) fn at_revision(&self, revision: u64) -> Matched {
        Matched::new(
            revision,
            Arc::clone(&self.policies),
            self.restriction.clone(),
        )
    }

    /// The revision the claims were evaluated at.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// How many policies matched.
    pub fn len(&self) -> usize {
        self.policies.len()
    }

    pub fn is_empty(&self) -> bool {
        self.policies.is_empty()
    }

    /// Bytes this value holds on the heap (for caches bounded in bytes).
    pub fn heap_bytes(&self) -> usize {
        2 * size_of::<usize>()
            + size_of_val(&*self.policies)
            + self
                .restriction
                .as_ref()
                .map_or(0, |set| size_of::<FixedBitSet>() + set.len().div_ceil(8))
    }
}

/// An access decision under request options: everything a manifest, or an evaluation, is a
/// function of (the revision is in `matched`). The caches of rendered manifests and of
/// evaluations, and the stream fan-out, key by it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Decided {
    pub matched: Matched,
    pub options: ManifestOptions,
}

impl Decided {
    /// Bytes this key holds on the heap (for caches bounded in bytes).
    pub fn heap_bytes(&self) -> usize {
        self.matched.heap_bytes() + self.options.heap_bytes()
    }
}

/// The policies that matched some claims at one revision, in priority order, by id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Access {
    /// The revision the claims were evaluated at; the access is meaningless at any other.
    pub revision: u64,
    /// Ids of the matching policies, in the snapshot's policy order (priority, then position).
    pub policy_ids: Vec<String>,
    /// Ids of the groups those policies allow, ascending by snapshot order.
    pub group_ids: Vec<String>,
    /// [`Snapshot::policies_digest`] of the snapshot it was made at: an entry made before the
    /// store was restored to an earlier revision names a revision that comes again, but not
    /// these policies (unless they are the same, when it is still right). Absent in entries of
    /// older versions: those are never used. Left out of the JSON when empty, so that such an
    /// entry still serialises as it was signed (its MAC checks out; it is unused, not forged).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub policies: String,
}

impl Snapshot {
    /// The decision of `matched` (of this snapshot's revision): its policies' decision, within
    /// its delegation restriction when it has one.
    pub(super) fn decide_of(&self, matched: &Matched) -> Decision {
        let mut decision = self.decide_matched(matched.policies.to_vec());
        if let Some(restriction) = &matched.restriction {
            decision.granted.intersect_with(restriction);
            decision.restriction = Some(Arc::clone(restriction));
        }
        decision
    }

    /// Which policies match `claims` here.
    pub fn matched(&self, claims: &Claims) -> Matched {
        Matched::new(
            self.revision,
            self.matching_policies(claims).into(),
            self.restriction(claims).map(Arc::new),
        )
    }

    /// The manifest decided by `matched` under `options`: equal to [`Snapshot::manifest`] for
    /// any claims `matched` was made from. `None` when `matched` is of another revision.
    pub fn manifest_of(
        &self,
        matched: &Matched,
        options: &ManifestOptions,
    ) -> Option<Manifest<'_>> {
        (matched.revision == self.revision).then(|| {
            let decision = self.decide_of(matched);
            self.manifest_from(&decision, options)
        })
    }

    /// The evaluation decided by `matched` under `options`: equal to [`Snapshot::evaluate`]
    /// for any claims `matched` was made from. `None` when `matched` is of another revision.
    pub fn evaluation_of(
        &self,
        matched: &Matched,
        options: &ManifestOptions,
    ) -> Option<Evaluation> {
        (matched.revision == self.revision)
            .then(|| self.evaluation_from(self.decide_of(matched), options))
    }

    /// `matched` by policy ids, to share with other instances. Of another revision, an access
    /// that no snapshot of this revision accepts back.
    pub fn access_of(&self, matched: &Matched) -> Access {
        // A delegated decision has no shared form: an access without the restriction would
        // widen whoever took it back.
        if matched.revision != self.revision || matched.is_delegated() {
            return Access {
                revision: matched.revision,
                policy_ids: Vec::new(),
                group_ids: Vec::new(),
                policies: String::new(),
            };
        }
        let mut groups: Vec<u32> = matched
            .policies
            .iter()
            .flat_map(|&index| self.policies[index as usize].allowed.iter().copied())
            .collect();
        groups.sort_unstable();
        groups.dedup();
        Access {
            revision: self.revision,
            policies: self.policies_digest.clone(),
            policy_ids: matched
                .policies
                .iter()
                .map(|&index| self.policy_id(index).to_owned())
                .collect(),
            group_ids: groups
                .into_iter()
                .map(|group| self.groups[group as usize].id.clone())
                .collect(),
        }
    }

    /// The decision an earlier evaluation shared, without looking at claims. `None` when
    /// `access` belongs to another revision or does not name policies of this snapshot in its
    /// order (it was not made by a snapshot of this revision): evaluate the claims instead.
    pub fn matched_of_access(&self, access: &Access) -> Option<Matched> {
        if access.revision != self.revision || access.policies != self.policies_digest {
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
        Some(Matched::new(self.revision, matched.into(), None))
    }

    fn policy_id(&self, index: u32) -> &str {
        let position = self.policies[index as usize].catalog_position;
        &self.catalog.policies[position].id
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

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

    use crate::domain::claims::claims_of as claims;

    fn ids(manifest: &Manifest<'_>) -> Vec<String> {
        manifest.tool_ids().map(str::to_owned).collect()
    }

    #[test]
    fn the_access_names_matching_policies_in_priority_order_and_their_groups() {
        let snapshot = snapshot(7);
        let claims = claims(json!({"sub": "a", "roles": ["staff"], "depth": 1}));
        let access = snapshot.access_of(&snapshot.matched(&claims));
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
            let evaluated = snapshot.manifest(&claims, &options);
            let access = snapshot.access_of(&snapshot.matched(&claims));
            // Through JSON, as it travels between instances.
            let access: Access =
                serde_json::from_slice(&serde_json::to_vec(&access).expect("json")).expect("json");
            let matched = snapshot.matched_of_access(&access).expect("same revision");
            assert_eq!(matched, snapshot.matched(&claims));
            let rebuilt = snapshot
                .manifest_of(&matched, &options)
                .expect("same revision");
            assert_eq!(ids(&rebuilt), ids(&evaluated));
            assert_eq!(rebuilt.etag(), evaluated.etag());
            assert_eq!(rebuilt.to_json(), evaluated.to_json());
        }
    }

    #[test]
    fn an_access_of_another_revision_or_with_unknown_policies_is_not_used() {
        let snapshot = snapshot(3);
        let access = snapshot.access_of(&snapshot.matched(&claims(json!({"sub": "a"}))));
        let older = Access {
            revision: 2,
            ..access.clone()
        };
        assert!(snapshot.matched_of_access(&older).is_none());
        for policy_ids in [
            vec!["p-gone".to_owned()],
            // Out of the snapshot's order: not something this revision produced.
            vec!["p-staff".to_owned(), "p-no-admin".to_owned()],
        ] {
            let foreign = Access {
                policy_ids,
                ..access.clone()
            };
            assert!(snapshot.matched_of_access(&foreign).is_none());
        }
        // The same revision number with other policies (a store restored to an earlier
        // revision, then written again), or an entry of a version without the digest.
        for policies in [String::new(), "0".repeat(32)] {
            let restored = Access {
                policies,
                ..access.clone()
            };
            assert!(snapshot.matched_of_access(&restored).is_none());
        }
        assert!(snapshot.matched_of_access(&access).is_some());
    }

    #[test]
    fn a_decision_is_used_only_at_its_own_revision() {
        let older = snapshot(3);
        let newer = snapshot(4);
        let claims = claims(json!({"sub": "a", "roles": ["staff"]}));
        let options = ManifestOptions::default();
        let matched = older.matched(&claims);
        assert!(newer.manifest_of(&matched, &options).is_none());
        assert!(newer.evaluation_of(&matched, &options).is_none());
        let evaluation = older
            .evaluation_of(&matched, &options)
            .expect("same revision");
        let direct = older.evaluate(&claims, &options);
        let ids = |e| {
            older
                .listed_ids(e, None)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&evaluation), ids(&direct));
        assert_eq!(newer.access_of(&matched).policy_ids, Vec::<String>::new());
    }
}
