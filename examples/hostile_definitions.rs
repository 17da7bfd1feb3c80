//! What a hostile upstream's definitions cost the write that imports them: the findings of a
//! description full of URLs and of a schema of credential-named properties, and the rename
//! matching of a refresh where 500 tools went and 500 came with one long description. Prints
//! the wall time of each (one thread, so it is the CPU time too).
//!
//!     cargo run --profile bench-tools --example hostile_definitions
//!
//! The inputs are those of issue 41 (items 1 and 2); the same program built from an older tree
//! gives the figures before.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use serde_json::{Value, json};
use toolgate::domain::findings::{Context, ToolNames, check};
use toolgate::domain::model::Catalog;
use toolgate::domain::source_config::Pinning;
use toolgate::domain::stamp::Stamp;
use toolgate::ingest::refresh::{Approval, apply};
use toolgate::ingest::{Import, ImportedTool};

fn timed<T>(what: &str, work: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let value = work();
    let took: Duration = started.elapsed();
    println!("{what:<58} {:>10.3} s", took.as_secs_f64());
    value
}

fn findings() {
    let names = ToolNames::default();
    let hosts = vec!["api.billing.example".to_owned()];
    let context = Context {
        name: "list_invoices",
        method: Some("GET"),
        other_tools: &names,
        source_hosts: &hosts,
    };
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|kib| kib.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![64, 256, 512]
    } else {
        sizes
    };
    for kib in sizes {
        let text = "https://ab ".repeat(kib * 1024 / 11);
        let definition = json!({"tool": {"description": text}});
        timed(
            &format!("findings: a description of {kib} KiB of `https://ab `"),
            || check(&definition, &context).len(),
        );
    }
    let properties: serde_json::Map<String, Value> = (0..80_000)
        .map(|n| (format!("a{n}_password"), json!({"type": "string"})))
        .collect();
    let definition = json!({"tool": {"inputSchema": {"type": "object", "properties": properties}}});
    timed("findings: 80,000 properties named aN_password", || {
        check(&definition, &context).len()
    });
}

fn tool(op: &str, description: &str, property: &str) -> ImportedTool {
    let mut tool = ImportedTool {
        operation_id: op.to_owned(),
        name: op.to_owned(),
        title: None,
        description: description.to_owned(),
        method: "GET".to_owned(),
        path: format!("/{op}"),
        tags: Vec::new(),
        input_schema: Arc::new(
            json!({"type": "object", "properties": {property: {"type": "string"}}}),
        ),
        output_schema: None,
        deprecated: false,
        definition: Arc::default(),
        schemas_apart: false,
    };
    tool.definition = Arc::new(serde_json::to_value(&tool).expect("a tool serialises"));
    tool
}

fn renames() {
    let words: Vec<String> = (0..2_000).map(|n| format!("word{n}")).collect();
    let description = words.join(" ");
    let mut catalog: Catalog =
        serde_json::from_value(json!({"sources": [{"id": "s", "name": "s", "type": "openapi"}]}))
            .expect("a catalog");
    let stamp = Stamp {
        at: Utc::now(),
        by: "admin".to_owned(),
    };
    // The same words, other properties: every pair is compared and none is a rename.
    let first = Import {
        tools: (0..500)
            .map(|n| tool(&format!("old{n}"), &description, "x"))
            .collect(),
        issues: Vec::new(),
    };
    apply(&mut catalog, "s", &first, &stamp, Approval::Admin).expect("imported");
    let next = Import {
        tools: (0..500)
            .map(|n| tool(&format!("new{n}"), &description, "y"))
            .collect(),
        issues: Vec::new(),
    };
    timed(
        "refresh: 500 tools gone, 500 new, one 2,000-word description",
        || {
            apply(
                &mut catalog,
                "s",
                &next,
                &stamp,
                Approval::Refresh(Pinning::Hold),
            )
        },
    )
    .expect("applied");
}

fn main() {
    findings();
    renames();
}
