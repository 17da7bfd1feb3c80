//! One byte budget over every stream together: the events queued in each outbox (SSE streams
//! and MCP notification streams alike) and the bytes handed to connections' writers and not
//! yet written.
//!
//! A per-stream bound alone still lets the total grow with the number of streams: a thousand
//! readers that stopped reading, each within its own 4 MiB, pin 4 GB. Here every queued byte is
//! also counted against one shared budget (`cache.stream_total_bytes`, default 64 MiB). A frame
//! that would go past it first makes room by coalescing the queues of the streams that pin the
//! most (queued bytes and bytes their writer has not sent yet: a reader that stopped reading
//! ranks before one that keeps up). Each is dropped and its stream marked lagged: its reader
//! gets one fresh snapshot when it reads again, which supersedes every change it missed. Room
//! is made down to three quarters of the budget, so that it is made rarely and in bulk, and a
//! pass over the streams is made only when it can free a quarter of the budget, so that passes
//! stay rare with any number of streams. A frame that still does not fit lags its own stream.
//!
//! Bytes being written ([`super::outbox::Outbox::writing`]) cannot be taken back (the
//! connection's writer holds them until the socket takes them), but they are counted, so that
//! queues give way to them: a stalled reader's unsent snapshot is part of what streams cost.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// A queue the budget can coalesce to make room: one stream's outbox.
pub trait Coalescible: Send + Sync + std::fmt::Debug {
    /// Bytes queued now (what coalescing frees).
    fn queued_bytes(&self) -> usize;
    /// Bytes the stream holds: queued, and handed to its writer and not yet sent.
    fn pinned_bytes(&self) -> usize;
    /// Drops what is queued; the stream gets a fresh snapshot instead. Whether anything was
    /// dropped.
    fn coalesce(&self) -> bool;
}

/// The shared budget, its counts, and the outboxes it can coalesce.
#[derive(Debug)]
pub struct StreamBudget {
    limit: usize,
    /// Bytes queued in outboxes.
    queued: AtomicUsize,
    /// Bytes handed to writers and not yet released by them.
    writing: AtomicUsize,
    /// Streams coalesced to make room.
    coalesced: AtomicU64,
    outboxes: Mutex<HashMap<u64, Weak<dyn Coalescible>>>,
    next_id: AtomicU64,
}

impl StreamBudget {
    /// A budget of `limit` bytes (at least 1) over every stream.
    pub fn new(limit: usize) -> Arc<StreamBudget> {
        Arc::new(StreamBudget {
            limit: limit.max(1),
            queued: AtomicUsize::new(0),
            writing: AtomicUsize::new(0),
            coalesced: AtomicU64::new(0),
            outboxes: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Weak<dyn Coalescible>>> {
        self.outboxes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers a queue that [`StreamBudget::make_room`] may coalesce; its id, for
    /// [`StreamBudget::forget`].
    pub(super) fn register(&self, queue: Weak<dyn Coalescible>) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(id, queue);
        id
    }

    /// Forgets queue `id` (it is being dropped; its bytes were released).
    pub(super) fn forget(&self, id: u64) {
        self.lock().remove(&id);
    }

    /// Bytes counted now: queued and being written.
    pub fn used(&self) -> usize {
        self.queued.load(Ordering::Acquire) + self.writing.load(Ordering::Acquire)
    }

    /// Bytes queued in outboxes now.
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    /// Bytes handed to writers and not yet written.
    pub fn being_written(&self) -> usize {
        self.writing.load(Ordering::Acquire)
    }

    /// Streams coalesced to make room, since start.
    pub fn coalesced(&self) -> u64 {
        self.coalesced.load(Ordering::Relaxed)
    }

    /// The budget.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Counts `bytes` as queued if they fit; whether they did.
    pub(super) fn try_queue(&self, bytes: usize) -> bool {
        let writing = self.writing.load(Ordering::Acquire);
        self.queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |queued| {
                (queued + writing + bytes <= self.limit).then_some(queued + bytes)
            })
            .is_ok()
    }

    /// Stops counting `bytes` as queued (sent on, or dropped).
    pub(super) fn release_queued(&self, bytes: usize) {
        self.queued.fetch_sub(bytes, Ordering::AcqRel);
    }

    /// Makes room for a frame of `bytes` when it would not fit: coalesces the largest queues
    /// until what is counted is at most three quarters of the budget less `bytes`, and at
    /// least a quarter of the budget below where it was. Call it before pushing, holding no
    /// outbox's lock.
    ///
    /// A pass looks at every stream, so it is made only when the queues hold a quarter of the
    /// budget to free: passes stay rare (at most one per quarter of the budget pushed) however
    /// many streams there are, even when bytes being written, which no pass can free, keep
    /// the budget full. Without such a pass the frame does not fit and lags its own stream.
    pub fn make_room(&self, bytes: usize) {
        let used = self.used();
        if used + bytes <= self.limit {
            return;
        }
        let quarter = (self.limit / 4).max(1);
        if self.queued() < quarter {
            return;
        }
        let target = (self.limit - quarter)
            .saturating_sub(bytes)
            .min(used.saturating_sub(quarter));
        // Strong references taken under the lock and used after it: dropping the last one of
        // an outbox takes this lock again.
        let live: Vec<Arc<dyn Coalescible>> =
            self.lock().values().filter_map(Weak::upgrade).collect();
        let mut by_size: Vec<(usize, Arc<dyn Coalescible>)> = live
            .into_iter()
            .filter(|outbox| outbox.queued_bytes() > 0)
            .map(|outbox| (outbox.pinned_bytes(), outbox))
            .collect();
        by_size.sort_unstable_by_key(|(pinned, _)| std::cmp::Reverse(*pinned));
        for (_, outbox) in by_size {
            if self.used() <= target {
                break;
            }
            if outbox.coalesce() {
                self.coalesced.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Counts `bytes` as being written (handed to a connection's writer).
    pub(super) fn add_writing(&self, bytes: usize) {
        self.writing.fetch_add(bytes, Ordering::AcqRel);
    }

    /// Stops counting `bytes` as being written (the writer let go of them).
    pub(super) fn release_writing(&self, bytes: usize) {
        self.writing.fetch_sub(bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests;
