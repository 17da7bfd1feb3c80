//! The embedded catalog store, the default backend: one [redb] file, `toolgate.redb`, in the
//! data dir.
//!
//! Layout: one table per collection (entity id → entity JSON), `meta` (revision, last audit
//! sequence number) and `audit` (seq → audit record JSON); see `tables.rs`.
//!
//! Crash safety: every [`CatalogStore::commit`] is a single redb write transaction committed
//! with redb's default durability (`Immediate`: fsynced before `commit` returns). redb commits
//! are atomic: after a crash or power loss the file holds either the whole commit (changes,
//! revision and audit records) or none of it, never a part. Loads run in a read transaction, so
//! they see one committed state.
//!
//! One process at a time: redb locks the file, so a second toolgate (or a second
//! [`EmbeddedStore::open`]) on the same data dir fails at start instead of corrupting it. To run
//! several gateway instances on one catalog, use the MongoDB store.
//!
//! redb is synchronous; every operation runs on tokio's blocking pool so that a slow disk never
//! stalls the async workers.

mod audit;
mod commit;
mod error;
mod load;
mod tables;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use redb::{Database, DatabaseError, StorageError};

use self::error::During;
use crate::store::{AuditQuery, AuditRecord, CatalogStore, Commit, StoreError, StoredCatalog};

/// The name of the database file inside the data dir.
pub const FILE_NAME: &str = "toolgate.redb";

/// The catalog, its revision and the audit log in one redb file. Cheap to share behind an `Arc`;
/// the file stays locked until the store (and any operation still running) is dropped.
#[derive(Clone)]
pub struct EmbeddedStore {
    db: Arc<Database>,
    path: PathBuf,
}

impl std::fmt::Debug for EmbeddedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl EmbeddedStore {
    /// Opens the store in `dir`, creating the folder and an empty store if needed.
    ///
    /// Fails with [`StoreError::Unavailable`] if the folder cannot be created or written, or if
    /// another process (or another `EmbeddedStore`) has it open; with [`StoreError::Corrupt`] if
    /// `toolgate.redb` is not a redb file we can read.
    ///
    /// Blocks (it may fsync, or repair the file after a crash): call it at start-up, before
    /// serving, or from a blocking task.
    pub fn open(dir: &Path) -> Result<EmbeddedStore, StoreError> {
        std::fs::create_dir_all(dir).map_err(|error| {
            StoreError::Unavailable(format!(
                "cannot create the data dir {}: {error}",
                dir.display()
            ))
        })?;
        let path = dir.join(FILE_NAME);
        let db = Database::create(&path).map_err(|error| open_error(dir, &path, error))?;

        // Create every table up front so that reads never meet a missing one.
        let txn = db.begin_write().during("preparing a new store")?;
        for table in tables::COLLECTIONS {
            txn.open_table(table)
                .during(&format!("creating table `{table}`"))?;
        }
        txn.open_table(tables::META)
            .during("creating table `meta`")?;
        txn.open_table(tables::AUDIT)
            .during("creating table `audit`")?;
        txn.commit().during("preparing a new store")?;

        Ok(EmbeddedStore {
            db: Arc::new(db),
            path,
        })
    }

    /// The database file, for logs and diagnostics.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs redb work on the blocking pool.
    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Database) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let db = Arc::clone(&self.db);
        tokio::task::spawn_blocking(move || work(&db))
            .await
            .map_err(|error| {
                if error.is_panic() {
                    // redb panics on a file damaged outside redb (see `Database::open`): a
                    // corrupt store, answered as an internal error, the panic only logged.
                    StoreError::Corrupt(format!("a catalog store operation panicked: {error}"))
                } else {
                    StoreError::Unavailable(
                        "a catalog store operation was cancelled: the server is shutting down"
                            .to_owned(),
                    )
                }
            })?
    }
}

/// Says why opening failed in the terms an operator acts on.
fn open_error(dir: &Path, path: &Path, error: DatabaseError) -> StoreError {
    match error {
        DatabaseError::DatabaseAlreadyOpen | DatabaseError::LockProtocolMismatch => {
            StoreError::Unavailable(format!(
                "{} is locked: another toolgate is using the data dir {} \
                 (stop it, or give this one another data dir)",
                path.display(),
                dir.display()
            ))
        }
        DatabaseError::Storage(StorageError::Io(io))
            if matches!(
                io.kind(),
                io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
            ) =>
        {
            StoreError::Unavailable(format!(
                "cannot open {}: the data dir {} is not writable by this user ({io})",
                path.display(),
                dir.display()
            ))
        }
        other => error::from_redb(&format!("opening {}", path.display()), other.into()),
    }
}

#[async_trait]
impl CatalogStore for EmbeddedStore {
    async fn load(&self) -> Result<StoredCatalog, StoreError> {
        self.run(load::load).await
    }

    async fn revision(&self) -> Result<u64, StoreError> {
        self.run(load::revision).await
    }

    async fn commit(&self, commit: Commit) -> Result<u64, StoreError> {
        self.run(move |db| commit::apply(db, commit)).await
    }

    async fn audit(&self, query: AuditQuery) -> Result<Vec<AuditRecord>, StoreError> {
        self.run(move |db| audit::list(db, &query)).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.run(load::revision).await.map(drop)
    }
}
