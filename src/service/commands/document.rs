//! Writing the whole catalog at once: `PUT /admin/catalog` and the seed of an empty store.
//!
//! A document's server-set fields are never taken as written ([`restamp`]), and a replace gives
//! the audit log one record per entity created, changed or removed (beside a summary record),
//! so that an entity's history is whole however it was changed.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::{CommandError, note};
use crate::domain::model::Catalog;
use crate::domain::stamp::{Stamp, copy_stamps, same_content};
use crate::service::entity::CatalogEntity;
use crate::service::{AuditAction, AuditNote, CatalogService, Mutation, WriteError};
use crate::store::Subject;

/// How many entities of each kind a catalog holds: what a replace answers and audits (the
/// whole document would be too large to log per change).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub sources: usize,
    pub tools: usize,
    pub labels: usize,
    pub groups: usize,
    pub policies: usize,
}

impl Counts {
    pub fn of(catalog: &Catalog) -> Counts {
        Counts {
            sources: catalog.sources.len(),
            tools: catalog.tools.len(),
            labels: catalog.labels.len(),
            groups: catalog.groups.len(),
            policies: catalog.policies.len(),
        }
    }

    fn json(self) -> Option<serde_json::Value> {
        serde_json::to_value(self).ok()
    }
}

/// Replaces `catalog` by `document` (its counts): the stored secrets stay where the document holds their
/// mask (a catalog read, edited and written back), and every entity is stamped by what
/// happened to it.
pub fn apply_replace(
    catalog: &mut Catalog,
    document: &Catalog,
    stamp: &Stamp,
) -> Result<(Vec<AuditNote>, Counts), WriteError> {
    let mut next = document.clone();
    next.normalize();
    keep_stored_secrets(&mut next, catalog)?;
    let mut notes = vec![AuditNote {
        action: AuditAction::Replace,
        entity: Subject::Catalog,
        id: "catalog".to_owned(),
        before: Counts::of(catalog).json(),
        after: Counts::of(&next).json(),
    }];
    restamp(&mut next.sources, &catalog.sources, stamp, &mut notes);
    restamp(&mut next.tools, &catalog.tools, stamp, &mut notes);
    restamp(&mut next.labels, &catalog.labels, stamp, &mut notes);
    restamp(&mut next.groups, &catalog.groups, stamp, &mut notes);
    restamp(&mut next.policies, &catalog.policies, stamp, &mut notes);
    // Revisions are not part of the document: they stay (normalising drops those of sources
    // the document no longer has).
    next.revisions = std::mem::take(&mut catalog.revisions);
    next.normalize();
    let counts = Counts::of(&next);
    *catalog = next;
    Ok((notes, counts))
}

/// Loads `seed` into an empty catalog (revision 0, nothing in it): its revision, or `None` when
/// the catalog is not empty and was left alone. The seed's missing stamps are `stamp`'s.
pub(super) async fn seed(
    catalog: &CatalogService,
    mut seed: Catalog,
    stamp: &Stamp,
) -> Result<Option<u64>, CommandError> {
    let snapshot = catalog.snapshot();
    if snapshot.revision() != 0 || *snapshot.catalog() != Catalog::default() {
        return Ok(None);
    }
    fill_missing(&mut seed, stamp);
    let actor = super::toolgate();
    let ((), revision) = catalog
        .write(&actor, None, |current| {
            *current = seed.clone();
            Ok(Mutation {
                notes: vec![AuditNote {
                    action: AuditAction::Seed,
                    entity: Subject::Catalog,
                    id: "catalog".to_owned(),
                    before: None,
                    after: None,
                }],
                value: (),
            })
        })
        .await?;
    Ok(Some(revision))
}

fn fill_missing(catalog: &mut Catalog, stamp: &Stamp) {
    catalog
        .sources
        .iter_mut()
        .for_each(|e| stamp.fill_missing(e));
    catalog.tools.iter_mut().for_each(|e| stamp.fill_missing(e));
    catalog
        .labels
        .iter_mut()
        .for_each(|e| stamp.fill_missing(e));
    catalog
        .groups
        .iter_mut()
        .for_each(|e| stamp.fill_missing(e));
    catalog
        .policies
        .iter_mut()
        .for_each(|e| stamp.fill_missing(e));
}

/// Puts back the stored secrets wherever the document's sources hold the mask; a mask with
/// nothing stored behind it is an error naming the field.
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

/// Sets the server-set fields of `next` (a document's entities) from `stored` (what the
/// catalog holds) and notes each change for the audit log, in id order: an entity whose content
/// is unchanged keeps its stored stamps; a changed one keeps its creation stamps and is updated
/// by `stamp`; a new one is created by `stamp`. Entities of `stored` that `next` lacks are
/// noted as deleted. Whatever stamps the document carried are overwritten.
fn restamp<E: CatalogEntity>(
    next: &mut [E],
    stored: &[E],
    stamp: &Stamp,
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
                stamp.updated(entity, old);
                notes.push(note::<E>(
                    AuditAction::Update,
                    entity.id(),
                    Some(old),
                    Some(entity),
                ));
            }
            None => {
                stamp.created(entity);
                notes.push(note::<E>(
                    AuditAction::Create,
                    entity.id(),
                    None,
                    Some(entity),
                ));
            }
        }
    }
    let kept: HashSet<&str> = next.iter().map(|e| e.id()).collect();
    for old in stored.iter().filter(|old| !kept.contains(old.id())) {
        notes.push(note::<E>(AuditAction::Delete, old.id(), Some(old), None));
    }
}
