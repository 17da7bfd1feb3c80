//! Memory of the large generated catalog (10,000 tools, 1,000 groups, 1,000 policies), as parsed
//! and once compiled into a snapshot.
//!
//! Two measures, because neither alone is honest:
//! - **live heap**, from a counting global allocator: exactly the bytes a structure holds, not
//!   disturbed by what the allocator keeps after frees;
//! - **resident set** (`/proc/self/statm`), what the operating system sees, which also counts
//!   freed-but-retained allocator memory and the transient peak of compilation.
//!
//! A snapshot owns the catalog it was compiled from (admin reads and explanations use it), so
//! "snapshot" below includes the catalog; the compiled part is reported separately.
//!
//! Run: `cargo run --profile bench --example snapshot_memory` (or `--release`).

// A counting global allocator needs `unsafe` (GlobalAlloc); the measurement is its point.
#![allow(unsafe_code)]

#[path = "../benches/support/catalog_gen.rs"]
mod catalog_gen;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use toolgate::domain::manifest::ManifestOptions;
use toolgate::domain::model::Catalog;
use toolgate::domain::snapshot::Snapshot;

/// Counts live heap bytes and their high-water mark. The only `unsafe` is delegating to the
/// system allocator, as `GlobalAlloc` requires.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to `System`; the counters do not touch memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        new
    }
}

fn grew(bytes: usize) {
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Resident set size in bytes, from `/proc/self/statm` (second field, in pages of 4 KiB on
/// the x86-64 and aarch64 Linux hosts this runs on).
fn resident() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("Linux /proc");
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|field| field.parse().ok())
        .expect("statm has a resident field");
    pages * 4096
}

struct Mark {
    heap: usize,
    rss: usize,
}

fn mark() -> Mark {
    Mark {
        heap: LIVE.load(Ordering::Relaxed),
        rss: resident(),
    }
}

fn mb(bytes: usize) -> String {
    format!("{:7.1} MB", bytes as f64 / 1_000_000.0)
}

/// The parent generates the catalog JSON into a temporary file and measures in a fresh child
/// process, so the resident set is not flattered by memory the generator freed and the parse
/// reused.
fn main() {
    let mut args = std::env::args().skip(1);
    if let (Some(flag), Some(path)) = (args.next(), args.next())
        && flag == "--measure"
    {
        let json = std::fs::read_to_string(&path).expect("the parent wrote the catalog");
        measure(&json);
        return;
    }
    let json = serde_json::to_string(&catalog_gen::generate(&catalog_gen::Spec::LARGE))
        .expect("serialises");
    let path = std::env::temp_dir().join(format!("toolgate-catalog-{}.json", std::process::id()));
    std::fs::write(&path, &json).expect("temporary file is writable");
    let status = std::process::Command::new(std::env::current_exe().expect("own path"))
        .arg("--measure")
        .arg(&path)
        .status();
    let _ = std::fs::remove_file(&path);
    assert!(status.expect("child runs").success(), "measurement failed");
}

fn measure(json: &str) {
    let before = mark();
    let mut catalog: Catalog = serde_json::from_str(json).expect("parses back");
    // One extra group and policy that grant every tool, so that one manifest can make the
    // snapshot serialise every entry (entries are built lazily, on first use).
    catalog.groups.push(
        serde_json::from_value(
            serde_json::json!({"id": "zz-all", "name": "zz-all", "selectors": [{}]}),
        )
        .expect("group"),
    );
    catalog.policies.push(
        serde_json::from_value(serde_json::json!({"id": "zz-all", "name": "zz-all",
            "claim_matchers": [{"json_path": "sub", "operator": "exists"}],
            "allowed_group_ids": ["zz-all"]}))
        .expect("policy"),
    );
    let parsed = mark();
    let counts = (
        catalog.tools.len(),
        catalog.groups.len(),
        catalog.policies.len(),
    );
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
    let snapshot = Snapshot::compile_with(catalog, 1, &toolgate::service::Threads::available())
        .expect("a generated catalog compiles");
    let compiled = mark();
    let peak = PEAK.load(Ordering::Relaxed);
    // Measured last so that the clone's freed memory cannot flatter the resident sets above.
    let schemas: Vec<_> = snapshot
        .catalog()
        .tools
        .iter()
        .map(|tool| (tool.input_schema.clone(), tool.output_schema.clone()))
        .collect();
    let schema_heap = LIVE.load(Ordering::Relaxed) - compiled.heap;
    drop(schemas);
    let claims = serde_json::json!({"sub": "everything"})
        .as_object()
        .expect("object")
        .clone();
    let options = ManifestOptions {
        include_disabled: true,
        ..ManifestOptions::default()
    };
    let served = snapshot.manifest(&claims, &options).len();
    let warm = mark();

    let catalog_heap = parsed.heap - before.heap;
    let snapshot_heap = compiled.heap - before.heap;
    let (tools, groups, policies) = counts;
    // Two bitsets per group (selected, members), one bit per tool.
    let bitsets = groups * 2 * tools.div_ceil(8);
    println!("large catalog: {tools} tools, {groups} groups, {policies} policies");
    println!("  catalog JSON text                 {}", mb(json.len()));
    println!("                                     live heap    resident set");
    println!(
        "  catalog as parsed                 {}     {}",
        mb(catalog_heap),
        mb(parsed.rss.saturating_sub(before.rss))
    );
    println!("    of which tool schemas (≈)       {}", mb(schema_heap));
    println!(
        "  snapshot, catalog included        {}     {}",
        mb(snapshot_heap),
        mb(compiled.rss.saturating_sub(before.rss))
    );
    println!(
        "  snapshot, compiled part only      {}     {}",
        mb(snapshot_heap - catalog_heap),
        mb(compiled.rss.saturating_sub(parsed.rss))
    );
    println!("    of which group bitsets (≈)      {}", mb(bitsets));
    println!(
        "  snapshot after serving all {served} entries  {}     {}",
        mb(warm.heap - before.heap),
        mb(warm.rss.saturating_sub(before.rss))
    );
    println!(
        "  peak heap while compiling         {}  (transient: {})",
        mb(peak - before.heap),
        mb(peak - compiled.heap)
    );
    drop(snapshot);
}
