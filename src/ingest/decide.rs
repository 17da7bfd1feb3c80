//! An admin's decision on a pending revision (docs/api.md, "Approved tool definitions"): pure, applied
//! to a copy of the catalog by one catalog write, so that an approval is one revision and one
//! audit record.
//!
//! - Approving `changed` gives the tool the upstream's definition (an admin's `name` or
//!   `description` override stays); `new` creates the tool; `removed` deprecates it; `renamed`
//!   creates the tool under its new name with the old one's labels, enabled state and group
//!   memberships (explicit and excluded), and deprecates the old one.
//! - Rejecting keeps the approved definition (or keeps a new tool out); the refresh does not
//!   propose the same upstream definition again.

use crate::domain::definition::Canonical;
use crate::domain::imported::ImportedTool;
use crate::domain::model::{Catalog, Tool};
use crate::domain::revision::{Revision, RevisionKind, RevisionStatus};
use crate::domain::stamp::Stamp;

use super::refresh::{new_tool, record_of, take_upstream};

/// What the admin decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Approve, acknowledging these `high` rule ids.
    Approve {
        acknowledge: Vec<String>,
    },
    Reject,
}

/// Why a decision cannot be applied; nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecideError {
    #[error("revision '{0}' does not exist")]
    NotFound(String),
    #[error("revision '{id}' is already {status}: only a pending revision can be decided")]
    Decided { id: String, status: &'static str },
    /// Approving needs these `high` rule ids in `acknowledge`.
    #[error("the definition has high findings that must be acknowledged: {}", .0.join(", "))]
    Unacknowledged(Vec<&'static str>),
    /// The catalog moved in a way the revision no longer fits (its tool deleted, its new id taken).
    #[error("{0}")]
    Conflict(String),
}

/// Applies `decision` to revision `id` of `catalog`; the revision as decided.
pub fn decide(
    catalog: &mut Catalog,
    id: &str,
    decision: &Decision,
    reason: Option<String>,
    stamp: &Stamp,
) -> Result<Revision, DecideError> {
    let at = catalog
        .revisions
        .iter()
        .position(|r| r.id == id)
        .ok_or_else(|| DecideError::NotFound(id.to_owned()))?;
    let revision = catalog.revisions[at].clone();
    if revision.status != RevisionStatus::Pending {
        let status = match revision.status {
            RevisionStatus::Approved => "approved",
            _ => "rejected",
        };
        return Err(DecideError::Decided {
            id: id.to_owned(),
            status,
        });
    }
    let status = match decision {
        Decision::Approve { acknowledge } => {
            let missing: Vec<&'static str> = revision
                .high_rules()
                .into_iter()
                .filter(|rule| !acknowledge.iter().any(|a| a == rule))
                .collect();
            if !missing.is_empty() {
                return Err(DecideError::Unacknowledged(missing));
            }
            approve(catalog, &revision, stamp)?;
            RevisionStatus::Approved
        }
        Decision::Reject => {
            reject(catalog, &revision, stamp);
            RevisionStatus::Rejected
        }
    };
    let decided = &mut catalog.revisions[at];
    decided.status = status;
    decided.decided_by = Some(stamp.by.clone());
    decided.decided_at = Some(stamp.at);
    decided.reason = reason;
    if let Decision::Approve { acknowledge } = decision {
        decided.acknowledged = acknowledge.clone();
    }
    Ok(decided.clone())
}

fn approve(catalog: &mut Catalog, revision: &Revision, stamp: &Stamp) -> Result<(), DecideError> {
    match revision.kind {
        RevisionKind::Changed => {
            let upstream = proposed(revision)?;
            let tool = tool_mut(catalog, &revision.tool_id)?;
            take_upstream(
                tool,
                &upstream,
                record_of(&upstream, &mut Canonical::default()),
            );
            tool.deprecated = upstream.deprecated;
            stamp.touched(tool);
        }
        RevisionKind::Removed => {
            let tool = tool_mut(catalog, &revision.tool_id)?;
            if let Some(imported) = tool.imported.as_mut() {
                imported.drift = None;
            }
            tool.deprecated = true;
            stamp.touched(tool);
        }
        RevisionKind::New => {
            let upstream = proposed(revision)?;
            free(catalog, &revision.tool_id)?;
            catalog.tools.push(new_tool(
                &revision.tool_id,
                &revision.source_id,
                &upstream,
                stamp,
                &mut Canonical::default(),
            ));
        }
        RevisionKind::Renamed => rename(catalog, revision, stamp)?,
    }
    Ok(())
}

/// The renamed tool takes the old one's place: its labels, enabled state and groups.
fn rename(catalog: &mut Catalog, revision: &Revision, stamp: &Stamp) -> Result<(), DecideError> {
    let upstream = proposed(revision)?;
    let previous_id = revision
        .previous_tool_id
        .clone()
        .ok_or_else(|| DecideError::Conflict("the rename names no previous tool".to_owned()))?;
    free(catalog, &revision.tool_id)?;
    let previous = tool_mut(catalog, &previous_id)?;
    let mut tool = new_tool(
        &revision.tool_id,
        &revision.source_id,
        &upstream,
        stamp,
        &mut Canonical::default(),
    );
    tool.label_ids = previous.label_ids.clone();
    tool.enabled = previous.enabled;
    tool.disabled_reason = previous.disabled_reason.clone();
    if let Some(imported) = previous.imported.as_mut() {
        imported.drift = None;
    }
    previous.deprecated = true;
    stamp.touched(previous);
    catalog.tools.push(tool);
    for group in &mut catalog.groups {
        let mut touched = false;
        for ids in [&mut group.explicit_tool_ids, &mut group.excluded_tool_ids] {
            if ids.contains(&previous_id) && !ids.contains(&revision.tool_id) {
                ids.push(revision.tool_id.clone());
                touched = true;
            }
        }
        if touched {
            stamp.touched(group);
        }
    }
    Ok(())
}

fn reject(catalog: &mut Catalog, revision: &Revision, stamp: &Stamp) {
    let held = match revision.kind {
        RevisionKind::Changed | RevisionKind::Removed => Some(&revision.tool_id),
        RevisionKind::Renamed => revision.previous_tool_id.as_ref(),
        RevisionKind::New => None,
    };
    let Some(tool) = held.and_then(|id| catalog.tools.iter_mut().find(|t| &t.id == id)) else {
        return;
    };
    if let Some(drift) = tool.imported.as_mut().and_then(|i| i.drift.as_mut()) {
        drift.rejected = true;
        stamp.touched(tool);
    }
}

/// The upstream tool a revision proposes, with its definition (kept apart in storage).
fn proposed(revision: &Revision) -> Result<ImportedTool, DecideError> {
    let mut upstream = revision.proposed.clone().ok_or_else(|| {
        DecideError::Conflict(format!("revision '{}' proposes no definition", revision.id))
    })?;
    if let Some(definition) = &revision.definition {
        upstream.definition = definition.clone();
        upstream.schemas_apart = false;
    }
    Ok(upstream)
}

fn tool_mut<'c>(catalog: &'c mut Catalog, id: &str) -> Result<&'c mut Tool, DecideError> {
    catalog
        .tools
        .iter_mut()
        .find(|t| t.id == id)
        .ok_or_else(|| DecideError::Conflict(format!("tool '{id}' no longer exists")))
}

/// Refuses a new tool whose id a tool written since has taken.
fn free(catalog: &Catalog, id: &str) -> Result<(), DecideError> {
    if catalog.tools.iter().any(|t| t.id == id) {
        return Err(DecideError::Conflict(format!(
            "a tool with id '{id}' exists already; delete it or reject the revision"
        )));
    }
    Ok(())
}
