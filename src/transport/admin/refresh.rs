//! `POST /admin/sources/{id}/refresh`: re-import an `openapi`, `mcp` or `tool-service` source.

use axum::Json;
use axum::extract::Path;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::actor;
use super::conditional::IfMatch;
use super::crud::with_revision;
use crate::app::AdminDesk;
use crate::ingest::refresh::RefreshSummary;
use crate::service::RefreshTrigger;
use crate::transport::errors::ApiError;

/// The body of a refresh's 200: what it did and the revision it produced (the current one when
/// nothing changed).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct RefreshReply {
    #[serde(flatten)]
    pub summary: RefreshSummary,
    pub revision: u64,
}

pub(crate) async fn refresh(
    desk: AdminDesk,
    IfMatch(precondition): IfMatch,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let actor = actor(&desk, &headers);
    let written = desk
        .write()?
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
