//! Compiles the large benchmark catalog N times and prints the CPU time per compile of the
//! whole process (all threads: the compile spreads pattern work over the cores), which stays
//! meaningful on a busy machine, beside the wall time.
//!
//!     cargo run --release --example compile_cpu [N]

// Process CPU time comes from clock_gettime through libc, which is `unsafe` to call.
#![allow(unsafe_code)]

#[path = "../benches/support/catalog_gen.rs"]
mod catalog_gen;

use std::time::Duration;

use toolgate::domain::snapshot::Snapshot;

/// CPU time of the whole process so far.
fn process_cpu() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec for the duration of the call.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(20);
    let catalog = catalog_gen::generate(&catalog_gen::Spec::LARGE);
    let mut cpu = Vec::with_capacity(runs);
    let mut wall = Vec::with_capacity(runs);
    for _ in 0..runs {
        let input = catalog.clone();
        let (start_cpu, start_wall) = (process_cpu(), std::time::Instant::now());
        let snapshot = Snapshot::compile_with(input, 1, &toolgate::service::Threads::available())
            .expect("compiles");
        cpu.push(process_cpu() - start_cpu);
        wall.push(start_wall.elapsed());
        drop(snapshot);
    }
    cpu.sort();
    wall.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "compile/large over {runs} runs: CPU time (all threads) min {:.1} ms, median {:.1} ms; \
         wall time min {:.1} ms, median {:.1} ms",
        ms(cpu[0]),
        ms(cpu[runs / 2]),
        ms(wall[0]),
        ms(wall[runs / 2])
    );
}
