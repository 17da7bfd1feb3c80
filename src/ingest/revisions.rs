//! The revisions of one source's tools while a refresh runs: indexed by tool id, so that what
//! a refresh asks of them (is there one pending? was this definition rejected?) costs a lookup,
//! not a scan of every revision of the catalog.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use crate::domain::definition;
use crate::domain::findings::Finding;
use crate::domain::imported::ImportedTool;
use crate::domain::revision::{self, MAX_DECIDED_PER_TOOL, Revision, RevisionKind, RevisionStatus};
use crate::domain::stamp::Stamp;

/// What a revision proposes, and against what.
pub(super) struct Proposal<'p> {
    pub kind: RevisionKind,
    pub tool_id: &'p str,
    pub previous_tool_id: Option<&'p str>,
    /// The approved definition's hash and the definition (none for a new tool).
    pub approved: Option<(&'p str, Option<&'p Value>)>,
    /// The upstream's tool (none for a removal).
    pub upstream: Option<&'p ImportedTool>,
}

/// What became of a proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Proposed {
    /// A pending revision now stands for it (new, or the one already pending).
    Pending,
    /// Recorded as approved (by an admin's write, or under pinning `warn`).
    Approved,
    /// An admin rejected this very definition: not proposed again.
    Rejected,
}

/// The catalog's revisions of one refresh, by tool id; the others are kept as they were.
pub(super) struct Revisions {
    by_tool: HashMap<String, Vec<Revision>>,
    /// Revisions of other sources, untouched.
    others: Vec<Revision>,
    source_id: String,
}

impl Revisions {
    pub(super) fn take(all: &mut Vec<Revision>, source_id: &str) -> Revisions {
        let mut by_tool: HashMap<String, Vec<Revision>> = HashMap::new();
        let mut others = Vec::new();
        for revision in std::mem::take(all) {
            if revision.source_id == source_id {
                by_tool
                    .entry(revision.tool_id.clone())
                    .or_default()
                    .push(revision);
            } else {
                others.push(revision);
            }
        }
        Revisions {
            by_tool,
            others,
            source_id: source_id.to_owned(),
        }
    }

    /// All revisions again, for the catalog.
    pub(super) fn into_vec(self) -> Vec<Revision> {
        let mut all = self.others;
        all.extend(self.by_tool.into_values().flatten());
        all
    }

    /// Drops the pending revision of `tool_id` (the upstream went back to the approved
    /// definition); whether there was one.
    pub(super) fn withdraw(&mut self, tool_id: &str) -> bool {
        let Some(revisions) = self.by_tool.get_mut(tool_id) else {
            return false;
        };
        let before = revisions.len();
        revisions.retain(|r| !r.is_pending());
        before != revisions.len()
    }

    /// Drops the pending revisions the upstream made moot: a new, changed or renamed tool it no
    /// longer defines (a changed one that is now the old half of a rename included), a removal
    /// of a tool it defines again, and a rename whose old tool it defines again. Approving one
    /// would serve a definition the upstream does not have, or take away one it has.
    pub(super) fn withdraw_moot(&mut self, present: &HashSet<String>) {
        for revisions in self.by_tool.values_mut() {
            revisions.retain(|r| {
                let moot = match r.kind {
                    RevisionKind::New | RevisionKind::Changed => !present.contains(&r.tool_id),
                    RevisionKind::Removed => present.contains(&r.tool_id),
                    RevisionKind::Renamed => {
                        !present.contains(&r.tool_id)
                            || r.previous_tool_id
                                .as_ref()
                                .is_some_and(|p| present.contains(p))
                    }
                };
                !(r.is_pending() && moot)
            });
        }
    }

    /// Whether the last decided revision of `tool_id` rejected exactly this upstream `hash`
    /// (`None`: the removal), with nothing pending since.
    fn rejected(&self, tool_id: &str, kind: RevisionKind, hash: Option<&str>) -> bool {
        let Some(revisions) = self.by_tool.get(tool_id) else {
            return false;
        };
        revisions
            .iter()
            .filter(|r| !r.is_pending())
            .max_by_key(|r| r.decided_at)
            .is_some_and(|last| {
                last.status == RevisionStatus::Rejected
                    && last.kind == kind
                    && last.hash.as_deref() == hash
            })
    }

    /// Records `proposal`: pending, or approved by `approver` when there is one (the admin who
    /// wrote the source, or `refresh` under `warn`). A pending revision of the tool for another
    /// definition is replaced; one for the same is kept.
    pub(super) fn propose(
        &mut self,
        proposal: &Proposal<'_>,
        findings: impl FnOnce() -> Vec<Finding>,
        stamp: &Stamp,
        approver: Option<&str>,
    ) -> Proposed {
        let whole = proposal.upstream.map(|u| Arc::new(u.definition_value()));
        let hash = whole.as_deref().map(definition::hash);
        if self.rejected(proposal.tool_id, proposal.kind, hash.as_deref()) {
            // What the upstream defines now was rejected: a revision pending for what it
            // defined before is moot (approving it would serve what it no longer defines).
            self.withdraw(proposal.tool_id);
            return Proposed::Rejected;
        }
        let revisions = self.by_tool.entry(proposal.tool_id.to_owned()).or_default();
        if let Some(pending) = revisions.iter().find(|r| r.is_pending())
            && pending.hash == hash
            && pending.kind == proposal.kind
            && pending.previous_tool_id.as_deref() == proposal.previous_tool_id
        {
            return Proposed::Pending;
        }
        revisions.retain(|r| !r.is_pending());
        let mut revision = new_revision(proposal, whole, hash, findings(), stamp, &self.source_id);
        if let Some(approver) = approver {
            revision.status = RevisionStatus::Approved;
            revision.decided_by = Some(approver.to_owned());
            revision.decided_at = Some(stamp.at);
        }
        revisions.push(revision);
        prune(revisions);
        if approver.is_some() {
            Proposed::Approved
        } else {
            Proposed::Pending
        }
    }
}

/// A pending revision of `proposal`, whose whole upstream definition is `definition` (with
/// `findings`, worked out by the caller).
fn new_revision(
    proposal: &Proposal<'_>,
    definition: Option<Arc<serde_json::Value>>,
    hash: Option<String>,
    findings: Vec<Finding>,
    stamp: &Stamp,
    source_id: &str,
) -> Revision {
    let approved_definition = proposal.approved.and_then(|(_, d)| d);
    Revision {
        id: revision::revision_id(proposal.tool_id, proposal.kind, hash.as_deref(), stamp.at),
        tool_id: proposal.tool_id.to_owned(),
        source_id: source_id.to_owned(),
        kind: proposal.kind,
        previous_tool_id: proposal.previous_tool_id.map(str::to_owned),
        previous_hash: proposal.approved.map(|(h, _)| h.to_owned()),
        hash,
        diff: Arc::new(revision::diff(approved_definition, definition.as_deref())),
        findings,
        detected_at: stamp.at,
        status: RevisionStatus::Pending,
        decided_by: None,
        decided_at: None,
        reason: None,
        acknowledged: Vec::new(),
        definition,
        proposed: proposal.upstream.cloned(),
    }
}

/// Keeps the newest [`MAX_DECIDED_PER_TOOL`] decided revisions of one tool.
fn prune(revisions: &mut Vec<Revision>) {
    let decided = revisions.iter().filter(|r| !r.is_pending()).count();
    if decided <= MAX_DECIDED_PER_TOOL {
        return;
    }
    revisions.sort_by_key(|r| (r.is_pending(), r.decided_at));
    revisions.drain(..decided - MAX_DECIDED_PER_TOOL);
}
