//! The change bus across instances: Redis pub/sub on [`CHANNEL`].
//!
//! Each committed write is published as JSON `{revision, kinds, ids}`. A listener task, which
//! lives exactly as long as the bus, holds a pub/sub connection of its own (a subscribed
//! connection can do nothing else), reconnects with backoff when it drops, and counts every
//! (re)connection in [`Heard::connections`]: pub/sub keeps nothing for absent subscribers, so
//! after a gap the follower compares revisions with the store instead of trusting that it
//! heard everything.
//!
//! Publishing never waits for Redis: the announcement is handed to a task. A lost announcement
//! delays other instances until their next comparison (reconnect or poll), never corrupts
//! them; this instance's own followers hear it at once, locally.

use std::sync::Arc;

use redis::AsyncCommands;
use tokio::sync::{Notify, watch};
use tracing::Instrument as _;

use super::local::announce;
use super::{CatalogChange, ChangeBus, Heard};
use crate::redis_link::{Listening, RedisLink};

/// The pub/sub channel of catalog changes.
pub const CHANNEL: &str = "toolgate:changes";

/// A [`ChangeBus`] over Redis pub/sub.
pub struct RedisBus {
    link: Arc<RedisLink>,
    heard: watch::Sender<Heard>,
    /// Tells the listener to end: the bus is gone. (Not "no subscriber left": the listener
    /// usually connects before anyone has subscribed.)
    stop: Arc<Notify>,
}

impl Drop for RedisBus {
    fn drop(&mut self) {
        // A stored permit: the listener sees it even if it is not waiting right now.
        self.stop.notify_one();
    }
}

impl RedisBus {
    /// A bus that starts listening at once; the listener ends when the bus is dropped.
    ///
    /// It has heard of no revision yet (0): followers compare with the store on every
    /// connection anyway, which is how they learn where the catalog stands.
    pub fn start(link: Arc<RedisLink>) -> Arc<RedisBus> {
        let heard = watch::Sender::new(Heard {
            revision: 0,
            connections: 0,
        });
        let stop = Arc::new(Notify::new());
        tokio::spawn(listen(Arc::clone(&link), heard.clone(), Arc::clone(&stop)));
        Arc::new(RedisBus { link, heard, stop })
    }
}

impl ChangeBus for RedisBus {
    fn publish(&self, change: CatalogChange) {
        announce(&self.heard, change.revision);
        let link = Arc::clone(&self.link);
        let span = crate::redis_link::command_span("redis PUBLISH", "PUBLISH");
        tokio::spawn(
            async move {
                let message = match serde_json::to_string(&change) {
                    Ok(message) => message,
                    Err(error) => {
                        tracing::error!(%error, "cannot encode a catalog change");
                        return;
                    }
                };
                let mut connection = link.commands();
                let sent: Result<i64, _> = connection.publish(CHANNEL, message).await;
                if let Err(error) = link.health().record(sent) {
                    tracing::warn!(%error, revision = change.revision, "the change was not announced on Redis");
                }
            }
            .instrument(span),
        );
    }

    fn subscribe(&self) -> watch::Receiver<Heard> {
        self.heard.subscribe()
    }
}

/// Listens on [`CHANNEL`] until `stop`: every (re)connection counted in [`Heard::connections`],
/// every announcement heard.
async fn listen(link: Arc<RedisLink>, heard: watch::Sender<Heard>, stop: Arc<Notify>) {
    let on_connect = heard.clone();
    crate::redis_link::listen(
        link,
        CHANNEL,
        stop,
        move || {
            on_connect.send_modify(|heard| heard.connections += 1);
            Listening::Go
        },
        move |payload| {
            match serde_json::from_slice::<CatalogChange>(payload) {
                Ok(change) => announce(&heard, change.revision),
                Err(error) => tracing::warn!(%error, "ignoring a malformed message on {CHANNEL}"),
            }
            Listening::Go
        },
    )
    .await;
}
