//! Hearing other instances' changes: the ids the scripts publish on [`super::CHANNEL`].

use std::sync::{Arc, Weak};

use tokio::sync::Notify;

use super::{CHANNEL, RedisRuns};
use crate::redis_link::{Listening, RedisLink};

/// Forgets the views of the runs other instances announce, and tells the runs' streams, until
/// `stop` or the runs are dropped; every view on each (re)connection (announcements may have
/// been missed meanwhile).
pub(super) async fn listen(link: Arc<RedisLink>, runs: Weak<RedisRuns>, stop: Arc<Notify>) {
    let on_connect = runs.clone();
    crate::redis_link::listen(
        link,
        CHANNEL,
        stop,
        move || match on_connect.upgrade() {
            Some(runs) => {
                runs.forget_all();
                Listening::Go
            }
            None => Listening::Stop,
        },
        move |payload| {
            let Some(runs) = runs.upgrade() else {
                return Listening::Stop;
            };
            let text = String::from_utf8_lossy(payload);
            let ids: Vec<String> = text.split(' ').map(str::to_owned).collect();
            runs.forget(&ids);
            if let Some(changed) = runs.changed.get() {
                let _ = changed.send(ids);
            }
            Listening::Go
        },
    )
    .await;
}
