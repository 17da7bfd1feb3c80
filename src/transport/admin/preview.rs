//! `POST /admin/preview`: any claims, optionally with hidden tools, with the explanation.

use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::crud::with_revision;
use crate::app::AdminDesk;
use crate::domain::claims::Claims;
use crate::domain::manifest::ManifestOptions;
use crate::transport::errors::ApiError;
use crate::transport::extract::JsonBody;

/// A list given as `"a,b"` or `["a", "b"]`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
#[schema(as = CommaList)]
pub(crate) enum List {
    Text(String),
    Items(Vec<String>),
}

impl List {
    fn items(self) -> Vec<String> {
        match self {
            List::Text(text) => ManifestOptions::list(&text),
            List::Items(items) => items
                .iter()
                .flat_map(|item| ManifestOptions::list(item))
                .collect(),
        }
    }
}

/// The body of `POST /admin/preview`: claims to evaluate and the options of `GET /agents/tools`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PreviewRequest {
    /// The claims of a token, as if verified.
    #[schema(value_type = Object)]
    claims: Claims,
    /// Also show tools that agents do not see (disabled, deprecated, disabled source).
    #[serde(default)]
    include_disabled: bool,
    /// Keep members of these granted groups (ids or names); `*` keeps all.
    #[serde(default)]
    group: Option<List>,
    /// Keep tools available in this state.
    #[serde(default)]
    state: Option<String>,
    /// Keep tools whose name matches one of these globs.
    #[serde(default)]
    tools: Option<List>,
}

pub(crate) async fn preview(
    desk: AdminDesk,
    JsonBody(request): JsonBody<PreviewRequest>,
) -> Result<Response, ApiError> {
    let options = ManifestOptions {
        include_disabled: request.include_disabled,
        groups: request.group.map(List::items),
        state: request.state,
        tools: request.tools.map(List::items),
        ..ManifestOptions::default()
    };
    let (body, revision) = desk.preview(&request.claims, &options)?;
    let response = (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        Body::from(body),
    )
        .into_response();
    Ok(with_revision(response, revision))
}
