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

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

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
}

#[derive(Debug, Default)]
struct State {
    frames: VecDeque<Arc<Frame>>,
    bytes: usize,
    lagged: bool,
    closed: bool,
}

impl Outbox {
    /// An empty outbox holding at most `budget` bytes of events.
    pub fn new(budget: usize) -> Outbox {
        Outbox {
            state: Mutex::new(State::default()),
            ready: Notify::new(),
            budget: budget.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues `frame` unless that would exceed the budget; never waits.
    pub fn push(&self, frame: Arc<Frame>) -> Pushed {
        let pushed = {
            let mut state = self.lock();
            if state.lagged || state.closed {
                Pushed::Skipped
            } else if state.frames.is_empty() || state.bytes + frame.bytes.len() <= self.budget {
                state.bytes += frame.bytes.len();
                state.frames.push_back(frame);
                Pushed::Queued
            } else {
                state.frames = VecDeque::new();
                state.bytes = 0;
                state.lagged = true;
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

    /// Bytes queued now.
    #[cfg(test)]
    pub fn queued_bytes(&self) -> usize {
        self.lock().bytes
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
        state.frames = VecDeque::new();
        state.bytes = 0;
        state.lagged = false;
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

    #[tokio::test]
    async fn frames_within_the_budget_are_delivered_in_order() {
        let outbox = Outbox::new(100);
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
        let outbox = Outbox::new(100);
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
        let outbox = Arc::new(Outbox::new(100));
        outbox.push(frame(10));
        outbox.close();
        assert!(matches!(outbox.next().await, Next::Frame(_)));
        assert!(matches!(outbox.next().await, Next::Closed));

        let waiting = Arc::new(Outbox::new(100));
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
