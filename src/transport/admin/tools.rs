//! `POST /admin/tools/{id}/enable` and `/disable`: idempotent toggles (no change, no revision).

use axum::Json;
use axum::extract::Path;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::actor;
use super::conditional::IfMatch;
use super::crud::with_revision;
use crate::app::AdminDesk;
use crate::transport::errors::ApiError;
use crate::transport::extract::OptionalJsonBody;

/// The optional body of `POST /admin/tools/{id}/enable|disable`.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Toggle {
    /// Why the tool is disabled; kept as `disabled_reason` (ignored when enabling).
    #[serde(default)]
    reason: Option<String>,
}

pub(crate) async fn enable(
    desk: AdminDesk,
    if_match: IfMatch,
    path: Path<String>,
    headers: HeaderMap,
    body: OptionalJsonBody<Toggle>,
) -> Result<Response, ApiError> {
    toggle(desk, if_match, path, headers, body, true).await
}

pub(crate) async fn disable(
    desk: AdminDesk,
    if_match: IfMatch,
    path: Path<String>,
    headers: HeaderMap,
    body: OptionalJsonBody<Toggle>,
) -> Result<Response, ApiError> {
    toggle(desk, if_match, path, headers, body, false).await
}

async fn toggle(
    desk: AdminDesk,
    IfMatch(precondition): IfMatch,
    Path(id): Path<String>,
    headers: HeaderMap,
    OptionalJsonBody(body): OptionalJsonBody<Toggle>,
    enabled: bool,
) -> Result<Response, ApiError> {
    // The body is optional: `{"reason": "…"}` or nothing.
    let reason = body.unwrap_or_default().reason;
    let actor = actor(&desk, &headers);
    let written = desk
        .write()?
        .toggle(&actor, &precondition, &id, enabled, reason)
        .await?;
    Ok(with_revision(
        Json(written.value).into_response(),
        written.revision,
    ))
}
