//! One open stream: the first event, then shared `tools_changed` events, keep-alive pings, a
//! fresh snapshot after falling behind, and `token_expired` at the token's `exp`.
//!
//! The connection tracks the etag its client last received. A shared event applies only from
//! that etag: one that leads to where the client already is (it joined after the change) is
//! skipped, one from anywhere else is replaced by a fresh `tools` snapshot. So the client's
//! view always equals some real manifest, whatever the interleaving of joins and changes.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures_util::Stream;
use tokio::time::{Instant, Interval, MissedTickBehavior, Sleep};

use super::frame::{EventKind, PING, encode};
use super::hub::Subscription;
use super::outbox::Next;
use crate::cache::RenderedManifest;

/// Renders the subscriber's current manifest (from the manifest cache).
pub type Render = Box<dyn Fn() -> Arc<RenderedManifest> + Send + Sync>;

/// The state of one stream between events.
pub struct Connection {
    subscription: Subscription,
    render: Render,
    /// The etag the client holds.
    current: Arc<str>,
    first: Option<(EventKind, Bytes)>,
    ping: Interval,
    expiry: Option<(Pin<Box<Sleep>>, i64)>,
    closed: bool,
}

/// What woke a waiting connection.
enum Woke {
    Expired(i64),
    Next(Next),
    Ping,
}

/// How a stream starts.
pub struct Opening {
    /// Whether the client's `Last-Event-ID` named the current etag.
    pub resumed: bool,
    pub rendered: Arc<RenderedManifest>,
}

impl Connection {
    /// A stream that starts with `tools` (or `unchanged` when resumed) for `opening`.
    pub fn new(
        subscription: Subscription,
        render: Render,
        opening: Opening,
        ping: Duration,
        expires_at: Option<i64>,
    ) -> Connection {
        let rendered = opening.rendered;
        let first = if opening.resumed {
            let data = serde_json::json!({"etag": rendered.etag, "revision": rendered.revision});
            let bytes = encode(
                EventKind::Unchanged,
                Some(&rendered.etag),
                data.to_string().as_bytes(),
            );
            (EventKind::Unchanged, bytes)
        } else {
            (EventKind::Tools, tools_event(&rendered))
        };
        let mut ping = tokio::time::interval_at(Instant::now() + ping, ping);
        ping.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Connection {
            subscription,
            render,
            current: Arc::from(rendered.etag.as_str()),
            first: Some(first),
            ping,
            expiry: expires_at.map(|exp| (Box::pin(tokio::time::sleep_until(deadline(exp))), exp)),
            closed: false,
        }
    }

    /// The response body: SSE bytes until the token expires or the client goes away.
    pub fn into_stream(self) -> impl Stream<Item = Result<Bytes, Infallible>> + Send {
        futures_util::stream::unfold(self, |mut connection| async move {
            let bytes = connection.next_event().await?;
            // Counted until the writer has sent them: a reader that stopped reading holds its
            // unsent event there.
            let bytes = connection.subscription.writing(bytes);
            Some((Ok(bytes), connection))
        })
    }

    async fn next_event(&mut self) -> Option<Bytes> {
        if let Some((kind, first)) = self.first.take() {
            self.subscription.sent(kind);
            return Some(first);
        }
        if self.closed {
            return None;
        }
        loop {
            let woke = {
                let expiry = &mut self.expiry;
                let outbox = &self.subscription.outbox;
                let ping = &mut self.ping;
                tokio::select! {
                    biased;
                    exp = async {
                        match expiry {
                            Some((sleep, exp)) => {
                                sleep.await;
                                *exp
                            }
                            None => std::future::pending().await,
                        }
                    } => Woke::Expired(exp),
                    next = outbox.next() => Woke::Next(next),
                    _ = ping.tick() => Woke::Ping,
                }
            };
            match woke {
                Woke::Expired(exp) => {
                    self.closed = true;
                    self.subscription.sent(EventKind::TokenExpired);
                    let data = serde_json::json!({"exp": exp}).to_string();
                    return Some(encode(EventKind::TokenExpired, None, data.as_bytes()));
                }
                Woke::Ping => return Some(PING),
                // The hub let go of this connection: end the stream.
                Woke::Next(Next::Closed) => return None,
                Woke::Next(Next::Lagged) => return Some(self.resynchronise()),
                Woke::Next(Next::Frame(frame)) => {
                    if frame.to == self.current {
                        continue; // already there (joined after the change)
                    }
                    if frame.from != self.current {
                        return Some(self.resynchronise());
                    }
                    self.current = Arc::clone(&frame.to);
                    self.subscription.sent(EventKind::ToolsChanged);
                    return Some(frame.bytes.clone());
                }
            }
        }
    }

    /// Drops whatever is buffered and sends the current manifest whole.
    fn resynchronise(&mut self) -> Bytes {
        self.subscription.outbox.reset();
        let rendered = (self.render)();
        self.current = Arc::from(rendered.etag.as_str());
        self.subscription.sent(EventKind::Tools);
        tools_event(&rendered)
    }
}

/// The `tools` event: the body of `GET /agents/tools`, `id:` its etag.
pub fn tools_event(rendered: &RenderedManifest) -> Bytes {
    encode(EventKind::Tools, Some(&rendered.etag), &rendered.body)
}

/// The instant of unix time `exp`, no leeway: already passed means now.
pub(super) fn deadline(exp: i64) -> Instant {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let exp = Duration::from_secs(u64::try_from(exp).unwrap_or(0));
    Instant::now() + exp.saturating_sub(now)
}
