//! Applying a [`Commit`]: one redb write transaction that checks the revision, applies the
//! changes, bumps the revision and appends the audit records. redb admits one write transaction
//! at a time, so the check and the write cannot interleave with another writer; an early return
//! drops the transaction, which aborts it, so a failed commit writes nothing.

use redb::{Database, WriteTransaction};
use serde::Serialize;

use super::error::During;
use super::tables::{self, AUDIT, Collection, LAST_AUDIT_SEQ, META, REVISION};
use crate::domain::model::Catalog;
use crate::store::{Change, Commit, Entity, StoreError};

/// Applies `commit` if the store is still at `commit.expected_revision`; returns the new revision.
pub(super) fn apply(db: &Database, commit: Commit) -> Result<u64, StoreError> {
    let txn = db.begin_write().during("starting a write")?;
    let new_revision = {
        let mut meta = txn.open_table(META).during("opening table `meta`")?;
        let current = tables::counter(&meta, REVISION).during("reading the revision")?;
        if current != commit.expected_revision {
            return Err(StoreError::RevisionConflict {
                expected: commit.expected_revision,
                current,
            });
        }
        let new_revision = current + 1;

        for change in &commit.changes {
            apply_change(&txn, change)?;
        }

        let mut seq =
            tables::counter(&meta, LAST_AUDIT_SEQ).during("reading the audit sequence")?;
        let mut audit = txn.open_table(AUDIT).during("opening table `audit`")?;
        for mut record in commit.audit {
            seq += 1;
            record.seq = seq;
            record.revision = new_revision;
            audit
                .insert(seq, tables::encode(&record).as_slice())
                .during("appending to the audit log")?;
        }
        meta.insert(REVISION, new_revision)
            .during("writing the revision")?;
        meta.insert(LAST_AUDIT_SEQ, seq)
            .during("writing the audit sequence")?;
        new_revision
    };
    txn.commit().during("committing")?;
    Ok(new_revision)
}

fn apply_change(txn: &WriteTransaction, change: &Change) -> Result<(), StoreError> {
    match change {
        Change::Put(entity) => put(txn, entity),
        Change::Delete { kind, id } => {
            let table = tables::collection(*kind);
            let mut rows = txn
                .open_table(table)
                .during(&format!("opening table `{table}`"))?;
            rows.remove(id.as_str())
                .during(&format!("deleting {id:?} from `{table}`"))?;
            Ok(())
        }
        Change::ReplaceAll(catalog) => replace_all(txn, catalog),
    }
}

fn put(txn: &WriteTransaction, entity: &Entity) -> Result<(), StoreError> {
    let kind = entity.kind();
    let table = tables::collection(kind);
    let bytes = match entity {
        Entity::Source(e) => tables::encode(e),
        Entity::Tool(e) => tables::encode(e),
        Entity::Label(e) => tables::encode(e),
        Entity::Group(e) => tables::encode(e),
        Entity::Policy(e) => tables::encode(e),
        Entity::Revision(e) => tables::encode(e),
    };
    let id = entity.id();
    let mut rows = txn
        .open_table(table)
        .during(&format!("opening table `{table}`"))?;
    rows.insert(id, bytes.as_slice())
        .during(&format!("writing {id:?} to `{table}`"))?;
    Ok(())
}

fn replace_all(txn: &WriteTransaction, catalog: &Catalog) -> Result<(), StoreError> {
    fill(txn, tables::SOURCES, &catalog.sources, |e| &e.id)?;
    fill(txn, tables::TOOLS, &catalog.tools, |e| &e.id)?;
    fill(txn, tables::LABELS, &catalog.labels, |e| &e.id)?;
    fill(txn, tables::GROUPS, &catalog.groups, |e| &e.id)?;
    fill(txn, tables::POLICIES, &catalog.policies, |e| &e.id)?;
    fill(txn, tables::REVISIONS, &catalog.revisions, |e| &e.id)
}

/// Empties `table` and writes `entities` into it (a later duplicate id wins, as with puts).
fn fill<T: Serialize>(
    txn: &WriteTransaction,
    table: Collection,
    entities: &[T],
    id_of: impl Fn(&T) -> &str,
) -> Result<(), StoreError> {
    let mut rows = txn
        .open_table(table)
        .during(&format!("opening table `{table}`"))?;
    rows.retain(|_, _| false)
        .during(&format!("clearing table `{table}`"))?;
    for entity in entities {
        let id = id_of(entity);
        rows.insert(id, tables::encode(entity).as_slice())
            .during(&format!("writing {id:?} to `{table}`"))?;
    }
    Ok(())
}
