//! The whole catalog as one document (`GET`/`PUT /admin/catalog`) and a group's resolved
//! members (`GET /admin/groups/{id}/tools`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::json;

use super::actor;
use super::conditional::IfMatch;
use super::crud::with_revision;
use crate::app::AdminDesk;
use crate::domain::model::{AccessPolicy, Catalog, Label, Source, Tool, ToolGroup};
use crate::domain::secrets;
use crate::transport::AppState;
use crate::transport::errors::ApiError;
use crate::transport::extract::JsonBody;

pub(super) async fn read(desk: AdminDesk) -> Result<Response, ApiError> {
    let snapshot = desk.snapshot();
    Ok(with_revision(
        Json(Readable::of(snapshot.catalog())).into_response(),
        snapshot.revision(),
    ))
}

/// The catalog document as admins read it: [`Catalog`]'s fields, with the sources' write-only
/// values masked. Borrows everything else, which is nearly all of a large catalog.
#[derive(Serialize)]
struct Readable<'c> {
    sources: Vec<Source>,
    tools: &'c [Tool],
    labels: &'c [Label],
    groups: &'c [ToolGroup],
    policies: &'c [AccessPolicy],
}

impl<'c> Readable<'c> {
    fn of(catalog: &'c Catalog) -> Readable<'c> {
        let Catalog {
            sources,
            tools,
            labels,
            groups,
            policies,
            revisions: _,
        } = catalog;
        Readable {
            sources: sources.iter().map(secrets::redacted).collect(),
            tools,
            labels,
            groups,
            policies,
        }
    }
}

/// Replaces everything atomically; nothing changes if anything is invalid
/// ([`crate::service::Commands::replace_catalog`]).
pub(super) async fn replace(
    desk: AdminDesk,
    IfMatch(precondition): IfMatch,
    headers: HeaderMap,
    JsonBody(document): JsonBody<Catalog>,
) -> Result<Response, ApiError> {
    let actor = actor(&desk, &headers);
    let written = desk
        .write()?
        .replace_catalog(&actor, &precondition, document)
        .await?;
    let body = json!({"revision": written.revision, "counts": written.value});
    Ok(with_revision(Json(body).into_response(), written.revision))
}

pub(super) async fn group_members(
    desk: AdminDesk,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let snapshot = desk.snapshot();
    let members = snapshot
        .group_members(&id)
        .ok_or_else(|| ApiError::NotFound(format!("group '{id}' does not exist")))?;
    let body = json!({"group_id": id, "data": members, "count": members.len(), "revision": snapshot.revision()});
    Ok(with_revision(
        Json(body).into_response(),
        snapshot.revision(),
    ))
}

/// `GET /admin/tools/{id}/groups`: the groups a tool is a member of, and how it got into each.
pub(super) async fn tool_groups(
    desk: AdminDesk,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let snapshot = desk.snapshot();
    let groups = snapshot
        .groups_of_tool(&id)
        .ok_or_else(|| ApiError::NotFound(format!("tool '{id}' does not exist")))?;
    let body = json!({"tool_id": id, "data": groups, "count": groups.len(), "revision": snapshot.revision()});
    Ok(with_revision(
        Json(body).into_response(),
        snapshot.revision(),
    ))
}

/// `GET /admin/claim-sets`: the claim sets this instance served in the last 24 hours, as their
/// projections onto the claims policies read (never tokens), most recently seen first; what an
/// impact preview compares.
pub(super) async fn claim_sets(desk: AdminDesk) -> Response {
    let snapshot = desk.snapshot();
    let recent = desk.recent_claim_sets(&snapshot);
    let data: Vec<_> = recent
        .iter()
        .map(|seen| json!({"claims": &*seen.claims, "last_seen": seen.last_seen}))
        .collect();
    let body = json!({"data": data, "count": data.len(), "revision": snapshot.revision()});
    with_revision(Json(body).into_response(), snapshot.revision())
}

/// `GET /admin/live`: the open SSE streams and MCP notification streams grouped by the manifest
/// they see, how many MCP sessions are open, and the last change notifications with how many
/// streams each reached (this instance's).
pub(super) async fn live(State(state): State<AppState>, desk: AdminDesk) -> Response {
    let revision = desk.snapshot().revision();
    let mut body = serde_json::to_value(desk.live()).unwrap_or_default();
    if let serde_json::Value::Object(body) = &mut body {
        body.insert("revision".to_owned(), json!(revision));
        body.insert("mcp_sessions".to_owned(), json!(state.mcp.sessions.count()));
    }
    with_revision(Json(body).into_response(), revision)
}
