//! The on-disk layout and the JSON codec of its rows.
//!
//! One table per collection, keyed by entity id, so that a scan returns entities in id order and
//! a put or delete touches one row. Values are the entities' own serde JSON: readable with any
//! redb tool, and tolerant of fields added later (they have serde defaults). `meta` holds the
//! revision and the last audit sequence number; `audit` is keyed by sequence number so that a
//! cursor is a range scan.

use redb::{ReadableTable, TableDefinition};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::store::{EntityKind, StoreError};

/// A collection table: entity id → entity JSON.
pub(super) type Collection = TableDefinition<'static, &'static str, &'static [u8]>;

pub(super) const SOURCES: Collection = TableDefinition::new("sources");
pub(super) const TOOLS: Collection = TableDefinition::new("tools");
pub(super) const LABELS: Collection = TableDefinition::new("labels");
pub(super) const GROUPS: Collection = TableDefinition::new("groups");
pub(super) const POLICIES: Collection = TableDefinition::new("policies");
pub(super) const REVISIONS: Collection = TableDefinition::new("revisions");

/// Every collection table, in the order a catalog document lists them (revisions last).
pub(super) const COLLECTIONS: [Collection; 6] =
    [SOURCES, TOOLS, LABELS, GROUPS, POLICIES, REVISIONS];

/// Counters: [`REVISION`] and [`LAST_AUDIT_SEQ`]. A missing key reads as 0.
pub(super) const META: TableDefinition<'static, &'static str, u64> = TableDefinition::new("meta");
/// The catalog revision; 0 until the first commit.
pub(super) const REVISION: &str = "revision";
/// The last audit sequence number handed out. Kept apart from the audit table so that a number
/// is never reused, even if old records are pruned one day.
pub(super) const LAST_AUDIT_SEQ: &str = "last_audit_seq";

/// toolgate's own signing keys: kid → `SigningKeyRecord` JSON. Not a catalog collection: no
/// catalog read or document ever shows it.
pub(super) const SIGNING_KEYS: Collection = TableDefinition::new("signing_keys");

/// The change log: seq → `AuditRecord` JSON.
pub(super) const AUDIT: TableDefinition<'static, u64, &'static [u8]> =
    TableDefinition::new("audit");

/// The table holding entities of `kind`.
pub(super) fn collection(kind: EntityKind) -> Collection {
    match kind {
        EntityKind::Sources => SOURCES,
        EntityKind::Tools => TOOLS,
        EntityKind::Labels => LABELS,
        EntityKind::Groups => GROUPS,
        EntityKind::Policies => POLICIES,
        EntityKind::Revisions => REVISIONS,
    }
}

/// Reads a counter from `meta`; absent means 0.
pub(super) fn counter(
    meta: &impl ReadableTable<&'static str, u64>,
    key: &str,
) -> Result<u64, redb::StorageError> {
    Ok(meta.get(key)?.map_or(0, |value| value.value()))
}

/// Encodes a row. Our entities and audit records always serialise: every map has string keys
/// and `serde_json::Value` cannot hold a non-finite number.
pub(super) fn encode(value: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec(value).expect("catalog entities and audit records always serialise to JSON")
}

/// Decodes a row, naming the table and key if the bytes are not what we wrote.
pub(super) fn decode<T: DeserializeOwned>(
    bytes: &[u8],
    table: &str,
    key: &dyn std::fmt::Display,
) -> Result<T, StoreError> {
    serde_json::from_slice(bytes).map_err(|error| {
        StoreError::Corrupt(format!(
            "row {key} of table `{table}` is not valid: {error}"
        ))
    })
}
