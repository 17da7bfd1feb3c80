//! `If-Match` across instances: two catalog services on one store, each with its own snapshot,
//! as two gateways on one MongoDB are. A precondition is judged against the revision the store
//! holds, not against whatever an instance happens to have loaded: a stale one is refused even
//! where the instance has not seen the newer write yet, and a current one is honoured even where
//! the instance trails the store.

use std::sync::Arc;

use serde_json::json;
use toolgate::domain::model::{Catalog, Label};
use toolgate::service::{Actor, CatalogService, Mutation, Precondition, WriteError};
use toolgate::store::CatalogStore;
use toolgate::store::embedded::EmbeddedStore;

fn actor() -> Actor {
    Actor {
        subject: "admin-1".to_owned(),
        request_id: None,
    }
}

/// A write that adds label `id`.
fn add_label(id: &'static str) -> impl Fn(&mut Catalog) -> Result<Mutation<()>, WriteError> {
    move |catalog| {
        let label: Label = serde_json::from_value(json!({"id": id, "name": id})).expect("a label");
        catalog.labels.push(label);
        Ok(Mutation {
            notes: Vec::new(),
            value: (),
        })
    }
}

fn labels(service: &CatalogService) -> Vec<String> {
    let snapshot = service.snapshot();
    snapshot
        .catalog()
        .labels
        .iter()
        .map(|l| l.id.clone())
        .collect()
}

#[tokio::test]
async fn preconditions_hold_against_the_store_not_against_a_trailing_instance() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn CatalogStore> =
        Arc::new(EmbeddedStore::open(dir.path()).expect("a fresh store"));
    let a = CatalogService::open(Arc::clone(&store))
        .await
        .expect("instance a");
    let b = CatalogService::open(Arc::clone(&store))
        .await
        .expect("instance b");

    // B writes revision 1; A has not looked at the store since.
    let ((), revision) = b
        .write_if(
            &actor(),
            None,
            &Precondition::OneOf(vec![0]),
            add_label("from-b"),
        )
        .await
        .expect("b writes at revision 0");
    assert_eq!(revision, 1);
    assert_eq!(a.snapshot().revision(), 0);

    // An admin who read revision 0 (from A) is refused, though A still shows revision 0: the
    // store's compare-and-set fails, A reloads and the precondition no longer holds.
    match a
        .write_if(
            &actor(),
            None,
            &Precondition::OneOf(vec![0]),
            add_label("stale"),
        )
        .await
    {
        Err(WriteError::PreconditionFailed { current }) => assert_eq!(current, 1),
        other => panic!(
            "expected a failed precondition, got {:?}",
            other.map(|r| r.1)
        ),
    }
    assert_eq!(store.revision().await.expect("revision"), 1);
    assert_eq!(labels(&a), ["from-b"]);

    // B writes revision 2; an admin who read it from B writes through A, which trails at 1.
    b.write(&actor(), None, add_label("again-b"))
        .await
        .expect("b writes");
    assert_eq!(a.snapshot().revision(), 1);
    let ((), revision) = a
        .write_if(
            &actor(),
            None,
            &Precondition::OneOf(vec![2]),
            add_label("current"),
        )
        .await
        .expect("a honours a revision it had not seen yet");
    assert_eq!(revision, 3);
    assert_eq!(labels(&a), ["again-b", "current", "from-b"]);

    // A revision that does not exist yet is refused, and changes nothing.
    assert!(matches!(
        b.check(&Precondition::OneOf(vec![9])).await,
        Err(WriteError::PreconditionFailed { current: 3 })
    ));
    assert_eq!(store.revision().await.expect("revision"), 3);
}
