//! The transactional commit path, for replica sets and sharded clusters.
//!
//! One multi-document transaction makes the same writes as the compare-and-set path, minus the
//! journal: claim `meta` (`{revision: r, pending: null} → {revision: r + 1, pending: marker}`),
//! apply the steps, append the audit records, clear the marker, commit. Claiming first means a
//! concurrent commit from another instance collides on the `meta` document before anything
//! else is written (MongoDB reports a write conflict, retried here; a claim that does not match
//! is a revision conflict). Nothing is visible to other sessions before the commit, and a crash
//! or a lost connection before it leaves nothing: the server aborts the transaction.
//!
//! The marker is only ever seen by servers whose transactions are not isolated (nx-27017 lets
//! other sessions read uncommitted writes): it makes their readers wait for the commit instead
//! of reading half of it (`load::settle`).

use std::time::Duration;

use mongodb::bson::{Bson, Document, doc};
use mongodb::error::{Error, UNKNOWN_TRANSACTION_COMMIT_RESULT};
use mongodb::{Client, ClientSession, Database};

use super::apply;
use super::documents::{META, META_ID, Meta, int64};
use super::error::{During, is_transient, unavailable};
use super::journal::{read_meta, settle};
use super::plan::{self, Step};
use crate::store::{AuditRecord, Commit, StoreError};

/// Transactions aborted by a transient error (a write conflict with another instance, a
/// primary stepping down) are retried this many times.
const ATTEMPTS: u32 = 5;

/// What one transaction came to.
enum Outcome {
    Committed,
    /// The claim matched nothing: another commit got there first.
    Lost,
    /// A transient error: trying again may succeed.
    Retry(StoreError),
}

/// Applies `commit` in a transaction; returns the new revision.
pub(super) async fn commit(
    client: &Client,
    db: &Database,
    commit: Commit,
) -> Result<u64, StoreError> {
    let expected = commit.expected_revision;
    let revision = expected + 1;
    let steps = plan::steps(&commit.changes, revision)?;
    let mut last_error = None;
    for attempt in 0..ATTEMPTS {
        let meta = settle(db).await?;
        if meta.revision != expected {
            return Err(StoreError::RevisionConflict {
                expected,
                current: meta.revision,
            });
        }
        let audit = plan::audit(commit.audit.clone(), meta.last_audit_seq, revision);
        match once(client, db, &meta, &steps, &audit).await? {
            Outcome::Committed => return Ok(revision),
            Outcome::Lost => {}
            Outcome::Retry(error) => {
                last_error = Some(error);
                tokio::time::sleep(Duration::from_millis(10 << attempt)).await;
            }
        }
    }
    let current = read_meta(db).await?.revision;
    if current != expected {
        return Err(StoreError::RevisionConflict { expected, current });
    }
    Err(last_error.unwrap_or_else(|| {
        StoreError::Unavailable(format!(
            "the commit of revision {revision} kept colliding with other writers"
        ))
    }))
}

/// One transaction: claim, apply, append, clear, commit.
async fn once(
    client: &Client,
    db: &Database,
    meta: &Meta,
    steps: &[Step],
    audit: &[AuditRecord],
) -> Result<Outcome, StoreError> {
    let mut session = client.start_session().await.during("starting a session")?;
    session
        .start_transaction()
        .await
        .during("starting a transaction")?;
    let marker = format!("transaction-{}", uuid::Uuid::new_v4());
    let revision = meta.revision + 1;
    let meta_docs = db.collection::<Document>(META);
    let claimed = meta_docs
        .update_one(
            doc! {"_id": META_ID, "revision": int64(meta.revision), "pending": Bson::Null},
            doc! {"$set": {
                "revision": int64(revision),
                "last_audit_seq": int64(meta.last_audit_seq + audit.len() as u64),
                "pending": &marker,
                "pending_chunks": 0_i64,
            }},
        )
        .session(&mut session)
        .await;
    let claimed = match claimed {
        Ok(claimed) => claimed,
        Err(error) => return abort(session, "claiming the next revision", error).await,
    };
    if claimed.matched_count == 0 {
        // Nothing was written: ending the transaction by committing it is as good as aborting,
        // and never undoes anything on servers whose aborts reach beyond their session.
        session
            .commit_transaction()
            .await
            .during("ending a transaction that wrote nothing")?;
        return Ok(Outcome::Lost);
    }
    let written = async {
        apply::steps(db, steps, Some(&mut session)).await?;
        apply::audit(db, audit, Some(&mut session)).await?;
        meta_docs
            .update_one(
                doc! {"_id": META_ID, "pending": &marker},
                doc! {"$set": {"pending": Bson::Null, "pending_chunks": 0_i64}},
            )
            .session(&mut session)
            .await
            .during("clearing the commit marker")
            .map(drop)
    }
    .await;
    if let Err(error) = written {
        // Best effort: the server aborts it anyway when the session ends.
        let _ = session.abort_transaction().await;
        return Err(error);
    }
    finish(&mut session).await
}

/// Commits, retrying the commit itself while its outcome is unknown (the driver's guidance:
/// committing twice is safe).
async fn finish(session: &mut ClientSession) -> Result<Outcome, StoreError> {
    let mut tries = 0;
    loop {
        match session.commit_transaction().await {
            Ok(()) => return Ok(Outcome::Committed),
            Err(error) if error.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT) && tries < 3 => {
                tries += 1;
            }
            Err(error) if is_transient(&error) => {
                return Ok(Outcome::Retry(unavailable(
                    "committing a transaction",
                    &error,
                )));
            }
            Err(error) => return Err(unavailable("committing a transaction", &error)),
        }
    }
}

/// Aborts after `error`; a transient one is worth another attempt.
async fn abort(
    mut session: ClientSession,
    doing: &str,
    error: Error,
) -> Result<Outcome, StoreError> {
    let _ = session.abort_transaction().await;
    if is_transient(&error) {
        Ok(Outcome::Retry(unavailable(doing, &error)))
    } else {
        Err(unavailable(doing, &error))
    }
}
