//! What the findings of a refresh are checked against (the tool's context, the hosts a
//! source's definitions may name), and the quarantine of a new tool with a `high` finding.

use crate::domain::findings::{Context, Finding, Severity, ToolNames};
use crate::domain::model::{Catalog, Source, Tool};

use super::Import;

/// The findings context of a tool of this source named `name`.
pub(super) fn context<'c>(
    names: &'c ToolNames,
    hosts: &'c [String],
    name: &'c str,
    method: Option<&'c str>,
) -> Context<'c> {
    Context {
        name,
        method,
        other_tools: names,
        source_hosts: hosts,
    }
}

/// Disables a new tool with a `high` finding (`quarantined: <rule ids>`); whether it did.
pub(super) fn quarantine(tool: &mut Tool, findings: &[Finding]) -> bool {
    let mut rules: Vec<&str> = findings
        .iter()
        .filter(|f| f.severity == Severity::High)
        .map(|f| f.rule.id())
        .collect();
    rules.dedup();
    if rules.is_empty() {
        return false;
    }
    tool.enabled = false;
    tool.disabled_reason = Some(format!("quarantined: {}", rules.join(", ")));
    true
}

/// The hosts a source's definitions may name without a `foreign-url` finding: those of its
/// config's URLs, and of the servers its definitions call.
pub(super) fn source_hosts(catalog: &Catalog, source_id: &str, import: &Import) -> Vec<String> {
    source_hosts_of(catalog.sources.iter().find(|s| s.id == source_id), import)
}

/// [`source_hosts`] of `source` as given.
pub(super) fn source_hosts_of(source: Option<&Source>, import: &Import) -> Vec<String> {
    let mut urls: Vec<&str> = Vec::new();
    if let Some(source) = source {
        for key in ["url", "base_url"] {
            urls.extend(source.config.get(key).and_then(serde_json::Value::as_str));
        }
    }
    for tool in &import.tools {
        urls.extend(
            tool.definition
                .pointer("/request/server")
                .and_then(serde_json::Value::as_str),
        );
    }
    let mut hosts: Vec<String> = urls
        .into_iter()
        .filter_map(|url| reqwest::Url::parse(url).ok())
        .filter_map(|url| url.host_str().map(str::to_ascii_lowercase))
        .collect();
    hosts.sort();
    hosts.dedup();
    hosts
}
