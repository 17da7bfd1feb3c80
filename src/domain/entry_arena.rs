//! Every tool's serialised entry of one snapshot, one after another in tool order.
//!
//! A manifest body is mostly these bytes, copied entry by entry. Copied out of thousands of
//! separate allocations, the copy runs at half the speed of the kernel's copy of the same bytes
//! into the socket (cache and TLB misses); laid out in tool order, a manifest (whose entries are
//! in tool order too) reads them front to back. The entries themselves stay shared between
//! snapshots (`carry.rs`); the arena is rebuilt by each compile, a copy of a few megabytes.

use super::entry::ToolEntry;

#[derive(Debug, Default)]
pub(super) struct EntryArena {
    bytes: Box<[u8]>,
    /// Entry `t` is `bytes[starts[t]..starts[t + 1]]`.
    starts: Box<[usize]>,
}

impl EntryArena {
    /// The full JSON prefixes of `entries`, in order.
    pub(super) fn of<'e>(entries: impl Iterator<Item = &'e ToolEntry> + Clone) -> EntryArena {
        let total = entries.clone().map(ToolEntry::prefix_len).sum();
        let mut bytes = Vec::with_capacity(total);
        let mut starts = Vec::with_capacity(entries.size_hint().0 + 1);
        starts.push(0);
        for entry in entries {
            bytes.extend_from_slice(entry.json_prefix().as_bytes());
            starts.push(bytes.len());
        }
        EntryArena {
            bytes: bytes.into_boxed_slice(),
            starts: starts.into_boxed_slice(),
        }
    }

    /// Tool `t`'s entry with all its fields (what [`ToolEntry::write_prefix`] writes for all).
    pub(super) fn prefix(&self, t: usize) -> &[u8] {
        &self.bytes[self.starts[t]..self.starts[t + 1]]
    }
}
