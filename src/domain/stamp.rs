//! The server-set fields every entity carries (`created_at`, `created_by`, `updated_at`,
//! `updated_by`) and the one way they are written.
//!
//! Invariant: these fields only ever come from a [`Stamp`] made by the service for the write
//! that changes the entity (who asked, and when); never from a request body or a document. The
//! clock is read by the caller: the domain stays pure.

use chrono::{DateTime, Utc};

use super::model::{AccessPolicy, Label, Source, Tool, ToolGroup};

/// Who changes entities, and when: one per write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    pub at: DateTime<Utc>,
    pub by: String,
}

/// The four server-set fields of an entity, borrowed for writing.
pub struct Stamps<'e> {
    pub created_at: &'e mut Option<DateTime<Utc>>,
    pub updated_at: &'e mut Option<DateTime<Utc>>,
    pub created_by: &'e mut Option<String>,
    pub updated_by: &'e mut Option<String>,
}

/// An entity with server-set fields.
pub trait Stamped: Clone + PartialEq {
    fn stamps(&mut self) -> Stamps<'_>;
}

impl Stamp {
    /// Marks `entity` as created (and last updated) by this stamp.
    pub fn created<E: Stamped>(&self, entity: &mut E) {
        let stamps = entity.stamps();
        *stamps.created_at = Some(self.at);
        *stamps.created_by = Some(self.by.clone());
        *stamps.updated_at = Some(self.at);
        *stamps.updated_by = Some(self.by.clone());
    }

    /// Marks `entity`, a new version of `before`, as updated by this stamp: the creation
    /// stamps are `before`'s, whatever `entity` carried.
    pub fn updated<E: Stamped>(&self, entity: &mut E, before: &E) {
        copy_stamps(before, entity);
        let stamps = entity.stamps();
        *stamps.updated_at = Some(self.at);
        *stamps.updated_by = Some(self.by.clone());
    }

    /// Marks `entity` as last updated by this stamp, keeping its creation stamps.
    pub fn touched<E: Stamped>(&self, entity: &mut E) {
        let stamps = entity.stamps();
        *stamps.updated_at = Some(self.at);
        *stamps.updated_by = Some(self.by.clone());
    }

    /// Fills in whichever of the creation and update stamps `entity` lacks (a seed document
    /// written by hand carries none).
    pub fn fill_missing<E: Stamped>(&self, entity: &mut E) {
        let stamps = entity.stamps();
        if stamps.created_at.is_none() {
            *stamps.created_at = Some(self.at);
            *stamps.created_by = Some(self.by.clone());
        }
        if stamps.updated_at.is_none() {
            *stamps.updated_at = Some(self.at);
            *stamps.updated_by = Some(self.by.clone());
        }
    }
}

/// Gives `to` the server-set fields of `from`.
pub fn copy_stamps<E: Stamped>(from: &E, to: &mut E) {
    let mut from = from.clone();
    let old = from.stamps();
    let new = to.stamps();
    *new.created_at = *old.created_at;
    *new.updated_at = *old.updated_at;
    *new.created_by = old.created_by.take();
    *new.updated_by = old.updated_by.take();
}

/// Whether two versions of an entity differ in anything but their server-set fields.
pub fn same_content<E: Stamped>(a: &E, b: &E) -> bool {
    let (mut a, mut b) = (a.clone(), b.clone());
    for entity in [&mut a, &mut b] {
        let stamps = entity.stamps();
        *stamps.created_at = None;
        *stamps.updated_at = None;
        *stamps.created_by = None;
        *stamps.updated_by = None;
    }
    a == b
}

macro_rules! stamped {
    ($($entity:ty),*) => {$(
        impl Stamped for $entity {
            fn stamps(&mut self) -> Stamps<'_> {
                Stamps {
                    created_at: &mut self.created_at,
                    updated_at: &mut self.updated_at,
                    created_by: &mut self.created_by,
                    updated_by: &mut self.updated_by,
                }
            }
        }
    )*};
}

stamped!(Source, Tool, Label, ToolGroup, AccessPolicy);

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn stamp(second: u32, by: &str) -> Stamp {
        Stamp {
            at: Utc
                .with_ymd_and_hms(2026, 1, 1, 0, 0, second)
                .single()
                .expect("a valid time"),
            by: by.to_owned(),
        }
    }

    fn label() -> Label {
        serde_json::from_value(serde_json::json!({"id": "l", "name": "l"})).expect("a label")
    }

    #[test]
    fn an_update_keeps_the_creation_and_overwrites_what_the_body_claimed() {
        let mut before = label();
        stamp(1, "alice").created(&mut before);
        let mut next = label();
        next.name = "renamed".to_owned();
        stamp(9, "mallory").created(&mut next); // what a forged body might carry
        stamp(2, "bob").updated(&mut next, &before);
        assert_eq!(next.created_by.as_deref(), Some("alice"));
        assert_eq!(next.created_at, before.created_at);
        assert_eq!(next.updated_by.as_deref(), Some("bob"));
        assert_eq!(next.updated_at, Some(stamp(2, "bob").at));
    }

    #[test]
    fn content_comparison_ignores_only_the_stamps() {
        let mut a = label();
        let mut b = label();
        stamp(1, "alice").created(&mut a);
        stamp(2, "bob").created(&mut b);
        assert!(same_content(&a, &b));
        b.name = "other".to_owned();
        assert!(!same_content(&a, &b));
    }

    #[test]
    fn missing_stamps_are_filled_and_present_ones_kept() {
        let mut entity = label();
        stamp(1, "alice").fill_missing(&mut entity);
        stamp(2, "bob").fill_missing(&mut entity);
        assert_eq!(entity.created_by.as_deref(), Some("alice"));
        assert_eq!(entity.updated_by.as_deref(), Some("alice"));
        stamp(3, "carol").touched(&mut entity);
        assert_eq!(entity.created_by.as_deref(), Some("alice"));
        assert_eq!(entity.updated_by.as_deref(), Some("carol"));
    }
}
