//! `POST /admin/sources/{id}/refresh`: re-import an `openapi`, `mcp` or `tool-service` source.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::actor;
use super::conditional::IfMatch;
use super::crud::with_revision;
use crate::http::AppState;
use crate::http::errors::ApiError;
use crate::http::extract::Admin;
use crate::ingest::refresh::RefreshSummary;
use crate::service::RefreshTrigger;

/// The body of a refresh's 200: what it did and the revision it produced (the current one when
/// nothing changed).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct RefreshReply {
    #[serde(flatten)]
    pub summary: RefreshSummary,
    pub revision: u64,
}

pub(crate) async fn refresh(
    State(state): State<AppState>,
    Admin(agent): Admin,
    IfMatch(precondition): IfMatch,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let actor = actor(&agent, &headers);
    let written = state
        .app
        .commands
        .refresh(&actor, &precondition, &id, RefreshTrigger::Admin)
        .await?;
    let revision = written.revision;
    Ok(with_revision(
        Json(RefreshReply {
            summary: written.value,
            revision,
        })
        .into_response(),
        revision,
    ))
}
