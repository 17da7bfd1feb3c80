//! The compare-and-set commit path, for servers without transactions.
//!
//! 1. Read `meta`; roll forward any pending commit; a stale `expected_revision` is a conflict.
//! 2. Write the commit (its steps and its audit records, sequence numbers assigned) to
//!    `journal` under a fresh commit id, in chunks that stay well below MongoDB's 16 MB
//!    document limit. Nothing reads a journal that `meta` does not point at.
//! 3. **Claim**: `meta {revision: r, pending: null} → {revision: r + 1, pending: id}`. This one
//!    conditional update is the commit point: from here on the commit will be applied, by
//!    this writer or by whoever finds it pending. Losing it is a conflict (the journal is
//!    removed).
//! 4. Apply the steps and append the audit records (idempotent and fenced, `apply.rs`).
//! 5. Clear `pending` (only if it still names this commit) and remove journals of revisions
//!    up to this one: this commit's, and any left by writers that lost a claim or crashed
//!    before it.
//!
//! A crash anywhere before 3 leaves the store as it was (plus a journal removed later); a crash
//! after 3 leaves a pending commit with a complete journal, which [`roll_forward`] finishes.
//! Every reader of `meta` that needs a settled revision goes through [`settle`], which rolls
//! such a commit forward (or waits out another session's transaction) first.

use std::time::Duration;

use mongodb::Database;
use mongodb::bson::{Bson, Document, doc};
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::apply;
use super::documents::{JOURNAL, META, META_ID, Meta, Pending, int64};
use super::error::During;
use super::plan::{self, Step};
use crate::store::{AuditRecord, Commit, StoreError};

/// Rough bytes per journal document before a new one is started: a quarter of MongoDB's
/// document limit, leaving room for BSON overhead and escaping.
const CHUNK_BYTES: usize = 4 * 1024 * 1024;

/// One journal document: a slice of a commit's steps and audit records.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Chunk {
    #[serde(rename = "_id")]
    id: String,
    commit: String,
    revision: i64,
    index: i64,
    steps: Vec<Step>,
    /// Audit records as JSON text, like the audit collection keeps them.
    audit: Vec<String>,
}

/// Commits through the journal. With `crash_after`, stops after the claim and that many
/// applied steps, leaving the commit pending (see `MongoStore::commit_and_crash`).
pub(super) async fn commit(
    db: &Database,
    commit: Commit,
    crash_after: Option<usize>,
) -> Result<u64, StoreError> {
    let expected = commit.expected_revision;
    let meta = settle(db).await?;
    if meta.revision != expected {
        return Err(StoreError::RevisionConflict {
            expected,
            current: meta.revision,
        });
    }
    let revision = expected + 1;
    let steps = plan::steps(&commit.changes, revision)?;
    let audit = plan::audit(commit.audit, meta.last_audit_seq, revision);
    let last_audit_seq = meta.last_audit_seq + audit.len() as u64;
    let commit_id = uuid::Uuid::new_v4().to_string();
    let chunks = chunks(&commit_id, revision, &steps, &audit);
    let pending = Pending {
        commit: commit_id,
        chunks: chunks.len() as u64,
    };
    write_journal(db, &chunks).await?;
    if let Err(error) = claim(db, expected, last_audit_seq, &pending).await {
        discard_journal(db, &pending.commit).await;
        return Err(error);
    }
    match crash_after {
        None => finish(db, revision, &pending, &steps, &audit).await?,
        Some(applied) => apply::steps(db, &steps[..applied.min(steps.len())], None).await?,
    }
    Ok(revision)
}

/// Splits the commit into journal documents of about [`CHUNK_BYTES`] each (at least one, so
/// that even an empty commit has a journal to find).
fn chunks(commit: &str, revision: u64, steps: &[Step], audit: &[AuditRecord]) -> Vec<Chunk> {
    let new_chunk = |index: usize| Chunk {
        id: format!("{commit}/{index}"),
        commit: commit.to_owned(),
        revision: int64(revision),
        index: int64(index as u64),
        ..Chunk::default()
    };
    let mut chunks = vec![new_chunk(0)];
    let mut bytes = 0;
    let mut room = |size: usize, chunks: &mut Vec<Chunk>| {
        if bytes > 0 && bytes + size > CHUNK_BYTES {
            chunks.push(new_chunk(chunks.len()));
            bytes = 0;
        }
        bytes += size;
    };
    for step in steps {
        let size = match &step.op {
            plan::Op::Put { id, json, .. } => id.len() + json.len() + 64,
            plan::Op::Delete { id, .. } => id.len() + 64,
            plan::Op::Clear { .. } => 64,
        };
        room(size, &mut chunks);
        if let Some(chunk) = chunks.last_mut() {
            chunk.steps.push(step.clone());
        }
    }
    for record in audit {
        let json = super::documents::to_json(record);
        room(json.len() + 16, &mut chunks);
        if let Some(chunk) = chunks.last_mut() {
            chunk.audit.push(json);
        }
    }
    chunks
}

async fn write_journal(db: &Database, chunks: &[Chunk]) -> Result<(), StoreError> {
    let docs = chunks
        .iter()
        .map(|chunk| {
            mongodb::bson::serialize_to_document(chunk).map_err(|error| {
                StoreError::Unavailable(format!("cannot encode a journal document: {error}"))
            })
        })
        .collect::<Result<Vec<Document>, StoreError>>()?;
    for doc in docs {
        // One at a time: a chunk may be megabytes, and one insert per chunk keeps each request
        // small whatever the server's message limit.
        db.collection::<Document>(JOURNAL)
            .insert_one(doc)
            .await
            .during("writing the commit journal")?;
    }
    Ok(())
}

/// Best effort: a journal left behind is removed by the next successful commit anyway.
async fn discard_journal(db: &Database, commit: &str) {
    let removed = db
        .collection::<Document>(JOURNAL)
        .delete_many(doc! {"commit": commit})
        .await;
    if let Err(error) = removed {
        tracing::debug!(%error, "could not remove the journal of a commit that was not claimed");
    }
}

/// The commit point. A claim that does not match is a conflict, unless the store is at
/// `expected` with the commit that claimed `expected` still pending (it was claimed since we
/// read `meta`): then that commit is rolled forward and the claim tried again.
async fn claim(
    db: &Database,
    expected: u64,
    last_audit_seq: u64,
    pending: &Pending,
) -> Result<(), StoreError> {
    loop {
        let claimed = db
            .collection::<Document>(META)
            .update_one(
                doc! {"_id": META_ID, "revision": int64(expected), "pending": Bson::Null},
                doc! {"$set": {
                    "revision": int64(expected + 1),
                    "last_audit_seq": int64(last_audit_seq),
                    "pending": &pending.commit,
                    "pending_chunks": int64(pending.chunks),
                }},
            )
            .await
            .during("claiming the next revision")?;
        if claimed.matched_count == 1 {
            return Ok(());
        }
        let meta = read_meta(db).await?;
        if meta.revision != expected || meta.pending.is_none() {
            return Err(StoreError::RevisionConflict {
                expected,
                current: meta.revision,
            });
        }
        settle(db).await?;
    }
}

/// Applies a claimed commit and clears it.
async fn finish(
    db: &Database,
    revision: u64,
    pending: &Pending,
    steps: &[Step],
    audit: &[AuditRecord],
) -> Result<(), StoreError> {
    apply::steps(db, steps, None).await?;
    apply::audit(db, audit, None).await?;
    db.collection::<Document>(META)
        .update_one(
            doc! {"_id": META_ID, "revision": int64(revision), "pending": &pending.commit},
            doc! {"$set": {"pending": Bson::Null, "pending_chunks": 0_i64}},
        )
        .await
        .during("clearing the applied commit")?;
    db.collection::<Document>(JOURNAL)
        .delete_many(doc! {"revision": {"$lte": int64(revision)}})
        .await
        .during("removing applied journals")?;
    Ok(())
}

/// Finishes the commit `meta` says is pending, from its journal. Safe to run while its writer
/// (or another reader) applies the same commit. If the journal is gone, the commit was
/// finished meanwhile: `meta` no longer names it.
pub(super) async fn roll_forward(db: &Database, meta: &Meta) -> Result<(), StoreError> {
    let Some(pending) = &meta.pending else {
        return Ok(());
    };
    let mut cursor = db
        .collection::<Document>(JOURNAL)
        .find(doc! {"commit": &pending.commit})
        .await
        .during("reading the journal of a pending commit")?;
    let mut chunks = Vec::new();
    while cursor
        .advance()
        .await
        .during("reading the journal of a pending commit")?
    {
        let doc: Document = cursor
            .deserialize_current()
            .during("reading the journal of a pending commit")?;
        let chunk: Chunk = mongodb::bson::deserialize_from_document(doc).map_err(|error| {
            StoreError::Corrupt(format!(
                "the journal of pending commit {} cannot be read: {error}",
                pending.commit
            ))
        })?;
        chunks.push(chunk);
    }
    if chunks.len() as u64 != pending.chunks {
        let now = read_meta(db).await?;
        if now.pending.as_ref() == Some(pending) {
            return Err(StoreError::Corrupt(format!(
                "the journal of pending commit {} (revision {}) has {} of its {} documents",
                pending.commit,
                meta.revision,
                chunks.len(),
                pending.chunks
            )));
        }
        return Ok(());
    }
    chunks.sort_by_key(|chunk| chunk.index);
    let mut audit = Vec::new();
    for json in chunks.iter().flat_map(|chunk| &chunk.audit) {
        audit.push(serde_json::from_str::<AuditRecord>(json).map_err(|error| {
            StoreError::Corrupt(format!(
                "an audit record in the journal of commit {} is not valid: {error}",
                pending.commit
            ))
        })?);
    }
    let steps: Vec<Step> = chunks.into_iter().flat_map(|chunk| chunk.steps).collect();
    tracing::info!(
        revision = meta.revision,
        commit = %pending.commit,
        "rolling forward a commit left pending"
    );
    finish(db, meta.revision, pending, &steps, &audit).await
}

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
            Some(_) => roll_forward(db, &meta).await?,
        }
    }
}
