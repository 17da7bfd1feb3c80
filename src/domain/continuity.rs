//! What a new snapshot keeps of the decisions and manifests of the one it replaces.
//!
//! Most admin writes touch one tool of thousands. When a write changed no policy, no group's
//! members or name and no tool's place in the index, every access decision of the previous
//! snapshot is still the decision (the same policies match the same claims), and every manifest
//! whose decision grants none of the changed tools is still the manifest, byte for byte but for
//! its `revision`. The caches carry those over when the snapshot is published instead of
//! dropping them, so the first request after such a write is served like a hot one (issue:
//! "cold at the speed of hot").
//!
//! Invariant (what makes carrying safe): for every decision `d` of the previous snapshot and
//! every options `o`, if [`Continuity::keeps`] holds for `d`'s [`Reach`], then the manifest of
//! (`d`, `o`) in the new snapshot has the same entries, groups, warnings and etag as in the
//! previous one. Anything this module cannot prove unchanged counts as changed: a doubt costs a
//! render, never a stale manifest.

use std::sync::Arc;

use fixedbitset::FixedBitSet;

use super::access::Matched;
pub use super::reach::Reach;
use super::snapshot::Snapshot;

/// How the decisions of one snapshot carry into the next (see the module's invariant).
#[derive(Debug, Clone)]
pub struct Continuity {
    from: u64,
    to: u64,
    /// Tools (indices, the same in both snapshots) whose entry, name, states or visibility
    /// differ: what any manifest listing them, or able to list them, must render again.
    changed: FixedBitSet,
    /// `changed`, and the tools whose `enabled` or `deprecated` flag differs (admin preview
    /// writes both; agents see them only through visibility).
    changed_in_preview: FixedBitSet,
}

impl Continuity {
    /// The revision decisions are carried from.
    pub fn from(&self) -> u64 {
        self.from
    }

    /// The revision decisions are carried to.
    pub fn to(&self) -> u64 {
        self.to
    }

    /// How many tools changed between the two snapshots (flags included).
    pub fn changed_tools(&self) -> usize {
        self.changed_in_preview.count_ones(..)
    }

    /// `matched` (a decision of the previous snapshot) as the same decision in the new one;
    /// `None` when it is of another revision.
    pub fn matched(&self, matched: &Matched) -> Option<Matched> {
        (matched.revision() == self.from).then(|| matched.at_revision(self.to))
    }

    /// Whether a manifest of a decision reaching `reach` is unchanged in the new snapshot
    /// (`preview`: it lists hidden tools too, with their flags).
    pub fn keeps(&self, reach: &Reach, preview: bool) -> bool {
        reach.is_disjoint(if preview {
            &self.changed_in_preview
        } else {
            &self.changed
        })
    }
}

impl Snapshot {
    /// How this snapshot continues `previous`, if it does: `None` when a policy, a group (its
    /// id, name or members) or the set of tool ids differs, or when `previous` is not older.
    pub fn continuity_from(&self, previous: &Snapshot) -> Option<Continuity> {
        if previous.revision >= self.revision
            || previous.tools.len() != self.tools.len()
            || previous.groups.len() != self.groups.len()
            || previous.catalog.policies != self.catalog.policies
        {
            return None;
        }
        let same_tools = previous
            .tools
            .iter()
            .zip(&self.tools)
            .all(|(old, new)| old.id == new.id);
        let same_groups = previous.groups.iter().zip(&self.groups).all(|(old, new)| {
            old.id == new.id && old.name == new.name && old.members == new.members
        });
        if !same_tools || !same_groups {
            return None;
        }
        let mut changed = previous.visible.clone();
        changed.symmetric_difference_with(&self.visible);
        let mut changed_in_preview = changed.clone();
        for (index, (old, new)) in previous.tools.iter().zip(&self.tools).enumerate() {
            // An entry is shared only between equal tools (`carry.rs`): nothing to compare.
            if Arc::ptr_eq(&old.entry, &new.entry) {
                continue;
            }
            if old.entry.json_prefix() != new.entry.json_prefix()
                || old.name != new.name
                || old.available_in_states != new.available_in_states
            {
                changed.insert(index);
                changed_in_preview.insert(index);
            } else if old.enabled != new.enabled || old.deprecated != new.deprecated {
                changed_in_preview.insert(index);
            }
        }
        Some(Continuity {
            from: previous.revision,
            to: self.revision,
            changed,
            changed_in_preview,
        })
    }
}
