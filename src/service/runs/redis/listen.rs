//! Hearing other instances' changes: the ids the scripts publish on [`super::CHANNEL`].

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::Notify;

use super::{CHANNEL, RedisRuns};

/// Forgets the views of the runs other instances announce until `stop`; every view on each
/// (re)connection (announcements may have been missed meanwhile).
pub(super) async fn listen(runs: std::sync::Weak<RedisRuns>, stop: Arc<Notify>) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let Some(link) = runs.upgrade().map(|runs| Arc::clone(&runs.link)) else {
            return;
        };
        let connected = tokio::select! {
            connected = async {
                let mut pubsub = link.pubsub().await?;
                pubsub.subscribe(CHANNEL).await?;
                Ok::<_, redis::RedisError>(pubsub)
            } => connected,
            () = stop.notified() => return,
        };
        drop(link);
        if let Ok(mut pubsub) = connected {
            backoff = Duration::from_millis(100);
            if let Some(runs) = runs.upgrade() {
                runs.forget_all();
            }
            let mut messages = pubsub.on_message();
            loop {
                let message = tokio::select! {
                    message = messages.next() => message,
                    () = stop.notified() => return,
                };
                let Some(message) = message else { break };
                let Some(runs) = runs.upgrade() else { return };
                let text = String::from_utf8_lossy(message.get_payload_bytes()).into_owned();
                let ids: Vec<String> = text.split(' ').map(str::to_owned).collect();
                runs.forget(&ids);
                if let Some(changed) = runs.changed.get() {
                    let _ = changed.send(ids);
                }
            }
        }
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            () = stop.notified() => return,
        }
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}
