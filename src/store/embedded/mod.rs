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
mod backup;
mod commit;
mod error;
mod keys;
mod load;
mod tables;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use redb::{Database, DatabaseError, ReadableDatabase, StorageError, TableError};

use self::error::During;
use crate::store::{
    AuditQuery, AuditRecord, Backup, CatalogStore, Commit, SigningKeyRecord, StoreError,
    StoredCatalog,
};

/// The name of the database file inside the data dir.
pub const FILE_NAME: &str = "toolgate.redb";

/// The folder of the data dir that backups are written to.
pub const BACKUPS_DIR: &str = "backups";

/// Backups kept unless told otherwise (`TOOLGATE_BACKUP_KEEP`).
pub const DEFAULT_BACKUP_KEEP: usize = 10;

/// The catalog, its revision and the audit log in one redb file. Cheap to share behind an `Arc`;
/// the file stays locked until the store (and any operation still running) is dropped.
#[derive(Clone)]
pub struct EmbeddedStore {
    db: Arc<Database>,
    path: PathBuf,
    last_backup: Arc<backup::LastBackup>,
    /// How many backups [`CatalogStore::backup`] keeps.
    backup_keep: usize,
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
    /// A new store is created only where no `toolgate.redb` exists. A file that exists but is
    /// not a toolgate store (empty, not a redb file, damaged, or a redb file without our
    /// tables) is refused with [`StoreError::Corrupt`] naming it and saying what to do: taking
    /// it for a new store would let `--seed` silently replace a catalog and its audit history
    /// that a backup could still restore.
    ///
    /// Fails with [`StoreError::Unavailable`] if the folder cannot be created or written, or if
    /// another process (or another `EmbeddedStore`) has it open.
    ///
    /// Blocks (it may fsync, check every page of the file, or repair it after a crash): call
    /// it at start-up, before serving, or from a blocking task.
    pub fn open(dir: &Path) -> Result<EmbeddedStore, StoreError> {
        create_private_dir(dir).map_err(|error| {
            StoreError::Unavailable(format!(
                "cannot create the data dir {}: {error}",
                dir.display()
            ))
        })?;
        let path = dir.join(FILE_NAME);
        let db = match std::fs::metadata(&path) {
            Ok(metadata) => {
                warn_if_readable_by_others(dir, &path);
                open_existing(dir, &path, &metadata)?
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => create_new(dir, &path)?,
            Err(error) => {
                return Err(StoreError::Unavailable(format!(
                    "cannot inspect {}: {error}",
                    path.display()
                )));
            }
        };
        // Tables added by a later version are created in an older store.
        create_tables(&db)?;
        Ok(EmbeddedStore {
            db: Arc::new(db),
            path,
            last_backup: Arc::default(),
            backup_keep: DEFAULT_BACKUP_KEEP,
        })
    }

    /// Keeps the newest `keep` backups (at least one): after each new backup, older files in
    /// the backups folder beyond them are removed.
    pub fn keeping_backups(mut self, keep: usize) -> EmbeddedStore {
        self.backup_keep = keep.max(1);
        self
    }

    /// Where [`CatalogStore::backup`] writes: `backups` in the data dir.
    pub fn backups_dir(&self) -> PathBuf {
        self.path
            .parent()
            .map_or_else(|| PathBuf::from(BACKUPS_DIR), |dir| dir.join(BACKUPS_DIR))
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

/// Creates every table that does not exist yet, so that reads never meet a missing one.
fn create_tables(db: &Database) -> Result<(), StoreError> {
    let txn = db.begin_write().during("preparing the store")?;
    for table in tables::COLLECTIONS {
        txn.open_table(table)
            .during(&format!("creating table `{table}`"))?;
    }
    txn.open_table(tables::META)
        .during("creating table `meta`")?;
    txn.open_table(tables::AUDIT)
        .during("creating table `audit`")?;
    txn.open_table(tables::SIGNING_KEYS)
        .during("creating table `signing_keys`")?;
    txn.commit().during("preparing the store")
}

/// Creates the data dir and any missing parents, 0700 on Unix: the store holds every source's
/// credentials and the delegation signing keys, so no other user may list or read it. A
/// folder that exists keeps its mode ([`warn_if_readable_by_others`] says so at start).
fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Creates `path` empty, 0600 on Unix, where nothing exists (redb then opens it as it is).
fn create_private_file(path: &Path) -> io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path).map(drop)
}

/// Logs a warning, naming the path and the command that fixes it, when the data dir or the
/// store file that exists can be read (or the folder listed) by other users than the
/// gateway's: stores made before toolgate made them private, or copied in with another mode.
/// Not refused: the operator may share the folder on purpose (a group of the gateway's own).
fn warn_if_readable_by_others(dir: &Path, file: &Path) {
    #[cfg(unix)]
    for (path, private) in [(dir, "0700"), (file, "0600")] {
        use std::os::unix::fs::PermissionsExt;
        let Ok(metadata) = std::fs::metadata(path) else {
            continue;
        };
        let mode = metadata.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            tracing::warn!(
                path = %path.display(),
                mode = format!("{mode:04o}"),
                "the store holds every source's credentials and the delegation signing keys, \
                 but other users than the gateway's can read this; make it private with \
                 `chmod {private} {}`",
                path.display()
            );
        }
    }
    #[cfg(not(unix))]
    let _ = (dir, file);
}

/// Opens a `toolgate.redb` that exists, checking every page, and only if it is a toolgate
/// store.
fn open_existing(
    dir: &Path,
    path: &Path,
    metadata: &std::fs::Metadata,
) -> Result<Database, StoreError> {
    if !metadata.is_file() {
        return Err(not_a_store(path, "it is not a regular file"));
    }
    if metadata.len() == 0 {
        return Err(not_a_store(path, "it is empty (0 bytes)"));
    }
    // A plain open trusts the file and may panic on one altered outside redb; the check reads
    // it all once, at start.
    let db = builder()
        .set_check_integrity_on_open(true)
        .open(path)
        .map_err(|error| match error {
            DatabaseError::DatabaseAlreadyOpen
            | DatabaseError::LockProtocolMismatch
            | DatabaseError::Storage(StorageError::Io(_))
                if !is_not_redb(&error) =>
            {
                open_error(dir, path, error)
            }
            other => not_a_store(
                path,
                &format!("it is not a readable redb database ({other})"),
            ),
        })?;
    let txn = db
        .begin_read()
        .during(&format!("reading {}", path.display()))?;
    match txn.open_table(tables::META) {
        Ok(_) => Ok(db),
        Err(TableError::TableDoesNotExist(_)) => Err(not_a_store(
            path,
            "it is a redb database without toolgate's tables",
        )),
        Err(error) => Err(error::from_redb(
            &format!("reading {}", path.display()),
            error.into(),
        )),
    }
}

/// Whether redb refused the file's contents (not a redb file) rather than its access.
fn is_not_redb(error: &DatabaseError) -> bool {
    matches!(
        error,
        DatabaseError::Storage(StorageError::Io(io)) if io.kind() == io::ErrorKind::InvalidData
    )
}

/// The refusal of an existing file that is not a store: what is wrong and what to do.
fn not_a_store(path: &Path, why: &str) -> StoreError {
    StoreError::Corrupt(format!(
        "{path} exists but is not a valid toolgate store: {why}. toolgate will not replace \
         it (with --seed that would discard a catalog and its audit history). Restore it from \
         a backup, or, if the data dir is meant to start empty, remove {path} and start again.",
        path = path.display()
    ))
}

/// Creates a new, empty store at `path`, where nothing exists. It is made under a temporary
/// name and linked into place only once its tables are committed, so that a crash while
/// creating never leaves a `toolgate.redb` that is not a store (which the next start would
/// refuse); the link fails if another process created `path` meanwhile, which is never
/// overwritten.
fn create_new(dir: &Path, path: &Path) -> Result<Database, StoreError> {
    let staging = dir.join(format!("{FILE_NAME}.creating"));
    // Left by a start that died while creating: it never held data.
    match std::fs::remove_file(&staging) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => {
            return Err(StoreError::Unavailable(format!(
                "cannot remove the unfinished store {}: {error}",
                staging.display()
            )));
        }
    }
    create_private_file(&staging).map_err(|error| {
        StoreError::Unavailable(format!("cannot create {}: {error}", staging.display()))
    })?;
    let db = Database::create(&staging).map_err(|error| open_error(dir, &staging, error))?;
    create_tables(&db)?;
    drop(db);
    let linked = std::fs::hard_link(&staging, path);
    let _ = std::fs::remove_file(&staging);
    linked.map_err(|error| {
        StoreError::Unavailable(if error.kind() == io::ErrorKind::AlreadyExists {
            format!(
                "{} was created by another process while this one was creating it; \
                 start again",
                path.display()
            )
        } else {
            format!("cannot create {}: {error}", path.display())
        })
    })?;
    builder()
        .open(path)
        .map_err(|error| open_error(dir, path, error))
}

/// redb's page cache is 1 GiB by default, and it fills with every page a write touches: the
/// audit history of a few large catalog replaces took the gateway's RSS up by 200 MiB. The
/// catalog is read once at start (the snapshot serves everything after), so a small cache
/// costs nothing that matters.
const CACHE_BYTES: usize = 16 * 1024 * 1024;

fn builder() -> redb::Builder {
    let mut builder = redb::Builder::new();
    builder.set_cache_size(CACHE_BYTES);
    builder
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

    async fn backup(&self) -> Result<Option<Backup>, StoreError> {
        let dir = self.backups_dir();
        let now = chrono::Utc::now();
        let last = Arc::clone(&self.last_backup);
        let keep = self.backup_keep;
        self.run(move |db| backup::write(db, &dir, now, &last, keep))
            .await
            .map(Some)
    }

    async fn signing_keys(&self) -> Result<Vec<SigningKeyRecord>, StoreError> {
        self.run(keys::list).await
    }

    async fn add_signing_key(&self, key: SigningKeyRecord) -> Result<(), StoreError> {
        self.run(move |db| keys::add(db, &key)).await
    }

    async fn remove_signing_key(&self, kid: &str) -> Result<(), StoreError> {
        let kid = kid.to_owned();
        self.run(move |db| keys::remove(db, &kid)).await
    }
}
