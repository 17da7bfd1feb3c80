//! The behaviour every [`CatalogStore`] backend must have, written once.
//!
//! Each contract is an `async fn` taking a fresh, empty store. A backend's test file provides one
//! function that makes such a store (returning it with whatever must outlive it: a temp dir, a
//! database to drop) and instantiates every contract as a `#[tokio::test]`:
//!
//! ```ignore
//! mod store_contract;
//! async fn fresh() -> (Arc<dyn CatalogStore>, TempDir) { … }
//! store_contract::tests_for!(fresh);
//! ```

#![allow(dead_code)] // each backend's test crate uses a different part of the fixtures

pub mod fixtures;

use std::collections::BTreeSet;
use std::sync::Arc;

use toolgate::domain::model::Catalog;
use toolgate::store::{
    AuditQuery, AuditRecord, CatalogStore, Change, Commit, Entity, EntityKind, SigningKeyRecord,
    StoreError, Subject,
};

use self::fixtures::{bare_label, commit, label, one_of_each, put_label, puts, record, tool};

/// Instantiates every contract as a `#[tokio::test]` against the stores `$fresh()` makes.
macro_rules! tests_for {
    ($fresh:path) => {
        $crate::store_contract::tests_for!(@each $fresh;
            new_store_is_empty_at_revision_zero,
            put_round_trips_every_field_of_every_kind,
            load_returns_each_collection_in_id_order,
            put_replaces_the_entity_with_the_same_id,
            delete_removes_and_a_missing_id_is_not_an_error,
            replace_all_replaces_every_collection,
            each_commit_bumps_the_revision_by_exactly_one,
            stale_commit_conflicts_and_changes_nothing,
            concurrent_writers_with_retry_all_land,
            audit_records_get_increasing_seqs_and_their_commit_revision,
            audit_filters_by_entity_id_and_actor,
            audit_filters_by_time_range,
            audit_pages_with_a_cursor_and_a_limit,
            audit_pages_newest_first_with_a_cursor,
            audit_limit_zero_means_the_default_and_large_limits_are_capped,
            signing_keys_are_kept_apart_from_the_catalog,
        );
    };
    (@each $fresh:path; $($contract:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $contract() {
                let (store, _keep_alive) = $fresh().await;
                $crate::store_contract::$contract(store).await;
            }
        )*
    };
}
pub(crate) use tests_for;

async fn all_audit(store: &dyn CatalogStore) -> Vec<AuditRecord> {
    let query = AuditQuery {
        limit: AuditQuery::MAX_LIMIT,
        ..AuditQuery::default()
    };
    store.audit(query).await.expect("audit")
}

fn ids<T>(entities: &[T], id: impl Fn(&T) -> &str) -> Vec<String> {
    entities.iter().map(|e| id(e).to_owned()).collect()
}

pub async fn new_store_is_empty_at_revision_zero(store: Arc<dyn CatalogStore>) {
    store.ping().await.expect("ping");
    let loaded = store.load().await.expect("load");
    assert_eq!(loaded.catalog, Catalog::default());
    assert_eq!(loaded.revision, 0);
    assert_eq!(store.revision().await.expect("revision"), 0);
    assert_eq!(all_audit(&*store).await, vec![]);
}

pub async fn put_round_trips_every_field_of_every_kind(store: Arc<dyn CatalogStore>) {
    let mut catalog = one_of_each("billing");
    catalog.labels.push(bare_label("plain"));
    let revision = store
        .commit(commit(0, puts(&catalog)))
        .await
        .expect("commit");
    assert_eq!(revision, 1);

    let loaded = store.load().await.expect("load");
    assert_eq!(loaded.revision, 1);
    assert_eq!(loaded.catalog, catalog);
}

pub async fn load_returns_each_collection_in_id_order(store: Arc<dyn CatalogStore>) {
    let mut revision = 0;
    for id in ["m", "b", "z", "a", "b2"] {
        let changes = vec![
            Change::Put(Entity::Label(label(id))),
            Change::Put(Entity::Tool(tool(id))),
        ];
        revision = store
            .commit(commit(revision, changes))
            .await
            .expect("commit");
    }
    let loaded = store.load().await.expect("load");
    let expected = ["a", "b", "b2", "m", "z"];
    assert_eq!(ids(&loaded.catalog.labels, |l| &l.id), expected);
    assert_eq!(ids(&loaded.catalog.tools, |t| &t.id), expected);
}

pub async fn put_replaces_the_entity_with_the_same_id(store: Arc<dyn CatalogStore>) {
    store
        .commit(commit(0, vec![Change::Put(Entity::Label(label("pii")))]))
        .await
        .expect("first put");
    let mut renamed = label("pii");
    renamed.name = "personal data".to_owned();
    renamed.color = None;
    store
        .commit(commit(1, vec![Change::Put(Entity::Label(renamed.clone()))]))
        .await
        .expect("second put");
    assert_eq!(
        store.load().await.expect("load").catalog.labels,
        vec![renamed]
    );
}

pub async fn delete_removes_and_a_missing_id_is_not_an_error(store: Arc<dyn CatalogStore>) {
    let catalog = one_of_each("x");
    store.commit(commit(0, puts(&catalog))).await.expect("put");
    let deletes = [
        EntityKind::Sources,
        EntityKind::Tools,
        EntityKind::Labels,
        EntityKind::Groups,
        EntityKind::Policies,
        EntityKind::Revisions,
    ]
    .into_iter()
    .flat_map(|kind| {
        [
            Change::Delete {
                kind,
                id: "x".to_owned(),
            },
            Change::Delete {
                kind,
                id: "never-existed".to_owned(),
            },
        ]
    })
    .collect();
    let revision = store.commit(commit(1, deletes)).await.expect("delete");
    assert_eq!(revision, 2);
    assert_eq!(
        store.load().await.expect("load").catalog,
        Catalog::default()
    );
}

pub async fn replace_all_replaces_every_collection(store: Arc<dyn CatalogStore>) {
    store
        .commit(commit(0, puts(&one_of_each("old"))))
        .await
        .expect("put");
    let mut replacement = one_of_each("new");
    replacement.labels.push(bare_label("another"));
    let changes = vec![Change::ReplaceAll(replacement.clone())];
    store.commit(commit(1, changes)).await.expect("replace");
    let mut expected = replacement;
    expected.labels.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(store.load().await.expect("load").catalog, expected);

    // Later changes in the same commit apply on top of the replacement.
    let changes = vec![
        Change::ReplaceAll(Catalog::default()),
        Change::Put(Entity::Label(label("kept"))),
    ];
    store.commit(commit(2, changes)).await.expect("replace");
    let loaded = store.load().await.expect("load");
    assert_eq!(loaded.catalog.labels, vec![label("kept")]);
    assert!(loaded.catalog.sources.is_empty() && loaded.catalog.tools.is_empty());
}

pub async fn each_commit_bumps_the_revision_by_exactly_one(store: Arc<dyn CatalogStore>) {
    for expected in 0..5 {
        // Even a commit with nothing in it is a new revision: the caller asked for one.
        let changes = if expected % 2 == 0 {
            vec![]
        } else {
            puts(&one_of_each("a"))
        };
        let revision = store
            .commit(commit(expected, changes))
            .await
            .expect("commit");
        assert_eq!(revision, expected + 1);
        assert_eq!(store.revision().await.expect("revision"), expected + 1);
        assert_eq!(store.load().await.expect("load").revision, expected + 1);
    }
}

pub async fn stale_commit_conflicts_and_changes_nothing(store: Arc<dyn CatalogStore>) {
    store
        .commit(put_label(0, "a", "alice"))
        .await
        .expect("first");
    store
        .commit(put_label(1, "b", "alice"))
        .await
        .expect("second");
    let before = store.load().await.expect("load");
    let audit_before = all_audit(&*store).await;

    for stale in [0, 1, 3] {
        let mut stale_commit = put_label(stale, "c", "mallory");
        stale_commit
            .changes
            .push(Change::ReplaceAll(Catalog::default()));
        match store.commit(stale_commit).await {
            Err(StoreError::RevisionConflict { expected, current }) => {
                assert_eq!((expected, current), (stale, 2));
            }
            other => panic!("expected a revision conflict at {stale}, got {other:?}"),
        }
    }
    assert_eq!(store.load().await.expect("load"), before);
    assert_eq!(store.revision().await.expect("revision"), 2);
    assert_eq!(all_audit(&*store).await, audit_before);
}

pub async fn concurrent_writers_with_retry_all_land(store: Arc<dyn CatalogStore>) {
    const WRITERS: usize = 8;
    const WRITES: usize = 10;
    let mut tasks = tokio::task::JoinSet::new();
    for writer in 0..WRITERS {
        let store = Arc::clone(&store);
        tasks.spawn(async move {
            for write in 0..WRITES {
                let id = format!("w{writer}-{write}");
                loop {
                    // Read-modify-write, as the catalog service does.
                    let current = store.load().await.expect("load");
                    match store.commit(put_label(current.revision, &id, &id)).await {
                        Ok(_) => break,
                        Err(StoreError::RevisionConflict { .. }) => tokio::task::yield_now().await,
                        Err(error) => panic!("commit failed: {error}"),
                    }
                }
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("a writer panicked");
    }

    let total = (WRITERS * WRITES) as u64;
    let loaded = store.load().await.expect("load");
    assert_eq!(loaded.catalog.labels.len() as u64, total);
    assert_eq!(loaded.revision, total);
    let audit = all_audit(&*store).await;
    assert_eq!(audit.len() as u64, total);
    assert!(
        audit.windows(2).all(|pair| pair[0].seq < pair[1].seq),
        "seqs increase"
    );
    let revisions: BTreeSet<u64> = audit.iter().map(|r| r.revision).collect();
    assert_eq!(revisions, (1..=total).collect(), "one record per revision");
    let actors: BTreeSet<&str> = audit.iter().map(|r| r.actor.as_str()).collect();
    let labels: BTreeSet<&str> = loaded
        .catalog
        .labels
        .iter()
        .map(|l| l.id.as_str())
        .collect();
    assert_eq!(actors, labels, "each label was recorded by its own writer");
}

pub async fn audit_records_get_increasing_seqs_and_their_commit_revision(
    store: Arc<dyn CatalogStore>,
) {
    let two = Commit {
        expected_revision: 0,
        changes: vec![],
        audit: vec![
            record("alice", EntityKind::Labels, "a", 1),
            record("alice", EntityKind::Labels, "b", 2),
        ],
    };
    store.commit(two).await.expect("commit");
    store
        .commit(commit(1, vec![]))
        .await
        .expect("commit without audit");
    let mut one = put_label(2, "c", "bob");
    one.audit[0].seq = 999; // the store assigns these, whatever the caller sent
    one.audit[0].revision = 999;
    store.commit(one).await.expect("commit");

    let audit = all_audit(&*store).await;
    let positions: Vec<(u64, &str)> = audit.iter().map(|r| (r.revision, r.id.as_str())).collect();
    assert_eq!(positions, [(1, "a"), (1, "b"), (3, "c")]);
    assert!(
        audit.windows(2).all(|pair| pair[0].seq < pair[1].seq),
        "seqs increase"
    );
    let mut expected = record("alice", EntityKind::Labels, "a", 1);
    (expected.seq, expected.revision) = (audit[0].seq, 1);
    assert_eq!(audit[0], expected, "every field round-trips");
}

/// Six records: alice and bob alternate over two labels and one tool, one second apart.
async fn six_records(store: &dyn CatalogStore) {
    let targets = [
        (EntityKind::Labels, "pii"),
        (EntityKind::Tools, "pii"),
        (EntityKind::Labels, "internal"),
    ];
    let audit = (0..6)
        .map(|i| {
            let (kind, id) = targets[i % 3];
            let actor = if i % 2 == 0 { "alice" } else { "bob" };
            record(actor, kind, id, i as i64)
        })
        .collect();
    let write = Commit {
        expected_revision: 0,
        changes: vec![],
        audit,
    };
    store.commit(write).await.expect("commit");
}

async fn request_ids(store: &dyn CatalogStore, query: AuditQuery) -> Vec<String> {
    let records = store.audit(query).await.expect("audit");
    records.into_iter().filter_map(|r| r.request_id).collect()
}

pub async fn audit_filters_by_entity_id_and_actor(store: Arc<dyn CatalogStore>) {
    six_records(&*store).await;
    let query = |entity, id: Option<&str>, actor: Option<&str>| AuditQuery {
        entity,
        id: id.map(str::to_owned),
        actor: actor.map(str::to_owned),
        ..AuditQuery::default()
    };
    let cases = [
        (query(Some(Subject::Labels), None, None), vec![0, 2, 3, 5]),
        (query(None, Some("pii"), None), vec![0, 1, 3, 4]),
        (query(Some(Subject::Labels), Some("pii"), None), vec![0, 3]),
        (query(None, None, Some("bob")), vec![1, 3, 5]),
        (query(Some(Subject::Tools), None, Some("alice")), vec![4]),
        (query(None, None, Some("carol")), vec![]),
    ];
    for (query, expected) in cases {
        let expected: Vec<String> = expected.iter().map(|i| format!("req-{i}")).collect();
        assert_eq!(
            request_ids(&*store, query.clone()).await,
            expected,
            "{query:?}"
        );
    }
}

pub async fn audit_filters_by_time_range(store: Arc<dyn CatalogStore>) {
    six_records(&*store).await;
    let range = AuditQuery {
        since: Some(fixtures::at(2)),
        until: Some(fixtures::at(4)),
        ..AuditQuery::default()
    };
    assert_eq!(
        request_ids(&*store, range).await,
        ["req-2", "req-3"],
        "since inclusive, until exclusive"
    );
    let from = AuditQuery {
        since: Some(fixtures::at(4)),
        ..AuditQuery::default()
    };
    assert_eq!(request_ids(&*store, from).await, ["req-4", "req-5"]);
    let to = AuditQuery {
        until: Some(fixtures::at(1)),
        ..AuditQuery::default()
    };
    assert_eq!(request_ids(&*store, to).await, ["req-0"]);
}

pub async fn audit_pages_with_a_cursor_and_a_limit(store: Arc<dyn CatalogStore>) {
    six_records(&*store).await;
    // Page through alice's records two at a time: the cursor is the last seq of a page.
    let mut pages = Vec::new();
    let mut after_seq = None;
    loop {
        let query = AuditQuery {
            actor: Some("alice".to_owned()),
            after_seq,
            limit: 2,
            ..AuditQuery::default()
        };
        let page = store.audit(query).await.expect("audit");
        let Some(last) = page.last() else { break };
        after_seq = Some(last.seq);
        pages.push(
            page.iter()
                .filter_map(|r| r.request_id.clone())
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(pages, [vec!["req-0", "req-2"], vec!["req-4"]]);
}

pub async fn audit_pages_newest_first_with_a_cursor(store: Arc<dyn CatalogStore>) {
    six_records(&*store).await;
    let mut pages = Vec::new();
    let mut before_seq = None;
    loop {
        let query = AuditQuery {
            actor: Some("alice".to_owned()),
            before_seq,
            newest_first: true,
            limit: 2,
            ..AuditQuery::default()
        };
        let page = store.audit(query).await.expect("audit");
        let Some(last) = page.last() else { break };
        before_seq = Some(last.seq);
        pages.push(
            page.iter()
                .filter_map(|r| r.request_id.clone())
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(pages, [vec!["req-4", "req-2"], vec!["req-0"]]);
    // Both cursors at once: the records between them.
    let all = all_audit(&*store).await;
    let between = AuditQuery {
        after_seq: Some(all[0].seq),
        before_seq: Some(all[5].seq),
        newest_first: true,
        ..AuditQuery::default()
    };
    assert_eq!(
        request_ids(&*store, between).await,
        ["req-4", "req-3", "req-2", "req-1"]
    );
}

pub async fn audit_limit_zero_means_the_default_and_large_limits_are_capped(
    store: Arc<dyn CatalogStore>,
) {
    let many = AuditQuery::MAX_LIMIT + 5;
    let audit = (0..many)
        .map(|i| record("alice", EntityKind::Labels, "a", i as i64))
        .collect();
    let write = Commit {
        expected_revision: 0,
        changes: vec![],
        audit,
    };
    store.commit(write).await.expect("commit");
    let count = |limit| {
        let store = Arc::clone(&store);
        async move {
            store
                .audit(AuditQuery {
                    limit,
                    ..AuditQuery::default()
                })
                .await
                .expect("audit")
                .len()
        }
    };
    assert_eq!(count(0).await, AuditQuery::DEFAULT_LIMIT);
    assert_eq!(count(7).await, 7);
    assert_eq!(count(usize::MAX).await, AuditQuery::MAX_LIMIT);
}

/// Signing keys: listed oldest first, an added kid never replaced, removed by kid, and never
/// part of the catalog or its revision.
pub async fn signing_keys_are_kept_apart_from_the_catalog(store: Arc<dyn CatalogStore>) {
    let key = |kid: &str, created_at: i64, private_key: &str| SigningKeyRecord {
        kid: kid.to_owned(),
        created_at,
        private_key: private_key.to_owned(),
    };
    assert!(store.signing_keys().await.expect("keys").is_empty());
    store.add_signing_key(key("b", 20, "B")).await.expect("add");
    store.add_signing_key(key("a", 30, "A")).await.expect("add");
    store.add_signing_key(key("c", 20, "C")).await.expect("add");
    store
        .add_signing_key(key("b", 99, "other"))
        .await
        .expect("an existing kid is left as it is");
    assert_eq!(
        store.signing_keys().await.expect("keys"),
        vec![key("b", 20, "B"), key("c", 20, "C"), key("a", 30, "A")]
    );
    store.remove_signing_key("c").await.expect("remove");
    store
        .remove_signing_key("missing")
        .await
        .expect("nothing to remove");
    assert_eq!(
        store.signing_keys().await.expect("keys"),
        vec![key("b", 20, "B"), key("a", 30, "A")]
    );
    assert_eq!(store.revision().await.expect("revision"), 0);
    let loaded = store.load().await.expect("load");
    assert_eq!(loaded.catalog, Catalog::default());
}
