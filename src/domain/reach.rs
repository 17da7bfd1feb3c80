//! The tools a decision reaches: what a manifest of it could list under any options.

use std::sync::Arc;

use fixedbitset::FixedBitSet;

/// The tools a decision grants, before visibility and request options: a manifest of that
/// decision can only list tools from here, under any options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reach(Arc<FixedBitSet>);

impl Reach {
    pub(super) fn new(granted: FixedBitSet) -> Reach {
        Reach(Arc::new(granted))
    }

    /// Whether it holds none of `tools` (a set over the same tools: one of another length holds
    /// something of it, as far as anyone can tell).
    pub(super) fn is_disjoint(&self, tools: &FixedBitSet) -> bool {
        self.0.len() == tools.len() && self.0.is_disjoint(tools)
    }

    /// Bytes it holds on the heap (it is kept beside cached manifests, bounded in bytes).
    pub fn heap_bytes(&self) -> usize {
        size_of_val(self.0.as_slice())
    }
}
