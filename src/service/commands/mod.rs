//! The catalog's write commands: create, replace, patch, delete and toggle one entity, replace
//! or seed the whole catalog, refresh a source. Transports map requests onto these and their
//! results onto answers; every write semantic lives here.
//!
//! Each command builds one [`Stamp`] (who, when), fetches what it imports *before* the write
//! (outside the write lock; a stale `If-Match` is refused first so that it costs the upstream
//! nothing), then commits through [`CatalogService::write_if`], which validates the whole
//! resulting catalog and checks the precondition again, atomically.
//!
//! The catalog mutations themselves are pure functions ([`apply_create`], [`apply_update`],
//! [`apply_delete`]): a write and an impact preview (nothing written) run the same code.

mod document;
mod refresh;
mod revisions;

use std::sync::Arc;

use serde_json::{Map, Value};

pub use self::document::{Counts, apply_replace};
pub use self::refresh::RefreshTrigger;
use self::refresh::{ImportedBy, apply_import, refresh_source};
pub use self::revisions::apply_decision;
use super::WriteError;
use super::entity::CatalogEntity;
use super::{
    Actor, AuditAction, AuditNote, CatalogService, Focus, Mutation, Precondition, RefreshLog,
};
use crate::domain::model::{Catalog, Tool};
use crate::domain::stamp::Stamp;
use crate::domain::validate::{ErrorKind, FieldError};
use crate::ingest::refresh::{Prepared, RefreshSummary};
use crate::ingest::{Import, IngestError, IssueOutcome};
use crate::store::{Backup, EntityKind, StoreError};
use crate::telemetry::Metrics;

/// Why a command did not happen; nothing was changed.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// What the command imports could not be fetched or read.
    #[error(transparent)]
    Ingest(#[from] IngestError),
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// What a command wrote, and the catalog revision that holds it (the current one when the
/// command changed nothing).
#[derive(Debug)]
pub struct Written<T> {
    pub value: T,
    pub revision: u64,
}

/// A created entity, and what its creation imported (an `openapi` or `mcp` source's tools).
#[derive(Debug)]
pub struct Created<E> {
    pub entity: E,
    pub import: Option<RefreshSummary>,
}

/// A new version of one entity: the whole entity (`PUT`), or an RFC 7396 merge patch of the
/// stored one (`PATCH`, merged onto it as reads show it: secrets masked), applied to the
/// version the write finds.
#[derive(Debug, Clone)]
pub enum Edit<E> {
    Replace(E),
    Patch(Map<String, Value>),
}

impl<E: CatalogEntity> Edit<E> {
    /// The new version of `current`.
    pub fn apply(&self, current: &E) -> Result<E, WriteError> {
        let patch = match self {
            Edit::Replace(entity) => return Ok(entity.clone()),
            Edit::Patch(patch) => patch,
        };
        // Merged onto the entity as an admin reads it, its secrets masked: a secret the patch
        // does not give is a mask that the write puts the stored value back for, unless the
        // patch moves where it is sent (then the write refuses it, as it would a `PUT`).
        let mut merged = serde_json::to_value(current.redacted().as_ref()).map_err(|error| {
            WriteError::Internal(format!(
                "a stored {} does not serialise: {error}",
                E::KIND.noun()
            ))
        })?;
        merge_patch(&mut merged, &Value::Object(patch.clone()));
        // A source's document is one value: a patch replaces it, never merges into it (merged,
        // the operations the new document removed would survive).
        if E::KIND == EntityKind::Sources
            && let Some(spec) = patch.get("config").and_then(|c| c.get("spec"))
            && !spec.is_null()
            && let Some(config) = merged.get_mut("config").and_then(Value::as_object_mut)
        {
            config.insert("spec".to_owned(), spec.clone());
        }
        serde_json::from_value::<E>(merged).map_err(|error| {
            WriteError::Invalid(vec![FieldError {
                field: String::new(),
                message: format!("the patched {} is not valid: {error}", E::KIND.noun()),
                kind: ErrorKind::Invalid,
            }])
        })
    }
}

/// Runs the write commands. Cheap to share (`Arc`).
pub struct Commands {
    catalog: Arc<CatalogService>,
    refresh_log: Arc<RefreshLog>,
    metrics: Arc<Metrics>,
}

impl Commands {
    pub fn new(
        catalog: Arc<CatalogService>,
        refresh_log: Arc<RefreshLog>,
        metrics: Arc<Metrics>,
    ) -> Commands {
        Commands {
            catalog,
            refresh_log,
            metrics,
        }
    }

    /// Creates `entity` (an id is generated when it has none), with what it imports, in one
    /// revision. 409 when its id is taken.
    pub async fn create<E: CatalogEntity>(
        &self,
        actor: &Actor,
        precondition: &Precondition,
        mut entity: E,
    ) -> Result<Written<Created<E>>, CommandError> {
        if entity.id().is_empty() {
            let id = entity.generated_id();
            entity.set_id(id);
        }
        if find::<E>(self.catalog.snapshot().catalog(), entity.id()).is_some() {
            return Err(already_exists::<E>(entity.id()).into());
        }
        // Before the import: a mask must never reach an upstream as a credential.
        let masks = entity.keep_stored_secrets(None);
        if !masks.is_empty() {
            return Err(WriteError::Invalid(masks).into());
        }
        self.catalog.check(precondition).await?;
        let imported = entity.import_on_create().await?;
        let (imported, prepared) = prepare(&self.catalog, &entity, imported).await?;
        let stamp = self.stamp(actor);
        let focus = focus::<E>(entity.id());
        let (import, revision) = self
            .catalog
            .write_if(actor, Some(&focus), precondition, |catalog| {
                let imported = imported.as_ref().map(|i| (i, &prepared));
                let (notes, summary) = apply_create(catalog, &entity, imported, &stamp)?;
                Ok(Mutation {
                    notes,
                    value: summary,
                })
            })
            .await?;
        if E::KIND == EntityKind::Sources {
            // A new source has no refresh history, whatever a deleted one of its id had.
            self.refresh_log.forget(entity.id());
        }
        self.count_issues(imported.as_ref());
        let entity = self.stored_version(entity, revision);
        Ok(Written {
            value: Created { entity, import },
            revision,
        })
    }

    /// Changes entity `id` by `edit`; the id and the creation stamps stay. A source whose
    /// document changed is re-imported in the same revision (refused as its creation would
    /// be).
    pub async fn update<E: CatalogEntity>(
        &self,
        actor: &Actor,
        precondition: &Precondition,
        id: &str,
        edit: Edit<E>,
    ) -> Result<Written<E>, CommandError> {
        let current = find::<E>(self.catalog.snapshot().catalog(), id).cloned();
        // What the new version imports is fetched from the version the current catalog gives;
        // the write applies it with the change.
        let (imported, prepared) = match current {
            Some(before) => {
                self.catalog.check(precondition).await?;
                let mut next = edit.apply(&before)?;
                // A mask must never reach an upstream as a credential; the write reports it.
                let imported = if next.keep_stored_secrets(Some(&before)).is_empty() {
                    next.import_on_update(&before).await?
                } else {
                    None
                };
                prepare(&self.catalog, &next, imported).await?
            }
            None => (None, Prepared::default()),
        };
        let stamp = self.stamp(actor);
        let (entity, revision) = self
            .catalog
            .write_if(actor, Some(&focus::<E>(id)), precondition, |catalog| {
                let imported = imported.as_ref().map(|i| (i, &prepared));
                let (notes, next) = apply_update(catalog, id, &edit, imported, &stamp)?;
                Ok(Mutation { notes, value: next })
            })
            .await?;
        self.count_issues(imported.as_ref());
        Ok(Written {
            value: self.stored_version(entity, revision),
            revision,
        })
    }

    /// Deletes entity `id` with what depends on it ([`CatalogEntity::before_delete`]).
    pub async fn delete<E: CatalogEntity>(
        &self,
        actor: &Actor,
        precondition: &Precondition,
        id: &str,
    ) -> Result<u64, CommandError> {
        let ((), revision) = self
            .catalog
            .write_if(actor, None, precondition, |catalog| {
                let notes = apply_delete::<E>(catalog, id)?;
                Ok(Mutation { notes, value: () })
            })
            .await?;
        Ok(revision)
    }

    /// Enables or disables tool `id`; idempotent (no change, no revision). `reason` is kept as
    /// `disabled_reason` when disabling.
    pub async fn toggle(
        &self,
        actor: &Actor,
        precondition: &Precondition,
        id: &str,
        enabled: bool,
        reason: Option<String>,
    ) -> Result<Written<Tool>, CommandError> {
        let stamp = self.stamp(actor);
        let (tool, revision) = self
            .catalog
            .write_if(actor, None, precondition, |catalog| {
                let tool = catalog
                    .tools
                    .iter_mut()
                    .find(|t| t.id == id)
                    .ok_or_else(|| not_found::<Tool>(id))?;
                if tool.enabled == enabled {
                    return Ok(Mutation {
                        notes: Vec::new(),
                        value: tool.clone(),
                    });
                }
                let before = tool.clone();
                tool.enabled = enabled;
                tool.disabled_reason = if enabled { None } else { reason.clone() };
                stamp.touched(tool);
                let after = tool.clone();
                let action = if enabled {
                    AuditAction::Enable
                } else {
                    AuditAction::Disable
                };
                Ok(Mutation {
                    notes: vec![note(action, id, Some(&before), Some(&after))],
                    value: after,
                })
            })
            .await?;
        Ok(Written {
            value: tool,
            revision,
        })
    }

    /// Replaces the whole catalog with `document`; nothing changes if anything is invalid.
    pub async fn replace_catalog(
        &self,
        actor: &Actor,
        precondition: &Precondition,
        document: Catalog,
    ) -> Result<Written<Counts>, CommandError> {
        let stamp = self.stamp(actor);
        let (value, revision) = self
            .catalog
            .write_if(actor, None, precondition, |catalog| {
                let (notes, counts) = apply_replace(catalog, &document, &stamp)?;
                Ok(Mutation {
                    notes,
                    value: counts,
                })
            })
            .await?;
        Ok(Written { value, revision })
    }

    /// Loads `seed` into an empty store (revision 0, nothing in it) and says so; otherwise
    /// leaves the store alone (`None`), so restarting with the same seed never overwrites what
    /// admins changed.
    pub async fn seed(&self, seed: Catalog) -> Result<Option<u64>, CommandError> {
        document::seed(&self.catalog, seed, &self.stamp(&toolgate())).await
    }

    /// Writes a consistent copy of the whole store beside it (embedded store: the data dir's
    /// `backups` folder); `None` on a store that is copied with its own tools (MongoDB). Not a
    /// catalog change, so not audited: logged with the request's id (never the admin's claims).
    pub async fn backup(&self, actor: &Actor) -> Result<Option<Backup>, StoreError> {
        let backup = self.catalog.store().backup().await?;
        if let Some(backup) = &backup {
            tracing::info!(
                request_id = actor.request_id.as_deref().unwrap_or("-"),
                file = %backup.file,
                revision = backup.revision,
                bytes = backup.bytes,
                "backup written"
            );
        }
        Ok(backup)
    }

    /// Re-imports source `id` ([`refresh_source`]), and records the attempt in the refresh log
    /// and the metrics, whoever triggered it.
    pub async fn refresh(
        &self,
        actor: &Actor,
        precondition: &Precondition,
        id: &str,
        trigger: RefreshTrigger,
    ) -> Result<Written<RefreshSummary>, CommandError> {
        let result =
            refresh_source(&self.catalog, actor, id, precondition, &self.stamp(actor)).await;
        let at = self.catalog.clock().now();
        match &result {
            Ok(written) => {
                self.refresh_log.record(id, at, Ok(&written.value.issues));
                self.metrics
                    .import_issues(written.value.skipped, written.value.cut);
            }
            // A refused precondition or an unknown source is not an attempt.
            Err(error @ (CommandError::Ingest(_) | CommandError::Write(WriteError::Store(_)))) => {
                self.refresh_log.record(id, at, Err(error.to_string()));
                self.metrics.refresh_failed(trigger.name());
            }
            Err(_) => {}
        }
        result
    }

    /// Counts what an import skipped or cut (`toolgate.import.operations`).
    fn count_issues(&self, import: Option<&Import>) {
        let Some(import) = import else { return };
        let count = |outcome| {
            import
                .issues
                .iter()
                .filter(|issue| issue.outcome == outcome)
                .count()
        };
        self.metrics
            .import_issues(count(IssueOutcome::Skipped), count(IssueOutcome::Cut));
    }

    /// The entity as the catalog holds it after a write (normalisation may have derived fields,
    /// such as a tool-service tool's input schema); `written` if another write came in between.
    fn stored_version<E: CatalogEntity>(&self, written: E, revision: u64) -> E {
        let snapshot = self.catalog.snapshot();
        if snapshot.revision() != revision {
            return written;
        }
        find::<E>(snapshot.catalog(), written.id())
            .cloned()
            .unwrap_or(written)
    }
}

/// The actor of what the server does by itself (seeding, periodic refreshes).
pub fn toolgate() -> Actor {
    Actor {
        subject: "toolgate".to_owned(),
        request_id: None,
    }
}

impl Commands {
    /// Who writes, and now: the one place a write reads the clock (the catalog's, the App's)
    /// for its stamps.
    fn stamp(&self, actor: &Actor) -> Stamp {
        Stamp {
            at: self.catalog.clock().now(),
            by: actor.subject.clone(),
        }
    }
}

fn focus<E: CatalogEntity>(id: &str) -> Focus {
    Focus {
        kind: E::KIND,
        id: id.to_owned(),
    }
}

fn find<'c, E: CatalogEntity>(catalog: &'c Catalog, id: &str) -> Option<&'c E> {
    E::all(catalog).iter().find(|e| e.id() == id)
}

/// What `entity`'s import can work out before the write takes the lock, against the current
/// snapshot: outside the lock, so that a hostile upstream's definitions cost the other writers
/// nothing, and on a blocking thread, so that they cost the requests sharing the async workers
/// nothing either. Gives the import back with it.
async fn prepare<E: CatalogEntity>(
    catalog: &CatalogService,
    entity: &E,
    imported: Option<Import>,
) -> Result<(Option<Import>, Prepared), WriteError> {
    match imported {
        None => Ok((None, Prepared::default())),
        Some(import) => {
            let (import, prepared) = prepare_import(catalog, entity, import).await?;
            Ok((Some(import), prepared))
        }
    }
}

/// [`prepare`] of an import there is.
async fn prepare_import<E: CatalogEntity>(
    catalog: &CatalogService,
    entity: &E,
    import: Import,
) -> Result<(Import, Prepared), WriteError> {
    let (snapshot, entity) = (catalog.snapshot(), entity.clone());
    tokio::task::spawn_blocking(move || {
        let prepared = entity.prepare_import(snapshot.catalog(), &import);
        (import, prepared)
    })
    .await
    .map_err(|error| crate::service::catalog::task_failed("preparing the import", &error))
}

/// Adds `entity`, stamped as created, with what it imported (and what was prepared of it
/// before the write); its import summary.
pub fn apply_create<E: CatalogEntity>(
    catalog: &mut Catalog,
    entity: &E,
    imported: Option<(&Import, &Prepared)>,
    stamp: &Stamp,
) -> Result<(Vec<AuditNote>, Option<RefreshSummary>), WriteError> {
    if find::<E>(catalog, entity.id()).is_some() {
        return Err(already_exists::<E>(entity.id()));
    }
    let mut entity = entity.clone();
    stamp.created(&mut entity);
    let mut notes = vec![note(AuditAction::Create, entity.id(), None, Some(&entity))];
    let id = entity.id().to_owned();
    E::all_mut(catalog).push(entity);
    let mut summary = None;
    if let Some((import, prepared)) = imported {
        let by = ImportedBy::AdminWrite;
        let (done, refresh) = apply_import(catalog, &id, import, prepared, stamp, by)?;
        notes.extend(refresh);
        summary = Some(done);
    }
    Ok((notes, summary))
}

/// Replaces entity `id` by `edit` of its current version, with what the new version imported:
/// the id cannot change, write-only values written as their mask keep the stored ones, and the
/// creation stamps stay.
pub fn apply_update<E: CatalogEntity>(
    catalog: &mut Catalog,
    id: &str,
    edit: &Edit<E>,
    imported: Option<(&Import, &Prepared)>,
    stamp: &Stamp,
) -> Result<(Vec<AuditNote>, E), WriteError> {
    let items = E::all_mut(catalog);
    let position = items
        .iter()
        .position(|e| e.id() == id)
        .ok_or_else(|| not_found::<E>(id))?;
    let before = items[position].clone();
    let mut next = edit.apply(&before)?;
    if next.id().is_empty() {
        next.set_id(id.to_owned());
    }
    if next.id() != id {
        return Err(WriteError::Invalid(vec![FieldError {
            field: "id".to_owned(),
            message: format!(
                "the id in the body ('{}') differs from the id in the path ('{id}'); ids cannot be changed",
                next.id()
            ),
            kind: ErrorKind::Invalid,
        }]));
    }
    let masks = next.keep_stored_secrets(Some(&before));
    if !masks.is_empty() {
        return Err(WriteError::Invalid(masks));
    }
    stamp.updated(&mut next, &before);
    items[position] = next.clone();
    let mut notes = vec![note(AuditAction::Update, id, Some(&before), Some(&next))];
    if let Some((import, prepared)) = imported {
        let by = ImportedBy::AdminWrite;
        let (_, refresh) = apply_import(catalog, id, import, prepared, stamp, by)?;
        notes.extend(refresh);
    }
    Ok((notes, next))
}

/// Removes entity `id`, after [`CatalogEntity::before_delete`] has fixed up or refused what
/// refers to it.
pub fn apply_delete<E: CatalogEntity>(
    catalog: &mut Catalog,
    id: &str,
) -> Result<Vec<AuditNote>, WriteError> {
    let before = find::<E>(catalog, id)
        .cloned()
        .ok_or_else(|| not_found::<E>(id))?;
    E::before_delete(catalog, id)?;
    E::all_mut(catalog).retain(|e| e.id() != id);
    Ok(vec![note(AuditAction::Delete, id, Some(&before), None)])
}

/// The audit note of one entity's change.
pub fn note<E: CatalogEntity>(
    action: AuditAction,
    id: &str,
    before: Option<&E>,
    after: Option<&E>,
) -> AuditNote {
    AuditNote {
        action,
        entity: E::KIND.into(),
        id: id.to_owned(),
        before: before.and_then(|e| serde_json::to_value(e).ok()),
        after: after.and_then(|e| serde_json::to_value(e).ok()),
    }
}

fn not_found<E: CatalogEntity>(id: &str) -> WriteError {
    WriteError::NotFound {
        kind: E::KIND,
        id: id.to_owned(),
    }
}

fn already_exists<E: CatalogEntity>(id: &str) -> WriteError {
    WriteError::Conflict {
        reason: format!("a {} with id '{id}' already exists", E::KIND.noun()),
        in_the_way: Vec::new(),
    }
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
    let Value::Object(target) = target else {
        return;
    };
    for (key, value) in patch {
        if value.is_null() {
            target.remove(key);
        } else {
            merge_patch(target.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

#[cfg(test)]
mod tests;
