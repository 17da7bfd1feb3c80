//! The documents the store writes and how they are read back.
//!
//! Everything read from MongoDB is outside input: a missing field, a wrong type or JSON that
//! does not decode is [`StoreError::Corrupt`] naming the collection and document, never a
//! panic. Integers are written as BSON int64 but accepted as int32 too, since some servers
//! (nx-27017) hand small numbers back as int32.

use chrono::{DateTime, Utc};
use mongodb::bson::{Bson, Document, doc};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::store::{AuditRecord, EntityKind, StoreError};

/// The `_id` of the one document in `meta`.
pub(super) const META_ID: &str = "catalog";
/// The collection holding the revision document.
pub(super) const META: &str = "meta";
/// The collection of audit records.
pub(super) const AUDIT: &str = "audit";
/// The collection of write-ahead commits (compare-and-set path).
pub(super) const JOURNAL: &str = "journal";

/// The entity collections, in the order a catalog lists them.
pub(super) const ENTITY_KINDS: [EntityKind; 6] = [
    EntityKind::Sources,
    EntityKind::Tools,
    EntityKind::Labels,
    EntityKind::Groups,
    EntityKind::Policies,
    EntityKind::Revisions,
];

/// The collection holding entities of `kind`.
pub(super) fn collection(kind: EntityKind) -> &'static str {
    kind.as_str()
}

/// The `meta` document: the revision, the audit sequence and the commit in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Meta {
    pub revision: u64,
    pub last_audit_seq: u64,
    pub pending: Option<Pending>,
}

/// A claimed commit whose changes are not all applied yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pending {
    /// The commit's id: its journal documents carry it.
    pub commit: String,
    /// How many journal documents it has; 0 for a commit running inside a transaction, which
    /// has no journal (it is only ever seen by servers that let other sessions read
    /// uncommitted writes).
    pub chunks: u64,
}

impl Meta {
    pub(super) fn decode(doc: &Document) -> Result<Meta, StoreError> {
        let what = "the `meta` document";
        let pending = match doc.get("pending") {
            None | Some(Bson::Null) => None,
            Some(Bson::String(commit)) => Some(Pending {
                commit: commit.clone(),
                chunks: integer(doc, "pending_chunks", what)?,
            }),
            Some(other) => {
                return Err(StoreError::Corrupt(format!(
                    "{what} has a `pending` that is not a commit id: {other}"
                )));
            }
        };
        Ok(Meta {
            revision: integer(doc, "revision", what)?,
            last_audit_seq: integer(doc, "last_audit_seq", what)?,
            pending,
        })
    }
}

/// The `meta` document of a new database.
pub(super) fn initial_meta() -> Document {
    doc! {"_id": META_ID, "revision": 0_i64, "last_audit_seq": 0_i64, "pending": Bson::Null}
}

/// A non-negative integer field, as int64 or int32.
pub(super) fn integer(doc: &Document, field: &str, what: &str) -> Result<u64, StoreError> {
    let value = match doc.get(field) {
        Some(Bson::Int64(value)) => Some(*value),
        Some(Bson::Int32(value)) => Some(i64::from(*value)),
        _ => None,
    };
    value
        .and_then(|value| u64::try_from(value).ok())
        .ok_or_else(|| {
            StoreError::Corrupt(format!(
                "{what} has no non-negative integer `{field}` (found {:?})",
                doc.get(field)
            ))
        })
}

/// A counter as BSON int64. Revisions and sequence numbers grow by one per write, so one
/// beyond `i64::MAX` cannot happen; saturating keeps the conversion total anyway.
pub(super) fn int64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A document's `_id` for messages, whatever its type.
fn id_of(doc: &Document) -> String {
    doc.get("_id")
        .map_or_else(|| "(no _id)".to_owned(), ToString::to_string)
}

/// The JSON text every entity and audit document carries. Our entities and audit records
/// always serialise: every map has string keys and `serde_json::Value` cannot hold a
/// non-finite number.
pub(super) fn to_json(value: &impl Serialize) -> String {
    serde_json::to_string(value)
        .expect("catalog entities and audit records always serialise to JSON")
}

/// An entity document: live with its JSON, or a tombstone (`json: null`).
pub(super) fn entity(id: &str, version: i64, json: Option<&str>) -> Document {
    doc! {"_id": id, "_v": version, "json": json.map_or(Bson::Null, Bson::from)}
}

/// Decodes a live entity document of `collection`.
pub(super) fn decode_entity<T: DeserializeOwned>(
    doc: &Document,
    collection: &str,
) -> Result<T, StoreError> {
    let json = doc.get_str("json").map_err(|_| {
        StoreError::Corrupt(format!(
            "document {} of `{collection}` has no `json` text",
            id_of(doc)
        ))
    })?;
    serde_json::from_str(json).map_err(|error| {
        StoreError::Corrupt(format!(
            "document {} of `{collection}` is not valid: {error}",
            id_of(doc)
        ))
    })
}

/// The filter that selects live entities (tombstones have `json: null`).
pub(super) fn live() -> Document {
    doc! {"json": {"$ne": Bson::Null}}
}

/// An audit document: the record's JSON, plus the fields the audit query filters on.
pub(super) fn audit(record: &AuditRecord) -> Document {
    doc! {
        "_id": int64(record.seq),
        "seq": int64(record.seq),
        "revision": int64(record.revision),
        "at_ns": at_ns(record.at),
        "actor": &record.actor,
        "entity": record.entity.as_str(),
        "id": &record.id,
        "json": to_json(record),
    }
}

/// Decodes an audit document.
pub(super) fn decode_audit(doc: &Document) -> Result<AuditRecord, StoreError> {
    decode_entity(doc, AUDIT)
}

/// A timestamp as nanoseconds since the epoch, so that time filters compare exactly (BSON
/// dates stop at milliseconds). Times outside 1677–2262 clamp to the ends, which keeps their
/// order against every time inside.
pub(super) fn at_ns(at: DateTime<Utc>) -> i64 {
    at.timestamp_nanos_opt().unwrap_or(if at.timestamp() < 0 {
        i64::MIN
    } else {
        i64::MAX
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_reads_int32_and_int64_and_refuses_negative_counters() {
        let meta = doc! {"_id": META_ID, "revision": 3_i32, "last_audit_seq": 7_i64, "pending": Bson::Null};
        assert_eq!(
            Meta::decode(&meta).expect("valid"),
            Meta {
                revision: 3,
                last_audit_seq: 7,
                pending: None
            }
        );
        let pending = doc! {"revision": 4_i64, "last_audit_seq": 7_i64, "pending": "c1", "pending_chunks": 2_i32};
        assert_eq!(
            Meta::decode(&pending).expect("valid").pending,
            Some(Pending {
                commit: "c1".to_owned(),
                chunks: 2
            })
        );
        for bad in [
            doc! {"revision": -1_i64, "last_audit_seq": 0_i64},
            doc! {"revision": "1", "last_audit_seq": 0_i64},
            doc! {"last_audit_seq": 0_i64},
            doc! {"revision": 1_i64, "last_audit_seq": 0_i64, "pending": 5_i32},
        ] {
            assert!(
                matches!(Meta::decode(&bad), Err(StoreError::Corrupt(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn an_entity_that_does_not_decode_is_corrupt_and_named() {
        let broken = entity("pii", 1, Some("{not json"));
        match decode_entity::<crate::domain::model::Label>(&broken, "labels") {
            Err(StoreError::Corrupt(message)) => {
                assert!(
                    message.contains("labels") && message.contains("pii"),
                    "{message}"
                );
            }
            other => panic!("expected Corrupt, got {other:?}"),
        }
        let tombstone = entity("gone", 2, None);
        assert!(matches!(
            decode_entity::<crate::domain::model::Label>(&tombstone, "labels"),
            Err(StoreError::Corrupt(_))
        ));
    }

    #[test]
    fn timestamps_keep_nanoseconds_and_clamp_outside_the_i64_range() {
        let at = DateTime::from_timestamp(1_767_225_600, 123_456_789).expect("valid");
        assert_eq!(at_ns(at), 1_767_225_600_123_456_789);
        let far = DateTime::from_timestamp(8_000_000_000_000, 0).expect("valid");
        assert_eq!(at_ns(far), i64::MAX);
        let early = DateTime::from_timestamp(-8_000_000_000_000, 0).expect("valid");
        assert_eq!(at_ns(early), i64::MIN);
    }
}
