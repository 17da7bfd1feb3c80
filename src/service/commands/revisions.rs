//! An admin's decision on a pending revision: one catalog write, one audit record
//! (`approve` or `reject`, about the revision), notifications to exactly the identities whose
//! manifest it changes (the catalog write's).

use super::{CommandError, Commands, Written};
use crate::domain::model::Catalog;
use crate::domain::revision::Revision;
use crate::domain::stamp::Stamp;
use crate::domain::validate::{ErrorKind, FieldError};
use crate::ingest::decide::{self, DecideError, Decision};
use crate::service::{Actor, AuditAction, AuditNote, Mutation, Precondition, WriteError};
use crate::store::{EntityKind, Subject};

impl Commands {
    /// Approves or rejects pending revision `id`.
    pub async fn decide_revision(
        &self,
        actor: &Actor,
        precondition: &Precondition,
        id: &str,
        decision: Decision,
        reason: Option<String>,
    ) -> Result<Written<Revision>, CommandError> {
        let stamp = self.stamp(actor);
        let (value, revision) = self
            .catalog
            .write_if(actor, None, precondition, |catalog| {
                let (notes, decided) =
                    apply_decision(catalog, id, &decision, reason.clone(), &stamp)?;
                Ok(Mutation {
                    notes,
                    value: decided,
                })
            })
            .await?;
        Ok(Written { value, revision })
    }
}

/// Applies `decision` to revision `id` of `catalog` (the write of [`Commands::decide_revision`],
/// and what `POST /admin/impact` previews): its audit note and the decided revision.
pub fn apply_decision(
    catalog: &mut Catalog,
    id: &str,
    decision: &Decision,
    reason: Option<String>,
    stamp: &Stamp,
) -> Result<(Vec<AuditNote>, Revision), WriteError> {
    let decided = decide::decide(catalog, id, decision, reason, stamp).map_err(write_error)?;
    let action = match decision {
        Decision::Approve { .. } => AuditAction::Approve,
        Decision::Reject => AuditAction::Reject,
    };
    let note = AuditNote {
        action,
        entity: Subject::Revisions,
        id: id.to_owned(),
        before: None,
        after: Some(serde_json::json!({
            "tool_id": decided.tool_id,
            "source_id": decided.source_id,
            "kind": decided.kind,
            "previous_tool_id": decided.previous_tool_id,
            "hash": decided.hash,
            "status": decided.status,
            "reason": decided.reason,
            "acknowledged": decided.acknowledged,
        })),
    };
    Ok((vec![note], decided))
}

fn write_error(error: DecideError) -> WriteError {
    match error {
        DecideError::NotFound(id) => WriteError::NotFound {
            kind: EntityKind::Revisions,
            id,
        },
        DecideError::Unacknowledged(rules) => WriteError::Invalid(vec![FieldError {
            field: "acknowledge".to_owned(),
            message: format!(
                "the definition has high findings; approving it needs each of their rule ids in 'acknowledge': {}",
                rules.join(", ")
            ),
            kind: ErrorKind::Invalid,
        }]),
        error @ (DecideError::Decided { .. } | DecideError::Conflict(_)) => WriteError::Conflict {
            reason: error.to_string(),
            in_the_way: Vec::new(),
        },
    }
}
