//! The MongoDB catalog store: the read model shared by every gateway instance.
//!
//! # Layout
//! - `sources`, `tools`, `labels`, `groups`, `policies`: one document per entity,
//!   `{_id: <entity id>, _v: <version>, json: <the entity's JSON> | null}` (see `documents.rs`).
//!   The entity is kept as JSON text, not as BSON fields: tool schemas are arbitrary JSON
//!   Schema, whose `$ref`/`$schema` keys MongoDB refuses or mistakes for DBRefs, and whose
//!   integers may not fit BSON's. A document whose `json` is null is a tombstone (see below).
//! - `meta`: one document, `_id: "catalog"`, with the catalog `revision`, the last audit
//!   sequence number handed out and the `pending` commit, if any.
//! - `audit`: one document per record, `_id` = `seq`, with the fields the audit query filters
//!   on beside the record's JSON.
//! - `journal`: the write-ahead copy of a commit on the non-transactional path.
//! - `migrations`: the migration steps applied (`migrations.rs`).
//!
//! # The commit point
//! A commit is decided by one conditional update of `meta`, the *claim*:
//! `{revision: r, pending: null} → {revision: r + 1, pending: <commit id>}`. Exactly one
//! writer can make it for each `r`, so a stale `expected_revision` is a
//! [`StoreError::RevisionConflict`] and no write is ever lost between instances. While
//! `pending` is set, the claimed revision's changes are being applied; once they are all in,
//! `pending` is cleared. Readers never trust collections read while a commit is pending
//! (`load.rs`).
//!
//! How the changes get in depends on what the deployment offers (`commit.rs`):
//! - **Transaction** (replica sets, sharded clusters): the claim, the changes, the audit
//!   records and the clearing of `pending` are one multi-document transaction, so nothing of
//!   it is visible before it commits and a crash leaves nothing behind.
//! - **Compare-and-set** (a standalone server refuses transactions): the whole commit is first
//!   written to `journal`, then claimed; the changes and audit records are applied from the
//!   journal and `pending` is cleared. A crash after the claim leaves a pending commit whose
//!   journal is complete, and any later load, commit or audit query, from any instance,
//!   *rolls it forward* before going on (`journal.rs`). A crash before the claim leaves only
//!   an unreferenced journal, removed by a later commit.
//!
//! # Versions make replays harmless
//! Rolling forward means two processes may apply the same commit at once (the writer, slow
//! but alive, and a reader that found it pending), and the slower one may still be applying
//! it after a *later* commit has landed. So every entity write is fenced: each step of the
//! commit at revision `r` carries the version `r · 2^20 + step`, documents record the version
//! that wrote them in `_v`, and a write only replaces a document with a smaller `_v`.
//! Deletions leave tombstones (`json: null`, with the deleting version) so that a late replay
//! cannot bring a deleted entity back. Versions only grow, so any interleaving of replays ends
//! in the state the commits describe, in revision order.
//!
//! # Failures
//! Every driver error is [`StoreError::Unavailable`] naming what the store was doing; a
//! document we cannot decode is [`StoreError::Corrupt`]. Server selection and connection
//! time out after [`DEFAULT_TIMEOUT`] unless the URI says otherwise, so that with
//! MongoDB down an admin write fails within seconds while agents keep being served from the
//! compiled snapshot. The connection URI may hold a password: it is never logged or put in a
//! message.

mod apply;
mod audit;
mod client;
mod documents;
mod error;
mod journal;
mod keys;
mod load;
pub mod migrations;
mod plan;
mod transaction;

use std::sync::Arc;

use async_trait::async_trait;
use mongodb::{Client, Database};
use tokio::sync::Mutex;

use crate::store::{
    AuditQuery, AuditRecord, Backup, CatalogStore, Commit, SigningKeyRecord, StoreError,
    StoredCatalog,
};

pub use client::DEFAULT_TIMEOUT;
pub use migrations::MigrationReport;

/// How commits reach the collections; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitPath {
    /// One multi-document transaction per commit.
    Transaction,
    /// Journal, compare-and-set claim on `meta.revision`, idempotent roll-forward.
    CompareAndSet,
}

/// Which commit path [`MongoStore::open`] may choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CommitPathChoice {
    /// Transactions when the server accepts one (probed at open), else compare-and-set.
    #[default]
    Detect,
    /// Compare-and-set even when the server offers transactions (tests, and deployments that
    /// want to avoid transactions).
    CompareAndSet,
}

/// The catalog in a MongoDB database. Cheap to clone (the client is shared); safe to use from
/// several tasks and several processes at once.
#[derive(Clone)]
pub struct MongoStore {
    client: Client,
    db: Database,
    path: CommitPath,
    /// Serialises this store's transactional commits. One instance's writers are already
    /// serialised by the catalog service, so this costs nothing there; it means a transaction
    /// never races another from the same process, which keeps servers with weak transaction
    /// isolation (nx-27017, used by the tests) correct within one instance.
    transactions: Arc<Mutex<()>>,
}

impl std::fmt::Debug for MongoStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URI is deliberately absent: it may hold a password.
        f.debug_struct("MongoStore")
            .field("database", &self.db.name())
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl MongoStore {
    /// Connects to `uri` and opens `database`: checks that the server answers (within
    /// [`DEFAULT_TIMEOUT`] unless the URI sets its own timeouts), chooses the commit path and
    /// creates the `meta` document if the database is new. Does not apply migrations (see
    /// [`MongoStore::migrate`]).
    ///
    /// Fails with [`StoreError::Unavailable`] if the URI is not valid or the server cannot be
    /// reached; the message never contains the URI.
    pub async fn open(
        uri: &str,
        database: &str,
        choice: CommitPathChoice,
    ) -> Result<MongoStore, StoreError> {
        let client = client::connect(uri).await?;
        let db = client.database(database);
        client::ping(&db).await?;
        let path = match choice {
            CommitPathChoice::Detect => client::probe_transactions(&client, &db).await?,
            CommitPathChoice::CompareAndSet => CommitPath::CompareAndSet,
        };
        load::ensure_meta(&db).await?;
        Ok(MongoStore {
            client,
            db,
            path,
            transactions: Arc::new(Mutex::new(())),
        })
    }

    /// The commit path chosen at open.
    pub fn commit_path(&self) -> CommitPath {
        self.path
    }

    /// The database name.
    pub fn database(&self) -> &str {
        self.db.name()
    }

    /// Journals and claims `commit` like the compare-and-set path, applies only its first
    /// `applied_steps` steps, and stops there: the state a writer that crashed mid-commit
    /// leaves behind. The next load, commit or audit query rolls the commit forward. Returns
    /// the claimed revision. For crash tests; whatever the chosen path, this uses the journal.
    pub async fn commit_and_crash(
        &self,
        commit: Commit,
        applied_steps: usize,
    ) -> Result<u64, StoreError> {
        journal::commit(&self.db, commit, Some(applied_steps)).await
    }
}

#[async_trait]
impl CatalogStore for MongoStore {
    async fn load(&self) -> Result<StoredCatalog, StoreError> {
        load::load(&self.db).await
    }

    async fn revision(&self) -> Result<u64, StoreError> {
        load::revision(&self.db).await
    }

    async fn commit(&self, commit: Commit) -> Result<u64, StoreError> {
        match self.path {
            CommitPath::Transaction => {
                let _one_at_a_time = self.transactions.lock().await;
                transaction::commit(&self.client, &self.db, commit).await
            }
            CommitPath::CompareAndSet => journal::commit(&self.db, commit, None).await,
        }
    }

    async fn audit(&self, query: AuditQuery) -> Result<Vec<AuditRecord>, StoreError> {
        journal::settle(&self.db).await?;
        audit::list(&self.db, &query).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        client::ping(&self.db).await
    }

    /// A copy of a MongoDB database is `mongodump`'s (on a replica set, of the whole deployment
    /// with `--oplog` for one point in time): the gateway has no file system of the database's
    /// to write to.
    async fn backup(&self) -> Result<Option<Backup>, StoreError> {
        Ok(None)
    }

    async fn signing_keys(&self) -> Result<Vec<SigningKeyRecord>, StoreError> {
        keys::list(&self.db).await
    }

    async fn add_signing_key(&self, key: SigningKeyRecord) -> Result<(), StoreError> {
        keys::add(&self.db, &key).await
    }

    async fn remove_signing_key(&self, kid: &str) -> Result<(), StoreError> {
        keys::remove(&self.db, kid).await
    }
}
