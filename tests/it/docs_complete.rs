//! The operator's reference (docs/operations.md) names every setting the binary reads and every
//! metric family it exposes: read from the sources and from a real `/metrics`, so that a new
//! variable or metric without its line in the docs fails here, not in a reader's hands.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use regex::Regex;
use serde_json::json;

use crate::support::gateway::Gateway;
use crate::support::process::Process;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn operations_md() -> String {
    std::fs::read_to_string(root().join("docs/operations.md")).expect("docs/operations.md")
}

fn rust_files(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push(path);
        }
    }
}

/// Every distinct match of `pattern` (its first group) in the library's sources, tests left
/// out (they spell variables wrong on purpose).
fn in_sources(pattern: &Regex) -> BTreeSet<String> {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    files
        .iter()
        .filter(|file| {
            let path = file.to_string_lossy();
            !path.contains("/tests/") && !path.ends_with("/tests.rs")
        })
        .flat_map(|file| {
            let text = std::fs::read_to_string(file).expect("read source");
            pattern
                .captures_iter(&text)
                .map(|c| c[1].to_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Whether `docs` has `word` with no identifier character on either side.
fn names(docs: &str, word: &str) -> bool {
    docs.match_indices(word).any(|(at, _)| {
        let before = docs[..at].chars().next_back();
        let after = docs[at + word.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        !ident(before) && !ident(after)
    })
}

#[test]
fn every_variable_the_binary_reads_is_documented() {
    let docs = operations_md();
    let pattern = Regex::new(r#"\b(TOOLGATE_[A-Z0-9_]*[A-Z0-9])\b"#).expect("regex");
    let mut variables = in_sources(&pattern);
    assert!(
        variables.len() > 40,
        "the scan found too few: {variables:?}"
    );
    variables.extend(toolgate::config::setting_variables().map(str::to_owned));
    let missing: Vec<&String> = variables.iter().filter(|v| !names(&docs, v)).collect();
    assert!(
        missing.is_empty(),
        "docs/operations.md does not name: {missing:?}"
    );
}

/// The metric families a gateway (the binary, on the demo catalog) exposes after requests of
/// every kind that records a metric without an upstream or Redis.
pub(crate) async fn exposed_families() -> BTreeSet<String> {
    let dir = tempfile::tempdir().expect("temp dir");
    let gateway = Process::serve(
        &dir.path().join("data"),
        &["--seed", "config/demo-catalog.yaml"],
    );
    let client = reqwest::Client::new();
    let agent = Gateway::token(json!({"sub": "a", "roles": ["agent"]}));
    let admin = Gateway::admin();
    let url = |path: &str| format!("{}{path}", gateway.base);
    let _ = client
        .get(url("/agents/tools"))
        .bearer_auth(&agent)
        .send()
        .await;
    let posts = [
        (
            "/access/v1/evaluation",
            &agent,
            json!({"action": {"name": "call"},
            "resource": {"type": "tool", "id": "crm:get_customer"}}),
        ),
        (
            "/admin/impact",
            &admin,
            json!({"collection": "tools", "id": "crm:get_customer", "op": "disable"}),
        ),
        (
            "/mcp",
            &agent,
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
        ),
    ];
    for (path, token, body) in posts {
        let _ = client
            .post(url(path))
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await;
    }
    let text = client
        .get(url("/metrics"))
        .send()
        .await
        .expect("the gateway answers")
        .text()
        .await
        .expect("text");
    text.lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|line| line.split(' ').next())
        .map(str::to_owned)
        .collect()
}

/// Families exposed by a gateway after a workload, and the instrument names written in the
/// sources (for what this workload does not record).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_family_is_documented() {
    let docs = operations_md();
    let exposed = exposed_families().await;
    assert!(exposed.len() > 20, "too few families exposed: {exposed:?}");
    let missing: Vec<&String> = exposed.iter().filter(|f| !names(&docs, f)).collect();
    assert!(
        missing.is_empty(),
        "docs/operations.md does not name: {missing:?}"
    );

    // Instruments named in the sources: `toolgate.import.operations` is exposed as
    // `toolgate_import_operations` + unit and suffix; the docs must name such a family.
    let pattern = Regex::new(r#""(toolgate\.[a-z_]+\.?[a-z_.]*)""#).expect("regex");
    let instruments: Vec<String> = in_sources(&pattern)
        .into_iter()
        .filter(|name| !name.ends_with(".redb") && !name.ends_with(".toml"))
        .collect();
    assert!(
        instruments.len() > 20,
        "the scan found too few: {instruments:?}"
    );
    let undocumented: Vec<&String> = instruments
        .iter()
        .filter(|name| {
            let prefix = name.replace('.', "_");
            !Regex::new(&format!(r"`{prefix}(_[a-z]+)*`"))
                .expect("regex")
                .is_match(&docs)
        })
        .collect();
    assert!(
        undocumented.is_empty(),
        "docs/operations.md names no family for: {undocumented:?}"
    );
}

/// Every Markdown file a source, test, bench, example or script names (`docs/api.md`,
/// `tests/mcp_clients/README.md`) is in the repository: comments cite the repository's own
/// documents, never texts a clone does not have.
#[test]
fn every_document_a_comment_cites_is_in_the_repository() {
    let cited = Regex::new(r"(?:^|[^\w/.-])((?:[\w-]+/)*[\w-]+\.md)\b").expect("a pattern");
    let mut files = Vec::new();
    for dir in [
        "src",
        "tests/it",
        "tests/support",
        "benches",
        "examples",
        "scripts",
    ] {
        texts(&root().join(dir), &mut files);
    }
    files.push(root().join("tests/console/drive.py"));
    let mut missing = BTreeSet::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for found in cited.captures_iter(&text) {
            let name = &found[1];
            if !root().join(name).is_file() {
                let at = file.strip_prefix(root()).unwrap_or(file).display();
                missing.insert(format!("{at}: {name}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "cited but not in the repository: {missing:#?}"
    );
}

/// Every `.rs`, `.py` and `.sh` file under `dir`.
fn texts(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            texts(&path, into);
        } else if path
            .extension()
            .is_some_and(|e| e == "rs" || e == "py" || e == "sh")
        {
            into.push(path);
        }
    }
}
