//! How a compile spreads independent work over threads. The domain spawns nothing itself: the
//! caller, which owns the threads (and knows whether it is on a runtime, in a test or in a
//! bench), says how many copies of a job may run at once and runs them.

/// Runs copies of a job at once.
pub trait Workers: Sync {
    /// Runs `job` on up to `at_most` threads at once (the calling thread included) and returns
    /// when every copy has returned. Copies share their work through what `job` captures (a
    /// shared counter of the next item, say), so any number of copies, one included, is right.
    fn run(&self, at_most: usize, job: &(dyn Fn() + Sync));
}

/// Everything on the calling thread: what a caller without threads to spare uses.
#[derive(Debug, Clone, Copy, Default)]
pub struct OnThisThread;

impl Workers for OnThisThread {
    fn run(&self, _at_most: usize, job: &(dyn Fn() + Sync)) {
        job();
    }
}
