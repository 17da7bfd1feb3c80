//! A [`Commit`]'s changes as the ordered, versioned steps both commit paths apply, and its
//! audit records with their sequence numbers.
//!
//! Each step carries the version `revision · 2^20 + position` (see the module documentation
//! of `mongo`): later steps of a commit beat earlier ones, and every step of a commit beats
//! every step of an earlier commit. A whole-catalog replace becomes, per collection, a `Clear`
//! (tombstone every live entity) followed by a `Put` per entity, so that it is fenced like any
//! other write.

use serde::{Deserialize, Serialize};

use super::documents::{ENTITY_KINDS, to_json};
use crate::domain::model::Catalog;
use crate::store::{AuditRecord, Change, Entity, EntityKind, StoreError};

/// How many steps one commit may have: the span of versions one revision owns.
pub(super) const STEPS_PER_REVISION: u64 = 1 << 20;

/// One write, at its version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Step {
    /// The version the written documents get; a document with a version this high or higher
    /// is left alone.
    pub v: i64,
    #[serde(flatten)]
    pub op: Op,
}

/// What a step does to one collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(super) enum Op {
    /// Insert or replace the entity `id` with this JSON.
    Put {
        kind: EntityKind,
        id: String,
        json: String,
    },
    /// Turn the entity `id` into a tombstone, if it exists.
    Delete { kind: EntityKind, id: String },
    /// Turn every live entity of the collection into a tombstone.
    Clear { kind: EntityKind },
}

/// The steps of `changes`, committed as `revision`.
pub(super) fn steps(changes: &[Change], revision: u64) -> Result<Vec<Step>, StoreError> {
    let mut ops = Vec::new();
    for change in changes {
        match change {
            Change::Put(entity) => ops.push(put(entity)?),
            Change::Delete { kind, id } => ops.push(Op::Delete {
                kind: *kind,
                id: id.clone(),
            }),
            Change::ReplaceAll(catalog) => replace_all(catalog, &mut ops),
        }
    }
    let count = u64::try_from(ops.len()).unwrap_or(u64::MAX);
    if count >= STEPS_PER_REVISION {
        return Err(StoreError::Unavailable(format!(
            "a commit of {count} writes is more than the MongoDB store takes at once \
             (at most {})",
            STEPS_PER_REVISION - 1
        )));
    }
    let base = revision.checked_mul(STEPS_PER_REVISION).ok_or_else(|| {
        StoreError::Corrupt(format!(
            "revision {revision} is beyond what versions can hold"
        ))
    })?;
    ops.into_iter()
        .zip(0_u64..)
        .map(|(op, position)| {
            let v = i64::try_from(base + position).map_err(|_| {
                StoreError::Corrupt(format!(
                    "revision {revision} is beyond what versions can hold"
                ))
            })?;
            Ok(Step { v, op })
        })
        .collect()
}

fn put(entity: &Entity) -> Result<Op, StoreError> {
    let kind = entity.kind();
    let json = match entity {
        Entity::Source(e) => to_json(e),
        Entity::Tool(e) => to_json(e),
        Entity::Label(e) => to_json(e),
        Entity::Group(e) => to_json(e),
        Entity::Policy(e) => to_json(e),
        Entity::Revision(e) => to_json(e),
    };
    Ok(Op::Put {
        kind,
        id: entity.id().to_owned(),
        json,
    })
}

/// Every collection cleared and refilled; a later duplicate id wins, as with puts.
fn replace_all(catalog: &Catalog, ops: &mut Vec<Op>) {
    for kind in ENTITY_KINDS {
        ops.push(Op::Clear { kind });
        let mut fill = |id: &str, json: String| {
            ops.push(Op::Put {
                kind,
                id: id.to_owned(),
                json,
            });
        };
        match kind {
            EntityKind::Sources => catalog.sources.iter().for_each(|e| fill(&e.id, to_json(e))),
            EntityKind::Tools => catalog.tools.iter().for_each(|e| fill(&e.id, to_json(e))),
            EntityKind::Labels => catalog.labels.iter().for_each(|e| fill(&e.id, to_json(e))),
            EntityKind::Groups => catalog.groups.iter().for_each(|e| fill(&e.id, to_json(e))),
            EntityKind::Policies => catalog
                .policies
                .iter()
                .for_each(|e| fill(&e.id, to_json(e))),
            EntityKind::Revisions => catalog
                .revisions
                .iter()
                .for_each(|e| fill(&e.id, to_json(e))),
        }
    }
}

/// The commit's audit records as the store keeps them: `seq` from `last_seq + 1` on, and
/// `revision` the commit's.
pub(super) fn audit(records: Vec<AuditRecord>, last_seq: u64, revision: u64) -> Vec<AuditRecord> {
    records
        .into_iter()
        .zip(last_seq + 1..)
        .map(|(mut record, seq)| {
            record.seq = seq;
            record.revision = revision;
            record
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::model::Label;
    use crate::store::Subject;

    fn label(id: &str) -> Label {
        Label {
            id: id.to_owned(),
            name: id.to_owned(),
            description: String::new(),
            color: None,
            created_at: None,
            updated_at: None,
            created_by: None,
            updated_by: None,
        }
    }

    #[test]
    fn versions_grow_within_a_commit_and_across_revisions() {
        let changes = vec![
            Change::Put(Entity::Label(label("a"))),
            Change::Delete {
                kind: EntityKind::Labels,
                id: "a".to_owned(),
            },
        ];
        let first = steps(&changes, 1).expect("steps");
        let second = steps(&changes, 2).expect("steps");
        let versions: Vec<i64> = first.iter().chain(&second).map(|s| s.v).collect();
        assert!(versions.windows(2).all(|w| w[0] < w[1]), "{versions:?}");
        assert_eq!(first[0].v, 1 << 20);
    }

    #[test]
    fn replace_all_clears_each_collection_before_refilling_it() {
        let catalog = Catalog {
            labels: vec![label("x"), label("y")],
            ..Catalog::default()
        };
        let ops: Vec<Op> = steps(&[Change::ReplaceAll(catalog)], 3)
            .expect("steps")
            .into_iter()
            .map(|s| s.op)
            .collect();
        let labels: Vec<String> = ops
            .iter()
            .filter_map(|op| match op {
                Op::Clear {
                    kind: EntityKind::Labels,
                } => Some("clear".to_owned()),
                Op::Put {
                    kind: EntityKind::Labels,
                    id,
                    ..
                } => Some(id.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(labels, ["clear", "x", "y"]);
        assert_eq!(ops.len(), 6 + 2, "one clear per collection and two puts");
    }

    #[test]
    fn audit_records_get_consecutive_seqs_and_the_commit_revision() {
        let record = AuditRecord {
            seq: 99,
            revision: 99,
            at: chrono::DateTime::UNIX_EPOCH,
            actor: "alice".to_owned(),
            action: "create".to_owned(),
            entity: Subject::Labels,
            id: "a".to_owned(),
            before: None,
            after: None,
            request_id: None,
        };
        let records = audit(vec![record.clone(), record], 7, 4);
        let positions: Vec<(u64, u64)> = records.iter().map(|r| (r.seq, r.revision)).collect();
        assert_eq!(positions, [(8, 4), (9, 4)]);
    }
}
