//! What pinning costs per tool at a refresh: the definition's hash (SHA-256 of its RFC 8785
//! canonical JSON) and the findings rules, over every real definition the repository keeps (the
//! OpenAPI fixtures as the importer defines them, and the captured MCP servers in
//! `tests/findings/benign/`), checked as one catalog.
//!
//! - `definitions/hash`: [`definition::hash`] of every definition;
//! - `definitions/findings`: [`findings::check`] of every definition;
//! - `definitions/nameless_hash_and_shape`: what rename detection computes for a tool gone or
//!   new.
//!
//! Criterion reports the time per iteration and the throughput in definitions per second: one
//! over it is the time per tool. Run with `cargo bench --bench definitions`.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::Value;
use toolgate::domain::definition::{self, Shape};
use toolgate::domain::findings::{self, Context, ToolNames};
use toolgate::ingest::openapi::{parse_document, tools_from_document};

/// Every real definition, with its tool name and method.
fn corpus() -> Vec<(Value, String, Option<String>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut definitions = Vec::new();
    let mut documents: Vec<_> = std::fs::read_dir(root.join("tests/fixtures/openapi"))
        .expect("the OpenAPI fixtures")
        .map(|entry| entry.expect("entry").path())
        .collect();
    documents.sort();
    for path in documents {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(import) = parse_document(&text).and_then(|doc| tools_from_document(&doc)) else {
            continue;
        };
        for tool in import.tools {
            definitions.push(((*tool.definition).clone(), tool.name, Some(tool.method)));
        }
    }
    let mut captures: Vec<_> = std::fs::read_dir(root.join("tests/findings/benign"))
        .expect("the MCP captures")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    captures.sort();
    for path in captures {
        let text = std::fs::read_to_string(&path).expect("read");
        let servers: Value = serde_json::from_str(&text).expect("json");
        for server in servers.as_array().expect("servers") {
            for tool in server["tools"].as_array().expect("tools") {
                let mut definition = serde_json::Map::new();
                definition.insert("tool".to_owned(), tool.clone());
                if !server["instructions"].is_null() {
                    definition.insert("instructions".to_owned(), server["instructions"].clone());
                }
                let name = tool["name"].as_str().unwrap_or_default().to_owned();
                definitions.push((Value::Object(definition), name, None));
            }
        }
    }
    definitions
}

fn bench(c: &mut Criterion) {
    let corpus = corpus();
    let bytes: usize = corpus.iter().map(|(d, _, _)| d.to_string().len()).sum();
    eprintln!(
        "{} definitions, {} bytes of JSON in all ({} on average)",
        corpus.len(),
        bytes,
        bytes / corpus.len()
    );
    let names = ToolNames::new(corpus.iter().map(|(_, name, _)| name.as_str()));
    let hosts = vec!["inventory.example".to_owned()];
    let mut group = c.benchmark_group("definitions");
    group.throughput(Throughput::Elements(corpus.len() as u64));
    group.bench_function("hash", |b| {
        b.iter(|| {
            for (definition, _, _) in &corpus {
                black_box(definition::hash(black_box(definition)));
            }
        })
    });
    group.bench_function("findings", |b| {
        b.iter(|| {
            for (definition, name, method) in &corpus {
                let context = Context {
                    name,
                    method: method.as_deref(),
                    other_tools: &names,
                    source_hosts: &hosts,
                };
                black_box(findings::check(black_box(definition), &context));
            }
        })
    });
    group.bench_function("nameless_hash_and_shape", |b| {
        b.iter(|| {
            for (definition, _, _) in &corpus {
                black_box(definition::nameless_hash(definition));
                black_box(Shape::of(definition));
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
