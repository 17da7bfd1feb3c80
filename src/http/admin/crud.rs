//! `GET/POST /admin/<collection>` and `GET/PUT/PATCH/DELETE /admin/<collection>/{id}`, once for
//! all five entity kinds.
//!
//! Every write goes through [`CatalogService::write`](crate::service::CatalogService::write): it
//! is validated against the whole catalog and committed atomically with its audit record.
//! Writes answer with the new catalog revision in the `x-catalog-revision` header.

use std::borrow::Cow;

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::Utc;
use serde_json::{Map, Value};

use super::conditional::{IfMatch, etag};
use super::entity::CatalogEntity;
use super::{REVISION_HEADER, actor};
use crate::http::AppState;
use crate::http::errors::ApiError;
use crate::http::extract::{Admin, Agent, JsonBody, QueryPairs, parse_json};
use crate::ingest::refresh::Stamp;
use crate::ingest::{Import, IssueOutcome};
use crate::service::ingest::apply_import;
use crate::service::{AuditNote, Focus, Mutation, Precondition, WriteError};
use crate::store::EntityKind;

/// Page size when `limit` is not given, and the most one page may hold.
const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 1000;

pub fn routes<E: CatalogEntity>() -> Router<AppState> {
    Router::new()
        .route("/", get(list::<E>).post(create::<E>))
        .route(
            "/{id}",
            get(read::<E>)
                .put(replace::<E>)
                .patch(patch::<E>)
                .delete(delete::<E>),
        )
}

async fn list<E: CatalogEntity>(
    State(state): State<AppState>,
    _admin: Admin,
    QueryPairs(pairs): QueryPairs,
) -> Result<Response, ApiError> {
    let mut limit = DEFAULT_LIMIT;
    let mut cursor: Option<String> = None;
    let mut filters = Vec::new();
    for (key, value) in pairs {
        match key.as_str() {
            "limit" => {
                limit = value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=MAX_LIMIT).contains(n))
                    .ok_or_else(|| {
                        ApiError::Malformed(format!(
                            "limit must be a whole number from 1 to {MAX_LIMIT}, found '{value}'"
                        ))
                    })?;
            }
            "cursor" => cursor = Some(value),
            _ => filters.push((key, value)),
        }
    }
    let snapshot = state.catalog.snapshot();
    let mut items: Vec<&E> = E::all(snapshot.catalog()).iter().collect();
    items.sort_by(|a, b| a.id().cmp(b.id()));
    let mut selected = Vec::new();
    for item in items {
        if cursor.as_deref().is_some_and(|after| item.id() <= after) {
            continue;
        }
        let mut keep = true;
        for (key, value) in &filters {
            keep &= item.filter(key, value).ok_or_else(|| {
                let known: Vec<&str> = E::FILTERS.iter().map(|f| f.name).collect();
                ApiError::Malformed(format!(
                    "unknown filter '{key}' for {}; expected limit, cursor, {}",
                    E::KIND.as_str(),
                    known.join(", ")
                ))
            })?;
        }
        if keep {
            selected.push(item);
        }
        if selected.len() > limit {
            break;
        }
    }
    let next_cursor = (selected.len() > limit).then(|| {
        selected.truncate(limit);
        selected.last().map(|last| last.id().to_owned())
    });
    let selected: Vec<Cow<'_, E>> = selected.into_iter().map(E::redacted).collect();
    let body = serde_json::json!({
        "data": selected,
        "count": selected.len(),
        "next_cursor": next_cursor.flatten(),
        "revision": snapshot.revision(),
    });
    Ok(with_revision(
        Json(body).into_response(),
        snapshot.revision(),
    ))
}

async fn read<E: CatalogEntity>(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let snapshot = state.catalog.snapshot();
    let entity = E::all(snapshot.catalog())
        .iter()
        .find(|e| e.id() == id)
        .ok_or_else(|| not_found::<E>(&id))?;
    let mut body = serde_json::to_value(entity.redacted())
        .map_err(|e| ApiError::Internal(format!("the stored entity does not serialise: {e}")))?;
    // A source says how its refreshes on this instance went (server-set: ignored on input).
    if E::KIND == EntityKind::Sources
        && let Some(status) = state.refresh_log.get(&id)
        && let (Value::Object(body), Ok(status)) = (&mut body, serde_json::to_value(status))
    {
        body.insert("refresh".to_owned(), status);
    }
    Ok(with_revision(
        Json(body).into_response(),
        snapshot.revision(),
    ))
}

async fn create<E: CatalogEntity>(
    State(state): State<AppState>,
    Admin(agent): Admin,
    IfMatch(precondition): IfMatch,
    headers: HeaderMap,
    JsonBody(mut body): JsonBody<Value>,
) -> Result<Response, ApiError> {
    // Another shape the entity may be written in (a seed's tool descriptor) becomes the
    // entity's own, then is read as any body is, with the same field paths on errors.
    E::prepare_body(&mut body).map_err(ApiError::Invalid)?;
    let mut entity: E = parse_json(&to_bytes(&body)?)?;
    if E::KIND == EntityKind::Sources {
        // A new source has no refresh history, whatever a deleted one of its id had.
        state.refresh_log.forget(entity.id());
    }
    if entity.id().is_empty() {
        let id = entity.generated_id();
        entity.set_id(id);
    }
    let actor = actor(&agent, &headers);
    let now = Utc::now();
    {
        let stamps = entity.stamps();
        *stamps.created_at = Some(now);
        *stamps.updated_at = Some(now);
        *stamps.created_by = Some(actor.subject.clone());
        *stamps.updated_by = Some(actor.subject.clone());
    }
    let focus = Focus {
        kind: E::KIND,
        id: entity.id().to_owned(),
    };
    if E::all(state.catalog.snapshot().catalog())
        .iter()
        .any(|e| e.id() == entity.id())
    {
        return Err(already_exists::<E>(entity.id()));
    }
    // Before the import: a mask must never reach an upstream as a credential, and a stale
    // If-Match costs the upstream nothing (the write checks it again, atomically).
    let masks = entity.keep_stored_secrets(None);
    if !masks.is_empty() {
        return Err(ApiError::Invalid(masks));
    }
    state.catalog.check(&precondition).await?;
    let imported = entity.import_on_create().await?;
    let stamp = Stamp {
        at: now,
        by: actor.subject.clone(),
    };
    let (stored, revision) = state
        .catalog
        .write_if(&actor, Some(&focus), &precondition, |catalog| {
            if E::all(catalog).iter().any(|e| e.id() == entity.id()) {
                return Err(WriteError::Conflict(
                    format!("a {} with id '{}' already exists", E::NOUN, entity.id()),
                    Vec::new(),
                ));
            }
            E::all_mut(catalog).push(entity.clone());
            let mut notes = vec![note::<E>("create", entity.id(), None, Some(&entity))];
            let mut summary = None;
            if let Some(tools) = &imported {
                let (done, refresh) = apply_import(catalog, entity.id(), tools, &stamp)?;
                notes.extend(refresh);
                summary = Some(done);
            }
            Ok(Mutation {
                notes,
                value: (entity.clone(), summary),
            })
        })
        .await?;
    let (stored, summary) = stored;
    if let Some(import) = &imported {
        record_issues(&state, import);
    }
    let stored = stored_version::<E>(&state, stored, revision);
    let location = format!(
        "/admin/{}/{}",
        E::KIND.as_str(),
        encode_path_segment(stored.id())
    );
    // A source created with an import says what it imported (created, deprecated, skipped,
    // cut and why) under `import`, beside its own fields.
    let mut body = serde_json::to_value(stored.redacted())
        .map_err(|e| ApiError::Internal(format!("the stored entity does not serialise: {e}")))?;
    if let (Value::Object(body), Some(summary)) = (&mut body, summary)
        && let Ok(summary) = serde_json::to_value(&summary)
    {
        body.insert("import".to_owned(), summary);
    }
    let mut response = (StatusCode::CREATED, Json(body)).into_response();
    if let Ok(value) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    Ok(with_revision(response, revision))
}

async fn replace<E: CatalogEntity>(
    State(state): State<AppState>,
    Admin(agent): Admin,
    IfMatch(precondition): IfMatch,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(mut body): JsonBody<Value>,
) -> Result<Response, ApiError> {
    E::prepare_body(&mut body).map_err(ApiError::Invalid)?;
    let entity: E = parse_json(&to_bytes(&body)?)?;
    let request = Update {
        agent: &agent,
        headers: &headers,
        precondition: &precondition,
        id: &id,
    };
    update::<E>(&state, request, |_| Ok(entity.clone())).await
}

async fn patch<E: CatalogEntity>(
    State(state): State<AppState>,
    Admin(agent): Admin,
    IfMatch(precondition): IfMatch,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(patch): JsonBody<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let request = Update {
        agent: &agent,
        headers: &headers,
        precondition: &precondition,
        id: &id,
    };
    update::<E>(&state, request, |current| {
        let mut merged = serde_json::to_value(current)
            .map_err(|e| WriteError::Store(crate::store::StoreError::Corrupt(e.to_string())))?;
        merge_patch(&mut merged, &Value::Object(patch.clone()));
        // A source's document is one value: a patch replaces it, never merges into it (merged,
        // the operations the new document removed would survive).
        if E::KIND == crate::store::EntityKind::Sources
            && let Some(spec) = patch.get("config").and_then(|c| c.get("spec"))
            && !spec.is_null()
            && let Some(config) = merged.get_mut("config").and_then(Value::as_object_mut)
        {
            config.insert("spec".to_owned(), spec.clone());
        }
        serde_json::from_value::<E>(merged).map_err(|error| {
            WriteError::Invalid(vec![crate::domain::validate::FieldError {
                field: String::new(),
                message: format!("the patched {} is not valid: {error}", E::NOUN),
                kind: crate::domain::validate::ErrorKind::Invalid,
            }])
        })
    })
    .await
}

/// What PUT and PATCH of one entity share: who asks, on which condition, for which id.
struct Update<'r> {
    agent: &'r Agent,
    headers: &'r HeaderMap,
    precondition: &'r Precondition,
    id: &'r str,
}

/// Shared by PUT and PATCH: the new entity keeps its id and creation stamps.
///
/// What the new version would import ([`CatalogEntity::import_on_update`]) is fetched first,
/// outside the write, from the version the current catalog gives; the write then applies it
/// with the change, in one revision.
async fn update<E: CatalogEntity>(
    state: &AppState,
    request: Update<'_>,
    new_version: impl Fn(&E) -> Result<E, WriteError>,
) -> Result<Response, ApiError> {
    let Update {
        agent,
        headers,
        precondition,
        id,
    } = request;
    let actor = actor(agent, headers);
    let focus = Focus {
        kind: E::KIND,
        id: id.to_owned(),
    };
    let now = Utc::now();
    let current = E::all(state.catalog.snapshot().catalog())
        .iter()
        .find(|e| e.id() == id)
        .cloned();
    let imported = match current {
        Some(before) => {
            state.catalog.check(precondition).await?;
            let mut next = new_version(&before)?;
            // A mask must never reach an upstream as a credential; the write reports it.
            if next.keep_stored_secrets(Some(&before)).is_empty() {
                next.import_on_update(&before).await?
            } else {
                None
            }
        }
        None => None,
    };
    let stamp = Stamp {
        at: now,
        by: actor.subject.clone(),
    };
    let (stored, revision) = state
        .catalog
        .write_if(&actor, Some(&focus), precondition, |catalog| {
            let items = E::all_mut(catalog);
            let position = items
                .iter()
                .position(|e| e.id() == id)
                .ok_or_else(|| WriteError::NotFound {
                    kind: E::NOUN,
                    id: id.to_owned(),
                })?;
            let mut before = items[position].clone();
            let mut next = new_version(&before)?;
            if next.id().is_empty() {
                next.set_id(id.to_owned());
            }
            if next.id() != id {
                return Err(WriteError::Invalid(vec![crate::domain::validate::FieldError {
                    field: "id".to_owned(),
                    message: format!(
                        "the id in the body ('{}') differs from the id in the path ('{id}'); ids cannot be changed",
                        next.id()
                    ),
                    kind: crate::domain::validate::ErrorKind::Invalid,
                }]));
            }
            let masks = next.keep_stored_secrets(Some(&before));
            if !masks.is_empty() {
                return Err(WriteError::Invalid(masks));
            }
            {
                let old = before.stamps();
                let (created_at, created_by) = (*old.created_at, old.created_by.clone());
                let stamps = next.stamps();
                *stamps.created_at = created_at;
                *stamps.created_by = created_by;
                *stamps.updated_at = Some(now);
                *stamps.updated_by = Some(actor.subject.clone());
            }
            items[position] = next.clone();
            let mut notes = vec![note::<E>("update", id, Some(&before), Some(&next))];
            if let Some(import) = &imported {
                let (_, refresh) = apply_import(catalog, id, import, &stamp)?;
                notes.extend(refresh);
            }
            Ok(Mutation { notes, value: next })
        })
        .await?;
    if let Some(import) = &imported {
        record_issues(state, import);
    }
    let stored = stored_version::<E>(state, stored, revision);
    Ok(with_revision(
        Json(stored.redacted()).into_response(),
        revision,
    ))
}

/// A body read as JSON, as bytes again: to be read as the entity with the field paths that
/// [`parse_json`] gives its errors.
fn to_bytes(body: &Value) -> Result<bytes::Bytes, ApiError> {
    serde_json::to_vec(body)
        .map(bytes::Bytes::from)
        .map_err(|e| ApiError::Internal(format!("a JSON value does not serialise: {e}")))
}

/// Counts what an import on create or update skipped or cut (`toolgate.import.operations`).
fn record_issues(state: &AppState, import: &Import) {
    let count = |outcome| {
        import
            .issues
            .iter()
            .filter(|issue| issue.outcome == outcome)
            .count()
    };
    state
        .metrics
        .import_issues(count(IssueOutcome::Skipped), count(IssueOutcome::Cut));
}

/// The entity as the catalog holds it after a write (normalisation may have derived fields,
/// such as a tool-service tool's input schema); `written` if another write came in between.
fn stored_version<E: CatalogEntity>(state: &AppState, written: E, revision: u64) -> E {
    let snapshot = state.catalog.snapshot();
    if snapshot.revision() != revision {
        return written;
    }
    E::all(snapshot.catalog())
        .iter()
        .find(|e| e.id() == written.id())
        .cloned()
        .unwrap_or(written)
}

fn already_exists<E: CatalogEntity>(id: &str) -> ApiError {
    ApiError::Conflict(
        format!("a {} with id '{id}' already exists", E::NOUN),
        Vec::new(),
    )
}

async fn delete<E: CatalogEntity>(
    State(state): State<AppState>,
    Admin(agent): Admin,
    IfMatch(precondition): IfMatch,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let actor = actor(&agent, &headers);
    let ((), revision) = state
        .catalog
        .write_if(&actor, None, &precondition, |catalog| {
            let before = E::all(catalog)
                .iter()
                .find(|e| e.id() == id)
                .cloned()
                .ok_or_else(|| WriteError::NotFound {
                    kind: E::NOUN,
                    id: id.clone(),
                })?;
            E::before_delete(catalog, &id)?;
            E::all_mut(catalog).retain(|e| e.id() != id);
            Ok(Mutation {
                notes: vec![note::<E>("delete", &id, Some(&before), None)],
                value: (),
            })
        })
        .await?;
    Ok(with_revision(
        StatusCode::NO_CONTENT.into_response(),
        revision,
    ))
}

pub fn note<E: CatalogEntity>(
    action: &'static str,
    id: &str,
    before: Option<&E>,
    after: Option<&E>,
) -> AuditNote {
    AuditNote {
        action,
        entity: E::KIND,
        id: id.to_owned(),
        before: before.and_then(|e| serde_json::to_value(e).ok()),
        after: after.and_then(|e| serde_json::to_value(e).ok()),
    }
}

pub fn not_found<E: CatalogEntity>(id: &str) -> ApiError {
    ApiError::NotFound(format!("{} '{id}' does not exist", E::NOUN))
}

/// Marks an answer with the catalog revision it reflects (a write: the one it produced), as
/// `x-catalog-revision` and as the entity tag an `If-Match` of the next write names.
pub fn with_revision(mut response: Response, revision: u64) -> Response {
    let headers = response.headers_mut();
    headers.insert(REVISION_HEADER, HeaderValue::from(revision));
    headers.insert(header::ETAG, etag(revision));
    response
}

/// RFC 7396 JSON merge patch: objects merge recursively, `null` removes, anything else replaces.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let target = target.as_object_mut().expect("made an object above");
    for (key, value) in patch {
        if value.is_null() {
            target.remove(key);
        } else {
            merge_patch(target.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
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
    use serde_json::json;

    use super::*;

    #[test]
    fn merge_patch_follows_rfc_7396() {
        let mut target = json!({"a": 1, "b": {"c": 2, "d": 3}, "e": [1]});
        merge_patch(
            &mut target,
            &json!({"a": null, "b": {"c": 5}, "e": [2], "f": "x"}),
        );
        assert_eq!(target, json!({"b": {"c": 5, "d": 3}, "e": [2], "f": "x"}));
    }

    #[test]
    fn path_segments_are_encoded() {
        assert_eq!(encode_path_segment("billing:list"), "billing:list");
        assert_eq!(encode_path_segment("a/b c"), "a%2Fb%20c");
    }
}
