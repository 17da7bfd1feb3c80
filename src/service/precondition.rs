//! The revision a write was prepared against (`If-Match`), checked inside the write itself.
//!
//! An admin who reads an entity at revision 41, edits it and writes it back must not silently
//! revert what another admin wrote at revision 42. The check belongs to
//! [`CatalogService::write_if`](super::CatalogService::write_if): it is made against the very
//! snapshot the mutation is applied to, and the store's compare-and-set on that snapshot's
//! revision guards the commit, so no other write (from this instance or another) can slip in
//! between the check and the commit.

/// Which catalog revisions a write may be applied to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Precondition {
    /// Any revision: no `If-Match`, or `If-Match: *` (the catalog always exists).
    #[default]
    Any,
    /// Only one of these; empty when every tag given was one this server never issues (a weak
    /// or foreign tag), which no revision satisfies.
    OneOf(Vec<u64>),
}

impl Precondition {
    /// Whether a write may be applied to the catalog at `revision`.
    pub fn admits(&self, revision: u64) -> bool {
        match self {
            Precondition::Any => true,
            Precondition::OneOf(revisions) => revisions.contains(&revision),
        }
    }

    /// The revision a write is still waiting for, if the catalog may yet reach it: a tag for
    /// a revision newer than the one this instance has seen means it should look at the store.
    pub(super) fn wants_newer_than(&self, revision: u64) -> bool {
        match self {
            Precondition::Any => false,
            Precondition::OneOf(revisions) => revisions.iter().any(|r| *r > revision),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_named_revisions_are_admitted() {
        assert!(Precondition::Any.admits(7));
        assert!(Precondition::OneOf(vec![3, 7]).admits(7));
        assert!(!Precondition::OneOf(vec![3, 6]).admits(7));
        assert!(!Precondition::OneOf(Vec::new()).admits(0));
        assert!(Precondition::OneOf(vec![8]).wants_newer_than(7));
        assert!(!Precondition::OneOf(vec![6]).wants_newer_than(7));
    }
}
