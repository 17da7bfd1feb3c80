//! What a refresh works out before it takes the catalog's write lock: the hash of every
//! imported definition, and the findings and rename shape of each one that is new or changed
//! against the catalog as it was then. Every admin write waits while a refresh holds the lock,
//! and a hostile upstream chooses how big its definitions are; what is worked out here costs
//! the writers nothing.
//!
//! The write applies the import to the catalog as it is at the write, which may have moved
//! on: a hash and a shape depend on the definition alone and are always used; findings depend
//! on the catalog too (the other sources' tool names, the source's hosts, the tool's own name
//! and method) and are used only when those are what they were, else computed again.

use crate::domain::definition::{Canonical, Shape};
use crate::domain::findings::{Context, Finding, ToolNames};
use crate::domain::model::{Catalog, Source};

use super::{Import, ImportedTool, bounded, source_hosts_of};

/// The prepared half of a refresh of one import (aligned with `Import::tools`).
#[derive(Debug, Default)]
pub struct Prepared {
    names: ToolNames,
    hosts: Vec<String>,
    tools: Vec<PreparedTool>,
}

#[derive(Debug, Default)]
struct PreparedTool {
    hash: Option<String>,
    /// The findings, with the name and method of the context they were made in.
    findings: Option<(String, Option<String>, Vec<Finding>)>,
    /// The rename shape of a tool the catalog did not have.
    shape: Option<Shape>,
}

impl Prepared {
    /// Works out what [`Prepared`] holds for `import` of `source` against `catalog` (the
    /// current snapshot's, read outside any lock); `source` as it will be written (its URLs
    /// are the hosts its definitions may name).
    pub fn of(catalog: &Catalog, source: &Source, import: &Import) -> Prepared {
        let names = ToolNames::new(
            catalog
                .tools
                .iter()
                .filter(|t| t.source_id != source.id)
                .map(|t| t.name.as_str()),
        );
        let hosts = source_hosts_of(Some(source), import);
        let positions: std::collections::HashMap<&str, usize> = catalog
            .tools
            .iter()
            .enumerate()
            .map(|(at, tool)| (tool.id.as_str(), at))
            .collect();
        let mut canonical = Canonical::default();
        let mut tools = Vec::with_capacity(import.tools.len());
        for upstream in &import.tools {
            let upstream = bounded(upstream);
            let hash = canonical.hash(&upstream);
            let id = crate::domain::model::Tool::default_id(&source.id, &upstream.operation_id);
            let existing = positions.get(id.as_str()).map(|&at| &catalog.tools[at]);
            let approved = existing
                .and_then(|t| t.imported.as_ref())
                .and_then(|r| r.definition_hash.as_deref());
            let mut prepared = PreparedTool::default();
            if approved != Some(hash.as_str()) {
                let (name, method) = match existing {
                    Some(tool) => (tool.name.clone(), tool.method.clone()),
                    None => (upstream.name.clone(), Some(upstream.method.clone())),
                };
                let context = Context {
                    name: &name,
                    method: method.as_deref(),
                    other_tools: &names,
                    source_hosts: &hosts,
                };
                let findings = upstream.findings(&context);
                prepared.findings = Some((name, method, findings));
                if existing.is_none() {
                    prepared.shape = Some(Shape::of(&upstream.definition_value()));
                }
            }
            prepared.hash = Some(hash);
            tools.push(prepared);
        }
        Prepared {
            names,
            hosts,
            tools,
        }
    }

    /// The hash of the definition of import tool `index`, when worked out.
    pub(super) fn hash(&self, index: usize) -> Option<String> {
        self.tools.get(index)?.hash.clone()
    }

    /// The rename shape of import tool `index`, when worked out.
    pub(super) fn shape(&self, index: usize) -> Option<Shape> {
        self.tools.get(index)?.shape.clone()
    }

    /// Whether findings worked out against these names and hosts hold for a write that sees
    /// `names` and `hosts` (checked once per write, not per tool).
    pub(super) fn holds_for(&self, names: &ToolNames, hosts: &[String]) -> bool {
        self.hosts.as_slice() == hosts && &self.names == names
    }

    /// The findings of import tool `index` in `context`, when they were worked out for the
    /// same tool name and method (the caller has checked [`Prepared::holds_for`]).
    fn findings(&self, index: usize, context: &Context<'_>) -> Option<&[Finding]> {
        let (name, method, findings) = self.tools.get(index)?.findings.as_ref()?;
        let same = name == context.name && method.as_deref() == context.method;
        same.then_some(findings.as_slice())
    }

    /// The findings of `upstream` (import tool `index`) in `context`: the prepared ones when
    /// `hold` ([`Prepared::holds_for`]) and they were made for the same name and method, else
    /// computed now.
    pub(super) fn findings_of(
        &self,
        hold: bool,
        index: usize,
        upstream: &ImportedTool,
        context: &Context<'_>,
    ) -> Vec<Finding> {
        match self.findings(index, context).filter(|_| hold) {
            Some(findings) => findings.to_vec(),
            None => upstream.findings(context),
        }
    }
}
