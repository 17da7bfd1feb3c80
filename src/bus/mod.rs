//! The change bus: how every instance learns that the catalog moved on.
//!
//! Each committed admin write is announced as a [`CatalogChange`]. Within one process the
//! catalog service already publishes its new snapshot itself (the stream hub follows
//! [`CatalogService::subscribe`](crate::service::CatalogService::subscribe)); the bus is what
//! carries the news to *other* instances sharing the same store. [`follow`] closes the loop: a
//! revision announced on the bus that is ahead of the local snapshot makes this instance reload
//! from the store, which publishes the snapshot locally and so reaches its streams.
//!
//! [`LocalBus`] is the single-instance implementation; the Redis one implements the same trait.

mod local;

use std::sync::Arc;

use tokio::sync::watch;

pub use local::LocalBus;

use crate::service::CatalogService;
use crate::store::EntityKind;

/// A committed catalog change: the new revision and what it touched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogChange {
    pub revision: u64,
    /// The kinds of entity changed, each once (`Catalog` for a whole-catalog replace).
    pub kinds: Vec<EntityKind>,
    /// The ids of the changed entities (empty for a whole-catalog replace).
    pub ids: Vec<String>,
}

/// Announces committed changes and tells subscribers about announced revisions.
pub trait ChangeBus: Send + Sync {
    /// Announces a committed change. Never blocks: it is called right after the commit, and a
    /// lost announcement only delays other instances until the next one (revisions are
    /// compared, not counted).
    fn publish(&self, change: CatalogChange);

    /// The latest revision announced on the bus. Intermediate revisions may be skipped: a
    /// subscriber needs only the newest, since it reloads the whole snapshot.
    fn subscribe(&self) -> watch::Receiver<u64>;
}

/// Reloads the local snapshot whenever the bus announces a revision ahead of it. Runs until
/// the bus closes or the catalog service is gone (it does not keep the service, or its store,
/// alive).
pub fn follow(bus: &dyn ChangeBus, catalog: &Arc<CatalogService>) -> tokio::task::JoinHandle<()> {
    let mut revisions = bus.subscribe();
    let catalog = Arc::downgrade(catalog);
    tokio::spawn(async move {
        while revisions.changed().await.is_ok() {
            let announced = *revisions.borrow_and_update();
            let Some(catalog) = catalog.upgrade() else {
                break;
            };
            if announced <= catalog.snapshot().revision() {
                continue;
            }
            if let Err(error) = catalog.refresh().await {
                tracing::warn!(%error, announced, "cannot reload the catalog announced on the bus");
            }
        }
    })
}
