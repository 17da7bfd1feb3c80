//! A counter for the hot path: each thread adds to a stripe of its own (one cache line each),
//! a collection sums the stripes.
//!
//! Why not an OpenTelemetry counter there: every add to one would write the same two cache
//! lines (the value and its "updated" flag) from every worker thread, so under load the lines
//! bounce between cores on each request. Here a thread keeps writing its own line; reading
//! the total is rare (a scrape, an export). The total is exact once writers are quiet, and
//! never behind by more than the adds in flight.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Stripes per counter: at least as many as worker threads on machines this runs on; more
/// threads share stripes, which stays correct (the adds are atomic).
const STRIPES: usize = 16;

/// One stripe, alone on its cache line (128 bytes: two lines on CPUs that fetch pairs).
#[derive(Default)]
#[repr(align(128))]
struct Stripe(AtomicU64);

/// A monotonic count split over [`STRIPES`] cache lines.
#[derive(Default)]
pub struct StripedCounter {
    stripes: [Stripe; STRIPES],
}

static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's stripe, handed out round robin on first use.
    static STRIPE: usize = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
}

impl StripedCounter {
    pub fn add(&self, n: u64) {
        let stripe = STRIPE.with(|stripe| *stripe);
        self.stripes[stripe].0.fetch_add(n, Ordering::Relaxed);
    }

    /// The total of every add so far.
    pub fn get(&self) -> u64 {
        self.stripes
            .iter()
            .map(|stripe| stripe.0.load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn adds_from_many_threads_sum_exactly() {
        let counter = Arc::new(StripedCounter::default());
        let threads: Vec<_> = (0..40)
            .map(|_| {
                let counter = Arc::clone(&counter);
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        counter.add(3);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("thread");
        }
        assert_eq!(counter.get(), 40 * 1000 * 3);
    }

    #[test]
    fn stripes_are_cache_lines_apart() {
        assert_eq!(std::mem::align_of::<Stripe>(), 128);
        assert_eq!(std::mem::size_of::<StripedCounter>(), 128 * STRIPES);
    }
}
