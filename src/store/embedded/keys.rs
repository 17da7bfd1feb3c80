//! The signing keys table (`signing_keys`: kid → key JSON), each operation one transaction.

use redb::{Database, ReadableDatabase, ReadableTable};

use super::error::During;
use super::load::collection;
use super::tables::{self, SIGNING_KEYS};
use crate::store::{SigningKeyRecord, StoreError};

pub(super) fn list(db: &Database) -> Result<Vec<SigningKeyRecord>, StoreError> {
    let txn = db.begin_read().during("reading the signing keys")?;
    let mut keys: Vec<SigningKeyRecord> = collection(&txn, SIGNING_KEYS)?;
    keys.sort_by(|a, b| (a.created_at, &a.kid).cmp(&(b.created_at, &b.kid)));
    Ok(keys)
}

pub(super) fn add(db: &Database, key: &SigningKeyRecord) -> Result<(), StoreError> {
    let txn = db.begin_write().during("adding a signing key")?;
    {
        let mut table = txn
            .open_table(SIGNING_KEYS)
            .during("opening table `signing_keys`")?;
        let present = table
            .get(key.kid.as_str())
            .during("reading table `signing_keys`")?
            .is_some();
        if !present {
            table
                .insert(key.kid.as_str(), tables::encode(key).as_slice())
                .during("writing table `signing_keys`")?;
        }
    }
    txn.commit().during("adding a signing key")
}

pub(super) fn remove(db: &Database, kid: &str) -> Result<(), StoreError> {
    let txn = db.begin_write().during("removing a signing key")?;
    txn.open_table(SIGNING_KEYS)
        .during("opening table `signing_keys`")?
        .remove(kid)
        .during("writing table `signing_keys`")?;
    txn.commit().during("removing a signing key")
}
