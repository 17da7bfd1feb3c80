//! The embedded (redb) store: the shared store contract, plus what only an on-disk store has to
//! get right: durability across reopen, the single-process lock, and clear errors about the
//! data dir.

use crate::store_contract;

use std::sync::Arc;

use tempfile::TempDir;
use toolgate::store::embedded::{EmbeddedStore, FILE_NAME};
use toolgate::store::{AuditQuery, CatalogStore, StoreError};

use store_contract::fixtures::{one_of_each, put_label, puts};

/// A fresh store in its own temp dir; the dir lives as long as the returned guard.
async fn fresh() -> (Arc<dyn CatalogStore>, TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = EmbeddedStore::open(dir.path()).expect("open a fresh store");
    (Arc::new(store), dir)
}

store_contract::tests_for!(fresh);

fn unavailable_message(result: Result<EmbeddedStore, StoreError>) -> String {
    match result {
        Err(StoreError::Unavailable(message)) => message,
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

#[tokio::test]
async fn everything_survives_closing_and_reopening_the_data_dir() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = EmbeddedStore::open(dir.path()).expect("open");
    let mut first = put_label(0, "pii", "alice");
    first.changes.extend(puts(&one_of_each("billing")));
    store.commit(first).await.expect("commit");
    store
        .commit(put_label(1, "internal", "bob"))
        .await
        .expect("commit");
    let catalog = store.load().await.expect("load");
    let audit = store.audit(AuditQuery::default()).await.expect("audit");
    drop(store);

    let reopened = EmbeddedStore::open(dir.path()).expect("reopen");
    assert_eq!(reopened.load().await.expect("load"), catalog);
    assert_eq!(reopened.revision().await.expect("revision"), 2);
    assert_eq!(
        reopened.audit(AuditQuery::default()).await.expect("audit"),
        audit
    );

    // Sequence numbers carry on where they stopped.
    reopened
        .commit(put_label(2, "third", "carol"))
        .await
        .expect("commit");
    let after = AuditQuery {
        after_seq: audit.last().map(|r| r.seq),
        ..AuditQuery::default()
    };
    let next = reopened.audit(after).await.expect("audit");
    assert_eq!(next.len(), 1);
    assert!(next[0].seq > audit[1].seq);
    assert_eq!(next[0].revision, 3);
}

#[tokio::test]
async fn a_second_open_of_a_data_dir_in_use_fails_clearly() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = EmbeddedStore::open(dir.path()).expect("open");
    let message = unavailable_message(EmbeddedStore::open(dir.path()));
    assert!(
        message.contains("another toolgate is using the data dir"),
        "{message}"
    );
    assert!(
        message.contains(&dir.path().display().to_string()),
        "{message}"
    );

    // The first store is unharmed, and the lock goes with it.
    first.ping().await.expect("ping");
    drop(first);
    EmbeddedStore::open(dir.path()).expect("open after the first one closed");
}

#[tokio::test]
async fn open_creates_missing_folders() {
    let dir = tempfile::tempdir().expect("temp dir");
    let nested = dir.path().join("var").join("toolgate");
    let store = EmbeddedStore::open(&nested).expect("open");
    assert_eq!(store.path(), nested.join(FILE_NAME));
    assert!(store.path().is_file());
}

#[test]
fn open_fails_clearly_when_the_data_dir_cannot_be_created() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "x").expect("write a file");
    let message = unavailable_message(EmbeddedStore::open(&file.join("data")));
    assert!(message.contains("cannot create the data dir"), "{message}");
}

#[tokio::test]
async fn a_row_that_is_not_valid_json_is_reported_as_corrupt() {
    let dir = tempfile::tempdir().expect("temp dir");
    drop(EmbeddedStore::open(dir.path()).expect("open"));
    {
        // A foreign writer damages one label.
        let db = redb::Database::create(dir.path().join(FILE_NAME)).expect("open the file");
        let txn = db.begin_write().expect("write");
        let labels: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("labels");
        txn.open_table(labels)
            .expect("labels")
            .insert("broken", b"{not json".as_slice())
            .expect("insert");
        txn.commit().expect("commit");
    }
    let store = EmbeddedStore::open(dir.path()).expect("reopen");
    match store.load().await {
        Err(StoreError::Corrupt(message)) => {
            assert!(
                message.contains("labels") && message.contains("broken"),
                "{message}"
            );
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn a_file_that_is_not_a_database_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join(FILE_NAME),
        "this is not a redb file, just text",
    )
    .expect("write");
    match EmbeddedStore::open(dir.path()) {
        Err(StoreError::Corrupt(message) | StoreError::Unavailable(message)) => {
            assert!(message.contains(FILE_NAME), "{message}");
        }
        other => panic!("expected an error, got {other:?}"),
    }
}

/// The message of a refused store file, which must name it and say what to do.
fn refusal(result: Result<EmbeddedStore, StoreError>) -> String {
    match result {
        Err(StoreError::Corrupt(message)) => {
            assert!(message.contains(FILE_NAME), "{message}");
            assert!(
                message.contains("is not a valid toolgate store"),
                "{message}"
            );
            assert!(message.contains("Restore it from a backup"), "{message}");
            message
        }
        other => panic!("expected the file to be refused as Corrupt, got {other:?}"),
    }
}

#[test]
fn a_zero_byte_store_file_is_refused_not_taken_for_a_new_store() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(FILE_NAME);
    std::fs::write(&path, b"").expect("an empty file");
    let message = refusal(EmbeddedStore::open(dir.path()));
    assert!(message.contains("empty (0 bytes)"), "{message}");
    assert_eq!(std::fs::metadata(&path).expect("still there").len(), 0);
}

#[test]
fn a_garbage_store_file_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(FILE_NAME);
    let garbage = b"not a database\n".repeat(1000);
    std::fs::write(&path, &garbage).expect("write");
    let message = refusal(EmbeddedStore::open(dir.path()));
    assert!(
        message.contains("not a readable redb database"),
        "{message}"
    );
    assert_eq!(std::fs::read(&path).expect("read"), garbage);
}

#[test]
fn a_redb_file_without_toolgate_tables_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    {
        let db = redb::Database::create(dir.path().join(FILE_NAME)).expect("create");
        let txn = db.begin_write().expect("write");
        let other: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("other");
        txn.open_table(other)
            .expect("other")
            .insert("x", 1)
            .expect("insert");
        txn.commit().expect("commit");
    }
    let message = refusal(EmbeddedStore::open(dir.path()));
    assert!(message.contains("without toolgate's tables"), "{message}");
}

#[test]
fn a_directory_in_place_of_the_store_file_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join(FILE_NAME)).expect("mkdir");
    let message = refusal(EmbeddedStore::open(dir.path()));
    assert!(message.contains("not a regular file"), "{message}");
}

#[tokio::test]
async fn a_missing_store_file_is_created_with_nothing_left_over() {
    let dir = tempfile::tempdir().expect("temp dir");
    let nested = dir.path().join("missing").join("data");
    let store = EmbeddedStore::open(&nested).expect("a new store where nothing exists");
    assert_eq!(store.revision().await.expect("revision"), 0);
    let mut names: Vec<String> = std::fs::read_dir(&nested)
        .expect("read dir")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    assert_eq!(names, [FILE_NAME]);
    drop(store);
    // Reopened: the same store, accepted.
    let reopened = EmbeddedStore::open(&nested).expect("reopen");
    assert_eq!(reopened.revision().await.expect("revision"), 0);
}

/// The store holds every source's credentials and the delegation signing keys: a new data dir
/// is 0700 and the store 0600, whatever the umask (022 made them 0755 and 0644).
#[cfg(unix)]
#[tokio::test]
async fn a_new_store_is_private_to_the_gateways_user() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let store = EmbeddedStore::open(&data).expect("open");
    let mode = |path: &std::path::Path| {
        std::fs::metadata(path)
            .expect("metadata")
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(store.path()), 0o600);
}

/// A store made before (or copied in) readable by others is not refused, but its start says
/// so, naming the path and the command that fixes it.
#[cfg(unix)]
#[test]
fn a_store_readable_by_others_is_warned_about_at_start() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    drop(EmbeddedStore::open(&data).expect("open"));
    let file = data.join(FILE_NAME);
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let log = dir.path().join("stderr.log");
    let mut command = crate::support::process::Process::serve_command(&data, &[]);
    command
        .env("TOOLGATE_LOG_LEVEL", "warn")
        .stderr(std::fs::File::create(&log).expect("log file"));
    let mut process = crate::support::process::Process::spawn(command);
    process.signal("TERM");
    process.wait(std::time::Duration::from_secs(15));
    let log = std::fs::read_to_string(&log).expect("the log");
    for (path, fix) in [(&data, "chmod 0700"), (&file, "chmod 0600")] {
        assert!(
            log.lines()
                .any(|line| line.contains(&*path.to_string_lossy())
                    && line.contains(fix)
                    && line.contains("credentials")),
            "{path:?} in\n{log}"
        );
    }
}
