//! Each tool's serialised manifest entry for a new snapshot, carried over from the previous
//! snapshot when the tool did not change.
//!
//! An admin write usually touches one tool of thousands, and the first request after it must
//! not pay for serialising all the others again (issue: "cold at the speed of hot"). So a
//! compile builds every entry up front, off the request path: an entry whose tool is equal, field
//! for field, to the tool of the same id in the previous snapshot is that snapshot's entry (one
//! reference count), and only the others are serialised, spread over the workers.
//!
//! Invariant: an entry is a function of its tool alone ([`ToolEntry::new`]), so a carried entry
//! is exactly the one a fresh serialisation would give. Equality is the whole `Tool`, not a
//! digest of it: schemas are shared (`Arc`), so comparing an untouched tool costs a few string
//! compares and pointer compares, and a false "equal" is impossible.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use super::entry::ToolEntry;
use super::model::{Catalog, Tool};
use super::workers::Workers;

/// How many entries one worker serialises before asking for more: enough that the shared
/// counter is not contended, few enough that the work spreads.
const ENTRIES_PER_CLAIM: usize = 64;
/// Below this many entries to serialise, one thread does it: spawning costs more.
const ENTRIES_PER_THREAD: usize = 512;

/// The entries of a compile, in snapshot order, and how many were serialised (not carried).
pub(super) struct Entries {
    pub entries: Vec<Arc<ToolEntry>>,
    pub built: usize,
}

/// The entries of the tools at `positions` (indices into `catalog.tools`, in snapshot order):
/// what `previous` gives for a tool (the previous snapshot's entry when it held an equal tool),
/// the others serialised on `workers`.
pub(super) fn entries(
    catalog: &Catalog,
    positions: &[usize],
    previous: impl Fn(&Tool) -> Option<Arc<ToolEntry>>,
    workers: &dyn Workers,
) -> Entries {
    let carried: Vec<Option<Arc<ToolEntry>>> = positions
        .iter()
        .map(|&position| previous(&catalog.tools[position]))
        .collect();
    let missing: Vec<usize> = (0..positions.len())
        .filter(|&t| carried[t].is_none())
        .collect();
    let built: Vec<OnceLock<Arc<ToolEntry>>> = missing.iter().map(|_| OnceLock::new()).collect();
    let next = AtomicUsize::new(0);
    let job = || {
        loop {
            let start = next.fetch_add(ENTRIES_PER_CLAIM, Ordering::Relaxed);
            if start >= missing.len() {
                return;
            }
            for m in start..(start + ENTRIES_PER_CLAIM).min(missing.len()) {
                let tool = &catalog.tools[positions[missing[m]]];
                // Each index is claimed by exactly one copy: the slot is empty.
                let _ = built[m].set(Arc::new(ToolEntry::new(tool)));
            }
        }
    };
    if !missing.is_empty() {
        workers.run((missing.len() / ENTRIES_PER_THREAD).max(1), &job);
    }
    let mut built = built.into_iter().map(|slot| {
        slot.into_inner()
            .expect("every missing entry was serialised by the workers")
    });
    let count = missing.len();
    let entries = carried
        .into_iter()
        .map(|entry| entry.unwrap_or_else(|| built.next().expect("one per missing entry")))
        .collect();
    Entries {
        entries,
        built: count,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::super::entry::ToolEntry;
    use super::super::model::Catalog;
    use super::super::snapshot::Snapshot;
    use super::super::workers::OnThisThread;

    fn catalog() -> Catalog {
        let mut catalog: Catalog = serde_json::from_value(json!({
            "sources": [{"id": "s", "name": "svc", "type": "manual"}],
            "tools": [
                {"source_id": "s", "operation_id": "b", "name": "b", "method": "GET"},
                {"source_id": "s", "operation_id": "a", "name": "a", "method": "POST"}
            ]
        }))
        .expect("catalog parses");
        catalog.normalize();
        catalog
    }

    /// A compile after a one-tool change serialises that tool's entry only; every other entry
    /// is the previous snapshot's (the same allocation), and equals a fresh serialisation.
    #[test]
    fn a_one_tool_change_serialises_one_entry() {
        let before = Snapshot::compile(catalog(), 1).expect("compiles");
        assert_eq!(
            before.entries_built(),
            2,
            "a first compile serialises every entry"
        );
        let mut catalog = before.catalog().clone();
        catalog.tools[0].description = "changed".to_owned();
        let after =
            Snapshot::compile_after(catalog, 2, &OnThisThread, Some(&before)).expect("compiles");
        assert_eq!(after.entries_built(), 1);
        let changed = super::super::snapshot::tool_index(&after, &after.catalog.tools[0].id)
            .expect("the tool") as usize;
        for t in 0..after.tools.len() {
            let fresh = ToolEntry::new(&after.catalog.tools[after.tools[t].catalog_position]);
            assert_eq!(after.tool_entry(t).json_prefix(), fresh.json_prefix());
            assert_eq!(
                Arc::ptr_eq(&after.tools[t].entry, &before.tools[t].entry),
                t != changed,
                "tool {t}"
            );
        }
        assert!(
            after
                .tool_entry(changed)
                .json_prefix()
                .contains("\"changed\"")
        );
    }
}
