//! The impact preview (`POST /admin/impact`) at the size the issue names: a one-policy change
//! on the large catalog (10,000 tools, 1,000 groups, 1,000 policies), compared over 10,000
//! remembered claim sets.
//!
//! - `impact/compare_10k_seen`: [`compare`] of the live and changed snapshots over the 10,000
//!   remembered projections (the part of a preview that grows with the identities served);
//! - `impact/compile_changed`: compiling the changed catalog (the part that grows with the
//!   catalog; a write compiles it too);
//! - before the runs it prints what the 10,000 remembered sets hold in memory, measured by a
//!   counting allocator around [`SeenClaims::record`], how many distinct decisions they fall
//!   into and how many the change affects.
//!
//! Run with `cargo bench --bench impact`; add `-- --warm-up-time 1 --measurement-time 3` for a
//! quicker pass.

// A counting global allocator needs `unsafe` (GlobalAlloc); the measurement is its point.
#![allow(unsafe_code)]

#[path = "support/catalog_gen.rs"]
mod catalog_gen;

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

use catalog_gen::{Spec, generate_with_agent};
use chrono::Utc;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolgate::domain::claims::Claims;
use toolgate::domain::fingerprint::Fingerprint;
use toolgate::domain::impact::compare;
use toolgate::domain::snapshot::Snapshot;
use toolgate::service::Threads;
use toolgate::service::seen::SeenClaims;

/// Counts the bytes live on the heap, to weigh what the remembered claim sets hold.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const IDENTITIES: usize = 10_000;

/// Identity `i`: the benches' reference agent with its roles, tenant, depth and subject varied.
fn identity(generated: &catalog_gen::Generated, i: usize) -> Claims {
    let mut claims = generated.claims_matching_about(5 + i % 40);
    claims.insert("sub".to_owned(), json!(format!("agent-{i}")));
    claims.insert("tenant".to_owned(), json!(format!("tenant-{:02}", i % 10)));
    claims.insert("depth".to_owned(), json!((i / 10) % 4));
    // Two extra roles, (i mod 100, i div 100): every identity's projection is its own.
    if let Some(Value::Array(roles)) = claims.get_mut("roles") {
        roles.push(json!(format!("role-{}", i % 100)));
        roles.push(json!(format!("role-x{}", i / 100)));
    }
    claims
}

fn benches(c: &mut Criterion) {
    let generated = generate_with_agent(&Spec::LARGE);
    let before = Snapshot::compile_with(generated.catalog.clone(), 1, &Threads::available())
        .expect("the large catalog compiles");

    let identities: Vec<Claims> = (0..IDENTITIES).map(|i| identity(&generated, i)).collect();
    let seen = SeenClaims::new(IDENTITIES);
    let now = Utc::now();
    let live_before = LIVE.load(Ordering::Relaxed);
    for claims in &identities {
        let fingerprint = Fingerprint::of_projection(claims, &[before.read_paths()]);
        seen.record(&fingerprint, claims, before.read_paths(), now);
    }
    let held = LIVE.load(Ordering::Relaxed) - live_before;
    let remembered = seen.recent(now, before.read_paths());
    let projections: Vec<&Claims> = remembered.iter().map(|s| &*s.claims).collect();

    // One policy changed: of the first 40 active policies that allow groups, the one whose
    // flip from allow to deny (at +1000 priority) changes most of a 500-identity sample.
    let sample = &projections[..projections.len().min(500)];
    let (changed_id, changed, after) = generated
        .catalog
        .policies
        .iter()
        .filter(|p| p.active && !p.allowed_group_ids.is_empty())
        .take(40)
        .map(|candidate| {
            let mut changed = generated.catalog.clone();
            let policy = changed
                .policies
                .iter_mut()
                .find(|p| p.id == candidate.id)
                .expect("the candidate is in the catalog");
            policy.denied_group_ids = std::mem::take(&mut policy.allowed_group_ids);
            policy.priority += 1_000;
            let after = Snapshot::compile_with(changed.clone(), 2, &Threads::available())
                .expect("the changed catalog compiles");
            (candidate.id.clone(), changed, after)
        })
        .max_by_key(|(_, _, after)| {
            compare(&before, after, sample)
                .iter()
                .filter(|d| !d.is_empty())
                .count()
        })
        .expect("a policy that allows groups");
    let differences = compare(&before, &after, &projections);
    let affected = differences.iter().filter(|d| !d.is_empty()).count();
    let mut decisions: Vec<String> = projections
        .iter()
        .map(|claims| {
            before
                .manifest(claims, &Default::default())
                .etag()
                .to_owned()
        })
        .collect();
    decisions.sort_unstable();
    decisions.dedup();
    println!(
        "impact fixture: {} identities served, {} remembered ({} bytes held, {} per set), \
         {} distinct manifests; changing policy {changed_id} affects {affected}",
        IDENTITIES,
        remembered.len(),
        held,
        held / remembered.len().max(1) as isize,
        decisions.len(),
    );

    let mut group = c.benchmark_group("impact");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("compare_10k_seen", |b| {
        b.iter(|| black_box(compare(&before, &after, black_box(&projections)).len()))
    });
    group.bench_function("compile_changed", |b| {
        b.iter_batched(
            || changed.clone(),
            |catalog| Snapshot::compile_with(catalog, 2, &Threads::available()).expect("compiles"),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(impact, benches);
criterion_main!(impact);
