//! `POST /admin/tools/{id}/enable` and `/disable`: idempotent toggles (no change, no revision).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde::Deserialize;

use super::actor;
use super::conditional::IfMatch;
use super::crud::{note, with_revision};
use crate::domain::model::Tool;
use crate::http::AppState;
use crate::http::errors::ApiError;
use crate::http::extract::{Admin, OptionalJsonBody};
use crate::service::{Mutation, WriteError};

/// The optional body of `POST /admin/tools/{id}/enable|disable`.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Toggle {
    /// Why the tool is disabled; kept as `disabled_reason` (ignored when enabling).
    #[serde(default)]
    reason: Option<String>,
}

pub async fn enable(
    state: State<AppState>,
    admin: Admin,
    if_match: IfMatch,
    path: Path<String>,
    headers: HeaderMap,
    body: OptionalJsonBody<Toggle>,
) -> Result<Response, ApiError> {
    toggle(state, admin, if_match, path, headers, body, true).await
}

pub async fn disable(
    state: State<AppState>,
    admin: Admin,
    if_match: IfMatch,
    path: Path<String>,
    headers: HeaderMap,
    body: OptionalJsonBody<Toggle>,
) -> Result<Response, ApiError> {
    toggle(state, admin, if_match, path, headers, body, false).await
}

async fn toggle(
    State(state): State<AppState>,
    Admin(agent): Admin,
    IfMatch(precondition): IfMatch,
    Path(id): Path<String>,
    headers: HeaderMap,
    OptionalJsonBody(body): OptionalJsonBody<Toggle>,
    enabled: bool,
) -> Result<Response, ApiError> {
    // The body is optional: `{"reason": "…"}` or nothing.
    let toggle = body.unwrap_or_default();
    let actor = actor(&agent, &headers);
    let now = Utc::now();
    let (tool, revision) = state
        .catalog
        .write_if(&actor, None, &precondition, |catalog| {
            let tool = catalog
                .tools
                .iter_mut()
                .find(|t| t.id == id)
                .ok_or_else(|| WriteError::NotFound {
                    kind: "tool",
                    id: id.clone(),
                })?;
            if tool.enabled == enabled {
                return Ok(Mutation {
                    notes: Vec::new(),
                    value: tool.clone(),
                });
            }
            let before: Tool = tool.clone();
            tool.enabled = enabled;
            tool.disabled_reason = if enabled { None } else { toggle.reason.clone() };
            tool.updated_at = Some(now);
            tool.updated_by = Some(actor.subject.clone());
            let after = tool.clone();
            let action = if enabled { "enable" } else { "disable" };
            Ok(Mutation {
                notes: vec![note::<Tool>(action, &id, Some(&before), Some(&after))],
                value: after,
            })
        })
        .await?;
    Ok(with_revision(Json(tool).into_response(), revision))
}
