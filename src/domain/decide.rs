//! The decision: claims → matching policies → granted and denied tools → manifest
//! (docs/semantics.md sections 4 and 6).
//!
//! Per-tool priority is computed level by level over bitsets: walking the matching policies from
//! the highest priority down, a tool is decided by the first level whose policies cover it; it is
//! denied if any policy of that level denies it, else granted. Each level costs a few unions of
//! member bitsets, so the work is proportional to the number of matching policies and their
//! groups, not to the number of tools times policies.

use std::collections::HashSet;
use std::sync::Arc;

use fixedbitset::FixedBitSet;
use serde_json::Value;

use super::claims::Claims;
use super::manifest::{Entry, Manifest, ManifestOptions};
use super::memberships::Memberships;
use super::pattern::{Case, Pattern, has_glob_syntax};
use super::reach::Reach;
use super::snapshot::Snapshot;

/// The outcome of policy evaluation, before visibility and narrowing.
#[derive(Debug)]
pub(super) struct Decision {
    /// Indices into `Snapshot::policies` of the policies whose matchers all hold.
    pub matched: Vec<u32>,
    pub granted: FixedBitSet,
    pub denied: FixedBitSet,
    /// Groups allowed by a matching policy, ascending.
    pub granted_groups: Vec<u32>,
    /// The same groups as a set over the snapshot's groups.
    pub granted_group_set: FixedBitSet,
    /// For delegated claims, the tools their chain allows at most (`granted` is already
    /// within it): what tells "removed by the delegation" apart in an explanation.
    pub restriction: Option<Arc<FixedBitSet>>,
}

/// Array claims at least this long are looked up in a set of their strings rather than
/// scanned, once a matcher compares one with a value.
const STRING_SET_FROM: usize = 16;

/// Per-request memo: each distinct path is resolved, each distinct matcher evaluated, once.
pub(super) struct ClaimEvaluation<'c> {
    claims: &'c Claims,
    paths: Vec<Option<Option<&'c Value>>>,
    /// Per path: the strings of a long array claim whose elements are all strings, made on
    /// first use (`Some(None)`: not such a claim).
    strings: Vec<Option<Option<HashSet<&'c str>>>>,
    matchers: Vec<Option<bool>>,
}

impl<'c> ClaimEvaluation<'c> {
    pub(super) fn new(snapshot: &Snapshot, claims: &'c Claims) -> Self {
        ClaimEvaluation {
            claims,
            paths: vec![None; snapshot.paths.len()],
            strings: (0..snapshot.paths.len()).map(|_| None).collect(),
            matchers: vec![None; snapshot.matchers.len()],
        }
    }

    pub(super) fn matcher(&mut self, snapshot: &Snapshot, index: u32) -> bool {
        if let Some(result) = self.matchers[index as usize] {
            return result;
        }
        let shared = &snapshot.matchers[index as usize];
        let claim = self.claim(snapshot, shared.path);
        let by_set = match claim {
            Some(Value::Array(items)) if items.len() >= STRING_SET_FROM => self
                .strings_at(shared.path, items)
                .and_then(|strings| shared.matcher.matches_strings(strings)),
            _ => None,
        };
        let result = by_set.unwrap_or_else(|| shared.matcher.matches(claim));
        self.matchers[index as usize] = Some(result);
        result
    }

    /// The set of `items` (the array claim at `path`) when they are all strings.
    fn strings_at(&mut self, path: u32, items: &'c [Value]) -> Option<&HashSet<&'c str>> {
        self.strings[path as usize]
            .get_or_insert_with(|| items.iter().map(Value::as_str).collect())
            .as_ref()
    }

    pub(super) fn claim(&mut self, snapshot: &Snapshot, path: u32) -> Option<&'c Value> {
        let claims = self.claims;
        *self.paths[path as usize]
            .get_or_insert_with(|| snapshot.paths[path as usize].resolve(claims))
    }
}

impl Snapshot {
    /// Decides which policies match and which tools they grant or deny (within the chain of
    /// delegated claims: [`super::delegation`]).
    pub(super) fn decide(&self, claims: &Claims) -> Decision {
        self.decide_of(&self.matched(claims))
    }

    /// Indices into `policies` of the policies whose matchers all hold for `claims`, ascending.
    pub(super) fn matching_policies(&self, claims: &Claims) -> Vec<u32> {
        let mut evaluation = ClaimEvaluation::new(self, claims);
        (0..self.policies.len() as u32)
            .filter(|&index| {
                self.policies[index as usize]
                    .matchers
                    .iter()
                    .all(|&m| evaluation.matcher(self, m))
            })
            .collect()
    }

    /// The decision of the policies `matched` (indices into `policies`, ascending, i.e. in
    /// priority order): everything after claim evaluation, which is why a decision can be
    /// shared as the list of matched policies ([`super::access::Access`]).
    pub(super) fn decide_matched(&self, matched: Vec<u32>) -> Decision {
        let tool_count = self.tools.len();
        let mut granted = FixedBitSet::with_capacity(tool_count);
        let mut denied = FixedBitSet::with_capacity(tool_count);
        let mut level_allowed = FixedBitSet::with_capacity(tool_count);
        let mut level_denied = FixedBitSet::with_capacity(tool_count);
        let mut granted_groups = FixedBitSet::with_capacity(self.groups.len());
        // Groups whose members were added to `granted` since `denied` last changed.
        let mut unioned = FixedBitSet::with_capacity(self.groups.len());
        for level in matched.chunk_by(|&a, &b| {
            self.policies[a as usize].priority == self.policies[b as usize].priority
        }) {
            let policies = || level.iter().map(|&index| &self.policies[index as usize]);
            for policy in policies() {
                granted_groups.extend(policy.allowed.iter().map(|&group| group as usize));
            }
            // The tools decided so far are `granted ∪ denied` (disjoint): a tool is decided by
            // the first level that covers it.
            if policies().all(|policy| policy.denied.is_empty()) {
                // Nothing denied here: what these groups hold and no higher level denied is
                // granted, one pass per group and none per level.
                for policy in policies() {
                    for &group in &policy.allowed {
                        // Again with the same `denied`: nothing to add.
                        if !unioned.put(group as usize) {
                            or_without(&mut granted, &self.groups[group as usize].members, &denied);
                        }
                    }
                }
                continue;
            }
            unioned.clear();
            level_allowed.clear();
            level_denied.clear();
            for policy in policies() {
                for &group in &policy.allowed {
                    level_allowed.union_with(&self.groups[group as usize].members);
                }
                for &group in &policy.denied {
                    level_denied.union_with(&self.groups[group as usize].members);
                }
            }
            // Tools first covered at this level: denied if any policy here denies them.
            level_denied.difference_with(&granted);
            level_denied.difference_with(&denied);
            level_allowed.difference_with(&level_denied);
            denied.union_with(&level_denied);
            or_without(&mut granted, &level_allowed, &denied);
        }
        Decision {
            matched,
            granted,
            denied,
            granted_groups: granted_groups.ones().map(|group| group as u32).collect(),
            granted_group_set: granted_groups,
            restriction: None,
        }
    }

    /// The manifest for these claims and options (docs/semantics.md section 6).
    pub fn manifest(&self, claims: &Claims, options: &ManifestOptions) -> Manifest<'_> {
        let decision = self.decide(claims);
        self.manifest_from(&decision, options)
    }

    pub(super) fn manifest_from(
        &self,
        decision: &Decision,
        options: &ManifestOptions,
    ) -> Manifest<'_> {
        let (listed, warnings) = self.listed(decision, options);
        let entries = match &self.memberships {
            Some(memberships) => entries_by_tool(memberships, &listed, &decision.granted_group_set),
            None => self.entries_by_group(&listed, &decision.granted_groups),
        };
        let mut manifest = Manifest::new(self, entries, warnings, options);
        manifest.denied = decision.granted_groups.is_empty();
        manifest.reach = Reach::new(decision.granted.clone());
        manifest
    }

    /// The tools a manifest lists for `decision` under `options` (steps 2 and 3 of docs/semantics.md
    /// section 6), and its warnings: what both the manifest and a decision about one tool
    /// ([`super::verdict`]) are built from, so that they cannot disagree.
    pub(super) fn listed(
        &self,
        decision: &Decision,
        options: &ManifestOptions,
    ) -> (FixedBitSet, Vec<String>) {
        let mut result = decision.granted.clone();
        if !options.include_disabled {
            result.intersect_with(&self.visible);
        }
        let mut warnings = Vec::new();
        if let Some(names) = &options.tools {
            warnings = self.unknown_tool_names(names, &result);
        }
        if let Some(wanted) = &options.groups {
            self.narrow_by_groups(&mut result, wanted, &decision.granted_groups);
        }
        if let Some(state) = &options.state {
            self.narrow_by_state(&mut result, state);
        }
        if let Some(pinned) = &options.pinned {
            self.narrow_by_pinned(&mut result, pinned);
        }
        if let Some(names) = &options.tools {
            self.narrow_by_tool_names(&mut result, names);
        }
        (result, warnings)
    }

    /// `group=`: members of the listed granted groups only. Never widens: only groups that
    /// were granted count, and the result is intersected with what was already there.
    pub(super) fn narrow_by_groups(
        &self,
        result: &mut FixedBitSet,
        wanted: &[String],
        granted: &[u32],
    ) {
        if wanted.iter().any(|item| item == "*") {
            return;
        }
        let mut keep = FixedBitSet::with_capacity(self.tools.len());
        for &group in granted {
            let group = &self.groups[group as usize];
            if wanted
                .iter()
                .any(|item| *item == group.id || *item == group.name)
            {
                keep.union_with(&group.members);
            }
        }
        result.intersect_with(&keep);
    }

    /// `state=`: tools without `available_in_states`, or listing the state or `*`.
    pub(super) fn narrow_by_state(&self, result: &mut FixedBitSet, state: &str) {
        let unavailable: Vec<usize> = result
            .ones()
            .filter(|&t| {
                self.tools[t]
                    .available_in_states
                    .as_ref()
                    .is_some_and(|states| !states.iter().any(|s| s == state || s == "*"))
            })
            .collect();
        for t in unavailable {
            result.remove(t);
        }
    }

    /// A run's pinned set: only the tools it holds (by id, so that it means the same at every
    /// revision).
    fn narrow_by_pinned(&self, result: &mut FixedBitSet, pinned: &super::run::Pinned) {
        let unpinned: Vec<usize> = result
            .ones()
            .filter(|&t| !pinned.contains(&self.tools[t].id))
            .collect();
        for t in unpinned {
            result.remove(t);
        }
    }

    /// `tools=`: tools whose name matches one of the case-sensitive globs.
    fn narrow_by_tool_names(&self, result: &mut FixedBitSet, names: &[String]) {
        let globs: Vec<Pattern> = names
            .iter()
            .map(|name| {
                // An item that is not a valid glob can only match itself literally.
                Pattern::glob(name, Case::Sensitive)
                    .unwrap_or_else(|_| Pattern::literal(name, Case::Sensitive))
            })
            .collect();
        let unmatched: Vec<usize> = result
            .ones()
            .filter(|&t| !globs.iter().any(|glob| glob.is_match(&self.tools[t].name)))
            .collect();
        for t in unmatched {
            result.remove(t);
        }
    }

    /// Plain names (no glob syntax) in `tools=` that match none of the candidate tools.
    fn unknown_tool_names(&self, names: &[String], candidates: &FixedBitSet) -> Vec<String> {
        names
            .iter()
            .filter(|name| !has_glob_syntax(name))
            .filter(|name| !candidates.ones().any(|t| self.tools[t].name == **name))
            .map(|name| format!("tools: '{name}' matches no tool available to this agent"))
            .collect()
    }

    /// Builds the sorted entries and, for each tool, the granted groups that contain it (in one
    /// flat list: two passes over each granted group's members in the result, counting then
    /// placing, so that every entry's groups come out ascending without an allocation each).
    /// For snapshots too large to keep [`Memberships`]; [`entries_by_tool`] otherwise.
    fn entries_by_group(
        &self,
        result: &FixedBitSet,
        granted_groups: &[u32],
    ) -> (Vec<Entry>, Vec<u32>) {
        let tools: Vec<u32> = result.ones().map(|t| t as u32).collect();
        let mut position = vec![u32::MAX; self.tools.len()];
        for (at, &t) in tools.iter().enumerate() {
            position[t as usize] = at as u32;
        }
        // starts[i]..starts[i + 1]: where entry i's groups go.
        let mut starts = vec![0u32; tools.len() + 1];
        for &group in granted_groups {
            for_each_common(&self.groups[group as usize].members, result, |t| {
                starts[position[t] as usize + 1] += 1;
            });
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut next = starts.clone();
        let mut lists = vec![0u32; starts[tools.len()] as usize];
        for &group in granted_groups {
            for_each_common(&self.groups[group as usize].members, result, |t| {
                let slot = &mut next[position[t] as usize];
                lists[*slot as usize] = group;
                *slot += 1;
            });
        }
        let entries = tools
            .iter()
            .enumerate()
            .map(|(at, &tool)| Entry {
                tool,
                groups: starts[at]..starts[at + 1],
            })
            .collect();
        (entries, lists)
    }
}

/// [`Snapshot::entries_by_group`] in one pass over the tools of `result`: each entry's groups
/// are the tool's groups (ascending) that are granted.
fn entries_by_tool(
    memberships: &Memberships,
    result: &FixedBitSet,
    granted: &FixedBitSet,
) -> (Vec<Entry>, Vec<u32>) {
    let count = result.count_ones(..);
    let mut entries = Vec::with_capacity(count);
    let mut lists = Vec::with_capacity(count * 2);
    for t in result.ones() {
        let start = lists.len() as u32;
        lists.extend(
            (memberships.of_tool(t).iter()).filter(|&&group| granted.contains(group as usize)),
        );
        entries.push(Entry {
            tool: t as u32,
            groups: start..lists.len() as u32,
        });
    }
    (entries, lists)
}

/// `into ∪= from − without`, a word at a time (all three over the same tools).
fn or_without(into: &mut FixedBitSet, from: &FixedBitSet, without: &FixedBitSet) {
    for ((into, &from), &without) in into
        .as_mut_slice()
        .iter_mut()
        .zip(from.as_slice())
        .zip(without.as_slice())
    {
        *into |= from & !without;
    }
}

/// Calls `f` with every index set in both `a` and `b`, ascending, a word at a time.
fn for_each_common(a: &FixedBitSet, b: &FixedBitSet, mut f: impl FnMut(usize)) {
    const BITS: usize = usize::BITS as usize;
    for (word, (&x, &y)) in a.as_slice().iter().zip(b.as_slice()).enumerate() {
        let mut both = x & y;
        while both != 0 {
            f(word * BITS + both.trailing_zeros() as usize);
            both &= both - 1;
        }
    }
}

#[cfg(test)]
mod tests;
