//! The findings rules against a labelled corpus: poisoned definitions written after public
//! write-ups of tool poisoning (`tests/findings/poisoned.json`, each with its origin) and the
//! benign definitions of every real document and server the repository keeps (the OpenAPI
//! fixtures, the suite's MCP fixture server, the official MCP reference servers in
//! `tests/findings/benign/`). Recall on the poisoned must be at least 95%, false positives on
//! the benign at most 0.5%; the test prints both, with every miss and every false positive.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use toolgate::domain::findings::{self, Context, Finding, ToolNames};
use toolgate::ingest::openapi::{parse_document, tools_from_document};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One labelled definition; `others` are the names of the tools of the catalog's other
/// sources (what shadowing would name).
struct Case {
    label: String,
    definition: Value,
    name: String,
    method: Option<String>,
    others: ToolNames,
    hosts: Vec<String>,
}

impl Case {
    fn findings(&self) -> Vec<Finding> {
        let context = Context {
            name: &self.name,
            method: self.method.as_deref(),
            other_tools: &self.others,
            source_hosts: &self.hosts,
        };
        findings::check(&self.definition, &context)
    }
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn poisoned() -> Vec<Case> {
    let corpus = read_json(&root().join("tests/findings/poisoned.json"));
    corpus["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|entry| {
            let others = strings(&entry["other_tools"]);
            Case {
                label: entry["id"].as_str().expect("id").to_owned(),
                name: entry["definition"]["tool"]["name"]
                    .as_str()
                    .expect("name")
                    .to_owned(),
                method: None,
                others: ToolNames::new(others.iter().map(String::as_str)),
                hosts: strings(&entry["source_hosts"]),
                definition: entry["definition"].clone(),
            }
        })
        .collect()
}

/// Every tool of the captured MCP servers, each with its server's instructions, and the names
/// of its server's tools.
fn benign_mcp() -> Vec<(Case, Vec<String>)> {
    let mut cases = Vec::new();
    let dir = root().join("tests/findings/benign");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("benign captures")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    for file in files {
        let servers = read_json(&file);
        for server in servers.as_array().expect("servers") {
            let tools = server["tools"].as_array().expect("tools");
            let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
            for tool in tools {
                let mut definition = serde_json::Map::new();
                definition.insert("tool".to_owned(), tool.clone());
                if !server["instructions"].is_null() {
                    definition.insert("instructions".to_owned(), server["instructions"].clone());
                }
                let name = tool["name"].as_str().expect("name").to_owned();
                let case = Case {
                    label: format!("{} {name}", server["server"].as_str().unwrap_or("?")),
                    definition: Value::Object(definition),
                    name,
                    method: None,
                    others: ToolNames::default(),
                    hosts: Vec::new(),
                };
                cases.push((case, names.iter().map(|n| (*n).to_owned()).collect()));
            }
        }
    }
    cases
}

/// Every operation of the OpenAPI fixtures, as the importer defines it, and the names of its
/// document's tools.
fn benign_openapi() -> Vec<(Case, Vec<String>)> {
    let dir = root().join("tests/fixtures/openapi");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| {
            matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("json" | "yaml")
            )
        })
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read");
        let Ok(import) = parse_document(&text).and_then(|doc| tools_from_document(&doc)) else {
            continue; // Swagger 2: refused, nothing imported
        };
        let names: Vec<String> = import.tools.iter().map(|t| t.name.clone()).collect();
        let hosts: Vec<String> = import
            .tools
            .iter()
            .filter_map(|t| {
                t.definition
                    .pointer("/request/server")
                    .and_then(Value::as_str)
            })
            .filter_map(|url| reqwest::Url::parse(url).ok())
            .filter_map(|url| url.host_str().map(str::to_owned))
            .collect();
        for tool in &import.tools {
            let case = Case {
                label: format!(
                    "{} {}",
                    file.file_name().unwrap_or_default().to_string_lossy(),
                    tool.operation_id
                ),
                definition: (*tool.definition).clone(),
                name: tool.name.clone(),
                method: Some(tool.method.clone()),
                others: ToolNames::default(),
                hosts: hosts.clone(),
            };
            cases.push((case, names.clone()));
        }
    }
    cases
}

/// The benign definitions as one catalog: each checked against the names of every other
/// source's tools.
fn one_catalog(cases: Vec<(Case, Vec<String>)>) -> Vec<Case> {
    let all: Vec<String> = cases.iter().flat_map(|(_, names)| names.clone()).collect();
    cases
        .into_iter()
        .map(|(mut case, own)| {
            case.others = ToolNames::new(
                all.iter()
                    .filter(|name| !own.contains(name))
                    .map(String::as_str),
            );
            case
        })
        .collect()
}

#[test]
fn the_rules_find_the_poisoned_and_leave_the_benign() {
    let poisoned = poisoned();
    let benign = one_catalog(benign_openapi().into_iter().chain(benign_mcp()).collect());
    let mut by_rule: BTreeMap<&str, usize> = BTreeMap::new();
    let mut missed = Vec::new();
    for case in &poisoned {
        let found = case.findings();
        if found.is_empty() {
            missed.push(case.label.clone());
        }
        for finding in &found {
            *by_rule.entry(finding.rule.id()).or_default() += 1;
        }
    }
    let mut false_positives = Vec::new();
    for case in &benign {
        for finding in case.findings() {
            false_positives.push(format!(
                "{}: {} at {} ({})",
                case.label,
                finding.rule.id(),
                finding.path,
                finding.excerpt
            ));
        }
    }
    let recall = (poisoned.len() - missed.len()) as f64 / poisoned.len() as f64;
    let flagged = benign
        .iter()
        .filter(|case| !case.findings().is_empty())
        .count();
    let fp_rate = flagged as f64 / benign.len() as f64;
    eprintln!(
        "findings corpus: recall {}/{} = {:.1}% (missed: {missed:?}); false positives {flagged}/{} = {:.2}%; findings per rule on the poisoned: {by_rule:?}",
        poisoned.len() - missed.len(),
        poisoned.len(),
        recall * 100.0,
        benign.len(),
        fp_rate * 100.0,
    );
    for line in &false_positives {
        eprintln!("  false positive: {line}");
    }
    assert!(
        poisoned.len() >= 40,
        "the poisoned corpus holds {}",
        poisoned.len()
    );
    assert!(
        benign.len() >= 80,
        "the benign corpus holds {}",
        benign.len()
    );
    assert!(recall >= 0.95, "recall {recall:.3}: missed {missed:?}");
    assert!(
        fp_rate <= 0.005,
        "false positives {fp_rate:.4}: {false_positives:#?}"
    );
}
