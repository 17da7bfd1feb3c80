//! Applies one import to the catalog: the pure half of a refresh.
//!
//! Tools are matched by id (`{source_id}:{operation_id}`) and compared by the hash of their
//! definition (`crate::domain::definition`) against the **approved** one (docs/api.md, "Approved
//! tool definitions"):
//! - unchanged upstream → nothing (a pending revision of the tool is withdrawn);
//! - changed upstream → a pending `changed` revision; the tool keeps its approved definition
//!   (pinning `hold`, `hide`), or takes the upstream's at once (`warn`, recorded as approved by
//!   `refresh`): method, path, tags, schemas, and `name`/`description` unless an admin
//!   overrode them;
//! - new upstream → a pending `new` revision (the tool is not in the catalog until approved), or
//!   created at once under `warn` and when the admin creates the source, disabled as
//!   `quarantined: <rule ids>` if the definition has a `high` finding;
//! - gone upstream → a pending `removed` revision (the tool is served, but not called, until
//!   approved), or deprecated at once under `warn`;
//! - a gone tool and a new one that is the same but for the name, or nearly the same
//!   (`renames.rs`) → a pending `renamed` revision, whatever the pinning;
//! - marked deprecated upstream → deprecated (fewer tools need no approval); back (and not
//!   deprecated there) with the approved definition → restored.
//!
//! A definition an admin rejected is not proposed again until the upstream changes it again.
//! Operations the importer skipped or cut are counted and listed in the summary: a skipped
//! operation's tool, if an earlier import made one, is gone like any other.
//!
//! Admin-set fields are never touched: `enabled`, `label_ids`, states, version, and a `name` or
//! `description` that differs from [`Imported`]'s record of what the import last set. Tools of
//! the source without such a record were written by hand and are left alone, except that one
//! whose id an import now produces is adopted through a `changed` revision.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::renames;
use super::revisions::{Proposal, Proposed, Revisions};
use super::{Import, ImportIssue, ImportedTool, IssueOutcome};
use crate::domain::definition::{Canonical, Stored};
use crate::domain::findings::{Severity, ToolNames};
use crate::domain::model::{Catalog, Drift, Imported, Tool};
use crate::domain::revision::{REFRESH_ACTOR, RevisionKind};
use crate::domain::source_config::Pinning;
use crate::domain::stamp::Stamp;

/// What a refresh did: the body of `POST /admin/sources/{id}/refresh` and the `after` of its
/// audit record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct RefreshSummary {
    pub source_id: String,
    /// How many tools the upstream defines now.
    pub imported: usize,
    pub created: usize,
    pub updated: usize,
    pub deprecated: usize,
    pub restored: usize,
    pub unchanged: usize,
    /// Revisions this refresh left pending, for an admin to approve or reject.
    pub pending: usize,
    /// Tools created disabled because their definition has a `high` finding.
    pub quarantined: usize,
    /// Operations the upstream defines that were not imported (`issues` says why).
    pub skipped: usize,
    /// Operations imported with less than the upstream defines (`issues` says what).
    pub cut: usize,
    /// Per operation, what was skipped or cut and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<ImportIssue>,
}

impl RefreshSummary {
    /// A summary of applying `import` to `source_id` before any tool is compared: what the
    /// upstream defines, and what the importer skipped or cut.
    fn of_import(source_id: &str, import: &Import) -> RefreshSummary {
        let count = |outcome| {
            import
                .issues
                .iter()
                .filter(|issue| issue.outcome == outcome)
                .count()
        };
        RefreshSummary {
            source_id: source_id.to_owned(),
            imported: import.tools.len(),
            skipped: count(IssueOutcome::Skipped),
            cut: count(IssueOutcome::Cut),
            issues: import.issues.clone(),
            ..RefreshSummary::default()
        }
    }

    /// Whether the refresh changes the catalog.
    pub fn changed(&self) -> bool {
        self.created + self.updated + self.deprecated + self.restored + self.pending > 0
    }
}

/// An import that cannot be applied: nothing of it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    #[error("the import defines tool '{id}', but that id belongs to a tool of source '{owner}'")]
    IdTaken { id: String, owner: String },
}

/// Who approves what an import brings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// An admin's write of the source (creating it, or changing its config): the admin
    /// approves what it imports, except that new tools with a `high` finding are created
    /// disabled (`quarantined: <rule ids>`), changed tools with one and renames are left
    /// pending.
    Admin,
    /// A refresh: what changed becomes a revision, handled as the source's pinning says.
    Refresh(Pinning),
}

impl Approval {
    /// Who approves what changed as it is found: the admin who writes the source, or
    /// `refresh` under `warn`; `None` when it waits for an admin.
    fn approver(self, stamp: &Stamp) -> Option<&str> {
        match self {
            Approval::Admin => Some(&stamp.by),
            Approval::Refresh(Pinning::Warn) => Some(REFRESH_ACTOR),
            Approval::Refresh(_) => None,
        }
    }
}

/// Brings the tools of `source_id` in `catalog` in line with `import`, as `approval` allows:
/// definitions an admin has not approved become pending revisions (`catalog.revisions`) and
/// the tools keep their approved definitions.
///
/// Fails when an imported id is taken by a tool of another source; the catalog may then be
/// half-changed, so callers apply imports to a copy (a catalog write's).
pub fn apply(
    catalog: &mut Catalog,
    source_id: &str,
    import: &Import,
    stamp: &Stamp,
    approval: Approval,
) -> Result<RefreshSummary, ApplyError> {
    apply_prepared(
        catalog,
        source_id,
        import,
        &Prepared::default(),
        stamp,
        approval,
    )
}

/// [`apply`], with what was worked out of `import` before the write ([`Prepared::of`]).
pub fn apply_prepared(
    catalog: &mut Catalog,
    source_id: &str,
    import: &Import,
    prepared: &Prepared,
    stamp: &Stamp,
    approval: Approval,
) -> Result<RefreshSummary, ApplyError> {
    // Shadowing is naming another source's tool; a server's own tools name each other.
    let names = ToolNames::new(
        catalog
            .tools
            .iter()
            .filter(|t| t.source_id != source_id)
            .map(|t| t.name.as_str()),
    );
    let hosts = source_hosts(catalog, source_id, import);
    let mut run = Run {
        source_id,
        stamp,
        approval,
        findings_hold: prepared.holds_for(&names, &hosts),
        prepared,
        names,
        hosts,
        revisions: Revisions::take(&mut catalog.revisions, source_id),
        canonical: Canonical::default(),
        summary: RefreshSummary::of_import(source_id, import),
    };
    let result = run.apply(catalog, import);
    catalog.revisions = run.revisions.into_vec();
    result.map(|()| run.summary)
}

/// One refresh under way.
struct Run<'r> {
    source_id: &'r str,
    stamp: &'r Stamp,
    approval: Approval,
    prepared: &'r Prepared,
    /// Whether the prepared findings were made against `names` and `hosts`.
    findings_hold: bool,
    names: ToolNames,
    hosts: Vec<String>,
    revisions: Revisions,
    /// Canonical texts of the import's shared schemas.
    canonical: Canonical,
    summary: RefreshSummary,
}

impl Run<'_> {
    fn apply(&mut self, catalog: &mut Catalog, import: &Import) -> Result<(), ApplyError> {
        let positions: HashMap<String, usize> = catalog
            .tools
            .iter()
            .enumerate()
            .map(|(at, tool)| (tool.id.clone(), at))
            .collect();
        let mut present = HashSet::new();
        let mut fresh = Vec::new();
        // The import position of each of `fresh`.
        let mut fresh_index = Vec::new();
        for (index, upstream) in import.tools.iter().enumerate() {
            let upstream = bounded(upstream);
            let id = Tool::default_id(self.source_id, &upstream.operation_id);
            present.insert(id.clone());
            match positions.get(&id) {
                None => {
                    fresh.push((id, upstream));
                    fresh_index.push(index);
                }
                Some(&at) => self.existing(&mut catalog.tools[at], &upstream, index)?,
            }
        }
        let gone: Vec<usize> = (0..catalog.tools.len())
            .filter(|&at| {
                let tool = &catalog.tools[at];
                tool.source_id == self.source_id
                    && tool.imported.is_some()
                    && !present.contains(&tool.id)
            })
            .collect();
        let prepared = self.prepared;
        let pairs = renames::pair(&catalog.tools, &gone, &fresh, &|at| {
            prepared.shape(fresh_index[at])
        });
        for (at, upstream) in fresh.iter().enumerate() {
            match pairs.previous_of(at) {
                Some(previous) => self.renamed(catalog, previous, upstream, fresh_index[at]),
                None => self.new_tool(catalog, upstream, fresh_index[at], pairs.unsure),
            }
        }
        for at in gone {
            if !pairs.is_paired(at) {
                self.gone(&mut catalog.tools[at]);
            }
        }
        self.revisions.withdraw_moot(&present);
        Ok(())
    }

    /// A tool the catalog has: unchanged, restored or deprecated upstream, changed.
    fn existing(
        &mut self,
        tool: &mut Tool,
        upstream: &ImportedTool,
        index: usize,
    ) -> Result<(), ApplyError> {
        if tool.source_id != self.source_id {
            return Err(ApplyError::IdTaken {
                id: tool.id.clone(),
                owner: tool.source_id.clone(),
            });
        }
        let hash = match self.prepared.hash(index) {
            Some(hash) => hash,
            None => self.canonical.hash(upstream),
        };
        let record = tool.imported.as_ref();
        let approved = record.and_then(|r| r.definition_hash.as_deref());
        // Imported before definitions were pinned, and the upstream still what was imported.
        let adopted =
            approved.is_none() && record.is_some_and(|r| r.content_hash == upstream.content_hash());
        if approved == Some(hash.as_str()) || adopted {
            self.unchanged(tool, upstream, hash);
            return Ok(());
        }
        self.changed(tool, upstream, hash, index);
        Ok(())
    }

    /// The upstream defines what was approved: a pending revision is withdrawn, and the
    /// upstream's `deprecated` flag followed (fewer tools, or the approved one back).
    fn unchanged(&mut self, tool: &mut Tool, upstream: &ImportedTool, hash: String) {
        let canonical = &mut self.canonical;
        let record = tool
            .imported
            .get_or_insert_with(|| record_of(upstream, canonical));
        let mut touched = record.drift.take().is_some();
        if record.definition_hash.is_none() {
            record.definition_hash = Some(hash);
            record.definition = Some(canonical.stored(upstream).0);
        }
        touched |= self.revisions.withdraw(&tool.id);
        let restored = tool.deprecated && !upstream.deprecated;
        let deprecated = !tool.deprecated && upstream.deprecated;
        tool.deprecated = upstream.deprecated;
        if restored {
            self.summary.restored += 1;
        } else if deprecated {
            self.summary.deprecated += 1;
        } else {
            self.summary.unchanged += 1;
        }
        if restored || deprecated || touched {
            self.stamp.touched(tool);
        }
    }

    /// The upstream defines the tool otherwise: applied at once under `warn`, else pending.
    fn changed(&mut self, tool: &mut Tool, upstream: &ImportedTool, hash: String, index: usize) {
        let record = tool.imported.clone();
        let approved_hash = record.as_ref().and_then(|r| r.definition_hash.clone());
        let approved_definition = record
            .as_ref()
            .and_then(|r| r.definition.as_ref())
            .map(Stored::value);
        let proposal = Proposal {
            kind: RevisionKind::Changed,
            tool_id: &tool.id,
            previous_tool_id: None,
            approved: approved_hash
                .as_deref()
                .map(|h| (h, approved_definition.as_ref())),
            upstream: Some(upstream),
        };
        let context = context(&self.names, &self.hosts, &tool.name, tool.method.as_deref());
        let (prepared, hold) = (self.prepared, self.findings_hold);
        let findings = || prepared.findings_of(hold, index, upstream, &context);
        let mut approver = self.approval.approver(self.stamp);
        let mut found = None;
        if self.approval == Approval::Admin {
            // An admin's write approves a changed tool only as it would create a new one: a
            // `high` finding leaves it pending, for an approval that acknowledges it.
            let all = findings();
            if all.iter().any(|f| f.severity == Severity::High) {
                approver = None;
            }
            found = Some(all);
        }
        let proposed = self.revisions.propose(
            &proposal,
            || found.unwrap_or_else(findings),
            self.stamp,
            approver,
        );
        match proposed {
            Proposed::Approved => {
                take_upstream(tool, upstream, record_of(upstream, &mut self.canonical));
                tool.deprecated = upstream.deprecated;
                self.summary.updated += 1;
            }
            Proposed::Pending | Proposed::Rejected => {
                // A hand-written tool the import adopts gets a record with nothing approved:
                // the upstream's definition is what the pending revision proposes.
                let record = tool.imported.get_or_insert_with(|| Imported {
                    content_hash: String::new(),
                    name: upstream.name.clone(),
                    description: upstream.description.clone(),
                    definition_hash: None,
                    definition: None,
                    drift: None,
                });
                let drift = Drift {
                    upstream_hash: Some(hash),
                    rejected: proposed == Proposed::Rejected,
                };
                if record.drift.as_ref() == Some(&drift) {
                    self.summary.unchanged += 1;
                    return;
                }
                record.drift = Some(drift);
                if proposed == Proposed::Pending {
                    self.summary.pending += 1;
                }
            }
        }
        self.stamp.touched(tool);
    }

    /// An imported tool the upstream no longer defines.
    fn gone(&mut self, tool: &mut Tool) {
        let record = tool.imported.clone().unwrap_or_else(|| Imported {
            content_hash: String::new(),
            name: tool.name.clone(),
            description: tool.description.clone(),
            definition_hash: None,
            definition: None,
            drift: None,
        });
        let approved_definition = record.definition.as_ref().map(Stored::value);
        let already = record
            .drift
            .as_ref()
            .is_some_and(|d| d.upstream_hash.is_none());
        if already || (tool.deprecated && record.drift.is_none()) {
            return;
        }
        let proposal = Proposal {
            kind: RevisionKind::Removed,
            tool_id: &tool.id,
            previous_tool_id: None,
            approved: record
                .definition_hash
                .as_deref()
                .map(|h| (h, approved_definition.as_ref())),
            upstream: None,
        };
        let proposed = self.revisions.propose(
            &proposal,
            Vec::new,
            self.stamp,
            self.approval.approver(self.stamp),
        );
        let imported = tool.imported.get_or_insert(record.clone());
        if proposed == Proposed::Approved {
            imported.drift = None;
            tool.deprecated = true;
            self.summary.deprecated += 1;
        } else {
            imported.drift = Some(Drift {
                upstream_hash: None,
                rejected: proposed == Proposed::Rejected,
            });
            self.summary.pending += usize::from(proposed == Proposed::Pending);
        }
        self.stamp.touched(tool);
    }

    /// A tool the catalog does not have: created at once when an admin writes the source or the
    /// pinning is `warn` (quarantined with a `high` finding), else pending.
    ///
    /// `unsure`: renames could not all be looked for (too many tools came and went at once);
    /// then nothing new is approved by the refresh.
    fn new_tool(
        &mut self,
        catalog: &mut Catalog,
        (id, upstream): &(String, ImportedTool),
        index: usize,
        unsure: bool,
    ) {
        let approver = if unsure {
            None
        } else {
            self.approval.approver(self.stamp)
        };
        let proposal = Proposal {
            kind: RevisionKind::New,
            tool_id: id,
            previous_tool_id: None,
            approved: None,
            upstream: Some(upstream),
        };
        let context = context(
            &self.names,
            &self.hosts,
            &upstream.name,
            Some(&upstream.method),
        );
        let (prepared, hold) = (self.prepared, self.findings_hold);
        let findings = || prepared.findings_of(hold, index, upstream, &context);
        // What an admin's write imports is approved without a revision each (a new source of
        // 10,000 tools is one approval, not 10,000 records).
        let proposed = if self.approval == Approval::Admin {
            Proposed::Approved
        } else {
            self.revisions
                .propose(&proposal, findings, self.stamp, approver)
        };
        match proposed {
            Proposed::Approved => {
                let mut tool = new_tool(
                    id,
                    self.source_id,
                    upstream,
                    self.stamp,
                    &mut self.canonical,
                );
                if quarantine(&mut tool, &findings()) {
                    self.summary.quarantined += 1;
                }
                catalog.tools.push(tool);
                self.summary.created += 1;
                self.summary.deprecated += usize::from(upstream.deprecated);
            }
            Proposed::Pending => self.summary.pending += 1,
            Proposed::Rejected => {}
        }
    }

    /// A new tool that is a gone one renamed: always pending, whatever the pinning.
    fn renamed(
        &mut self,
        catalog: &mut Catalog,
        previous: usize,
        (id, upstream): &(String, ImportedTool),
        index: usize,
    ) {
        let old = &catalog.tools[previous];
        let record = old.imported.clone();
        let approved_hash = record.as_ref().and_then(|r| r.definition_hash.clone());
        let approved_definition = record
            .as_ref()
            .and_then(|r| r.definition.as_ref())
            .map(Stored::value);
        let old_id = old.id.clone();
        let proposal = Proposal {
            kind: RevisionKind::Renamed,
            tool_id: id,
            previous_tool_id: Some(&old_id),
            approved: approved_hash
                .as_deref()
                .map(|h| (h, approved_definition.as_ref())),
            upstream: Some(upstream),
        };
        let context = context(
            &self.names,
            &self.hosts,
            &upstream.name,
            Some(&upstream.method),
        );
        let (prepared, hold) = (self.prepared, self.findings_hold);
        let findings = || prepared.findings_of(hold, index, upstream, &context);
        let proposed = self
            .revisions
            .propose(&proposal, findings, self.stamp, None);
        self.summary.pending += usize::from(proposed == Proposed::Pending);
        let old = &mut catalog.tools[previous];
        let drift = Some(Drift {
            upstream_hash: None,
            rejected: proposed == Proposed::Rejected,
        });
        if let Some(imported) = old.imported.as_mut()
            && imported.drift != drift
        {
            imported.drift = drift;
            self.stamp.touched(old);
        }
    }
}

mod findings_context;
mod prepared;
mod upstream;

use self::findings_context::{context, quarantine, source_hosts, source_hosts_of};
pub use self::prepared::Prepared;
use self::upstream::bounded;
pub(crate) use self::upstream::{new_tool, record_of, take_upstream};

#[cfg(test)]
mod pinning_tests;
#[cfg(test)]
mod prepared_tests;
#[cfg(test)]
mod tests;
