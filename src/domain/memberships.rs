//! Each tool's groups, precomputed per snapshot: what lets a manifest write every entry's
//! granted groups in one pass over its tools, instead of a pass over every granted group's
//! member set (hundreds of bitsets of the whole catalog's size for a broad decision).
//!
//! Bounded: a catalog whose groups hold more memberships than [`MAX_MEMBERSHIPS`] (a thousand
//! groups that each hold every tool) keeps none, and manifests take the per-group passes.

use fixedbitset::FixedBitSet;

/// The most memberships (tool, group) kept: 16 MiB of group indices.
pub(super) const MAX_MEMBERSHIPS: usize = 4 << 20;

/// For each tool, the groups whose members include it, ascending; one flat list.
#[derive(Debug)]
pub(super) struct Memberships {
    /// Tool `t`'s groups are `groups[starts[t]..starts[t + 1]]`.
    starts: Vec<u32>,
    groups: Vec<u32>,
}

impl Memberships {
    /// The memberships of `members` (each group's member set over `tool_count` tools, in group
    /// order), or `None` when there are more than `max`.
    pub(super) fn of<'g>(
        members: impl Iterator<Item = &'g FixedBitSet> + Clone,
        tool_count: usize,
        max: usize,
    ) -> Option<Memberships> {
        let mut starts = vec![0u32; tool_count + 1];
        let mut total = 0usize;
        for set in members.clone() {
            total += set.count_ones(..);
            if total > max {
                return None;
            }
            for t in set.ones() {
                starts[t + 1] += 1;
            }
        }
        for t in 1..starts.len() {
            starts[t] += starts[t - 1];
        }
        let mut next = starts.clone();
        let mut groups = vec![0u32; total];
        for (group, set) in members.enumerate() {
            for t in set.ones() {
                groups[next[t] as usize] = group as u32;
                next[t] += 1;
            }
        }
        Some(Memberships { starts, groups })
    }

    /// Tool `t`'s groups, ascending.
    pub(super) fn of_tool(&self, t: usize) -> &[u32] {
        &self.groups[self.starts[t] as usize..self.starts[t + 1] as usize]
    }
}
