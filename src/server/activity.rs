//! What one connection is doing, so that an idle one can be closed: the exchanges in flight
//! (from the request until its response body has been sent or dropped, so that an open stream
//! counts for its whole life) and when that count last changed.
//!
//! hyper closes an HTTP/1 connection that does not send its request head in time, but an
//! HTTP/2 connection with no stream open stays open for as long as its peer likes: answered
//! pings keep it alive, and one that only sent the preface holds a file descriptor forever.
//! [`Activity::idle_for`] is the timer the accept loop races each connection against.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use hyper::body::{Frame, SizeHint};
use tokio::time::Instant;

/// The exchanges of one connection.
#[derive(Debug)]
pub(super) struct Activity {
    born: Instant,
    in_flight: AtomicUsize,
    /// When `in_flight` last changed, in milliseconds since `born`.
    changed_ms: AtomicU64,
}

impl Activity {
    /// A connection that has just been accepted: nothing in flight since now.
    pub(super) fn new() -> Arc<Activity> {
        Arc::new(Activity {
            born: Instant::now(),
            in_flight: AtomicUsize::new(0),
            changed_ms: AtomicU64::new(0),
        })
    }

    /// One exchange starts; it ends when the returned guard is dropped.
    pub(super) fn begin(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.touch();
        InFlight(Arc::clone(self))
    }

    fn touch(&self) {
        let now = u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.changed_ms.store(now, Ordering::SeqCst);
    }

    fn changed_at(&self) -> Instant {
        self.born + Duration::from_millis(self.changed_ms.load(Ordering::SeqCst))
    }

    /// Resolves once the connection has had nothing in flight for `idle`. While exchanges are
    /// in flight it only wakes once per `idle` to look again.
    pub(super) async fn idle_for(&self, idle: Duration) {
        loop {
            let busy = self.in_flight.load(Ordering::SeqCst) > 0;
            let wake = if busy {
                Instant::now() + idle
            } else {
                self.changed_at() + idle
            };
            tokio::time::sleep_until(wake).await;
            if self.in_flight.load(Ordering::SeqCst) == 0
                && self.changed_at() + idle <= Instant::now()
            {
                return;
            }
        }
    }

    /// Whether an exchange is in flight now.
    pub(super) fn is_busy(&self) -> bool {
        self.in_flight.load(Ordering::SeqCst) > 0
    }
}

/// One exchange in flight; dropping it ends the exchange.
#[derive(Debug)]
pub(super) struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        // The time first, so that whoever sees the count reach 0 also sees when it did.
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

pin_project_lite::pin_project! {
    /// A response body that keeps its exchange in flight until it is finished or dropped.
    pub struct TrackedBody {
        #[pin]
        inner: Body,
        exchange: InFlight,
    }
}

impl TrackedBody {
    /// `body`, with `exchange` ending when it is done.
    pub(super) fn wrap(inner: Body, exchange: InFlight) -> Body {
        Body::new(TrackedBody { inner, exchange })
    }
}

impl hyper::body::Body for TrackedBody {
    type Data = <Body as hyper::body::Body>::Data;
    type Error = <Body as hyper::body::Body>::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        self.project().inner.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_connection_is_idle_only_after_its_last_exchange_ends() {
        let activity = Activity::new();
        let idle = Duration::from_millis(200);
        let exchange = activity.begin();
        // Busy for several idle periods: never idle meanwhile.
        let waited = tokio::time::timeout(idle * 4, activity.idle_for(idle)).await;
        assert!(waited.is_err(), "a busy connection is not idle");
        drop(exchange);
        let ended = Instant::now();
        activity.idle_for(idle).await;
        let took = ended.elapsed();
        assert!(took >= idle && took < idle * 2, "idle after {took:?}");
    }

    #[tokio::test]
    async fn a_connection_that_never_asks_is_idle_after_the_timeout() {
        let activity = Activity::new();
        let idle = Duration::from_millis(200);
        activity.idle_for(idle).await;
        let took = activity.born.elapsed();
        assert!(took >= idle && took < idle * 2, "idle after {took:?}");
    }
}
