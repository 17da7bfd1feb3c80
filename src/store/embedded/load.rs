//! Reading the catalog: one read transaction, so the five collections and the revision are one
//! consistent snapshot even while writers commit.

use redb::{Database, ReadTransaction, ReadableDatabase, ReadableTable};
use serde::de::DeserializeOwned;

use super::error::During;
use super::tables::{self, Collection, META, REVISION};
use crate::domain::model::Catalog;
use crate::store::{StoreError, StoredCatalog};

/// The whole catalog, each collection in id order, with its revision.
pub(super) fn load(db: &Database) -> Result<StoredCatalog, StoreError> {
    let txn = db
        .begin_read()
        .during("starting a read to load the catalog")?;
    let revision = revision_in(&txn)?;
    let catalog = Catalog {
        sources: collection(&txn, tables::SOURCES)?,
        tools: collection(&txn, tables::TOOLS)?,
        labels: collection(&txn, tables::LABELS)?,
        groups: collection(&txn, tables::GROUPS)?,
        policies: collection(&txn, tables::POLICIES)?,
        revisions: collection(&txn, tables::REVISIONS)?,
    };
    Ok(StoredCatalog { catalog, revision })
}

/// The current revision.
pub(super) fn revision(db: &Database) -> Result<u64, StoreError> {
    let txn = db.begin_read().during("starting a read of the revision")?;
    revision_in(&txn)
}

fn revision_in(txn: &ReadTransaction) -> Result<u64, StoreError> {
    let meta = txn.open_table(META).during("opening table `meta`")?;
    tables::counter(&meta, REVISION).during("reading the revision")
}

pub(super) fn collection<T: DeserializeOwned>(
    txn: &ReadTransaction,
    table: Collection,
) -> Result<Vec<T>, StoreError> {
    let name = table.to_string();
    let rows = txn
        .open_table(table)
        .during(&format!("opening table `{name}`"))?;
    let mut entities = Vec::new();
    for row in rows.iter().during(&format!("scanning table `{name}`"))? {
        let (id, bytes) = row.during(&format!("scanning table `{name}`"))?;
        entities.push(tables::decode(
            bytes.value(),
            &name,
            &format_args!("{:?}", id.value()),
        )?);
    }
    Ok(entities)
}
