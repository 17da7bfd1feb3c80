//! Benchmarks of the pure decision core on generated catalogs (see `support/catalog_gen.rs`).
//!
//! - `compile/{large,typical}`: `Snapshot::compile_with` of a catalog on the machine's threads,
//!   as the service compiles (the clone it consumes is made outside the timed section);
//! - `manifest/{large_20_policies,typical}`: `Snapshot::manifest` for one set of claims with
//!   default options (decision + visibility + entries + etag), no serialisation;
//! - `manifest_json/large_20_policies`: the same plus `Manifest::to_json`;
//! - `manifest_first_after_compile/large_20_policies`: the first manifest of a fresh snapshot,
//!   which also serialises its tools' entries (done lazily, on first use);
//! - `fingerprint/typical_claims`: the claims key of a realistic token payload (its projection
//!   onto what the typical catalog's policies and the default admin rule read);
//! - `explain/typical`: admin preview (`Snapshot::explain` with `include_disabled`).
//!
//! Run with `cargo bench --bench decision`; add `-- --warm-up-time 1 --measurement-time 3`
//! for a quicker pass.

#[path = "support/catalog_gen.rs"]
mod catalog_gen;

use std::hint::black_box;
use std::time::Duration;

use catalog_gen::{Generated, Spec, generate_with_agent};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use toolgate::domain::claims::Claims;
use toolgate::domain::fingerprint::Fingerprint;
use toolgate::domain::manifest::ManifestOptions;
use toolgate::domain::snapshot::Snapshot;
use toolgate::domain::validate::validate;
use toolgate::service::Threads;

/// Policies the large-catalog agent should match.
const LARGE_MATCHED: usize = 20;
/// Policies the typical-catalog agent should match.
const TYPICAL_MATCHED: usize = 5;
/// An agent whose roles match about 600 policies of the large catalog: a manifest of ~7,000
/// tools (~2.9 MB), the worst case of what one render costs.
const BROAD_MATCHED: usize = 600;

struct Fixture {
    generated: Generated,
    snapshot: Snapshot,
    claims: Claims,
}

fn fixture(label: &str, spec: &Spec, matched: usize) -> Fixture {
    let generated = generate_with_agent(spec);
    let errors = validate(&generated.catalog);
    assert!(
        errors.is_empty(),
        "{label}: generated catalog invalid: {errors:?}"
    );
    let snapshot = Snapshot::compile_with(generated.catalog.clone(), 1, &Threads::available())
        .expect("a valid catalog compiles");
    let claims = generated.claims_matching_about(matched);
    report(label, &generated, &snapshot, &claims, matched);
    Fixture {
        generated,
        snapshot,
        claims,
    }
}

/// Prints once what the benches work on, so the figures can be read in context.
fn report(label: &str, generated: &Generated, snapshot: &Snapshot, claims: &Claims, n: usize) {
    let catalog = &generated.catalog;
    let explained = snapshot.explain(claims, &ManifestOptions::default());
    let matched = explained
        .explanation
        .policies
        .iter()
        .filter(|policy| policy.matched)
        .count();
    let roles = claims["roles"].as_array().map_or(0, Vec::len);
    let manifest = snapshot.manifest(claims, &ManifestOptions::default());
    let body = manifest.to_json();
    eprintln!(
        "[{label}] {} sources, {} tools, {} groups, {} policies; agent with {roles} roles \
         matches {matched} policies (asked ~{n}, generator expects {}); manifest: {} tools, \
         {} granted groups, {} KiB of JSON",
        catalog.sources.len(),
        catalog.tools.len(),
        catalog.groups.len(),
        catalog.policies.len(),
        generated.expected_matches(n),
        manifest.len(),
        explained.explanation.groups.len(),
        body.len() / 1024,
    );
    assert_eq!(
        matched,
        generated.expected_matches(n),
        "{label}: the generator's bookkeeping disagrees with the engine"
    );
}

fn benches(c: &mut Criterion) {
    let large = fixture("large", &Spec::LARGE, LARGE_MATCHED);
    let typical = fixture("typical", &Spec::TYPICAL, TYPICAL_MATCHED);
    let broad = fixture("large", &Spec::LARGE, BROAD_MATCHED);
    let defaults = ManifestOptions::default();

    let mut compile = c.benchmark_group("compile");
    compile.sample_size(20);
    compile.measurement_time(Duration::from_secs(3));
    for (name, fixture) in [("large", &large), ("typical", &typical)] {
        compile.bench_function(name, |b| {
            b.iter_batched(
                || fixture.generated.catalog.clone(),
                |catalog| {
                    Snapshot::compile_with(catalog, 1, &Threads::available()).expect("compiles")
                },
                BatchSize::LargeInput,
            )
        });
    }
    compile.finish();

    let mut manifest = c.benchmark_group("manifest");
    manifest.measurement_time(Duration::from_secs(3));
    manifest.bench_function("large_20_policies", |b| {
        b.iter(|| {
            black_box(
                large
                    .snapshot
                    .manifest(black_box(&large.claims), &defaults)
                    .len(),
            )
        })
    });
    manifest.bench_function("large_600_policies", |b| {
        b.iter(|| {
            black_box(
                broad
                    .snapshot
                    .manifest(black_box(&broad.claims), &defaults)
                    .len(),
            )
        })
    });
    manifest.bench_function("typical", |b| {
        b.iter(|| {
            black_box(
                typical
                    .snapshot
                    .manifest(black_box(&typical.claims), &defaults)
                    .len(),
            )
        })
    });
    manifest.finish();

    // Entries are serialised when a snapshot is compiled (carried over when unchanged), so the
    // first manifest of a fresh snapshot costs what any new decision does; this group keeps
    // watching that cold case.
    let mut cold = c.benchmark_group("manifest_first_after_compile");
    cold.sample_size(10);
    cold.measurement_time(Duration::from_secs(3));
    cold.bench_function("large_20_policies", |b| {
        b.iter_batched(
            || {
                Snapshot::compile_with(large.generated.catalog.clone(), 1, &Threads::available())
                    .expect("compiles")
            },
            |snapshot| black_box(snapshot.manifest(black_box(&large.claims), &defaults).len()),
            BatchSize::LargeInput,
        )
    });
    cold.finish();

    let mut json = c.benchmark_group("manifest_json");
    json.measurement_time(Duration::from_secs(3));
    json.bench_function("large_20_policies", |b| {
        b.iter(|| {
            black_box(
                large
                    .snapshot
                    .manifest(black_box(&large.claims), &defaults)
                    .to_json(),
            )
        })
    });
    json.bench_function("large_600_policies", |b| {
        b.iter(|| {
            black_box(
                broad
                    .snapshot
                    .manifest(black_box(&broad.claims), &defaults)
                    .to_json(),
            )
        })
    });
    json.finish();

    let admin = toolgate::auth::AdminRule::default();
    let mut fingerprint = c.benchmark_group("fingerprint");
    fingerprint.measurement_time(Duration::from_secs(3));
    fingerprint.bench_function("typical_claims", |b| {
        b.iter(|| {
            Fingerprint::of_projection(
                black_box(&typical.claims),
                &[typical.snapshot.read_paths(), admin.paths()],
            )
        })
    });
    fingerprint.finish();

    let preview = ManifestOptions {
        include_disabled: true,
        ..ManifestOptions::default()
    };
    let mut explain = c.benchmark_group("explain");
    explain.measurement_time(Duration::from_secs(3));
    explain.bench_function("typical", |b| {
        b.iter(|| {
            black_box(
                typical
                    .snapshot
                    .explain(black_box(&typical.claims), &preview)
                    .explanation
                    .tools
                    .len(),
            )
        })
    });
    explain.finish();
}

criterion_group!(decision, benches);
criterion_main!(decision);
