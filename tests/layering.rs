//! The house has layers that only point down: the pure domain; telemetry, which observes from
//! the outside and imports nothing above it; the adapters (Redis link, catalog files, auth,
//! stores, caches, the bus, importers); the service; the transports (SSE streams, HTTP); and
//! the assembly on top (settings, server, command line).
//!
//! This test reads every `crate::<module>` path in the code under `src/` (comments excluded)
//! and fails on any edge from a top-level module to one at its own rank or above, which also
//! rules out every cycle between top-level modules. A module missing from [`LAYERS`] fails it
//! too, so a new module has to be placed deliberately.

#[path = "support/source_text.rs"]
mod source_text;

use std::collections::BTreeSet;
use std::path::Path;

use source_text::{code_only, is_ident, rust_files};

/// Top-level modules, lowest first: a module may use only those before it.
const LAYERS: [&str; 15] = [
    "domain",
    "telemetry",
    "redis_link",
    "catalog_file",
    "auth",
    "store",
    "cache",
    "bus",
    "ingest",
    "service",
    "stream",
    "http",
    "config",
    "server",
    "cli",
];

/// The top-level module a file under `src/` belongs to (`None` for `lib.rs` and `main.rs`).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src).expect("under src");
    let first = relative.components().next()?.as_os_str().to_str()?;
    match first.strip_suffix(".rs") {
        Some("lib" | "main") => None,
        Some(name) => Some(name.to_owned()),
        None => Some(first.to_owned()),
    }
}

/// The top-level modules named by `crate::<module>` in `code`, including inside `use crate::{…}`
/// groups.
fn used_modules(code: &str) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    let word = |s: &str| -> String { s.chars().take_while(|c| is_ident(*c)).collect() };
    for (at, _) in code.match_indices("crate::") {
        let boundary = !code[..at].chars().next_back().is_some_and(is_ident);
        if !boundary {
            continue;
        }
        let rest = code[at + "crate::".len()..].trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name = word(item.trim());
                if !name.is_empty() {
                    used.insert(name);
                }
            }
        } else {
            let name = word(rest);
            if !name.is_empty() {
                used.insert(name);
            }
        }
    }
    used
}

#[test]
fn top_level_modules_only_use_the_layers_below_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let rank = |module: &str| LAYERS.iter().position(|m| *m == module);
    let mut offences = Vec::new();
    let mut edges = 0;
    for file in &files {
        let Some(module) = module_of(&src, file) else {
            continue;
        };
        let Some(own) = rank(&module) else {
            offences.push(format!(
                "{}: module `{module}` has no place in LAYERS",
                file.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(file).expect("readable source");
        for used in used_modules(&code_only(&text)) {
            if used == module {
                continue;
            }
            edges += 1;
            match rank(&used) {
                Some(theirs) if theirs < own => {}
                Some(_) => offences.push(format!(
                    "{}: `{module}` uses `crate::{used}`, which is not below it",
                    file.display()
                )),
                None => offences.push(format!(
                    "{}: uses `crate::{used}`, which has no place in LAYERS",
                    file.display()
                )),
            }
        }
    }
    assert!(edges > 50, "the test read the code: {edges} edges");
    assert!(
        offences.is_empty(),
        "layers must only point down:\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_reader_sees_edges_in_code_and_nowhere_else() {
    let code = code_only(
        "use crate::domain::x;\n\
         use crate::{auth::A, store};\n\
         // crate::server in a comment\n\
         /// [`crate::cli`] in a doc link\n\
         /* crate::http /* nested */ crate::config */\n\
         let m = \"crate::stream in a string\";\n\
         let s = crate::service::f();\n\
         let t = notcrate::telemetry::g();\n",
    );
    let used: Vec<String> = used_modules(&code).into_iter().collect();
    assert_eq!(used, ["auth", "domain", "service", "store"]);
}
