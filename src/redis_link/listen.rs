//! Listening on one pub/sub channel for as long as its owner wants, whatever Redis does: a
//! connection of its own (a subscribed connection can do nothing else), reconnected with backoff
//! when it drops, each (re)connection told to the owner (pub/sub keeps nothing for absent
//! subscribers: what was published meanwhile is lost, and the owner must make up for it), and
//! the link's health marked up and down with it. The change bus and the run store both listen
//! so.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::Notify;

use super::RedisLink;

/// First and longest pause between attempts to reconnect.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(5));

/// What the owner says after being told something: go on listening, or stop (it is gone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listening {
    Go,
    Stop,
}

/// Listens on `channel` until `stop` is notified or a callback answers [`Listening::Stop`]:
/// `connected` on every (re)connection, `message` with every payload.
pub async fn listen(
    link: Arc<RedisLink>,
    channel: &'static str,
    stop: Arc<Notify>,
    mut connected: impl FnMut() -> Listening,
    mut message: impl FnMut(&[u8]) -> Listening,
) {
    let mut backoff = BACKOFF.0;
    loop {
        let subscribed = tokio::select! {
            subscribed = async {
                let mut pubsub = link.pubsub().await?;
                pubsub.subscribe(channel).await?;
                Ok::<_, redis::RedisError>(pubsub)
            } => subscribed,
            () = stop.notified() => return,
        };
        match subscribed {
            Ok(mut pubsub) => {
                backoff = BACKOFF.0;
                link.health().mark_up();
                if connected() == Listening::Stop {
                    return;
                }
                let mut messages = pubsub.on_message();
                loop {
                    let next = tokio::select! {
                        next = messages.next() => next,
                        () = stop.notified() => return,
                    };
                    let Some(next) = next else { break };
                    if message(next.get_payload_bytes()) == Listening::Stop {
                        return;
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
