//! The whole catalog as one document (`GET`/`PUT /admin/catalog`) and a group's resolved
//! members (`GET /admin/groups/{id}/tools`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::json;

use super::actor;
use super::conditional::IfMatch;
use super::crud::with_revision;
use crate::domain::model::Catalog;
use crate::http::AppState;
use crate::http::errors::ApiError;
use crate::http::extract::{Admin, JsonBody};
use crate::service::{AuditNote, Mutation};
use crate::store::EntityKind;

pub async fn read(State(state): State<AppState>, _admin: Admin) -> Result<Response, ApiError> {
    let snapshot = state.catalog.snapshot();
    Ok(with_revision(
        Json(snapshot.catalog()).into_response(),
        snapshot.revision(),
    ))
}

/// Replaces everything atomically; nothing changes if anything is invalid.
pub async fn replace(
    State(state): State<AppState>,
    Admin(agent): Admin,
    IfMatch(precondition): IfMatch,
    headers: HeaderMap,
    JsonBody(document): JsonBody<Catalog>,
) -> Result<Response, ApiError> {
    let actor = actor(&agent, &headers);
    let document = stamped(document, &actor.subject);
    let ((), revision) = state
        .catalog
        .write_if(&actor, None, &precondition, |catalog| {
            let before = counts(catalog);
            *catalog = document.clone();
            catalog.normalize();
            Ok(Mutation {
                notes: vec![AuditNote {
                    action: "replace",
                    entity: EntityKind::Catalog,
                    id: "catalog".to_owned(),
                    before: Some(before),
                    after: Some(counts(catalog)),
                }],
                value: (),
            })
        })
        .await?;
    let snapshot = state.catalog.snapshot();
    let body = json!({"revision": revision, "counts": counts(snapshot.catalog())});
    Ok(with_revision(Json(body).into_response(), revision))
}

/// Fills in creation stamps that the document does not carry.
pub(crate) fn stamped(mut catalog: Catalog, subject: &str) -> Catalog {
    let now = Some(Utc::now());
    let by = Some(subject.to_owned());
    macro_rules! stamp {
        ($items:expr) => {
            for item in $items.iter_mut() {
                if item.created_at.is_none() {
                    item.created_at = now;
                    item.created_by = by.clone();
                }
                if item.updated_at.is_none() {
                    item.updated_at = now;
                    item.updated_by = by.clone();
                }
            }
        };
    }
    stamp!(catalog.sources);
    stamp!(catalog.tools);
    stamp!(catalog.labels);
    stamp!(catalog.groups);
    stamp!(catalog.policies);
    catalog
}

/// A summary for audit records: the whole document would be too large to log per change.
fn counts(catalog: &Catalog) -> serde_json::Value {
    json!({
        "sources": catalog.sources.len(),
        "tools": catalog.tools.len(),
        "labels": catalog.labels.len(),
        "groups": catalog.groups.len(),
        "policies": catalog.policies.len(),
    })
}

pub async fn group_members(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let snapshot = state.catalog.snapshot();
    let members = snapshot
        .group_members(&id)
        .ok_or_else(|| ApiError::NotFound(format!("group '{id}' does not exist")))?;
    let body = json!({"group_id": id, "data": members, "count": members.len(), "revision": snapshot.revision()});
    Ok(with_revision(
        Json(body).into_response(),
        snapshot.revision(),
    ))
}
