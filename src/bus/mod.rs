//! The change bus: how every instance learns that the catalog moved on.
//!
//! Each committed admin write is announced as a [`CatalogChange`]. Within one process the
//! catalog service already publishes its new snapshot itself (the stream hub follows
//! [`CatalogService::subscribe`](crate::service::CatalogService::subscribe)); the bus is what
//! carries the news to *other* instances sharing the same store. [`follow`] closes the loop: a
//! revision announced on the bus that is ahead of the local snapshot makes this instance reload
//! from the store, which publishes the snapshot locally and so reaches its streams.
//!
//! A bus may lose announcements (Redis pub/sub drops what is published while a subscriber is
//! disconnected), so it also reports each (re)connection, after which [`follow`] compares the
//! store's revision with its own; and [`follow`] polls the store's revision at an interval as a
//! last safety net.
//!
//! [`LocalBus`] is the single-instance implementation; [`RedisBus`] carries announcements
//! between instances over Redis pub/sub.

mod local;
mod redis;

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

pub use self::local::LocalBus;
pub use self::redis::{CHANNEL, RedisBus};

use crate::service::CatalogService;
use crate::store::EntityKind;

/// A committed catalog change: the new revision and what it touched.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogChange {
    pub revision: u64,
    /// The kinds of entity changed, each once (`Catalog` for a whole-catalog replace).
    pub kinds: Vec<EntityKind>,
    /// The ids of the changed entities (empty for a whole-catalog replace).
    pub ids: Vec<String>,
}

/// What a subscriber has heard on the bus.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Heard {
    /// The newest revision announced. Intermediate revisions may be skipped: a subscriber
    /// needs only the newest, since it reloads the whole snapshot.
    pub revision: u64,
    /// How many times the bus has (re)connected. Announcements made while it was away are
    /// lost, so each new connection means: compare with the store.
    pub connections: u64,
}

/// Announces committed changes and tells subscribers about announced revisions.
pub trait ChangeBus: Send + Sync {
    /// Announces a committed change. Never blocks: it is called right after the commit, and a
    /// lost announcement only delays other instances until they next compare revisions.
    fn publish(&self, change: CatalogChange);

    /// What has been heard on the bus, updated as it happens.
    fn subscribe(&self) -> watch::Receiver<Heard>;
}

/// Reloads the local snapshot when the bus announces a revision ahead of it, when the bus
/// reconnects, and every `poll` (if set) whatever the bus says. Runs until the catalog service
/// is gone (it does not keep the service, or its store, alive).
pub fn follow(
    bus: &dyn ChangeBus,
    catalog: &Arc<CatalogService>,
    poll: Option<Duration>,
) -> tokio::task::JoinHandle<()> {
    let mut heard = bus.subscribe();
    let catalog = Arc::downgrade(catalog);
    let mut ticks = poll.map(|every| {
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks
    });
    tokio::spawn(async move {
        let mut connections = heard.borrow().connections;
        loop {
            let reason = tokio::select! {
                changed = heard.changed() => match changed {
                    Ok(()) => {
                        let now = *heard.borrow_and_update();
                        let reconnected = now.connections != connections;
                        connections = now.connections;
                        Wake::Heard { revision: now.revision, reconnected }
                    }
                    Err(_) => break, // the bus is gone
                },
                _ = async {
                    match ticks.as_mut() {
                        Some(ticks) => ticks.tick().await,
                        None => std::future::pending().await,
                    }
                } => Wake::Poll,
            };
            let Some(catalog) = catalog.upgrade() else {
                break;
            };
            let local = catalog.snapshot().revision();
            if let Wake::Heard {
                revision,
                reconnected: false,
            } = reason
                && revision <= local
            {
                continue; // our own write, or one we already have
            }
            if let Err(error) = catalog.refresh().await {
                tracing::warn!(%error, ?reason, "cannot reload the catalog from the store");
            }
        }
    })
}

#[derive(Debug, Clone, Copy)]
enum Wake {
    Heard { revision: u64, reconnected: bool },
    Poll,
}
