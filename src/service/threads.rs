//! The threads a catalog compile may use: the service runs compiles on a blocking thread, and
//! lends the domain the machine's other cores for the part that splits (selector patterns).

use crate::domain::workers::Workers;

/// Up to the machine's available parallelism, as scoped threads.
#[derive(Debug, Clone, Copy)]
pub struct Threads {
    count: usize,
}

impl Threads {
    /// As many threads as the machine says it can run in parallel.
    pub fn available() -> Threads {
        Threads {
            count: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

impl Workers for Threads {
    fn run(&self, at_most: usize, job: &(dyn Fn() + Sync)) {
        let count = self.count.min(at_most).max(1);
        std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..count).map(|_| scope.spawn(job)).collect();
            job();
            for helper in helpers {
                if let Err(panic) = helper.join() {
                    std::panic::resume_unwind(panic);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn every_copy_runs_and_the_work_is_shared() {
        let copies = AtomicUsize::new(0);
        let items = AtomicUsize::new(0);
        let job = || {
            copies.fetch_add(1, Ordering::Relaxed);
            while items.fetch_add(1, Ordering::Relaxed) < 1000 {}
        };
        let threads = Threads { count: 3 };
        threads.run(2, &job);
        assert_eq!(copies.load(Ordering::Relaxed), 2, "at most as asked");
        assert!(items.load(Ordering::Relaxed) >= 1000);
        copies.store(0, Ordering::Relaxed);
        threads.run(10, &job);
        assert_eq!(
            copies.load(Ordering::Relaxed),
            3,
            "at most as the machine has"
        );
    }
}
