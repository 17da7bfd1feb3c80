//! `/admin/revisions`: what upstreams changed in imported tools, and the admins' decisions on it
//! (docs/api.md, "Approved tool definitions").

use axum::Json;
use axum::extract::Path;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use super::actor;
use super::conditional::IfMatch;
use super::crud::with_revision;
use crate::app::AdminDesk;
use crate::domain::revision::RevisionStatus;
use crate::ingest::decide::Decision;
use crate::service::revisions::{self, MAX_LIMIT, RevisionQuery};
use crate::store::EntityKind;
use crate::transport::errors::ApiError;
use crate::transport::extract::{OptionalJsonBody, QueryPairs};

/// The optional body of `POST /admin/revisions/{id}/approve|reject`.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DecisionBody {
    /// Why; kept on the revision and in the audit record.
    #[serde(default)]
    reason: Option<String>,
    /// The rule ids of the definition's `high` findings, each acknowledged by the approving
    /// admin (approving without all of them is refused with 422 naming them).
    #[serde(default)]
    acknowledge: Vec<String>,
}

/// `GET /admin/revisions`.
pub(crate) async fn list(
    desk: AdminDesk,
    QueryPairs(pairs): QueryPairs,
) -> Result<Response, ApiError> {
    let query = query(pairs)?;
    let snapshot = desk.snapshot();
    let (page, next_cursor) = revisions::list(snapshot.catalog(), &query)
        .map_err(|error| ApiError::Malformed(error.to_string()))?;
    let body = json!({"data": page, "count": page.len(), "next_cursor": next_cursor});
    Ok(Json(body).into_response())
}

/// The query of `GET /admin/revisions` (also the console's).
pub(crate) fn query(pairs: Vec<(String, String)>) -> Result<RevisionQuery, ApiError> {
    let mut query = RevisionQuery {
        limit: 100,
        ..RevisionQuery::default()
    };
    for (key, value) in pairs {
        match key.as_str() {
            "status" => {
                query.status = Some(RevisionStatus::parse(&value).ok_or_else(|| {
                    ApiError::Malformed(format!(
                        "status must be pending, approved or rejected, found '{value}'"
                    ))
                })?);
            }
            "source_id" => query.source_id = Some(value),
            "tool_id" => query.tool_id = Some(value),
            "cursor" => query.cursor = Some(value),
            "limit" => {
                query.limit = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=MAX_LIMIT).contains(n))
                    .ok_or_else(|| {
                        ApiError::Malformed(format!(
                            "limit must be a whole number from 1 to {MAX_LIMIT}, found '{value}'"
                        ))
                    })?;
            }
            other => {
                return Err(ApiError::Malformed(format!(
                    "unknown filter '{other}'; expected status, source_id, tool_id, cursor, limit"
                )));
            }
        }
    }
    Ok(query)
}

/// `GET /admin/revisions/{id}`.
pub(crate) async fn read(desk: AdminDesk, Path(id): Path<String>) -> Result<Response, ApiError> {
    let snapshot = desk.snapshot();
    let revision = revisions::find(snapshot.catalog(), &id).ok_or_else(|| {
        ApiError::NotFound(format!(
            "{} '{id}' does not exist",
            EntityKind::Revisions.noun()
        ))
    })?;
    Ok(Json(revision).into_response())
}

pub(crate) async fn approve(
    desk: AdminDesk,
    if_match: IfMatch,
    path: Path<String>,
    headers: HeaderMap,
    body: OptionalJsonBody<DecisionBody>,
) -> Result<Response, ApiError> {
    decide(desk, if_match, path, headers, body, true).await
}

pub(crate) async fn reject(
    desk: AdminDesk,
    if_match: IfMatch,
    path: Path<String>,
    headers: HeaderMap,
    body: OptionalJsonBody<DecisionBody>,
) -> Result<Response, ApiError> {
    decide(desk, if_match, path, headers, body, false).await
}

async fn decide(
    desk: AdminDesk,
    IfMatch(precondition): IfMatch,
    Path(id): Path<String>,
    headers: HeaderMap,
    OptionalJsonBody(body): OptionalJsonBody<DecisionBody>,
    approve: bool,
) -> Result<Response, ApiError> {
    let body = body.unwrap_or_default();
    let decision = if approve {
        Decision::Approve {
            acknowledge: body.acknowledge,
        }
    } else {
        Decision::Reject
    };
    let actor = actor(&desk, &headers);
    let written = desk
        .write()?
        .decide_revision(&actor, &precondition, &id, decision, body.reason)
        .await?;
    Ok(with_revision(
        Json(written.value).into_response(),
        written.revision,
    ))
}
