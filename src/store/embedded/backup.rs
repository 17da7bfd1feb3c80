//! A consistent copy of the store while the gateway serves: every table read in one redb read
//! transaction (one committed state: the catalog with its secrets, the tool revisions, the
//! audit log, at one revision) and written into a new redb file.
//!
//! Copying `toolgate.redb` with `cp` while the gateway runs is not safe: a commit landing
//! during the copy can leave a header that points at pages copied before it. The copy here is
//! made under a hidden `.partial` name, created with mode 0600 (it holds the sources' secrets in
//! clear), committed (fsynced), and only then renamed to its final name, so a crash or a full
//! disk never leaves a file that looks like a finished backup. One backup per revision: asked
//! again at a revision that has one, the existing file is the answer.

use std::io;
use std::path::Path;

use redb::{Database, ReadTransaction, ReadableDatabase, ReadableTable, WriteTransaction};

use super::error::During;
use super::tables::{self, AUDIT, COLLECTIONS, META, REVISION};
use crate::store::{Backup, StoreError};

/// Writes a copy of `db` into `dir` (created if missing) as
/// `toolgate-r<revision>-<YYYYMMDDTHHMMSSZ>.redb`; `now` names it.
pub(super) fn write(
    db: &Database,
    dir: &Path,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Backup, StoreError> {
    let read = db.begin_read().during("starting the backup")?;
    let revision = {
        let meta = read.open_table(META).during("reading the revision")?;
        tables::counter(&meta, REVISION).during("reading the revision")?
    };
    create_dir(dir)?;
    if let Some(existing) = existing(dir, revision) {
        return Ok(existing);
    }
    let file = format!("toolgate-r{revision}-{}.redb", now.format("%Y%m%dT%H%M%SZ"));
    let partial = dir.join(format!(".{file}.{}.partial", uuid::Uuid::new_v4().simple()));
    let result = copy_into(&read, &partial).and_then(|()| {
        let path = dir.join(&file);
        std::fs::rename(&partial, &path)
            .map_err(|error| unavailable(&format!("renaming it to {}", path.display()), &error))?;
        let bytes = std::fs::metadata(&path)
            .map_err(|error| unavailable(&format!("reading {}", path.display()), &error))?
            .len();
        Ok(Backup {
            file: file.clone(),
            path,
            revision,
            bytes,
            created: true,
        })
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    result
}

/// A finished backup of `revision` already in `dir`: asking again without a write in between
/// answers it instead of copying the store again, so repeated requests cannot fill the disk
/// faster than the catalog changes.
fn existing(dir: &Path, revision: u64) -> Option<Backup> {
    let prefix = format!("toolgate-r{revision}-");
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let file = entry.file_name().into_string().ok()?;
            let finished = file.starts_with(&prefix) && file.ends_with(".redb");
            let metadata = entry.metadata().ok().filter(|m| m.is_file())?;
            finished.then(|| Backup {
                path: entry.path(),
                file,
                revision,
                bytes: metadata.len(),
                created: false,
            })
        })
        .max_by(|a, b| a.file.cmp(&b.file))
}

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
        let from = read.open_table(definition).during("reading a collection")?;
        let mut to = write
            .open_table(definition)
            .during("writing a collection")?;
        for row in from.iter().during("reading a collection")? {
            let (key, value) = row.during("reading a collection")?;
            to.insert(key.value(), value.value())
                .during("writing a collection")?;
        }
    }
    let from = read.open_table(META).during("reading `meta`")?;
    let mut to = write.open_table(META).during("writing `meta`")?;
    for row in from.iter().during("reading `meta`")? {
        let (key, value) = row.during("reading `meta`")?;
        to.insert(key.value(), value.value())
            .during("writing `meta`")?;
    }
    let from = read.open_table(AUDIT).during("reading the audit log")?;
    let mut to = write.open_table(AUDIT).during("writing the audit log")?;
    for row in from.iter().during("reading the audit log")? {
        let (key, value) = row.during("reading the audit log")?;
        to.insert(key.value(), value.value())
            .during("writing the audit log")?;
    }
    Ok(())
}

fn unavailable(doing: &str, error: &io::Error) -> StoreError {
    StoreError::Unavailable(format!("writing a backup: {doing}: {error}"))
}
