//! A consistent copy of the store while the gateway serves: every table read in one redb read
//! transaction (one committed state: the catalog with its secrets, the tool revisions, the
//! audit log, at one revision) and written into a new redb file.
//!
//! Copying `toolgate.redb` with `cp` while the gateway runs is not safe: a commit landing
//! during the copy can leave a header that points at pages copied before it. The copy here is
//! made under a hidden `.partial` name, created with mode 0600 (it holds the sources' secrets in
//! clear), committed (fsynced), and only then renamed to its final name, so a crash or a full
//! disk never leaves a file that looks like a finished backup. One backup per revision: asked
//! again at the revision of the last backup this process wrote, that file is the answer.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use redb::{
    Database, Key, ReadTransaction, ReadableDatabase, ReadableTable, TableDefinition, TableHandle,
    Value, WriteTransaction,
};

use super::error::During;
use super::tables::{self, AUDIT, COLLECTIONS, META, REVISION, SIGNING_KEYS};
use crate::store::{Backup, StoreError};

/// The last backup this process wrote. Only this process's own: while it runs, it is the
/// store's only writer, so a revision names one state; a file found in the folder at the same
/// revision number may come from before a restore, and hold another catalog.
pub(super) type LastBackup = Mutex<Option<Backup>>;

/// Writes a copy of `db` into `dir` (created if missing) as
/// `toolgate-r<revision>-<YYYYMMDDTHHMMSSZ>.redb`; `now` names it. If `last` is of the current
/// revision and its file is still there, that is the answer (`created: false`). One backup at
/// a time: `last` is held throughout. After a new backup, only the newest `keep` are left
/// ([`prune`]).
pub(super) fn write(
    db: &Database,
    dir: &Path,
    now: chrono::DateTime<chrono::Utc>,
    last: &LastBackup,
    keep: usize,
) -> Result<Backup, StoreError> {
    let mut last = last.lock().unwrap_or_else(PoisonError::into_inner);
    let read = db.begin_read().during("starting the backup")?;
    let revision = {
        let meta = read.open_table(META).during("reading the revision")?;
        tables::counter(&meta, REVISION).during("reading the revision")?
    };
    if let Some(kept) = last.as_ref().filter(|kept| kept.revision == revision)
        && let Ok(metadata) = std::fs::metadata(&kept.path)
    {
        return Ok(Backup {
            bytes: metadata.len(),
            created: false,
            ..kept.clone()
        });
    }
    create_dir(dir)?;
    let file = format!("toolgate-r{revision}-{}.redb", now.format("%Y%m%dT%H%M%SZ"));
    let partial = dir.join(format!(".{file}.{}.partial", uuid::Uuid::new_v4().simple()));
    let result = copy_into(&read, &partial).and_then(|()| {
        let (file, path) = publish(&partial, dir, &file)?;
        let bytes = std::fs::metadata(&path)
            .map_err(|error| unavailable(&format!("reading {}", path.display()), &error))?
            .len();
        Ok(Backup {
            file,
            path,
            revision,
            bytes,
            created: true,
        })
    });
    match &result {
        Ok(backup) => {
            *last = Some(backup.clone());
            prune(dir, &backup.file, keep);
        }
        Err(_) => {
            let _ = std::fs::remove_file(&partial);
        }
    }
    result
}

/// Removes the backups of `dir` beyond the newest `keep` (by modification time; `newest`, the
/// one just written, is always kept). Only files named as backups are touched; a file that
/// cannot be removed is logged and left.
fn prune(dir: &Path, newest: &str, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut backups: Vec<(std::time::SystemTime, String, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let is_backup = name.starts_with("toolgate-r") && name.ends_with(".redb");
            let modified = entry.metadata().ok()?.modified().ok()?;
            is_backup.then(|| (modified, name, entry.path()))
        })
        .collect();
    // Newest first; the one just written first of all, whatever the clock says.
    backups.sort_by(|a, b| (b.1 == newest, b.0, &b.1).cmp(&(a.1 == newest, a.0, &a.1)));
    for (_, name, path) in backups.into_iter().skip(keep.max(1)) {
        match std::fs::remove_file(&path) {
            Ok(()) => tracing::info!(file = %name, keep, "old backup removed"),
            Err(error) => {
                tracing::warn!(file = %name, %error, "an old backup could not be removed")
            }
        }
    }
}

/// Gives the finished copy at `partial` its name, never replacing a file: another backup of
/// the same revision number within the same second (after a restore: another catalog) keeps
/// its own, and this one is `…-2.redb`, `…-3.redb`. The hidden copy is removed either way.
fn publish(partial: &Path, dir: &Path, file: &str) -> Result<(String, PathBuf), StoreError> {
    let stem = file.trim_end_matches(".redb");
    let mut outcome = Err(unavailable(
        &format!("naming it {file}"),
        &io::Error::from(io::ErrorKind::AlreadyExists),
    ));
    for n in 1..=MAX_SAME_NAME {
        let name = if n == 1 {
            file.to_owned()
        } else {
            format!("{stem}-{n}.redb")
        };
        let path = dir.join(&name);
        match std::fs::hard_link(partial, &path) {
            Ok(()) => {
                outcome = Ok((name, path));
                break;
            }
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
            Err(error) => {
                outcome = Err(unavailable(
                    &format!("naming it {}", path.display()),
                    &error,
                ));
                break;
            }
        }
    }
    let _ = std::fs::remove_file(partial);
    outcome
}

/// Backups of one revision number in one second, at most (more is a loop gone wrong).
const MAX_SAME_NAME: u32 = 100;

/// Creates `dir` (0700 on Unix: only the gateway's user lists its backups).
fn create_dir(dir: &Path) -> Result<(), StoreError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|error| unavailable(&format!("creating {}", dir.display()), &error))
}

/// Creates `path` (0600, never an existing file) and writes every table of `read` into it.
fn copy_into(read: &ReadTransaction, path: &Path) -> Result<(), StoreError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(path)
        .map_err(|error| unavailable(&format!("creating {}", path.display()), &error))?;
    let copy = Database::create(path).during("creating the backup file")?;
    let write = copy.begin_write().during("writing the backup")?;
    copy_tables(read, &write)?;
    write.commit().during("committing the backup")
}

fn copy_tables(read: &ReadTransaction, write: &WriteTransaction) -> Result<(), StoreError> {
    for definition in COLLECTIONS {
        copy_table(read, write, definition)?;
    }
    copy_table(read, write, META)?;
    // The signing keys too: tokens delegated before the backup still verify after a restore.
    copy_table(read, write, SIGNING_KEYS)?;
    copy_table(read, write, AUDIT)
}

/// Every row of the table `definition`, from `read` into `write`.
fn copy_table<K: Key + 'static, V: Value + 'static>(
    read: &ReadTransaction,
    write: &WriteTransaction,
    definition: TableDefinition<'static, K, V>,
) -> Result<(), StoreError> {
    let reading = format!("reading table `{}`", definition.name());
    let writing = format!("writing table `{}`", definition.name());
    let from = read.open_table(definition).during(&reading)?;
    let mut to = write.open_table(definition).during(&writing)?;
    for row in from.iter().during(&reading)? {
        let (key, value) = row.during(&reading)?;
        to.insert(key.value(), value.value()).during(&writing)?;
    }
    Ok(())
}

fn unavailable(doing: &str, error: &io::Error) -> StoreError {
    StoreError::Unavailable(format!("writing a backup: {doing}: {error}"))
}
