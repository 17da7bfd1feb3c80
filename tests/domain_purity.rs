//! The decision core stays pure: no async runtime, no web framework, no stores, no I/O, no
//! clocks. This test reads every file under `src/domain/` and fails on any use of them.

use std::path::{Path, PathBuf};

const FORBIDDEN: [&str; 12] = [
    "tokio",
    "axum",
    "tower",
    "hyper",
    "redis",
    "mongodb",
    "reqwest",
    "redb",
    "std::fs",
    "std::net",
    "Utc::now",
    "Instant::now",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable folder") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_domain_uses_no_io_runtime_store_or_clock() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src/domain"),
        &mut files,
    );
    assert!(files.len() >= 10, "found the domain sources: {files:?}");
    let mut offences = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("readable source");
        for (number, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            for word in FORBIDDEN {
                let used = code.match_indices(word).any(|(at, _)| {
                    let before = code[..at].chars().next_back();
                    let after = code[at + word.len()..].chars().next();
                    let boundary =
                        |c: Option<char>| !c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                    boundary(before) && boundary(after)
                });
                if used {
                    offences.push(format!("{}:{}: {word}: {line}", file.display(), number + 1));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "the domain must stay pure:\n{}",
        offences.join("\n")
    );
}
