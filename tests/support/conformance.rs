//! Loads the conformance cases (`tests/conformance/*.json`, the repository's copy of the team's
//! shared cases; `scripts/sync-conformance.sh` refreshes it): a catalog, then checks of claims
//! (+ query) → expected tool ids.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Map, Value};
use toolgate::domain::manifest::ManifestOptions;
use toolgate::domain::model::Catalog;

#[derive(Debug, Deserialize)]
pub struct Suite {
    pub name: String,
    pub catalog: Catalog,
    pub checks: Vec<Check>,
}

#[derive(Debug, Deserialize)]
pub struct Check {
    pub name: String,
    pub claims: Map<String, Value>,
    #[serde(default)]
    pub query: Map<String, Value>,
    #[serde(default)]
    pub as_admin_preview: bool,
    pub expect_tool_ids: Vec<String>,
}

impl Check {
    /// The query as text pairs, as they would appear in a URL.
    pub fn query_pairs(&self) -> Vec<(String, String)> {
        self.query
            .iter()
            .map(|(key, value)| {
                let text = match value {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                (key.clone(), text)
            })
            .collect()
    }

    /// The query as core options.
    pub fn options(&self) -> ManifestOptions {
        let mut options = ManifestOptions::default();
        for (key, value) in self.query_pairs() {
            match key.as_str() {
                "include_disabled" => options.include_disabled = value == "true",
                "group" => options.groups = Some(ManifestOptions::list(&value)),
                "state" => options.state = Some(value),
                "tools" => options.tools = Some(ManifestOptions::list(&value)),
                other => panic!(
                    "conformance check {:?} uses unknown query key {other:?}",
                    self.name
                ),
            }
        }
        options
    }
}

/// The repository's copy of the cases: the tests never depend on anything outside the clone.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")
}

/// Where the team's shared cases live when the repository sits in the team's workspace; the
/// copy in [`dir`] must then equal them.
pub fn shared_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance")
}

/// The `.json` files of `dir`, sorted.
pub fn case_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    paths
}

pub fn load_all() -> Vec<Suite> {
    let paths = case_files(&dir());
    paths
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("cannot parse {}: {e}", path.display()))
        })
        .collect()
}
