//! One stream's pending events, bounded in **bytes**.
//!
//! A count bound is no bound at all when events differ in size: sixteen stalled streams with
//! sixteen queued diffs of a 2.4 MB manifest each pinned over 600 MB. Here a stream holds at
//! most its budget in bytes of events (and always at least the one being delivered: a
//! single event is shared by every member of its group, so holding it costs nothing extra).
//! An event that would go past the budget is not queued: everything queued is dropped instead
//! and the stream is marked *lagged*, so that when its reader drains it gets one fresh snapshot
//! of its current manifest, which supersedes every change it missed. A reader that never reads
//! therefore costs at most the budget, whatever happens to the catalog.
//!
//! Every queued byte is also counted in the [`StreamBudget`] shared by all streams: a frame
//! that does not fit there lags its stream too, and the budget can coalesce any outbox to make
//! room ([`Outbox::coalesce`]).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use tokio::sync::Notify;

use super::budget::{Coalescible, StreamBudget};
use super::frame::Frame;

/// What the hub's push did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    Queued,
    /// The budget was exceeded now: the queue was dropped and the stream marked lagged.
    Lagged,
    /// The stream was already lagged (or closed): nothing to queue, it resynchronises anyway.
    Skipped,
}

/// What the reader gets next.
#[derive(Debug)]
pub enum Next {
    Frame(Arc<Frame>),
    /// Events were dropped: send the current manifest whole.
    Lagged,
    /// The hub let go of this stream (shutdown): end it.
    Closed,
}

/// A stream's event queue, shared by the hub (writer) and the connection (reader).
#[derive(Debug)]
pub struct Outbox {
    state: Mutex<State>,
    ready: Notify,
    budget: usize,
    /// Its key in `shared`'s registry.
    id: u64,
    shared: Arc<StreamBudget>,
    /// Bytes of this stream handed to its writer and not yet sent ([`Outbox::writing`]).
    writing: AtomicUsize,
}

#[derive(Debug, Default)]
struct State {
    frames: VecDeque<Arc<Frame>>,
    bytes: usize,
    lagged: bool,
    closed: bool,
}

impl Outbox {
    /// An empty outbox holding at most `budget` bytes of events, counted in `shared` too and
    /// registered there, so that it can be coalesced to make room.
    pub fn new(shared: &Arc<StreamBudget>, budget: usize) -> Arc<Outbox> {
        Arc::new_cyclic(|this: &std::sync::Weak<Outbox>| {
            let registered: std::sync::Weak<dyn Coalescible> = this.clone();
            Outbox {
                state: Mutex::new(State::default()),
                ready: Notify::new(),
                budget: budget.max(1),
                id: shared.register(registered),
                shared: Arc::clone(shared),
                writing: AtomicUsize::new(0),
            }
        })
    }

    /// `bytes` of this stream, counted as being written (here and in the shared budget) until
    /// the connection's writer drops them after sending them.
    pub fn writing(self: &Arc<Self>, bytes: Bytes) -> Bytes {
        self.shared.add_writing(bytes.len());
        self.writing.fetch_add(bytes.len(), Ordering::AcqRel);
        Bytes::from_owner(Writing {
            bytes,
            outbox: Arc::clone(self),
        })
    }

    /// Drops what is queued and marks the stream lagged (under the lock); whether anything
    /// was dropped.
    fn drop_queue(&self, state: &mut State, lag: bool) -> bool {
        let had = state.bytes;
        state.frames = VecDeque::new();
        state.bytes = 0;
        state.lagged |= lag;
        self.shared.release_queued(had);
        had > 0
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues `frame` unless that would exceed this stream's budget or the shared one; never
    /// waits.
    pub fn push(&self, frame: Arc<Frame>) -> Pushed {
        let len = frame.bytes.len();
        let pushed = {
            let mut state = self.lock();
            if state.lagged || state.closed {
                Pushed::Skipped
            } else if (state.frames.is_empty() || state.bytes + len <= self.budget)
                && self.shared.try_queue(len)
            {
                state.bytes += len;
                state.frames.push_back(frame);
                Pushed::Queued
            } else {
                self.drop_queue(&mut state, true);
                Pushed::Lagged
            }
        };
        if pushed != Pushed::Skipped {
            self.ready.notify_one();
        }
        pushed
    }

    /// Ends the stream: the reader gets [`Next::Closed`] once it has read what is queued.
    pub fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_one();
    }

    /// What the reader should send next: a lag takes precedence over queued frames (they were
    /// dropped), queued frames over a close.
    pub async fn next(&self) -> Next {
        loop {
            {
                let mut state = self.lock();
                if state.lagged {
                    state.lagged = false;
                    return Next::Lagged;
                }
                if let Some(frame) = state.frames.pop_front() {
                    state.bytes -= frame.bytes.len();
                    self.shared.release_queued(frame.bytes.len());
                    return Next::Frame(frame);
                }
                if state.closed {
                    return Next::Closed;
                }
            }
            // `notify_one` stores a permit when nobody waits, so a push between the check
            // above and this wait is not lost.
            self.ready.notified().await;
        }
    }

    /// Drops what is queued and clears the lag: the caller is about to send a fresh snapshot.
    pub fn reset(&self) {
        let mut state = self.lock();
        self.drop_queue(&mut state, false);
        state.lagged = false;
    }
}

impl Coalescible for Outbox {
    fn queued_bytes(&self) -> usize {
        self.lock().bytes
    }

    fn pinned_bytes(&self) -> usize {
        self.queued_bytes() + self.writing.load(Ordering::Acquire)
    }

    /// Drops what is queued to make room in the shared budget: the reader gets one fresh
    /// snapshot instead.
    fn coalesce(&self) -> bool {
        let dropped = {
            let mut state = self.lock();
            !state.closed && self.drop_queue(&mut state, true)
        };
        if dropped {
            self.ready.notify_one();
        }
        dropped
    }
}

/// Bytes a connection's writer holds; released from the counts when it lets go of them.
struct Writing {
    bytes: Bytes,
    outbox: Arc<Outbox>,
}

impl AsRef<[u8]> for Writing {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Writing {
    fn drop(&mut self) {
        let len = self.bytes.len();
        self.outbox.shared.release_writing(len);
        self.outbox.writing.fetch_sub(len, Ordering::AcqRel);
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        let state = self
            .state
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        self.shared.release_queued(state.bytes);
        self.shared.forget(self.id);
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn frame(size: usize) -> Arc<Frame> {
        Arc::new(Frame {
            from: Arc::from("a"),
            to: Arc::from("b"),
            bytes: Bytes::from(vec![b'x'; size]),
        })
    }

    /// An outbox of `budget` bytes under a shared budget that never binds.
    fn outbox(budget: usize) -> Arc<Outbox> {
        Outbox::new(&StreamBudget::new(usize::MAX), budget)
    }

    #[tokio::test]
    async fn frames_within_the_budget_are_delivered_in_order() {
        let outbox = outbox(100);
        assert_eq!(outbox.push(frame(40)), Pushed::Queued);
        assert_eq!(outbox.push(frame(60)), Pushed::Queued);
        assert_eq!(outbox.queued_bytes(), 100);
        for size in [40, 60] {
            match outbox.next().await {
                Next::Frame(frame) => assert_eq!(frame.bytes.len(), size),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(outbox.queued_bytes(), 0);
    }

    #[tokio::test]
    async fn going_past_the_budget_drops_everything_and_lags_once() {
        let outbox = outbox(100);
        assert_eq!(
            outbox.push(frame(500)),
            Pushed::Queued,
            "one event always fits"
        );
        assert_eq!(outbox.push(frame(1)), Pushed::Lagged);
        assert_eq!(outbox.queued_bytes(), 0, "the queue is freed at once");
        for _ in 0..100 {
            assert_eq!(outbox.push(frame(1_000)), Pushed::Skipped);
        }
        assert_eq!(outbox.queued_bytes(), 0);
        assert!(matches!(outbox.next().await, Next::Lagged));
        assert_eq!(
            outbox.push(frame(10)),
            Pushed::Queued,
            "after the snapshot, events again"
        );
    }

    #[tokio::test]
    async fn close_comes_after_what_is_queued_and_wakes_a_waiting_reader() {
        let outbox = outbox(100);
        outbox.push(frame(10));
        outbox.close();
        assert!(matches!(outbox.next().await, Next::Frame(_)));
        assert!(matches!(outbox.next().await, Next::Closed));

        let waiting = super::tests::outbox(100);
        let reader = {
            let waiting = Arc::clone(&waiting);
            tokio::spawn(async move { waiting.next().await })
        };
        tokio::task::yield_now().await;
        waiting.push(frame(5));
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), reader)
            .await
            .expect("woken")
            .expect("joined");
        assert!(matches!(got, Next::Frame(_)));
    }
}
