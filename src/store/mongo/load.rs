//! Reading the catalog and its revision.
//!
//! Without a transaction to read from, a load is made consistent by bracketing: read `meta`
//! (rolling forward any pending commit first), read the five collections, read `meta` again.
//! Entities change only while a commit is pending, and a commit is pending from its claim
//! (which moves the revision) to its end. So if both reads of `meta` show the same revision and
//! no pending commit, nothing was applied in between and the collections are exactly that
//! revision; otherwise the load starts over. Late replays of older commits cannot disturb it:
//! their writes are fenced out by version (see `apply.rs`).

use mongodb::Database;
use mongodb::bson::Document;
use serde::de::DeserializeOwned;

use super::documents::{self, META};
use super::error::{During, is_duplicate_key};
use super::journal::{read_meta, settle};
use crate::domain::model::Catalog;
use crate::store::{EntityKind, StoreError, StoredCatalog};

/// Loads that met a concurrent commit are retried this many times before giving up.
const LOAD_ATTEMPTS: usize = 20;

/// Creates the `meta` document of a new database; leaves an existing one alone.
pub(super) async fn ensure_meta(db: &Database) -> Result<(), StoreError> {
    match db
        .collection::<Document>(META)
        .insert_one(documents::initial_meta())
        .await
    {
        Err(error) if is_duplicate_key(&error) => Ok(()),
        result => result.map(drop).during("creating the `meta` document"),
    }
}

/// The current revision: one read of a small document. A claimed but unfinished commit counts:
/// its revision is decided, and the load that follows will finish it.
pub(super) async fn revision(db: &Database) -> Result<u64, StoreError> {
    Ok(read_meta(db).await?.revision)
}

/// The whole catalog, each collection in id order, with its revision.
pub(super) async fn load(db: &Database) -> Result<StoredCatalog, StoreError> {
    for _ in 0..LOAD_ATTEMPTS {
        let before = settle(db).await?;
        let catalog = Catalog {
            sources: entities(db, EntityKind::Sources).await?,
            tools: entities(db, EntityKind::Tools).await?,
            labels: entities(db, EntityKind::Labels).await?,
            groups: entities(db, EntityKind::Groups).await?,
            policies: entities(db, EntityKind::Policies).await?,
            revisions: entities(db, EntityKind::Revisions).await?,
        };
        if read_meta(db).await? == before {
            return Ok(StoredCatalog {
                catalog,
                revision: before.revision,
            });
        }
    }
    Err(StoreError::Unavailable(format!(
        "the catalog kept changing while it was read ({LOAD_ATTEMPTS} attempts)"
    )))
}

/// The live entities of one collection, in id order. Sorted here rather than by the server,
/// so that the order is Rust's string order whatever collation the collection has.
async fn entities<T: DeserializeOwned>(
    db: &Database,
    kind: EntityKind,
) -> Result<Vec<T>, StoreError> {
    let name = kind.as_str();
    let doing = format!("reading `{name}`");
    let mut cursor = db
        .collection::<Document>(name)
        .find(documents::live())
        .await
        .during(&doing)?;
    let mut found = Vec::new();
    while cursor.advance().await.during(&doing)? {
        let doc: Document = cursor.deserialize_current().during(&doing)?;
        let id = doc
            .get_str("_id")
            .map_err(|_| {
                StoreError::Corrupt(format!(
                    "a document of `{name}` has an `_id` that is not a string: {:?}",
                    doc.get("_id")
                ))
            })?
            .to_owned();
        found.push((id, documents::decode_entity(&doc, name)?));
    }
    found.sort_by(|(a, _), (b, _)| a.cmp(b));
    Ok(found.into_iter().map(|(_, entity)| entity).collect())
}
