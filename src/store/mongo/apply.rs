//! Applying versioned steps and audit records, idempotently.
//!
//! Every entity write is fenced by its version (`_v`): it only replaces a document written at
//! a lower version. Applying the same steps twice, or concurrently from two processes, or
//! after later commits have landed, therefore changes nothing that a newer step wrote; audit
//! records are inserted by `seq` (their `_id`), and one already there is the same record.
//!
//! Runs of puts (or deletes) to one collection are sent in batches rather than one round trip
//! per entity: replacing a 10,000-tool catalog is a few dozen requests. A batch of puts first
//! removes the older documents it replaces, then inserts; an insert refused as a duplicate
//! means someone wrote that entity in between, and it falls back to the one-document fenced
//! replace, which settles who wins by version.
//!
//! Inside a transaction (`session` given) nothing else writes these documents, so duplicates
//! do not occur; any failure aborts the transaction and surfaces.

use std::collections::HashSet;

use mongodb::bson::{Bson, Document, doc};
use mongodb::{ClientSession, Database};

use super::documents::{self, AUDIT, collection};
use super::error::{During, duplicate_positions, is_duplicate_key};
use super::plan::{Op, Step};
use crate::store::{AuditRecord, EntityKind, StoreError};

/// Most entities in one batch: keeps each request far below MongoDB's 48 MB message limit for
/// entities of ordinary size.
const BATCH: usize = 500;

/// Runs a driver action inside `$session` when there is one.
macro_rules! within {
    ($session:expr, $action:expr) => {
        match $session.as_deref_mut() {
            Some(session) => $action.session(session).await,
            None => $action.await,
        }
    };
}

/// Applies `steps` in order.
pub(super) async fn steps(
    db: &Database,
    steps: &[Step],
    mut session: Option<&mut ClientSession>,
) -> Result<(), StoreError> {
    let mut rest = steps;
    while let Some(first) = rest.first() {
        let run = run_length(rest);
        let (batch, after) = rest.split_at(run);
        match &first.op {
            Op::Put { kind, .. } => puts(db, *kind, batch, &mut session).await?,
            Op::Delete { kind, .. } => deletes(db, *kind, batch, &mut session).await?,
            Op::Clear { kind } => clear(db, *kind, first.v, &mut session).await?,
        }
        rest = after;
    }
    Ok(())
}

/// How many leading steps form one batch: the same operation (put or delete) on one collection,
/// each id once, at most [`BATCH`]. A clear is a batch of its own.
fn run_length(steps: &[Step]) -> usize {
    let key = |step: &Step| match &step.op {
        Op::Put { kind, id, .. } => Some((0, *kind, id.clone())),
        Op::Delete { kind, id } => Some((1, *kind, id.clone())),
        Op::Clear { .. } => None,
    };
    let Some((op, kind, _)) = steps.first().and_then(key) else {
        return 1;
    };
    let mut ids = HashSet::new();
    steps
        .iter()
        .take(BATCH)
        .map_while(|step| key(step).filter(|(o, k, _)| (*o, *k) == (op, kind)))
        .take_while(|(_, _, id)| ids.insert(id.clone()))
        .count()
}

/// The fence: documents with this `_id` written before version `v`.
fn older(id: &str, v: i64) -> Document {
    doc! {"_id": id, "_v": {"$lt": v}}
}

async fn puts(
    db: &Database,
    kind: EntityKind,
    batch: &[Step],
    session: &mut Option<&mut ClientSession>,
) -> Result<(), StoreError> {
    let name = collection(kind);
    let entities = db.collection::<Document>(name);
    let docs: Vec<(i64, &str, Document)> = batch
        .iter()
        .filter_map(|step| match &step.op {
            Op::Put { id, json, .. } => Some((
                step.v,
                id.as_str(),
                documents::entity(id, step.v, Some(json)),
            )),
            _ => None,
        })
        .collect();
    if let [(v, id, doc)] = docs.as_slice() {
        return fenced_replace(db, name, id, *v, doc, session).await;
    }
    // Every step of a batch is newer than any document version below the batch's first, so
    // removing those cannot lose a newer write.
    let first_v = docs.first().map_or(0, |(v, _, _)| *v);
    let ids: Vec<&str> = docs.iter().map(|(_, id, _)| *id).collect();
    let doing = format!("writing {} entities to `{name}`", docs.len());
    within!(
        session,
        entities.delete_many(doc! {"_id": {"$in": &ids}, "_v": {"$lt": first_v}})
    )
    .during(&doing)?;
    let inserted = within!(
        session,
        entities
            .insert_many(docs.iter().map(|(_, _, doc)| doc))
            .ordered(false)
    );
    let Err(error) = inserted else {
        return Ok(());
    };
    let Some(refused) = duplicate_positions(&error).filter(|_| session.is_none()) else {
        return Err(super::error::unavailable(&doing, &error));
    };
    for position in refused {
        if let Some((v, id, doc)) = docs.get(position) {
            fenced_replace(db, name, id, *v, doc, session).await?;
        }
    }
    Ok(())
}

/// Replaces the entity `id` with `doc` unless a write at version `v` or later is there. The
/// upsert of a fenced-out id is refused as a duplicate `_id`: that is the fence holding.
async fn fenced_replace(
    db: &Database,
    name: &str,
    id: &str,
    v: i64,
    doc: &Document,
    session: &mut Option<&mut ClientSession>,
) -> Result<(), StoreError> {
    let entities = db.collection::<Document>(name);
    match within!(
        session,
        entities.replace_one(older(id, v), doc).upsert(true)
    ) {
        Err(error) if is_duplicate_key(&error) && session.is_none() => Ok(()),
        result => result
            .map(drop)
            .during(&format!("writing {id:?} to `{name}`")),
    }
}

/// Tombstones the batch's entities that are older than the batch, at the batch's last version
/// (later steps of the commit are higher still, earlier ones lower).
async fn deletes(
    db: &Database,
    kind: EntityKind,
    batch: &[Step],
    session: &mut Option<&mut ClientSession>,
) -> Result<(), StoreError> {
    let name = collection(kind);
    let ids: Vec<&str> = batch
        .iter()
        .filter_map(|step| match &step.op {
            Op::Delete { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    let (Some(first), Some(last)) = (batch.first(), batch.last()) else {
        return Ok(());
    };
    let entities = db.collection::<Document>(name);
    within!(
        session,
        entities.update_many(
            doc! {"_id": {"$in": &ids}, "_v": {"$lt": first.v}},
            doc! {"$set": {"_v": last.v, "json": Bson::Null}},
        )
    )
    .during(&format!("deleting {} entities from `{name}`", ids.len()))
    .map(drop)
}

/// Tombstones every live entity of the collection written before version `v`.
async fn clear(
    db: &Database,
    kind: EntityKind,
    v: i64,
    session: &mut Option<&mut ClientSession>,
) -> Result<(), StoreError> {
    let name = collection(kind);
    let entities = db.collection::<Document>(name);
    let mut filter = documents::live();
    filter.insert("_v", doc! {"$lt": v});
    within!(
        session,
        entities.update_many(filter, doc! {"$set": {"_v": v, "json": Bson::Null}})
    )
    .during(&format!("clearing `{name}`"))
    .map(drop)
}

/// Appends the audit records. Outside a transaction a record already there (an earlier or
/// concurrent application of the same commit put it) is kept as it is.
pub(super) async fn audit(
    db: &Database,
    records: &[AuditRecord],
    mut session: Option<&mut ClientSession>,
) -> Result<(), StoreError> {
    if records.is_empty() {
        return Ok(());
    }
    let log = db.collection::<Document>(AUDIT);
    for chunk in records.chunks(BATCH) {
        let docs: Vec<Document> = chunk.iter().map(documents::audit).collect();
        match within!(session, log.insert_many(&docs).ordered(false)) {
            Err(error) if session.is_none() && duplicate_positions(&error).is_some() => {}
            result => {
                result.during("appending to the audit log")?;
            }
        }
    }
    Ok(())
}
