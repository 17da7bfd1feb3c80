//! A counter and a histogram for the hot path: each thread writes to a stripe of its own (its
//! own cache lines), a collection sums the stripes.
//!
//! Why not OpenTelemetry instruments there: every record into one writes the same cache lines
//! (a lock, the value, an "updated" flag) from every worker thread, so under load the lines
//! bounce between cores on each request. Here a thread keeps writing its own lines; reading
//! the totals is rare (a scrape, an export). Totals are exact once writers are quiet, and never
//! behind by more than the records in flight.

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
pub(super) struct StripedCounter {
    stripes: [Stripe; STRIPES],
}

static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's stripe, handed out round robin on first use.
    static STRIPE: usize = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
}

impl StripedCounter {
    pub(super) fn add(&self, n: u64) {
        let stripe = STRIPE.with(|stripe| *stripe);
        self.stripes[stripe].0.fetch_add(n, Ordering::Relaxed);
    }

    /// The total of every add so far.
    pub(super) fn get(&self) -> u64 {
        self.stripes
            .iter()
            .map(|stripe| stripe.0.load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }
}

/// Per-bucket counts (the last one past every bound), the sum and the count of one thread's
/// observations, on lines of their own.
#[repr(align(128))]
struct HistogramStripe<const N: usize> {
    counts: [AtomicU64; N],
    over: AtomicU64,
    /// The sum, as `f64` bits (only this stripe's thread adds, so the update never races).
    sum: AtomicU64,
}

/// A histogram with `N` fixed upper bounds (inclusive, as Prometheus' `le` and OpenTelemetry's
/// explicit buckets), split over [`STRIPES`] stripes.
pub(super) struct StripedHistogram<const N: usize> {
    bounds: [f64; N],
    stripes: [HistogramStripe<N>; STRIPES],
}

/// A histogram's state at one moment: counts per bucket (not cumulative; one more than the
/// bounds, for values past the last), their sum and total.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    pub bounds: Vec<f64>,
    pub counts: Vec<u64>,
    pub sum: f64,
    pub count: u64,
}

impl<const N: usize> StripedHistogram<N> {
    /// `bounds` must ascend.
    pub(super) fn new(bounds: [f64; N]) -> Self {
        debug_assert!(bounds.windows(2).all(|pair| pair[0] < pair[1]));
        StripedHistogram {
            bounds,
            stripes: std::array::from_fn(|_| HistogramStripe {
                counts: std::array::from_fn(|_| AtomicU64::new(0)),
                over: AtomicU64::new(0),
                sum: AtomicU64::new(0f64.to_bits()),
            }),
        }
    }

    pub(super) fn record(&self, value: f64) {
        let stripe = &self.stripes[STRIPE.with(|stripe| *stripe)];
        let bucket = self.bounds.partition_point(|bound| *bound < value);
        match stripe.counts.get(bucket) {
            Some(count) => count.fetch_add(1, Ordering::Relaxed),
            None => stripe.over.fetch_add(1, Ordering::Relaxed),
        };
        // Threads sharing a stripe (more threads than stripes) may race here: retry.
        let _ = stripe
            .sum
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some((f64::from_bits(bits) + value).to_bits())
            });
    }

    pub(super) fn snapshot(&self) -> HistogramSnapshot {
        let mut counts = vec![0u64; N + 1];
        let mut sum = 0.0;
        for stripe in &self.stripes {
            for (total, count) in counts.iter_mut().zip(&stripe.counts) {
                *total += count.load(Ordering::Relaxed);
            }
            counts[N] += stripe.over.load(Ordering::Relaxed);
            sum += f64::from_bits(stripe.sum.load(Ordering::Relaxed));
        }
        HistogramSnapshot {
            bounds: self.bounds.to_vec(),
            count: counts.iter().sum(),
            counts,
            sum,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn histogram_buckets_take_values_up_to_their_bound() {
        let histogram = StripedHistogram::new([1.0, 10.0]);
        for value in [0.5, 1.0, 2.0, 10.0, 11.0, 50.0] {
            histogram.record(value);
        }
        assert_eq!(
            histogram.snapshot(),
            HistogramSnapshot {
                bounds: vec![1.0, 10.0],
                counts: vec![2, 2, 2],
                sum: 74.5,
                count: 6,
            }
        );
    }

    #[test]
    fn histogram_records_from_many_threads_add_up() {
        let histogram = Arc::new(StripedHistogram::new([1.0]));
        let threads: Vec<_> = (0..40)
            .map(|i| {
                let histogram = Arc::clone(&histogram);
                std::thread::spawn(move || {
                    for _ in 0..500 {
                        histogram.record(if i % 2 == 0 { 0.5 } else { 2.0 });
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("thread");
        }
        let snapshot = histogram.snapshot();
        assert_eq!(snapshot.counts, vec![10_000, 10_000]);
        assert_eq!(snapshot.sum, 10_000.0 * 0.5 + 10_000.0 * 2.0);
    }

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
