//! One open stream: the first event, then shared `tools_changed` events, keep-alive pings, a
//! fresh snapshot after falling behind, and `token_expired` at the token's `exp`.
//!
//! The connection tracks the etag its client last received. A shared event applies only from
//! that etag: one that leads to where the client already is (it joined after the change) is
//! skipped, one from anywhere else is replaced by a fresh `tools` snapshot. So the client's
//! view always equals some real manifest, whatever the interleaving of joins and changes.
//!
//! A `tools` event shares the rendered manifest's bytes with the manifest cache (its `id:` and
//! `event:` lines and its end are separate chunks): a stalled reader's unsent snapshot, or a
//! thousand readers' first events, cost no copy of a body that can be megabytes.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

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
    first: Option<(EventKind, Event)>,
    /// The rest of an event whose first chunk was sent.
    rest: VecDeque<Bytes>,
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
        expiry: Option<Expiry>,
    ) -> Connection {
        let rendered = opening.rendered;
        let first = if opening.resumed {
            let data = serde_json::json!({"etag": rendered.etag, "revision": rendered.revision});
            let bytes = encode(
                EventKind::Unchanged,
                Some(&rendered.etag),
                data.to_string().as_bytes(),
            );
            (EventKind::Unchanged, Event::whole(bytes))
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
            rest: VecDeque::new(),
            ping,
            expiry: expiry.map(|expiry| {
                (
                    Box::pin(tokio::time::sleep_until(expiry.deadline())),
                    expiry.exp,
                )
            }),
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
        if let Some(chunk) = self.rest.pop_front() {
            return Some(chunk);
        }
        if let Some((kind, first)) = self.first.take() {
            self.subscription.sent(kind);
            return Some(self.send(first));
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
                Woke::Next(Next::Lagged) => {
                    let snapshot = self.resynchronise();
                    return Some(self.send(snapshot));
                }
                Woke::Next(Next::Frame(frame)) => {
                    if frame.to == self.current {
                        continue; // already there (joined after the change)
                    }
                    if frame.from != self.current {
                        let snapshot = self.resynchronise();
                        return Some(self.send(snapshot));
                    }
                    self.current = Arc::clone(&frame.to);
                    self.subscription.sent(EventKind::ToolsChanged);
                    return Some(frame.bytes.clone());
                }
            }
        }
    }

    /// `event`'s first chunk; the others are sent next.
    fn send(&mut self, event: Event) -> Bytes {
        let mut chunks = event.0.into_iter().filter(|chunk| !chunk.is_empty());
        let first = chunks.next().unwrap_or_default();
        self.rest.extend(chunks);
        first
    }

    /// Drops whatever is buffered and sends the current manifest whole.
    fn resynchronise(&mut self) -> Event {
        self.subscription.outbox.reset();
        let rendered = (self.render)();
        self.current = Arc::from(rendered.etag.as_str());
        self.subscription.sent(EventKind::Tools);
        tools_event(&rendered)
    }
}

/// One event as the chunks it is written in.
#[derive(Debug)]
pub struct Event([Bytes; 4]);

impl Event {
    fn whole(bytes: Bytes) -> Event {
        Event([bytes, Bytes::new(), Bytes::new(), Bytes::new()])
    }

    /// The event's bytes, joined.
    #[cfg(test)]
    fn joined(&self) -> Vec<u8> {
        self.0.concat()
    }
}

/// The `tools` event: the body of `GET /agents/tools`, `id:` its etag. The body is shared, not
/// copied, when it is one line (serde writes JSON without line breaks; a body that has one
/// is encoded over several `data:` lines instead).
pub fn tools_event(rendered: &RenderedManifest) -> Event {
    let [head, tail] = rendered.parts();
    if head.contains(&b'\n') || tail.contains(&b'\n') {
        return Event::whole(encode(
            EventKind::Tools,
            Some(&rendered.etag),
            &rendered.to_vec(),
        ));
    }
    // `encode` of an empty body ends with "data: \n\n": the body goes before that "\n\n".
    let mut prefix = Vec::from(encode(EventKind::Tools, Some(&rendered.etag), b""));
    prefix.truncate(prefix.len() - 2);
    Event([Bytes::from(prefix), head, tail, Bytes::from_static(b"\n\n")])
}

/// When a stream's token expires: its `exp`, and how long that is from when the stream opens
/// by the App's clock (the one the verifier checks `exp` against), no leeway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expiry {
    /// The token's `exp`, unix seconds.
    pub exp: i64,
    /// How long from now: zero when already passed.
    pub left: Duration,
}

impl Expiry {
    /// The expiry of a token expiring at `exp` (if it does), at unix time `now`.
    pub fn of(exp: Option<i64>, now: i64) -> Option<Expiry> {
        exp.map(|exp| Expiry {
            exp,
            left: Duration::from_secs(u64::try_from(exp.saturating_sub(now)).unwrap_or(0)),
        })
    }

    /// The timer's instant.
    pub(super) fn deadline(self) -> Instant {
        Instant::now() + self.left
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tools_event_shares_the_body_and_reads_as_the_encoded_event() {
        for body in [&br#"{"data":[],"count":0}"#[..], b"{\n\"a\": 1}", b""] {
            let rendered = RenderedManifest::new(
                Bytes::copy_from_slice(body),
                "\"e1\"".to_owned(),
                1,
                0,
                false,
            );
            let event = tools_event(&rendered);
            let expected = encode(EventKind::Tools, Some("\"e1\""), body);
            assert_eq!(event.joined(), expected.to_vec(), "{body:?}");
            if !body.contains(&b'\n') {
                assert_eq!(event.0[1].as_ptr(), rendered.parts()[0].as_ptr(), "no copy");
            }
        }
    }
}
