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
use std::time::Duration;

use futures_util::StreamExt;
use redis::AsyncCommands;
use tokio::sync::{Notify, watch};
use tracing::Instrument as _;

use super::local::announce;
use super::{CatalogChange, ChangeBus, Heard};
use crate::redis_link::RedisLink;

/// The pub/sub channel of catalog changes.
pub const CHANNEL: &str = "toolgate:changes";

/// First and longest pause between attempts to reconnect the listener.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(5));

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

/// Listens on [`CHANNEL`] until `stop`, reconnecting with backoff.
async fn listen(link: Arc<RedisLink>, heard: watch::Sender<Heard>, stop: Arc<Notify>) {
    let mut backoff = BACKOFF.0;
    loop {
        let connected = tokio::select! {
            connected = subscribed(&link) => connected,
            () = stop.notified() => return,
        };
        match connected {
            Ok(mut pubsub) => {
                backoff = BACKOFF.0;
                link.health().mark_up();
                heard.send_modify(|heard| heard.connections += 1);
                let mut messages = pubsub.on_message();
                loop {
                    let message = tokio::select! {
                        message = messages.next() => message,
                        () = stop.notified() => return,
                    };
                    let Some(message) = message else { break };
                    match serde_json::from_slice::<CatalogChange>(message.get_payload_bytes()) {
                        Ok(change) => announce(&heard, change.revision),
                        Err(error) => {
                            tracing::warn!(%error, "ignoring a malformed message on {CHANNEL}")
                        }
                    }
                }
                link.health()
                    .mark_down("the pub/sub connection to Redis was lost");
            }
            Err(error) => link.health().mark_down(&error.to_string()),
        }
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            () = stop.notified() => return,
        }
        backoff = (backoff * 2).min(BACKOFF.1);
    }
}

async fn subscribed(link: &RedisLink) -> Result<redis::aio::PubSub, redis::RedisError> {
    let mut pubsub = link.pubsub().await?;
    pubsub.subscribe(CHANNEL).await?;
    Ok(pubsub)
}
