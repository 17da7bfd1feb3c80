//! `GET/POST /admin/<collection>` and `GET/PUT/PATCH/DELETE /admin/<collection>/{id}`, once for
//! all five entity kinds.
//!
//! Every write goes through [`Commands`](crate::service::Commands), which writes with
//! [`CatalogService::write_if`](crate::service::CatalogService::write_if): validated against
//! the whole catalog, committed atomically with its audit record, only at the revision
//! `If-Match` names.
//! Writes answer with the new catalog revision in the `x-catalog-revision` header.

use std::borrow::Cow;

use axum::Json;
use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Map, Value};

use super::conditional::{IfMatch, etag};
use super::{REVISION_HEADER, actor};
use crate::app::AdminDesk;
use crate::domain::model::{AccessPolicy, Label, Source, Tool, ToolGroup};
use crate::service::entity::{ListQuery, page};
use crate::service::{CatalogEntity, Edit};
use crate::store::EntityKind;
use crate::transport::AppState;
use crate::transport::errors::ApiError;
use crate::transport::extract::{JsonBody, QueryPairs, parse_json};
use crate::transport::openapi::model as schemas;

/// Page size when `limit` is not given, and the most one page may hold.
const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 1000;

/// An entity kind the admin API serves: its commands, and its schema in `/openapi.json`
/// (derived at this edge, not in the domain).
pub(crate) trait AdminEntity: CatalogEntity {
    type Schema: utoipa::ToSchema;
}

impl AdminEntity for Source {
    type Schema = schemas::SourceSchema;
}

impl AdminEntity for Tool {
    type Schema = schemas::ToolSchema;
}

impl AdminEntity for Label {
    type Schema = schemas::LabelSchema;
}

impl AdminEntity for ToolGroup {
    type Schema = schemas::ToolGroupSchema;
}

impl AdminEntity for AccessPolicy {
    type Schema = schemas::AccessPolicySchema;
}

/// The collection's routes under `path` (`/admin/sources`): the list and one entity.
pub(super) fn routes<E: AdminEntity>(path: &str) -> Router<AppState> {
    crate::transport::routes::router([
        (path.to_owned(), get(list::<E>).post(create::<E>)),
        (
            format!("{path}/{{id}}"),
            get(read::<E>)
                .put(replace::<E>)
                .patch(patch::<E>)
                .delete(delete::<E>),
        ),
    ])
}

async fn list<E: AdminEntity>(
    desk: AdminDesk,
    QueryPairs(pairs): QueryPairs,
) -> Result<Response, ApiError> {
    let mut query = ListQuery {
        limit: DEFAULT_LIMIT,
        ..ListQuery::default()
    };
    for (key, value) in pairs {
        match key.as_str() {
            "limit" => {
                query.limit = value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=MAX_LIMIT).contains(n))
                    .ok_or_else(|| {
                        ApiError::Malformed(format!(
                            "limit must be a whole number from 1 to {MAX_LIMIT}, found '{value}'"
                        ))
                    })?;
            }
            "cursor" => query.cursor = Some(value),
            _ => query.filters.push((key, value)),
        }
    }
    let snapshot = desk.snapshot();
    let page = page::<E>(snapshot.catalog(), &query)
        .map_err(|unknown| ApiError::Malformed(unknown.to_string()))?;
    let items: Vec<Cow<'_, E>> = page.items.into_iter().map(E::redacted).collect();
    let body = serde_json::json!({
        "data": items,
        "count": items.len(),
        "next_cursor": page.next_cursor,
        "revision": snapshot.revision(),
    });
    Ok(with_revision(
        Json(body).into_response(),
        snapshot.revision(),
    ))
}

async fn read<E: AdminEntity>(
    desk: AdminDesk,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let snapshot = desk.snapshot();
    let entity = E::all(snapshot.catalog())
        .iter()
        .find(|e| e.id() == id)
        .ok_or_else(|| ApiError::NotFound(format!("{} '{id}' does not exist", E::KIND.noun())))?;
    let mut body = to_json(&*entity.redacted())?;
    // A source says how its refreshes on this instance went (server-set: ignored on input).
    if E::KIND == EntityKind::Sources
        && let Some(status) = desk.refresh_status(&id)
        && let (Value::Object(body), Ok(status)) = (&mut body, serde_json::to_value(status))
    {
        body.insert("refresh".to_owned(), status);
    }
    Ok(with_revision(
        Json(body).into_response(),
        snapshot.revision(),
    ))
}

async fn create<E: AdminEntity>(
    desk: AdminDesk,
    IfMatch(precondition): IfMatch,
    headers: HeaderMap,
    JsonBody(body): JsonBody<Value>,
) -> Result<Response, ApiError> {
    let entity: E = entity_from(body)?;
    let actor = actor(&desk, &headers);
    let written = desk.write()?.create(&actor, &precondition, entity).await?;
    let created = written.value;
    let location = format!(
        "/admin/{}/{}",
        E::KIND.as_str(),
        encode_path_segment(created.entity.id())
    );
    // A source created with an import says what it imported (created, deprecated, skipped,
    // cut and why) under `import`, beside its own fields.
    let mut body = to_json(&*created.entity.redacted())?;
    if let (Value::Object(body), Some(summary)) = (&mut body, created.import)
        && let Ok(summary) = serde_json::to_value(&summary)
    {
        body.insert("import".to_owned(), summary);
    }
    let mut response = (StatusCode::CREATED, Json(body)).into_response();
    if let Ok(value) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    Ok(with_revision(response, written.revision))
}

async fn replace<E: AdminEntity>(
    desk: AdminDesk,
    IfMatch(precondition): IfMatch,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<Value>,
) -> Result<Response, ApiError> {
    let entity: E = entity_from(body)?;
    let actor = actor(&desk, &headers);
    let written = desk
        .write()?
        .update(&actor, &precondition, &id, Edit::Replace(entity))
        .await?;
    updated(&written.value, written.revision)
}

async fn patch<E: AdminEntity>(
    desk: AdminDesk,
    IfMatch(precondition): IfMatch,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(patch): JsonBody<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let actor = actor(&desk, &headers);
    let written = desk
        .write()?
        .update::<E>(&actor, &precondition, &id, Edit::Patch(patch))
        .await?;
    updated(&written.value, written.revision)
}

async fn delete<E: AdminEntity>(
    desk: AdminDesk,
    IfMatch(precondition): IfMatch,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let actor = actor(&desk, &headers);
    let revision = desk
        .write()?
        .delete::<E>(&actor, &precondition, &id)
        .await?;
    Ok(with_revision(
        StatusCode::NO_CONTENT.into_response(),
        revision,
    ))
}

/// A create or replace body as the entity: another shape the entity may be written in (a
/// seed's tool descriptor) becomes the entity's own, then it is read as any body is, with the
/// same field paths on errors.
pub(crate) fn entity_from<E: AdminEntity>(mut body: Value) -> Result<E, ApiError> {
    E::prepare_body(&mut body).map_err(ApiError::Invalid)?;
    let bytes = serde_json::to_vec(&body)
        .map_err(|e| ApiError::Internal(format!("a JSON value does not serialise: {e}")))?;
    parse_json(&bytes::Bytes::from(bytes))
}

fn updated<E: AdminEntity>(entity: &E, revision: u64) -> Result<Response, ApiError> {
    Ok(with_revision(
        Json(to_json(&*entity.redacted())?).into_response(),
        revision,
    ))
}

fn to_json<E: AdminEntity>(entity: &E) -> Result<Value, ApiError> {
    serde_json::to_value(entity)
        .map_err(|e| ApiError::Internal(format!("the stored entity does not serialise: {e}")))
}

/// Marks an answer with the catalog revision it reflects (a write: the one it produced), as
/// `x-catalog-revision` and as the entity tag an `If-Match` of the next write names.
pub(super) fn with_revision(mut response: Response, revision: u64) -> Response {
    let headers = response.headers_mut();
    headers.insert(REVISION_HEADER, HeaderValue::from(revision));
    headers.insert(header::ETAG, etag(revision));
    response
}

/// Percent-encodes what cannot stand in one path segment.
fn encode_path_segment(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for byte in id.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~:@!$&'()*+,;=".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_are_encoded() {
        assert_eq!(encode_path_segment("billing:list"), "billing:list");
        assert_eq!(encode_path_segment("a/b c"), "a%2Fb%20c");
    }
}
