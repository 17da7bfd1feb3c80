//! Pending and decided revisions of imported tools (docs/api.md, "Approved tool definitions").
//!
//! A refresh that finds an upstream's definition of a tool different from the approved one
//! (changed, new, removed, renamed) records a [`Revision`]; agents keep the approved definition
//! until an admin approves it (pinning `hold`, `hide`), or it is served at once and recorded as
//! approved by `refresh` (pinning `warn`). Revisions are kept in the catalog (its sixth
//! collection, not part of the catalog document), so that an approval is one catalog write: one
//! revision number, one audit record, and notifications exactly to those whose manifest changed.
//!
//! Invariants: at most one `pending` revision per tool id (a newer upstream definition replaces
//! the pending one); decided revisions are kept, [`MAX_DECIDED_PER_TOOL`] per tool at most.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::findings::{Finding, Severity};
use super::imported::ImportedTool;

/// Decided revisions kept per tool: enough history to see what was approved and rejected
/// lately; an upstream that changes at every refresh under `warn` cannot grow the catalog.
pub const MAX_DECIDED_PER_TOOL: usize = 20;

/// The actor of revisions a refresh approves itself (pinning `warn`).
pub const REFRESH_ACTOR: &str = "refresh";

/// What happened upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RevisionKind {
    /// A tool the catalog does not have.
    New,
    /// Another definition of an approved tool.
    Changed,
    /// The upstream no longer defines an approved tool.
    Removed,
    /// A tool gone and a new one that is the same but for its name, or nearly the same.
    Renamed,
}

impl RevisionKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            RevisionKind::New => "new",
            RevisionKind::Changed => "changed",
            RevisionKind::Removed => "removed",
            RevisionKind::Renamed => "renamed",
        }
    }
}

/// Where a revision stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RevisionStatus {
    Pending,
    Approved,
    Rejected,
}

impl RevisionStatus {
    pub fn parse(text: &str) -> Option<RevisionStatus> {
        match text {
            "pending" => Some(RevisionStatus::Pending),
            "approved" => Some(RevisionStatus::Approved),
            "rejected" => Some(RevisionStatus::Rejected),
            _ => None,
        }
    }
}

/// One revision of an imported tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Revision {
    pub id: String,
    /// The tool the revision is about (for `renamed`, the tool under its new name).
    pub tool_id: String,
    pub source_id: String,
    pub kind: RevisionKind,
    /// For `renamed`: the tool under its old name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_tool_id: Option<String>,
    /// The approved definition's hash when the revision was detected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_hash: Option<String>,
    /// The upstream's definition's hash (absent for `removed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// RFC 6902 JSON Patch from the approved definition to the upstream's.
    pub diff: Arc<Value>,
    pub findings: Vec<Finding>,
    pub detected_at: DateTime<Utc>,
    pub status: RevisionStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<DateTime<Utc>>,
    /// Why the admin decided so, when they said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The `high` rule ids the approving admin acknowledged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acknowledged: Vec<String>,
    /// The upstream's definition (absent for `removed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<Arc<Value>>,
    /// The catalog fields the definition maps to, applied on approval (absent for `removed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposed: Option<ImportedTool>,
}

impl Revision {
    /// The `high` findings' rule ids, each once, in the order found.
    pub fn high_rules(&self) -> Vec<&'static str> {
        let mut rules = Vec::new();
        for finding in &self.findings {
            let id = finding.rule.id();
            if finding.severity == Severity::High && !rules.contains(&id) {
                rules.push(id);
            }
        }
        rules
    }

    pub fn is_pending(&self) -> bool {
        self.status == RevisionStatus::Pending
    }
}

/// A revision id: stable for what it is about and when it was found, so that two refreshes
/// never mint the same id for different revisions.
pub fn revision_id(
    tool_id: &str,
    kind: RevisionKind,
    hash: Option<&str>,
    at: DateTime<Utc>,
) -> String {
    let key = format!(
        "{tool_id}\u{0}{}\u{0}{}\u{0}{}",
        kind.as_str(),
        hash.unwrap_or(""),
        at.timestamp_nanos_opt().unwrap_or_default()
    );
    let digest = blake3::hash(key.as_bytes()).to_hex();
    format!("rev_{}", &digest[..20])
}

/// RFC 6902 patch turning `from` (the approved definition; `null` when there is none) into `to`
/// (`null` for a removal).
pub fn diff(from: Option<&Value>, to: Option<&Value>) -> Value {
    let null = Value::Null;
    let patch = json_patch::diff(from.unwrap_or(&null), to.unwrap_or(&null));
    serde_json::to_value(patch).unwrap_or(Value::Array(Vec::new()))
}
