//! The whole catalog as one document (`GET`/`PUT /admin/catalog`) and a group's resolved
//! members (`GET /admin/groups/{id}/tools`).

use std::collections::{HashMap, HashSet};

use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;

use super::actor;
use super::conditional::IfMatch;
use super::crud::{note, with_revision};
use super::entity::CatalogEntity;
use crate::domain::model::{AccessPolicy, Catalog, Label, Source, Tool, ToolGroup};
use crate::domain::secrets;
use crate::http::AppState;
use crate::http::errors::ApiError;
use crate::http::extract::{Admin, JsonBody};
use crate::service::{AuditNote, Mutation, WriteError};
use crate::store::EntityKind;

pub async fn read(State(state): State<AppState>, _admin: Admin) -> Result<Response, ApiError> {
    let snapshot = state.catalog.snapshot();
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

/// Replaces everything atomically; nothing changes if anything is invalid.
///
/// The document's server-set fields are ignored ([`restamp`]), and the audit log gets one
/// record per entity created, changed or removed (beside a summary record), so that
/// `GET /admin/audit?entity=…&id=…` shows an entity's whole history however it was changed.
pub async fn replace(
    State(state): State<AppState>,
    Admin(agent): Admin,
    IfMatch(precondition): IfMatch,
    headers: HeaderMap,
    JsonBody(document): JsonBody<Catalog>,
) -> Result<Response, ApiError> {
    let actor = actor(&agent, &headers);
    let now = Utc::now();
    let ((), revision) = state
        .catalog
        .write_if(&actor, None, &precondition, |catalog| {
            let mut next = document.clone();
            next.normalize();
            keep_stored_secrets(&mut next, catalog)?;
            let mut notes = vec![AuditNote {
                action: "replace",
                entity: EntityKind::Catalog,
                id: "catalog".to_owned(),
                before: Some(counts(catalog)),
                after: Some(counts(&next)),
            }];
            let stamp = Stamp {
                at: now,
                by: &actor.subject,
            };
            restamp(&mut next.sources, &catalog.sources, &stamp, &mut notes);
            restamp(&mut next.tools, &catalog.tools, &stamp, &mut notes);
            restamp(&mut next.labels, &catalog.labels, &stamp, &mut notes);
            restamp(&mut next.groups, &catalog.groups, &stamp, &mut notes);
            restamp(&mut next.policies, &catalog.policies, &stamp, &mut notes);
            *catalog = next;
            Ok(Mutation { notes, value: () })
        })
        .await?;
    let snapshot = state.catalog.snapshot();
    let body = json!({"revision": revision, "counts": counts(snapshot.catalog())});
    Ok(with_revision(Json(body).into_response(), revision))
}

/// Puts back the stored secrets wherever the document's sources hold the mask (a catalog read,
/// edited and written back); a mask with nothing stored behind it is a 422 naming the field.
fn keep_stored_secrets(next: &mut Catalog, stored: &Catalog) -> Result<(), WriteError> {
    let mut errors = Vec::new();
    for (index, source) in next.sources.iter_mut().enumerate() {
        let old = stored.sources.iter().find(|s| s.id == source.id);
        errors.extend(
            source
                .keep_stored_secrets(old)
                .into_iter()
                .map(|mut error| {
                    error.field = format!("sources[{index}].{}", error.field);
                    error
                }),
        );
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(WriteError::Invalid(errors))
    }
}

/// Who changes entities, and when.
struct Stamp<'a> {
    at: DateTime<Utc>,
    by: &'a str,
}

/// Sets the server-set fields of `next` (a document's entities) from `stored` (what the
/// catalog holds) and notes each change for the audit log, in id order: an entity whose content
/// is unchanged keeps its stored stamps; a changed one keeps its creation stamps and is updated
/// by `stamp`; a new one is created and updated by `stamp`. Entities of `stored` that `next`
/// lacks are noted as deleted. Whatever stamps the document carried are overwritten.
fn restamp<E: CatalogEntity>(
    next: &mut [E],
    stored: &[E],
    stamp: &Stamp<'_>,
    notes: &mut Vec<AuditNote>,
) {
    let by_id: HashMap<&str, &E> = stored.iter().map(|e| (e.id(), e)).collect();
    let mut order: Vec<usize> = (0..next.len()).collect();
    order.sort_by(|a, b| next[*a].id().cmp(next[*b].id()));
    for index in order {
        let entity = &mut next[index];
        match by_id.get(entity.id()).copied() {
            Some(old) if same_content(old, entity) => copy_stamps(old, entity),
            Some(old) => {
                copy_stamps(old, entity);
                let stamps = entity.stamps();
                *stamps.updated_at = Some(stamp.at);
                *stamps.updated_by = Some(stamp.by.to_owned());
                notes.push(note::<E>("update", entity.id(), Some(old), Some(entity)));
            }
            None => {
                let stamps = entity.stamps();
                *stamps.created_at = Some(stamp.at);
                *stamps.updated_at = Some(stamp.at);
                *stamps.created_by = Some(stamp.by.to_owned());
                *stamps.updated_by = Some(stamp.by.to_owned());
                notes.push(note::<E>("create", entity.id(), None, Some(entity)));
            }
        }
    }
    let kept: HashSet<&str> = next.iter().map(|e| e.id()).collect();
    for old in stored.iter().filter(|old| !kept.contains(old.id())) {
        notes.push(note::<E>("delete", old.id(), Some(old), None));
    }
}

/// Whether two versions of an entity differ in anything but their server-set fields.
fn same_content<E: CatalogEntity>(a: &E, b: &E) -> bool {
    let (mut a, mut b) = (a.clone(), b.clone());
    for entity in [&mut a, &mut b] {
        let stamps = entity.stamps();
        *stamps.created_at = None;
        *stamps.updated_at = None;
        *stamps.created_by = None;
        *stamps.updated_by = None;
    }
    a == b
}

fn copy_stamps<E: CatalogEntity>(from: &E, to: &mut E) {
    let mut from = from.clone();
    let old = from.stamps();
    let new = to.stamps();
    *new.created_at = *old.created_at;
    *new.updated_at = *old.updated_at;
    *new.created_by = old.created_by.take();
    *new.updated_by = old.updated_by.take();
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
