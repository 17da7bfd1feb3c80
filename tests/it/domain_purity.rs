//! The decision core stays pure: no async runtime, no web framework, no stores, no I/O, no
//! threads, no clocks, no environment. This test reads every file under `src/domain/` and fails
//! on any use of them, however the path is written: `std::fs::read`, `use std::{fs, io}`,
//! `use std::thread as t`, `SystemTime::now()`, `chrono::Utc::now()`…

use crate::support::source_text;

use std::path::Path;

use source_text::{code_only, is_ident, rust_files};

/// Crates the domain must not name at all.
const FORBIDDEN_CRATES: [&str; 12] = [
    "tokio",
    "axum",
    "tower",
    "hyper",
    "redis",
    "mongodb",
    "reqwest",
    "redb",
    "rayon",
    "libc",
    "utoipa_axum",
    // Schemas are derived at the HTTP edge (transport/openapi/model.rs): the model is plain data.
    "utoipa",
];

/// Modules of `std` (and `core`) that reach the world outside the process or other threads.
const FORBIDDEN_STD: [&str; 7] = ["fs", "io", "net", "thread", "process", "env", "os"];

/// Names that read a clock or the environment wherever they come from.
const FORBIDDEN_NAMES: [&str; 6] = [
    "SystemTime",
    "Instant",
    "Utc::now",
    "Local::now",
    "available_parallelism",
    "spawn",
];

/// Every occurrence of `word` in `code` that is a whole identifier path segment.
fn names(code: &str, word: &str) -> bool {
    code.match_indices(word).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// The `std`/`core` modules named in `code`, expanding `use std::{a, b::c}` groups (one
/// level of braces, as this code writes them) and catching `std as x` aliases.
fn std_modules(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for root in ["std", "core"] {
        let pattern = format!("{root}::");
        for (at, _) in code.match_indices(&pattern) {
            if code[..at].chars().next_back().is_some_and(is_ident) {
                continue;
            }
            let rest = code[at + pattern.len()..].trim_start();
            let heads: Vec<&str> = match rest.strip_prefix('{') {
                Some(group) => group[..group.find('}').unwrap_or(group.len())]
                    .split(',')
                    .map(str::trim)
                    .collect(),
                None => vec![rest],
            };
            for head in heads {
                let module: String = head.chars().take_while(|c| is_ident(*c)).collect();
                if !module.is_empty() {
                    found.push(module);
                }
            }
        }
        if names(code, &format!("{root} as")) {
            found.push(format!("{root} (aliased)"));
        }
    }
    found
}

/// What `code` uses that the domain must not.
fn offences(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for krate in FORBIDDEN_CRATES {
        if names(code, krate) {
            found.push(krate.to_owned());
        }
    }
    for module in std_modules(code) {
        if FORBIDDEN_STD.contains(&module.as_str()) || module.ends_with("(aliased)") {
            found.push(format!("std::{module}"));
        }
    }
    for name in FORBIDDEN_NAMES {
        if names(code, name) {
            found.push(name.to_owned());
        }
    }
    found
}

#[test]
fn the_domain_uses_no_io_runtime_store_thread_or_clock() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src/domain"),
        &mut files,
    );
    assert!(files.len() >= 10, "found the domain sources: {files:?}");
    let mut all = Vec::new();
    // Files of test modules (`tests.rs`, `tests/…`) are compiled only under `cfg(test)`.
    files.retain(|file| {
        !file
            .components()
            .any(|part| part.as_os_str() == "tests" || part.as_os_str() == "tests.rs")
    });
    for file in &files {
        let text = std::fs::read_to_string(file).expect("readable source");
        for offence in offences(&code_only(&text)) {
            all.push(format!("{}: {offence}", file.display()));
        }
    }
    assert!(
        all.is_empty(),
        "the domain must stay pure:\n{}",
        all.join("\n")
    );
}

#[test]
fn the_reader_is_not_fooled_by_how_a_path_is_written() {
    for (code, expected) in [
        ("use std::{fs, io};", vec!["std::fs", "std::io"]),
        (
            "use std::{collections::HashMap, thread};",
            vec!["std::thread"],
        ),
        ("let t = std::time::SystemTime::now();", vec!["SystemTime"]),
        ("use std::time::Instant;", vec!["Instant"]),
        ("let now = chrono::Utc::now();", vec!["Utc::now"]),
        ("use std as s; s::fs::read(p);", vec!["std::std (aliased)"]),
        ("extern crate std as s;", vec!["std::std (aliased)"]),
        ("let x = core::net::Ipv4Addr::LOCALHOST;", vec!["std::net"]),
        ("tokio::spawn(f);", vec!["tokio", "spawn"]),
        ("std::thread::scope(|s| ());", vec!["std::thread"]),
        ("let v = std::env::var(k);", vec!["std::env"]),
    ] {
        assert_eq!(offences(code), expected, "{code}");
    }
    for clean in [
        "use std::collections::HashMap; use std::sync::Arc;",
        "// std::fs::read in a comment\nlet x = 1;",
        "let message = \"std::thread\";",
        "fn spawned_count() {}",
        "use std::fmt::Write as _;",
    ] {
        assert!(offences(&code_only(clean)).is_empty(), "{clean}");
    }
    assert!(
        offences(&code_only(
            "fn f() {}\n#[cfg(test)]\nmod tests { use std::thread; }"
        ))
        .is_empty(),
        "test modules may drive the domain with threads"
    );
    assert_eq!(
        offences(&code_only(
            "let q = '\"'; std::thread::sleep(d); let e = '\\'';"
        )),
        ["std::thread"],
        "a quote in a character literal does not hide code"
    );
}
