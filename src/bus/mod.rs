//! The change bus: how every instance learns that the catalog moved on.
//!
//! Each committed admin write is announced as a [`CatalogChange`]. Within one process the
//! catalog service already publishes its new snapshot itself; the bus is what carries the news
//! to *other* instances sharing the same store, where the service's `follow` reloads from the
//! store when a revision ahead of the local one is announced.
//!
//! A bus may lose announcements (Redis pub/sub drops what is published while a subscriber is
//! disconnected), so it also reports each (re)connection ([`Heard::connections`]), after which
//! the follower compares the store's revision with its own.
//!
//! [`LocalBus`] is the single-instance implementation; [`RedisBus`] carries announcements
//! between instances over Redis pub/sub.

mod local;
mod redis;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

pub use self::local::LocalBus;
pub use self::redis::{CHANNEL, RedisBus};

use crate::store::Subject;

/// A committed catalog change: the new revision and what it touched.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogChange {
    pub revision: u64,
    /// The kinds of entity changed, each once (`catalog` for a whole-catalog replace).
    pub kinds: Vec<Subject>,
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
