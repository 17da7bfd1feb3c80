//! The signing keys collection (`signing_keys`: one document per key, `_id` = kid). Not part
//! of the catalog's commits: a key is added once and removed once, each write on its own.

use mongodb::Database;
use mongodb::bson::{Bson, Document, doc};

use super::error::During;
use crate::store::{SigningKeyRecord, StoreError};

pub(super) const SIGNING_KEYS: &str = "signing_keys";

pub(super) async fn list(db: &Database) -> Result<Vec<SigningKeyRecord>, StoreError> {
    let doing = "reading `signing_keys`";
    let mut cursor = db
        .collection::<Document>(SIGNING_KEYS)
        .find(doc! {})
        .await
        .during(doing)?;
    let mut keys = Vec::new();
    while cursor.advance().await.during(doing)? {
        let document: Document = cursor.deserialize_current().during(doing)?;
        keys.push(decode(&document)?);
    }
    keys.sort_by(|a, b| (a.created_at, &a.kid).cmp(&(b.created_at, &b.kid)));
    Ok(keys)
}

fn decode(document: &Document) -> Result<SigningKeyRecord, StoreError> {
    let corrupt = |what: &str| {
        StoreError::Corrupt(format!("a document of `signing_keys` has no usable {what}"))
    };
    Ok(SigningKeyRecord {
        kid: document
            .get_str("_id")
            .map_err(|_| corrupt("_id"))?
            .to_owned(),
        // Whatever integer type the server kept the number as.
        created_at: match document.get("created_at") {
            Some(Bson::Int64(seconds)) => *seconds,
            Some(Bson::Int32(seconds)) => i64::from(*seconds),
            _ => return Err(corrupt("created_at")),
        },
        private_key: document
            .get_str("private_key")
            .map_err(|_| corrupt("private_key"))?
            .to_owned(),
    })
}

/// Inserts the key unless its kid is there (an upsert that never replaces).
pub(super) async fn add(db: &Database, key: &SigningKeyRecord) -> Result<(), StoreError> {
    let document = doc! {
        "_id": &key.kid,
        "created_at": key.created_at,
        "private_key": &key.private_key,
    };
    db.collection::<Document>(SIGNING_KEYS)
        .update_one(doc! {"_id": &key.kid}, doc! {"$setOnInsert": document})
        .upsert(true)
        .await
        .during("adding a signing key")
        .map(drop)
}

pub(super) async fn remove(db: &Database, kid: &str) -> Result<(), StoreError> {
    db.collection::<Document>(SIGNING_KEYS)
        .delete_one(doc! {"_id": kid})
        .await
        .during("removing a signing key")
        .map(drop)
}
