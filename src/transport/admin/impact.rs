//! `POST /admin/impact`: what a proposed change would do to everyone's manifest, before it is
//! made ([`crate::service::impact`]). Nothing is written.

use axum::Json;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::conditional::IfMatch;
use super::crud::with_revision;
use super::{COLLECTIONS, actor};
use crate::app::AdminDesk;
use crate::domain::model::Catalog;
use crate::domain::validate::{ErrorKind, FieldError};
use crate::service::impact::{ChangeOp, ImpactRequest, Proposal};
use crate::store::EntityKind;
use crate::transport::errors::ApiError;
use crate::transport::extract::JsonBody;

/// The most claim sets one request may name (more is a 422 at `claims_sets`).
pub(crate) const MAX_CLAIM_SETS: usize = 10_000;

/// The body of `POST /admin/impact`: a catalog document or one entity change, and claim sets
/// to evaluate besides the ones served recently.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ImpactBody {
    /// The whole catalog as `PUT /admin/catalog` would write it.
    #[serde(default)]
    #[schema(value_type = Option<crate::transport::openapi::model::CatalogSchema>)]
    catalog: Option<Catalog>,
    /// One entity as `PUT`, `PATCH` or `DELETE /admin/<collection>/{id}` would write it.
    #[serde(default)]
    change: Option<ChangeBody>,
    /// Claims to evaluate (as if verified), answered in order under `claims_sets`. Kept as
    /// text until evaluated (each checked to be an object here).
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    claims_sets: Vec<Box<RawValue>>,
}

/// One entity change of [`ImpactBody`].
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChangeBody {
    /// `sources`, `tools`, `labels`, `groups`, `policies`, or `revisions` (with `op`
    /// `approve` or `reject`).
    collection: String,
    id: String,
    op: Op,
    /// The entity (`put`; created when the id does not exist yet) or a merge patch (`patch`);
    /// none for `delete`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    body: Option<Value>,
}

#[derive(Debug, Clone, Copy, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
enum Op {
    Put,
    Patch,
    Delete,
    /// A pending revision approved (`collection: revisions`).
    Approve,
    /// A pending revision rejected (`collection: revisions`).
    Reject,
}

pub(crate) async fn impact(
    desk: AdminDesk,
    IfMatch(precondition): IfMatch,
    headers: HeaderMap,
    JsonBody(body): JsonBody<ImpactBody>,
) -> Result<Response, ApiError> {
    let proposal = proposal(body.catalog, body.change)?;
    if body.claims_sets.len() > MAX_CLAIM_SETS {
        return Err(invalid(
            "claims_sets",
            format!(
                "at most {MAX_CLAIM_SETS} claim sets per request, found {}; preview them in \
                 parts",
                body.claims_sets.len()
            ),
        ));
    }
    if let Some(i) = body
        .claims_sets
        .iter()
        .position(|claims| !claims.get().starts_with('{'))
    {
        return Err(invalid(
            &format!("claims_sets[{i}]"),
            "must be an object of claims".to_owned(),
        ));
    }
    let actor = actor(&desk, &headers);
    let request = ImpactRequest {
        actor: &actor,
        precondition: &precondition,
        proposal,
        claim_sets: body.claims_sets,
    };
    let report = desk.impact(request).await?;
    let revision = report.revision;
    Ok(with_revision(Json(report).into_response(), revision))
}

/// Exactly one of `catalog` and `change`, each checked as far as its shape goes.
fn proposal(catalog: Option<Catalog>, change: Option<ChangeBody>) -> Result<Proposal, ApiError> {
    let change = match (catalog, change) {
        (Some(catalog), None) => return Ok(Proposal::Catalog(catalog)),
        (None, Some(change)) => change,
        (Some(_), Some(_)) => {
            return Err(invalid("change", "give either catalog or change, not both"));
        }
        (None, None) => {
            return Err(invalid(
                "catalog",
                "give the change to preview: a catalog document, or one entity change",
            ));
        }
    };
    if change.collection == EntityKind::Revisions.as_str() {
        return revision_proposal(change);
    }
    let kind = COLLECTIONS
        .iter()
        .find(|c| c.kind.as_str() == change.collection)
        .map(|c| c.kind)
        .ok_or_else(|| {
            let known: Vec<&str> = COLLECTIONS.iter().map(|c| c.kind.as_str()).collect();
            invalid(
                "change.collection",
                format!(
                    "unknown collection '{}'; expected {}",
                    change.collection,
                    known.join(", ")
                ),
            )
        })?;
    if change.id.is_empty() {
        return Err(invalid(
            "change.id",
            "the id of the entity to change".to_owned(),
        ));
    }
    let op = match (change.op, change.body) {
        (Op::Delete, None) => ChangeOp::Delete,
        (Op::Delete, Some(_)) => {
            return Err(invalid("change.body", "a delete takes no body"));
        }
        (Op::Put, Some(body @ Value::Object(_))) => ChangeOp::Put(body),
        (Op::Patch, Some(Value::Object(patch))) => ChangeOp::Patch(patch),
        (Op::Put | Op::Patch, _) => {
            return Err(invalid("change.body", "must be a JSON object"));
        }
        (Op::Approve | Op::Reject, _) => {
            return Err(invalid(
                "change.op",
                "approve and reject are operations on revisions (collection 'revisions')",
            ));
        }
    };
    Ok(Proposal::Change {
        kind,
        id: change.id,
        op,
    })
}

/// `{"collection": "revisions", "id", "op": "approve" | "reject"}`.
fn revision_proposal(change: ChangeBody) -> Result<Proposal, ApiError> {
    if change.id.is_empty() {
        return Err(invalid("change.id", "the id of the revision".to_owned()));
    }
    if change.body.is_some() {
        return Err(invalid("change.body", "an approval takes no body"));
    }
    let approve = match change.op {
        Op::Approve => true,
        Op::Reject => false,
        _ => {
            return Err(invalid(
                "change.op",
                "a revision is approved or rejected: op must be 'approve' or 'reject'",
            ));
        }
    };
    Ok(Proposal::Revision {
        id: change.id,
        approve,
    })
}

fn invalid(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::Invalid(vec![FieldError {
        field: field.to_owned(),
        message: message.into(),
        kind: ErrorKind::Invalid,
    }])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(body: Value) -> Result<Proposal, ApiError> {
        let body: ImpactBody = serde_json::from_value(body).expect("the body's shape");
        proposal(body.catalog, body.change)
    }

    fn field_of(result: Result<Proposal, ApiError>) -> String {
        match result {
            Err(ApiError::Invalid(errors)) => errors[0].field.clone(),
            other => panic!("expected a 422, got {other:?}"),
        }
    }

    #[test]
    fn one_proposal_is_required_and_its_shape_checked() {
        assert_eq!(field_of(parse(json!({}))), "catalog");
        assert_eq!(
            field_of(parse(json!({"catalog": {}, "change":
            {"collection": "tools", "id": "x", "op": "delete"}}))),
            "change"
        );
        assert_eq!(
            field_of(parse(json!({"change":
            {"collection": "widgets", "id": "x", "op": "delete"}}))),
            "change.collection"
        );
        assert_eq!(
            field_of(parse(json!({"change":
            {"collection": "tools", "id": "", "op": "delete"}}))),
            "change.id"
        );
        assert_eq!(
            field_of(parse(json!({"change":
            {"collection": "tools", "id": "x", "op": "put"}}))),
            "change.body"
        );
        assert_eq!(
            field_of(parse(json!({"change":
            {"collection": "tools", "id": "x", "op": "delete", "body": {}}}))),
            "change.body"
        );
        assert!(matches!(
            parse(
                json!({"change": {"collection": "policies", "id": "p", "op": "patch",
                "body": {"active": false}}})
            ),
            Ok(Proposal::Change {
                op: ChangeOp::Patch(_),
                ..
            })
        ));
    }
}
