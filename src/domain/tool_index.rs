//! Tool ids → snapshot positions in one hash probe: a decision batch asks for a hundred tools
//! by id, and a binary search over 10,000 ids sharing long prefixes (`src-0012:op-00345`) spent
//! a fifth of a batch's time in string compares.
//!
//! Open addressing over positions (`u32`, no copy of the ids): the table is at most half full,
//! probed linearly, and each probe compares one id. The hash has per-process random keys, so
//! ids written to collide cannot be chosen in advance.

use std::hash::{BuildHasher, RandomState};

/// Marks an empty slot.
const EMPTY: u32 = u32::MAX;

/// Positions of ids, by id; built once per snapshot over its (distinct) tool ids.
#[derive(Debug)]
pub(super) struct ToolIndex {
    slots: Box<[u32]>,
    hasher: RandomState,
}

impl ToolIndex {
    /// The index of `ids` (distinct), each found at its position in the iteration.
    pub(super) fn new<'a>(ids: impl ExactSizeIterator<Item = &'a str>) -> ToolIndex {
        let capacity = (ids.len() * 2).next_power_of_two().max(8);
        let mut index = ToolIndex {
            slots: vec![EMPTY; capacity].into_boxed_slice(),
            hasher: RandomState::new(),
        };
        let mask = capacity - 1;
        for (position, id) in ids.enumerate() {
            let mut slot = index.start(id);
            while index.slots[slot] != EMPTY {
                slot = (slot + 1) & mask;
            }
            index.slots[slot] = u32::try_from(position).expect("fewer than 2^32 tools");
        }
        index
    }

    fn start(&self, id: &str) -> usize {
        // Truncation is the point: the low bits pick the slot.
        (self.hasher.hash_one(id) as usize) & (self.slots.len() - 1)
    }

    /// The position of `id`, given the ids by position (`id_at`), if it is one of them.
    pub(super) fn find<'s>(&self, id: &str, id_at: impl Fn(u32) -> &'s str) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut slot = self.start(id);
        loop {
            match self.slots[slot] {
                EMPTY => return None,
                position if id_at(position) == id => return Some(position),
                _ => slot = (slot + 1) & mask,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_is_found_at_its_position_and_no_other_is_found() {
        let ids: Vec<String> = (0..5000)
            .map(|i| format!("src-{:04}:op-{i:05}", i % 50))
            .collect();
        let index = ToolIndex::new(ids.iter().map(String::as_str));
        let at = |position: u32| ids[position as usize].as_str();
        for (position, id) in ids.iter().enumerate() {
            assert_eq!(index.find(id, at), Some(position as u32), "{id}");
        }
        for missing in ["", "src-0000:op-5000", "src-0000:op-0000x", "x"] {
            assert_eq!(index.find(missing, at), None, "{missing}");
        }
        let empty = ToolIndex::new(std::iter::empty());
        assert_eq!(empty.find("a", |_| unreachable!()), None);
    }
}
