//! One subscriber that needs to know *that* its manifest changed, not what changed: an MCP
//! client, told `notifications/tools/list_changed` (docs/api.md, "MCP endpoint"). It rides the same
//! hub as the SSE stream, so it is told exactly when its own manifest changed, never on a
//! change that leaves it as it was, and never as a broadcast.
//!
//! The watch tracks the etag its client was last told about. A shared frame that leads to
//! where the client already is is skipped; any other change, a fresh render after falling
//! behind that differs, or a client resuming from an etag that is no longer current, is one
//! [`Notice::Changed`]. The token's `exp` ends the watch with [`Notice::Expired`] (the client
//! must list again with a new token), and so does the end of the session that opened it.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{Instant, Interval, MissedTickBehavior};

use super::connection::{Expiry, Render};
use super::hub::Subscription;
use super::outbox::Next;

/// What a watching client is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// The manifest is now the one with this etag.
    Changed(Arc<str>),
    /// The token expired: the last notice.
    Expired,
    /// Nothing happened for a while; a keep-alive.
    Ping,
}

/// One watching client between notices.
pub struct Watch {
    subscription: Subscription,
    render: Render,
    /// The etag the client was last told about.
    current: Arc<str>,
    /// A notice owed before anything else (a resume from an older etag).
    pending: Option<Notice>,
    ping: Interval,
    expiry: Option<Instant>,
    /// Changes (to `Err`) when the session that opened the watch ends.
    ended: Option<watch::Receiver<()>>,
    closed: bool,
}

impl Watch {
    /// A watch of a client whose manifest is now `current`; `resumed_from` is the etag the
    /// client last heard of, if it said (a stream's `Last-Event-ID`): when that is not
    /// `current`, the first notice says the manifest changed.
    pub fn new(
        subscription: Subscription,
        render: Render,
        current: &str,
        resumed_from: Option<&str>,
        ping: Duration,
        expiry: Option<Expiry>,
        ended: Option<watch::Receiver<()>>,
    ) -> Watch {
        let current: Arc<str> = Arc::from(current);
        let pending = resumed_from
            .filter(|etag| **etag != *current)
            .map(|_| Notice::Changed(Arc::clone(&current)));
        let mut ping = tokio::time::interval_at(Instant::now() + ping, ping);
        ping.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Watch {
            subscription,
            render,
            current,
            pending,
            ping,
            expiry: expiry.map(Expiry::deadline),
            ended,
            closed: false,
        }
    }

    /// The etag the client was last told about.
    pub fn current(&self) -> &Arc<str> {
        &self.current
    }

    /// The next notice; `None` once the watch is over (expired, the session ended, or the hub
    /// let go of it at shutdown).
    pub async fn next(&mut self) -> Option<Notice> {
        if self.closed {
            return None;
        }
        if let Some(notice) = self.pending.take() {
            return Some(notice);
        }
        loop {
            let expiry = self.expiry;
            let ended = &mut self.ended;
            let outbox = &self.subscription.outbox;
            let ping = &mut self.ping;
            let woke = tokio::select! {
                biased;
                () = async {
                    match expiry {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                } => Woke::Expired,
                () = async {
                    match ended {
                        // Any change, or the sender gone: the session is over either way.
                        Some(ended) => { let _ = ended.changed().await; }
                        None => std::future::pending().await,
                    }
                } => Woke::Ended,
                next = outbox.next() => Woke::Next(next),
                _ = ping.tick() => Woke::Ping,
            };
            match woke {
                Woke::Expired => {
                    self.closed = true;
                    return Some(Notice::Expired);
                }
                Woke::Ended | Woke::Next(Next::Closed) => {
                    self.closed = true;
                    return None;
                }
                Woke::Ping => return Some(Notice::Ping),
                Woke::Next(Next::Lagged) => {
                    if let Some(notice) = self.resynchronise() {
                        return Some(notice);
                    }
                }
                Woke::Next(Next::Frame(frame)) => {
                    if frame.to == self.current {
                        continue; // already there (joined after the change)
                    }
                    if frame.from != self.current {
                        if let Some(notice) = self.resynchronise() {
                            return Some(notice);
                        }
                        continue;
                    }
                    self.current = Arc::clone(&frame.to);
                    return Some(Notice::Changed(Arc::clone(&frame.to)));
                }
            }
        }
    }

    /// After falling behind: the current manifest, a notice if it is not what the client has.
    fn resynchronise(&mut self) -> Option<Notice> {
        self.subscription.outbox.reset();
        let rendered = (self.render)();
        if *rendered.etag == *self.current {
            return None;
        }
        self.current = Arc::from(rendered.etag.as_str());
        Some(Notice::Changed(Arc::clone(&self.current)))
    }
}

enum Woke {
    Expired,
    Ended,
    Next(Next),
    Ping,
}
