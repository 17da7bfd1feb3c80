//! Reading the catalog and its revision.
//!
//! Without a transaction to read from, a load is made consistent by bracketing: read `meta`
//! (rolling forward any pending commit first), read the five collections, read `meta` again.
//! Entities change only while a commit is pending, and a commit is pending from its claim
//! (which moves the revision) to its end. So if both reads of `meta` show the same revision and
//! no pending commit, nothing was applied in between and the collections are exactly that
//! revision; otherwise the load starts over. Late replays of older commits cannot disturb it:
//! their writes are fenced out by version (see `apply.rs`).

use std::time::Duration;

use mongodb::Database;
use mongodb::bson::Document;
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use super::documents::{self, META, META_ID, Meta};
use super::error::{During, is_duplicate_key};
use super::journal;
use crate::domain::model::Catalog;
use crate::store::{EntityKind, StoreError, StoredCatalog};

/// Loads that met a concurrent commit are retried this many times before giving up.
const LOAD_ATTEMPTS: usize = 20;

/// How long a transaction's marker may be seen pending before the store reports it. Only
/// servers that let other sessions read uncommitted writes ever show it (nx-27017); a
/// transaction that takes longer than this is itself a problem worth a 503.
const TRANSACTION_WAIT: Duration = Duration::from_secs(5);

/// The `meta` document.
pub(super) async fn read_meta(db: &Database) -> Result<Meta, StoreError> {
    let doc = db
        .collection::<Document>(META)
        .find_one(mongodb::bson::doc! {"_id": META_ID})
        .await
        .during("reading the revision")?
        .ok_or_else(|| {
            StoreError::Corrupt(format!(
                "the `meta` document of database `{}` is missing (it holds the revision; \
                 the store creates it when it opens)",
                db.name()
            ))
        })?;
    Meta::decode(&doc)
}

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

/// `meta` with no commit pending: rolls forward a journaled commit left pending, and waits
/// for a transaction whose marker another session can see.
pub(super) async fn settle(db: &Database) -> Result<Meta, StoreError> {
    let started = Instant::now();
    loop {
        let meta = read_meta(db).await?;
        match &meta.pending {
            None => return Ok(meta),
            Some(pending) if pending.chunks == 0 => {
                if started.elapsed() > TRANSACTION_WAIT {
                    return Err(StoreError::Unavailable(format!(
                        "the commit of revision {} has been in its transaction for more than \
                         {} s",
                        meta.revision,
                        TRANSACTION_WAIT.as_secs()
                    )));
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Some(_) => journal::roll_forward(db, &meta).await?,
        }
    }
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
