//! Compiles the large benchmark catalog N times and prints the CPU time per compile of this
//! thread (not wall time), which stays meaningful on a busy machine.
//!
//!     cargo run --release --example compile_cpu [N]

#[path = "../benches/support/catalog_gen.rs"]
mod catalog_gen;

use std::time::Duration;

use toolgate::domain::snapshot::Snapshot;

/// This thread's CPU time, from `/proc/thread-self/schedstat` (nanoseconds on CPU).
fn thread_cpu() -> Duration {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat");
    let nanos: u64 = text
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect("ns");
    Duration::from_nanos(nanos)
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(20);
    let catalog = catalog_gen::generate(&catalog_gen::Spec::LARGE);
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let input = catalog.clone();
        let start = thread_cpu();
        let snapshot = Snapshot::compile(input, 1).expect("compiles");
        times.push(thread_cpu() - start);
        drop(snapshot);
    }
    times.sort();
    println!(
        "compile/large CPU time over {runs} runs: min {:.1} ms, median {:.1} ms",
        times[0].as_secs_f64() * 1e3,
        times[runs / 2].as_secs_f64() * 1e3
    );
}
