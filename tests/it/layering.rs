//! The house has layers that only point down: the pure domain; the clock, the one seam time is
//! read through; telemetry, which observes from
//! the outside and imports nothing above it; the adapters (Redis link, catalog files, auth,
//! stores, caches, the bus, importers, the call adapter); the service; the transports (SSE
//! streams, HTTP); and the assembly on top (settings, server, command line).
//!
//! This test reads every `crate::<module>` path in the code under `src/` (comments excluded)
//! and fails on any edge from a top-level module to one at its own rank or above, which also
//! rules out every cycle between top-level modules. A module missing from [`LAYERS`] fails it
//! too, so a new module has to be placed deliberately.

use crate::support::source_text;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use source_text::{code_only, is_ident, rust_files};

/// Top-level modules, lowest first: a module may use only those before it.
const LAYERS: [&str; 18] = [
    "domain",
    "clock",
    "telemetry",
    "redis_link",
    "catalog_file",
    "auth",
    "store",
    "cache",
    "bus",
    "ingest",
    "upstream",
    "service",
    "stream",
    "config",
    "app",
    "transport",
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
         /* crate::transport /* nested */ crate::config */\n\
         let m = \"crate::stream in a string\";\n\
         let s = crate::service::f();\n\
         let t = notcrate::telemetry::g();\n",
    );
    let used: Vec<String> = used_modules(&code).into_iter().collect();
    assert_eq!(used, ["auth", "domain", "service", "store"]);
}

/// A file's module path under `src/` (`src/auth/verify.rs` → `auth::verify`, `src/store/mod.rs`
/// → `store`); `None` for the crate roots.
fn module_path(src: &Path, file: &Path) -> Option<Vec<String>> {
    let relative = file.strip_prefix(src).ok()?.with_extension("");
    let mut path: Vec<String> = relative
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    if path.last().is_some_and(|last| last == "mod") {
        path.pop();
    }
    match path.as_slice() {
        [only] if only == "lib" || only == "main" => None,
        _ => Some(path),
    }
}

/// The module paths `code` names through `crate::`, `super::` (repeated) and `self::`,
/// relative to the module at `own`, with one level of `{…}` groups expanded.
fn named_paths(code: &str, own: &[String]) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for head in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(head) {
            let before = &code[..at];
            if before.chars().next_back().is_some_and(is_ident) || before.ends_with("::") {
                continue; // inside a longer path (`a::super::`, `super::super::`)
            }
            let mut base: Vec<String> = match head {
                "crate::" => Vec::new(),
                "self::" => own.to_vec(),
                _ => own[..own.len().saturating_sub(1)].to_vec(),
            };
            let mut rest = &code[at + head.len()..];
            while let Some(more) = rest.strip_prefix("super::") {
                base.pop();
                rest = more;
            }
            let mut segments = Vec::new();
            loop {
                let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
                if name.is_empty() {
                    break;
                }
                rest = &rest[name.len()..];
                segments.push(name);
                match rest.strip_prefix("::") {
                    Some(more) => rest = more,
                    None => break,
                }
            }
            let prefix: Vec<String> = base.iter().cloned().chain(segments).collect();
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    let item = item.trim();
                    let first: String = item.chars().take_while(|c| is_ident(*c)).collect();
                    let mut path = prefix.clone();
                    if !first.is_empty() && first != "self" {
                        path.push(first);
                    }
                    found.push(path);
                }
            } else {
                found.push(prefix);
            }
        }
    }
    found
}

#[test]
fn no_two_files_depend_on_each_other_through_any_path() {
    use std::collections::BTreeMap;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeMap<Vec<String>, PathBuf> = files
        .iter()
        .filter_map(|file| Some((module_path(&src, file)?, file.clone())))
        // Test modules are compiled only under `cfg(test)`.
        .filter(|(path, _)| !path.iter().any(|part| part == "tests"))
        .collect();
    // The module a path lands in: its longest prefix that is a file.
    let owner = |path: &[String]| -> Option<Vec<String>> {
        (1..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|prefix| modules.contains_key(prefix))
    };
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (module, file) in &modules {
        let code = code_only(&std::fs::read_to_string(file).expect("readable source"));
        let targets = edges.entry(module.clone()).or_default();
        for path in named_paths(&code, module) {
            let Some(target) = owner(&path) else { continue };
            // A parent re-exporting its children, and a child using its parent's items, is how
            // Rust modules are built: only edges between files that are not nested count.
            let nested = target.starts_with(module) || module.starts_with(&target);
            if !nested {
                targets.insert(target);
            }
        }
    }
    assert!(
        edges.values().map(BTreeSet::len).sum::<usize>() > 100,
        "the test read the code"
    );
    // Depth-first search for a back edge; report the cycle it closes.
    fn visit(
        node: &Vec<String>,
        edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, bool>,
        stack: &mut Vec<Vec<String>>,
        cycles: &mut Vec<String>,
    ) {
        state.insert(node.clone(), false);
        stack.push(node.clone());
        for next in edges.get(node).into_iter().flatten() {
            match state.get(next) {
                None => visit(next, edges, state, stack, cycles),
                Some(false) => {
                    let start = stack.iter().position(|n| n == next).unwrap_or(0);
                    let cycle: Vec<String> = stack[start..]
                        .iter()
                        .chain([next])
                        .map(|n| n.join("::"))
                        .collect();
                    cycles.push(cycle.join(" -> "));
                }
                Some(true) => {}
            }
        }
        stack.pop();
        state.insert(node.clone(), true);
    }
    let mut state = BTreeMap::new();
    let mut cycles = Vec::new();
    for node in edges.keys() {
        if !state.contains_key(node) {
            visit(node, &edges, &mut state, &mut Vec::new(), &mut cycles);
        }
    }
    assert!(
        cycles.is_empty(),
        "files that depend on each other:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn relative_paths_resolve_from_the_file_that_names_them() {
    let own = ["domain".to_owned(), "snapshot".to_owned()];
    let code = "use super::manifest::ToolEntry;\n\
                use super::super::store::X;\n\
                use crate::auth::{verify, verified::VerifiedToken};\n\
                use self::inner::Y;";
    let paths: Vec<String> = named_paths(code, &own)
        .into_iter()
        .map(|path| path.join("::"))
        .collect();
    assert_eq!(
        paths,
        [
            "auth::verify",
            "auth::verified",
            "domain::manifest::ToolEntry",
            "store::X",
            "domain::snapshot::inner::Y"
        ]
    );
}

/// A token becomes a caller in one place, `App::caller` (verified, then judged by the admin
/// rule): no transport verifies a token or applies the admin rule by itself, so that a rule
/// added to that door holds on every transport.
#[test]
fn only_the_front_door_verifies_tokens_and_applies_the_admin_rule() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let door = src.join("app");
    let mut offences = Vec::new();
    for file in files
        .iter()
        .filter(|file| !file.starts_with(&door) && !file.starts_with(src.join("auth")))
        .filter(|file| !file.ends_with("tests.rs") && !file.to_string_lossy().contains("/tests/"))
    {
        let code = code_only(&std::fs::read_to_string(file).expect("readable source"));
        for call in ["verifier.verify(", "admin_rule.is_admin(", "Caller::new("] {
            if code.contains(call) {
                offences.push(format!("{}: {call}", file.display()));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "go through App::caller instead:\n{}",
        offences.join("\n")
    );
}

/// What a transport must not touch: the parts below the front door that hold state or apply
/// rules (the store, the caches, the stream hub, the rate limiter, the verifier, the parts
/// `App::internals` hands to the server and to tests). A transport maps its wire onto a use
/// case of `app`, which applies every rule and charges every budget, so that a rule added there
/// holds on every transport. Error types of those parts (`StoreError`, `Limited`, `AuthError`,
/// `OpenError`) may be named: transports word them.
const BELOW_THE_FRONT_DOOR: [&str; 20] = [
    "CatalogStore",
    ".store()",
    "EmbeddedStore",
    "ObservedStore",
    "crate::store::embedded",
    "crate::store::mongo",
    "RevisionCache",
    "SharedCache",
    "RenderedManifest",
    "CacheKey",
    "crate::redis_link",
    "crate::bus",
    "StreamHub",
    "crate::stream::open",
    "Limiters",
    "RouteClass",
    ".charge(",
    "Verifier",
    ".verify(",
    "internals()",
];

#[test]
fn transports_enter_through_the_front_door() {
    let transport = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/transport");
    let mut files = Vec::new();
    rust_files(&transport, &mut files);
    assert!(files.len() > 50, "the transports are under src/transport");
    let mut offences = Vec::new();
    for file in &files {
        let code = code_only(&std::fs::read_to_string(file).expect("readable source"));
        // A unit test of the error mapping builds the error it maps.
        let code = match code.find("#[cfg(test)]") {
            Some(tests) if file.ends_with("errors.rs") => code[..tests].to_owned(),
            _ => code,
        };
        for part in BELOW_THE_FRONT_DOOR {
            if code.contains(part) {
                offences.push(format!("{}: {part}", file.display()));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "transports reach what is below the front door; add a use case to src/app/ instead:\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_front_door_rule_catches_a_transport_that_reaches_below_it() {
    let reaching = "async fn h(state: AppState) { state.app.internals().hub.live(); }";
    let found: Vec<_> = BELOW_THE_FRONT_DOOR
        .iter()
        .filter(|part| code_only(reaching).contains(**part))
        .collect();
    assert_eq!(found, [&"internals()"]);
}
