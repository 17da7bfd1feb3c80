//! The tools a run pinned when it started (docs/runs.md, "Pinned grant"): sorted tool ids, so
//! that they mean the same at every later revision (tool indexes do not), named by a digest
//! of their content, so that runs pinning the same set share one copy and one cache entry.

use std::sync::Arc;

/// A pinned set of tool ids. Cheap to clone; equal (and hashed) by content digest.
#[derive(Clone)]
pub struct Pinned {
    inner: Arc<Inner>,
}

struct Inner {
    digest: [u8; 32],
    /// Sorted, without duplicates.
    ids: Box<[Box<str>]>,
}

impl Pinned {
    /// The set of `ids` (in any order, repeats allowed).
    pub fn new<'a>(ids: impl IntoIterator<Item = &'a str>) -> Pinned {
        let mut ids: Vec<Box<str>> = ids.into_iter().map(Box::from).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut hasher = blake3::Hasher::new();
        for id in &ids {
            // Length-prefixed: no two sets hash the same bytes.
            hasher.update(&(id.len() as u64).to_le_bytes());
            hasher.update(id.as_bytes());
        }
        Pinned {
            inner: Arc::new(Inner {
                digest: *hasher.finalize().as_bytes(),
                ids: ids.into_boxed_slice(),
            }),
        }
    }

    pub fn contains(&self, id: &str) -> bool {
        self.inner
            .ids
            .binary_search_by(|probe| (**probe).cmp(id))
            .is_ok()
    }

    /// The ids, ascending.
    pub fn ids(&self) -> impl ExactSizeIterator<Item = &str> {
        self.inner.ids.iter().map(|id| &**id)
    }

    pub fn len(&self) -> usize {
        self.inner.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.ids.is_empty()
    }

    /// The content digest, lowercase hex: what names the set in stores.
    pub fn digest(&self) -> String {
        self.inner
            .digest
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }

    /// Bytes held on the heap (for caches bounded in bytes; shared, so counted once per key).
    pub fn heap_bytes(&self) -> usize {
        size_of::<Inner>()
            + self.inner.ids.len() * size_of::<Box<str>>()
            + self.inner.ids.iter().map(|id| id.len()).sum::<usize>()
    }

    /// The ids of `self` that `other` holds too.
    pub fn intersect(&self, other: &Pinned) -> Pinned {
        Pinned::new(self.ids().filter(|id| other.contains(id)))
    }
}

impl PartialEq for Pinned {
    fn eq(&self, other: &Pinned) -> bool {
        self.inner.digest == other.inner.digest
    }
}

impl Eq for Pinned {}

impl std::hash::Hash for Pinned {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.inner.digest.hash(state);
    }
}

impl std::fmt::Debug for Pinned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pinned({} tools, {})", self.len(), &self.digest()[..12])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_are_sorted_deduplicated_and_named_by_content() {
        let a = Pinned::new(["b", "a", "b"]);
        assert_eq!(a.ids().collect::<Vec<_>>(), ["a", "b"]);
        assert!(a.contains("a") && !a.contains("c"));
        assert_eq!(a, Pinned::new(["a", "b"]));
        assert_ne!(a, Pinned::new(["ab"]));
        assert_ne!(Pinned::new(["a", "b"]), Pinned::new(["ab"]));
        assert_eq!(a.intersect(&Pinned::new(["b", "c"])), Pinned::new(["b"]));
        assert!(Pinned::new([]).is_empty());
    }
}
