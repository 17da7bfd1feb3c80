//! The MongoDB store against a real MongoDB-protocol server (nx-27017 from `.venv-mongo`, or
//! the server `TOOLGATE_TEST_MONGODB_URI` names): the shared store contract on both commit
//! paths, plus what only a shared, networked store has to get right: migrations, several
//! stores on one database, crashes mid-commit, the server going away and coming back.

use crate::store_contract;
use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use mongodb::bson::{Document, doc};
use toolgate::domain::model::{Catalog, Label, Tool};
use toolgate::store::mongo::{CommitPath, CommitPathChoice, MongoStore};
use toolgate::store::{
    AuditQuery, CatalogStore, Change, Commit, Entity, EntityKind, StoreError, Subject,
};

use store_contract::fixtures::{self, label, one_of_each, put_label, puts, record};
use support::mongo::{MongoServer, database_name};

/// A migrated store on a fresh database of `server`.
async fn open(server: &MongoServer, choice: CommitPathChoice, test: &str) -> MongoStore {
    open_db(server, choice, &database_name(test)).await
}

async fn open_db(server: &MongoServer, choice: CommitPathChoice, db: &str) -> MongoStore {
    let store = MongoStore::open(server.uri(), db, choice)
        .await
        .expect("open the store");
    store.migrate().await.expect("migrate");
    store
}

/// A fresh store that commits in transactions (nx-27017 takes them; an external standalone
/// server would not, and then this runs the compare-and-set path a second time).
async fn fresh_transactional() -> (Arc<dyn CatalogStore>, MongoServer) {
    let server = MongoServer::start().await;
    let store = open(&server, CommitPathChoice::Detect, "contract_txn").await;
    if server.is_local() {
        assert_eq!(store.commit_path(), CommitPath::Transaction);
    }
    (Arc::new(store), server)
}

/// A fresh store forced onto the compare-and-set path.
async fn fresh_compare_and_set() -> (Arc<dyn CatalogStore>, MongoServer) {
    let server = MongoServer::start().await;
    let store = open(&server, CommitPathChoice::CompareAndSet, "contract_cas").await;
    assert_eq!(store.commit_path(), CommitPath::CompareAndSet);
    (Arc::new(store), server)
}

mod transactional {
    crate::store_contract::tests_for!(super::fresh_transactional);
}

mod compare_and_set {
    crate::store_contract::tests_for!(super::fresh_compare_and_set);
}

/// The raw database, to look at what the store wrote.
async fn raw(server: &MongoServer, store: &MongoStore) -> mongodb::Database {
    mongodb::Client::with_uri_str(server.uri())
        .await
        .expect("client")
        .database(store.database())
}

async fn meta(db: &mongodb::Database) -> Document {
    db.collection::<Document>("meta")
        .find_one(doc! {"_id": "catalog"})
        .await
        .expect("read meta")
        .expect("meta exists")
}

fn label_named(id: &str, name: &str) -> Label {
    let mut label = label(id);
    name.clone_into(&mut label.name);
    label
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_are_applied_once_recorded_and_idempotent() {
    let server = MongoServer::start().await;
    let db = database_name("migrations");
    let store = MongoStore::open(server.uri(), &db, CommitPathChoice::Detect)
        .await
        .expect("open");
    let first = store.migrate().await.expect("migrate");
    assert_eq!(first.applied, ["0001_collections", "0002_indexes"]);
    assert!(first.already_applied.is_empty());

    let raw = raw(&server, &store).await;
    let recorded: Vec<String> = {
        let mut cursor = raw
            .collection::<Document>("migrations")
            .find(doc! {})
            .await
            .expect("find");
        let mut ids = Vec::new();
        while cursor.advance().await.expect("advance") {
            let doc: Document = cursor.deserialize_current().expect("doc");
            ids.push(doc.get_str("_id").expect("_id").to_owned());
        }
        ids.sort();
        ids
    };
    assert_eq!(recorded, ["0001_collections", "0002_indexes"]);
    let mut indexes = raw
        .collection::<Document>("audit")
        .list_indexes()
        .await
        .expect("indexes");
    let mut keys = Vec::new();
    while indexes.advance().await.expect("advance") {
        let index = indexes.deserialize_current().expect("index");
        keys.push(index.keys.keys().cloned().collect::<Vec<_>>().join(","));
    }
    assert!(keys.contains(&"actor,seq".to_owned()), "{keys:?}");
    assert!(keys.contains(&"entity,id,seq".to_owned()), "{keys:?}");

    // Again, from this store and from another one: nothing to do, nothing changes.
    let second = store.migrate().await.expect("migrate again");
    assert!(second.applied.is_empty());
    assert_eq!(second.already_applied, ["0001_collections", "0002_indexes"]);
    let other = open_db(&server, CommitPathChoice::Detect, &db).await;
    assert!(other.migrate().await.expect("migrate").applied.is_empty());

    // Migrating a database that already holds a catalog keeps it.
    store
        .commit(put_label(0, "pii", "alice"))
        .await
        .expect("commit");
    raw.collection::<Document>("migrations")
        .delete_many(doc! {})
        .await
        .expect("forget the migrations");
    assert_eq!(store.migrate().await.expect("migrate").applied.len(), 2);
    assert_eq!(
        store.load().await.expect("load").catalog.labels,
        [label("pii")]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_database_see_each_other_and_stale_commits_conflict() {
    let server = MongoServer::start().await;
    let db = database_name("two_stores");
    for choice in [CommitPathChoice::Detect, CommitPathChoice::CompareAndSet] {
        let db = format!("{db}_{choice:?}");
        let first = open_db(&server, choice, &db).await;
        let second = open_db(&server, choice, &db).await;
        first
            .commit(put_label(0, "a", "alice"))
            .await
            .expect("first commit");
        let seen = second.load().await.expect("load");
        assert_eq!((seen.revision, seen.catalog.labels.len()), (1, 1));
        second
            .commit(put_label(1, "b", "bob"))
            .await
            .expect("second commit");
        assert_eq!(first.revision().await.expect("revision"), 2);

        match first.commit(put_label(1, "c", "mallory")).await {
            Err(StoreError::RevisionConflict { expected, current }) => {
                assert_eq!((expected, current), (1, 2));
            }
            other => panic!("expected a conflict, got {other:?}"),
        }
        let loaded = first.load().await.expect("load");
        let ids: Vec<&str> = loaded
            .catalog
            .labels
            .iter()
            .map(|l| l.id.as_str())
            .collect();
        assert_eq!(ids, ["a", "b"]);
        let audit = first.audit(AuditQuery::default()).await.expect("audit");
        let actors: Vec<&str> = audit.iter().map(|r| r.actor.as_str()).collect();
        assert_eq!(actors, ["alice", "bob"]);
    }
}

/// A commit with a replace, puts, a delete and audit records: every kind of step.
fn mixed_commit(expected_revision: u64) -> Commit {
    let mut catalog = one_of_each("billing");
    catalog.labels.push(label("old"));
    Commit {
        expected_revision,
        changes: vec![
            Change::ReplaceAll(catalog),
            Change::Put(Entity::Label(label("pii"))),
            Change::Delete {
                kind: EntityKind::Labels,
                id: "old".to_owned(),
            },
        ],
        audit: vec![
            record("alice", Subject::Catalog, "catalog", 1),
            record("alice", EntityKind::Labels, "pii", 2),
        ],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_interrupted_after_its_claim_is_rolled_forward_by_the_next_load() {
    let server = MongoServer::start().await;
    // Whatever path the store commits on, an interrupted journaled commit must be finished.
    for (applied, choice) in [
        (0, CommitPathChoice::CompareAndSet),
        (3, CommitPathChoice::CompareAndSet),
        (6, CommitPathChoice::Detect),
    ] {
        let db = database_name(&format!("crash_load_{applied}"));
        let store = open_db(&server, choice, &db).await;
        store
            .commit(put_label(0, "first", "alice"))
            .await
            .expect("commit");
        let claimed = store
            .commit_and_crash(mixed_commit(1), applied)
            .await
            .expect("claim");
        assert_eq!(claimed, 2);
        let raw = raw(&server, &store).await;
        assert!(meta(&raw).await.get_str("pending").is_ok(), "left pending");
        assert_eq!(store.revision().await.expect("revision"), 2);

        // Another instance's load finishes it.
        let other = open_db(&server, choice, &db).await;
        let loaded = other.load().await.expect("load");
        assert_eq!(loaded.revision, 2);
        let mut expected = one_of_each("billing");
        expected.labels = vec![label("billing"), label("pii")];
        assert_eq!(loaded.catalog, expected);
        assert_eq!(
            meta(&raw).await.get("pending"),
            Some(&mongodb::bson::Bson::Null)
        );
        let journal = raw
            .collection::<Document>("journal")
            .count_documents(doc! {})
            .await
            .expect("count");
        assert_eq!(journal, 0, "the journal is removed once applied");
        let audit = other.audit(AuditQuery::default()).await.expect("audit");
        let positions: Vec<(u64, &str)> =
            audit.iter().map(|r| (r.revision, r.id.as_str())).collect();
        assert_eq!(positions, [(1, "first"), (2, "catalog"), (2, "pii")]);

        // And writing goes on from there.
        assert_eq!(
            store
                .commit(put_label(2, "next", "bob"))
                .await
                .expect("commit"),
            3
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_interrupted_after_its_claim_is_rolled_forward_by_the_next_commit_or_audit() {
    let server = MongoServer::start().await;
    let store = open(&server, CommitPathChoice::CompareAndSet, "crash_commit").await;
    store
        .commit_and_crash(mixed_commit(0), 2)
        .await
        .expect("claim");
    // A stale commit still conflicts, and finishing the pending one is not skipped by it.
    assert!(matches!(
        store.commit(put_label(0, "late", "mallory")).await,
        Err(StoreError::RevisionConflict {
            expected: 0,
            current: 1
        })
    ));
    assert_eq!(
        store
            .commit(put_label(1, "next", "bob"))
            .await
            .expect("commit"),
        2
    );
    let labels: Vec<String> = store
        .load()
        .await
        .expect("load")
        .catalog
        .labels
        .into_iter()
        .map(|l| l.id)
        .collect();
    assert_eq!(labels, ["billing", "next", "pii"]);

    store
        .commit_and_crash(put_label(2, "audited", "carol"), 0)
        .await
        .expect("claim");
    let audit = store.audit(AuditQuery::default()).await.expect("audit");
    assert_eq!(
        audit.last().map(|r| (r.revision, r.actor.as_str())),
        Some((3, "carol"))
    );
    assert!(
        audit.windows(2).all(|pair| pair[0].seq < pair[1].seq),
        "seqs increase"
    );
}

/// Writers on two stores put the same label over and over while readers load (and so roll
/// forward pending commits): the versions must keep every late replay from overwriting a
/// newer commit, so the label ends as the last commit wrote it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_entity_written_from_two_stores_ends_as_the_last_commit_wrote_it() {
    let server = MongoServer::start().await;
    let db = database_name("same_entity");
    let stores = [
        Arc::new(open_db(&server, CommitPathChoice::CompareAndSet, &db).await),
        Arc::new(open_db(&server, CommitPathChoice::CompareAndSet, &db).await),
    ];
    let mut tasks = tokio::task::JoinSet::new();
    for (n, shared) in stores.iter().enumerate() {
        let store = Arc::clone(shared);
        tasks.spawn(async move {
            for write in 0..15 {
                let name = format!("writer {n} write {write}");
                loop {
                    let current = store.load().await.expect("load");
                    let mut commit = fixtures::commit(
                        current.revision,
                        vec![
                            Change::Put(Entity::Label(label_named("x", &name))),
                            Change::Put(Entity::Label(label_named(
                                &format!("w{n}-{write}"),
                                &name,
                            ))),
                        ],
                    );
                    commit.audit.push(record(&name, EntityKind::Labels, "x", 0));
                    match store.commit(commit).await {
                        Ok(_) => break,
                        Err(StoreError::RevisionConflict { .. }) => {}
                        Err(error) => panic!("commit failed: {error}"),
                    }
                }
            }
        });
        let reader = Arc::clone(shared);
        tasks.spawn(async move {
            for _ in 0..30 {
                reader.load().await.expect("a reader's load");
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("a task panicked");
    }
    let loaded = stores[0].load().await.expect("load");
    assert_eq!(loaded.revision, 30);
    let audit = stores[1]
        .audit(AuditQuery {
            limit: AuditQuery::MAX_LIMIT,
            ..AuditQuery::default()
        })
        .await
        .expect("audit");
    let last = audit.last().expect("records");
    let x = loaded
        .catalog
        .labels
        .iter()
        .find(|l| l.id == "x")
        .expect("label x");
    assert_eq!(x.name, last.actor, "the last commit's value wins");
    assert_eq!(loaded.catalog.labels.len(), 31);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_larger_than_one_journal_document_round_trips() {
    let server = MongoServer::start().await;
    let description = "d".repeat(6_000);
    let tools: Vec<Tool> = (0..1_200)
        .map(|i| {
            let mut tool = fixtures::tool(&format!("t{i:04}"));
            description.clone_into(&mut tool.description);
            tool
        })
        .collect();
    let catalog = Catalog {
        tools,
        ..Catalog::default()
    };
    for choice in [CommitPathChoice::CompareAndSet, CommitPathChoice::Detect] {
        let store = open(&server, choice, "large_commit").await;
        store
            .commit(fixtures::commit(
                0,
                vec![Change::ReplaceAll(catalog.clone())],
            ))
            .await
            .expect("commit");
        // Half the tools replaced by puts, the rest deleted: batches of both kinds.
        let mut changes: Vec<Change> = puts(&Catalog {
            tools: catalog.tools[..600].to_vec(),
            ..Catalog::default()
        });
        changes.extend(catalog.tools[600..].iter().map(|t| Change::Delete {
            kind: EntityKind::Tools,
            id: t.id.clone(),
        }));
        store
            .commit(fixtures::commit(1, changes))
            .await
            .expect("commit");
        let loaded = store.load().await.expect("load");
        assert_eq!(loaded.catalog.tools, catalog.tools[..600].to_vec());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_that_does_not_decode_is_reported_as_corrupt() {
    let server = MongoServer::start().await;
    let store = open(&server, CommitPathChoice::Detect, "corrupt").await;
    raw(&server, &store)
        .await
        .collection::<Document>("labels")
        .insert_one(doc! {"_id": "broken", "_v": 1_i64, "json": "{not json"})
        .await
        .expect("a foreign write");
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

/// Asserts `result` is `Unavailable` and came within a few seconds of `started`.
fn assert_prompt_unavailable<T: std::fmt::Debug>(
    what: &str,
    started: Instant,
    result: Result<T, StoreError>,
) {
    let elapsed = started.elapsed();
    match result {
        Err(StoreError::Unavailable(message)) => {
            assert!(message.contains("MongoDB"), "{what}: {message}");
        }
        other => panic!("{what}: expected Unavailable, got {other:?}"),
    }
    assert!(
        elapsed < Duration::from_secs(5),
        "{what} took {elapsed:?} to fail"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_server_down_operations_fail_fast_and_a_restart_keeps_everything() {
    let data = tempfile::tempdir().expect("a data dir");
    let mut server = MongoServer::start_local(Some(data.path())).await;
    let db = database_name("restart");
    let store = open_db(&server, CommitPathChoice::Detect, &db).await;
    let mut first = put_label(0, "pii", "alice");
    first.changes.extend(puts(&one_of_each("billing")));
    store.commit(first).await.expect("commit");
    store
        .commit(put_label(1, "internal", "bob"))
        .await
        .expect("commit");
    let catalog = store.load().await.expect("load");
    let audit = store.audit(AuditQuery::default()).await.expect("audit");

    server.stop();
    let started = Instant::now();
    assert_prompt_unavailable(
        "commit",
        started,
        store.commit(put_label(2, "lost", "carol")).await,
    );
    let started = Instant::now();
    assert_prompt_unavailable("load", started, store.load().await);
    let started = Instant::now();
    assert_prompt_unavailable("revision", started, store.revision().await);
    let started = Instant::now();
    assert_prompt_unavailable("audit", started, store.audit(AuditQuery::default()).await);
    let started = Instant::now();
    assert_prompt_unavailable("ping", started, store.ping().await);
    let started = Instant::now();
    assert_prompt_unavailable(
        "open",
        started,
        MongoStore::open(server.uri(), &db, CommitPathChoice::Detect).await,
    );

    server.restart().await;
    // The same store reconnects; a new one finds the same data.
    assert_eq!(store.load().await.expect("load after restart"), catalog);
    let reopened = open_db(&server, CommitPathChoice::Detect, &db).await;
    assert_eq!(reopened.load().await.expect("load"), catalog);
    assert_eq!(reopened.revision().await.expect("revision"), 2);
    assert_eq!(
        reopened.audit(AuditQuery::default()).await.expect("audit"),
        audit
    );
    assert_eq!(
        store
            .commit(put_label(2, "third", "carol"))
            .await
            .expect("commit after restart"),
        3
    );
    let next = reopened
        .audit(AuditQuery {
            after_seq: audit.last().map(|r| r.seq),
            ..AuditQuery::default()
        })
        .await
        .expect("audit");
    assert_eq!(next.len(), 1);
    assert!(next[0].seq > audit[1].seq);
    assert_eq!(next[0].revision, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_never_show_the_password_of_the_uri() {
    for uri in [
        "mongodb://toolgate:s3cret-pw@127.0.0.1:9/?serverSelectionTimeoutMS=300",
        "mongodb://toolgate:s3cret-pw@",
        "mongo://toolgate:s3cret-pw@127.0.0.1/",
    ] {
        let result = MongoStore::open(uri, "toolgate", CommitPathChoice::Detect).await;
        match result {
            Err(StoreError::Unavailable(message)) => {
                assert!(!message.contains("s3cret-pw"), "{message}");
            }
            other => panic!("expected Unavailable for {uri}, got {other:?}"),
        }
    }
}
