//! The catalog service: the one place that changes the catalog and the one place that holds the
//! current compiled snapshot.
//!
//! A write is: take the current snapshot's catalog, apply the mutation to a copy, normalise,
//! validate the **whole** result, compile it, and commit the difference to the store with a
//! compare-and-set on the revision. Only after the store has committed is the new snapshot
//! published, so readers never see a catalog the store does not hold. A write that loses a race
//! with another instance reloads from the store and is recomputed; a write that fails anywhere
//! changes nothing.

use std::sync::Arc;

use arc_swap::ArcSwap;
use chrono::Utc;
use tokio::sync::{Mutex, watch};
use tracing::Instrument as _;

use super::diff::changes_between;
use super::precondition::Precondition;
pub use super::published::CarryOver;
use super::published::Published;
use super::threads::Threads;
use crate::bus::{CatalogChange, ChangeBus, LocalBus};
use crate::domain::model::Catalog;
use crate::domain::secrets;
use crate::domain::snapshot::{CompileError, Snapshot};
use crate::domain::validate::{ErrorKind, FieldError, validate};
use crate::store::{AuditRecord, CatalogStore, Change, Commit, EntityKind, StoreError, Subject};

/// How many times a write is recomputed after losing a race before giving up with 409.
const MAX_WRITE_ATTEMPTS: usize = 8;

/// Who asked for a write, for the audit log.
#[derive(Debug, Clone, Default)]
pub struct Actor {
    /// The admin token's `sub`.
    pub subject: String,
    pub request_id: Option<String>,
}

/// What was done to an entity, as the audit log names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditAction {
    Create,
    Update,
    Delete,
    Enable,
    Disable,
    Refresh,
    /// `PUT /admin/catalog`: the whole catalog.
    Replace,
    /// The seed catalog loaded at start.
    Seed,
    /// A pending revision of an imported tool approved.
    Approve,
    /// A pending revision of an imported tool rejected.
    Reject,
}

impl AuditAction {
    /// The action as stored and served (`GET /admin/audit`).
    pub const fn as_str(self) -> &'static str {
        match self {
            AuditAction::Create => "create",
            AuditAction::Update => "update",
            AuditAction::Delete => "delete",
            AuditAction::Enable => "enable",
            AuditAction::Disable => "disable",
            AuditAction::Refresh => "refresh",
            AuditAction::Replace => "replace",
            AuditAction::Seed => "seed",
            AuditAction::Approve => "approve",
            AuditAction::Reject => "reject",
        }
    }
}

/// What a mutation says about itself, for the audit log.
#[derive(Debug, Clone)]
pub struct AuditNote {
    pub action: AuditAction,
    pub entity: Subject,
    pub id: String,
    pub before: Option<serde_json::Value>,
    pub after: Option<serde_json::Value>,
}

/// The entity a write is about, so that its validation errors read relative to it.
#[derive(Debug, Clone)]
pub struct Focus {
    pub kind: EntityKind,
    pub id: String,
}

impl Focus {
    fn relativize(&self, catalog: &Catalog, errors: Vec<FieldError>) -> Vec<FieldError> {
        let position = match self.kind {
            EntityKind::Sources => catalog.sources.iter().position(|e| e.id == self.id),
            EntityKind::Tools => catalog.tools.iter().position(|e| e.id == self.id),
            EntityKind::Labels => catalog.labels.iter().position(|e| e.id == self.id),
            EntityKind::Groups => catalog.groups.iter().position(|e| e.id == self.id),
            EntityKind::Policies => catalog.policies.iter().position(|e| e.id == self.id),
            EntityKind::Revisions => catalog.revisions.iter().position(|e| e.id == self.id),
        };
        let Some(position) = position else {
            return errors;
        };
        let prefix = format!("{}[{position}].", self.kind.as_str());
        errors
            .into_iter()
            .map(|mut error| {
                if let Some(rest) = error.field.strip_prefix(&prefix) {
                    error.field = rest.to_owned();
                }
                error
            })
            .collect()
    }
}

/// A mutation's result: audit notes, and the value handed back to the caller.
pub struct Mutation<T> {
    pub notes: Vec<AuditNote>,
    pub value: T,
}

/// Why a write did not happen. Nothing was changed in any of these cases.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The entity to change does not exist.
    #[error("{} '{id}' does not exist", .kind.noun())]
    NotFound { kind: EntityKind, id: String },
    /// The resulting catalog would be invalid (422) or conflicting (409).
    #[error("the change would make the catalog invalid")]
    Invalid(Vec<FieldError>),
    /// The request itself conflicts (an id that is already taken, an entity still in use):
    /// what conflicts, and the fields of other entities that are in the way.
    #[error("{reason}")]
    Conflict {
        reason: String,
        in_the_way: Vec<FieldError>,
    },
    /// Other writers kept winning the race.
    #[error("the catalog kept changing concurrently; try again")]
    Contended,
    /// The write named revisions (`If-Match`) the catalog is no longer at: another write came
    /// first, and applying this one would revert it.
    #[error(
        "the catalog is at revision {current} (ETag \"r{current}\"), not one that If-Match names; read it again and reapply the change"
    )]
    PreconditionFailed { current: u64 },
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The store holds a catalog (written by another instance) that this instance cannot
    /// compile: not corrupt data, but a catalog this version cannot serve.
    #[error(
        "the stored catalog (written by another instance) does not compile on this instance: \
         {0}; upgrade this instance or fix the catalog from one that can serve it"
    )]
    Uncompilable(CompileError),
    /// A bug: a task of the write panicked (validating, compiling, committing). The message is
    /// for the log only; clients get a generic 500.
    #[error("{0}")]
    Internal(String),
}

impl WriteError {
    /// Whether any validation error is a conflict (duplicate id or name): those map to 409.
    pub fn is_conflict(errors: &[FieldError]) -> bool {
        !errors.is_empty() && errors.iter().all(|e| e.kind == ErrorKind::Conflict)
    }
}

/// Holds the current snapshot and performs every catalog write.
pub struct CatalogService {
    store: Arc<dyn CatalogStore>,
    published: Arc<Published>,
    /// Where committed writes are announced to other instances.
    bus: Arc<dyn ChangeBus>,
    /// Serialises this instance's writers; other instances are handled by the store's
    /// compare-and-set.
    write_lock: Mutex<()>,
    /// What writes are stamped with (audit records, `updated_at`): the App's clock.
    clock: Arc<dyn crate::clock::Clock>,
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "the stored catalog does not compile ({0}); fix it with `PUT /admin/catalog` after starting from a backup, or remove the data dir"
    )]
    Compile(#[from] CompileError),
}

impl CatalogService {
    /// Loads the stored catalog and compiles it; writes are announced on a [`LocalBus`].
    pub async fn open(store: Arc<dyn CatalogStore>) -> Result<CatalogService, OpenError> {
        CatalogService::open_with_bus(store, None).await
    }

    /// The same service, stamping its writes by `clock` (the App's: tests move it).
    pub fn with_clock(mut self, clock: Arc<dyn crate::clock::Clock>) -> CatalogService {
        self.clock = clock;
        self
    }

    /// The clock writes are stamped by.
    pub fn clock(&self) -> &Arc<dyn crate::clock::Clock> {
        &self.clock
    }

    /// Like [`CatalogService::open`], announcing writes on `bus` (a local one when `None`).
    pub async fn open_with_bus(
        store: Arc<dyn CatalogStore>,
        bus: Option<Arc<dyn ChangeBus>>,
    ) -> Result<CatalogService, OpenError> {
        let snapshot = load_snapshot(store.as_ref(), None).await?;
        let (revisions, _) = watch::channel(snapshot.revision());
        let bus = bus.unwrap_or_else(|| Arc::new(LocalBus::new(snapshot.revision())));
        Ok(CatalogService {
            store,
            bus,
            published: Arc::new(Published {
                current: ArcSwap::from_pointee(snapshot),
                revisions,
                carriers: std::sync::RwLock::default(),
            }),
            write_lock: Mutex::new(()),
            clock: Arc::new(crate::clock::SystemClock),
        })
    }

    /// The snapshot agents are served from. Cheap: one atomic load.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.published.current.load_full()
    }

    /// Tells `carrier` how every snapshot published from now on continues the one before.
    pub fn carry_into(&self, carrier: Arc<dyn CarryOver>) {
        self.published
            .carriers
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(carrier);
    }

    /// Notified with the new revision after every published snapshot.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.published.revisions.subscribe()
    }

    pub fn store(&self) -> &Arc<dyn CatalogStore> {
        &self.store
    }

    /// The bus this service announces its writes on.
    pub fn bus(&self) -> &Arc<dyn ChangeBus> {
        &self.bus
    }

    /// Reloads from the store if it is ahead of the current snapshot (another instance wrote).
    pub async fn refresh(&self) -> Result<bool, OpenError> {
        let stored = self.store.revision().await?;
        if stored == self.snapshot().revision() {
            return Ok(false);
        }
        let snapshot = load_snapshot(self.store.as_ref(), Some(&self.snapshot())).await?;
        self.publish(snapshot);
        Ok(true)
    }

    fn publish(&self, snapshot: Snapshot) {
        self.published.publish(snapshot);
    }

    /// Applies `mutate` to a copy of the catalog and commits the result atomically, whatever
    /// revision the catalog is at.
    ///
    /// `mutate` may run more than once (after losing a race); it must depend only on the
    /// catalog it is given. Returns the caller's value and the new revision (unchanged when the
    /// mutation changed nothing: no commit, no audit record). With a `focus`, validation errors
    /// inside that entity are reported relative to it (`claim_matchers[0].operator`).
    pub async fn write<T, F>(
        &self,
        actor: &Actor,
        focus: Option<&Focus>,
        mutate: F,
    ) -> Result<(T, u64), WriteError>
    where
        F: Fn(&mut Catalog) -> Result<Mutation<T>, WriteError>,
    {
        self.write_if(actor, focus, &Precondition::Any, mutate)
            .await
    }

    /// [`CatalogService::write`], only if the catalog is at a revision `precondition` admits
    /// ([`WriteError::PreconditionFailed`] otherwise, with nothing changed).
    ///
    /// The revision checked is the one the mutation is applied to, and the commit's
    /// compare-and-set holds the store to it: a write that lands in between makes the commit
    /// fail, and the retry checks again against the newer revision.
    pub async fn write_if<T, F>(
        &self,
        actor: &Actor,
        focus: Option<&Focus>,
        precondition: &Precondition,
        mutate: F,
    ) -> Result<(T, u64), WriteError>
    where
        F: Fn(&mut Catalog) -> Result<Mutation<T>, WriteError>,
    {
        let _guard = self.write_lock.lock().await;
        for _ in 0..MAX_WRITE_ATTEMPTS {
            let base = self.snapshot();
            if !precondition.admits(base.revision()) {
                if self.caught_up(precondition, base.revision()).await? {
                    continue;
                }
                return Err(WriteError::PreconditionFailed {
                    current: self.snapshot().revision(),
                });
            }
            let mut catalog = base.catalog().clone();
            let Mutation { notes, value } = mutate(&mut catalog)?;
            let (snapshot, changes) = match prepare_off_workers(catalog, &base).await? {
                Prepared::Invalid(catalog, errors) => {
                    return Err(invalid(focus, &catalog, errors));
                }
                Prepared::Unchanged => return Ok((value, base.revision())),
                Prepared::Ready(snapshot, changes) => (snapshot, changes),
            };
            let revision = snapshot.revision();
            let audit = audit_records(actor, notes, self.clock.now());
            let announcement = announcement(revision, &changes);
            let commit = Commit {
                expected_revision: base.revision(),
                changes,
                audit,
            };
            match self
                .commit_and_publish(commit, snapshot, announcement)
                .await?
            {
                Ok(committed) => {
                    debug_assert_eq!(committed, revision);
                    return Ok((value, revision));
                }
                Err(StoreError::RevisionConflict { .. }) => self.reload().await?,
                Err(error) => return Err(error.into()),
            }
        }
        Err(WriteError::Contended)
    }

    /// Commits `commit` and, once the store has it, publishes `snapshot` and announces the
    /// change on the bus. The outer error is the task failing; the inner one the store's.
    ///
    /// Commit and publish run as one task that the caller cannot cancel halfway: a request
    /// dropped mid-write (timeout, disconnect) must not leave the store ahead of the snapshot
    /// readers see.
    async fn commit_and_publish(
        &self,
        commit: Commit,
        snapshot: Box<Snapshot>,
        announcement: CatalogChange,
    ) -> Result<Result<u64, StoreError>, WriteError> {
        let (store, published) = (Arc::clone(&self.store), Arc::clone(&self.published));
        let bus = Arc::clone(&self.bus);
        // In the request's span, so that the commit's store and Redis spans are its children.
        tokio::spawn(
            async move {
                let result = store.commit(commit).await;
                if result.is_ok() {
                    published.publish(*snapshot);
                    bus.publish(announcement);
                }
                result
            }
            .in_current_span(),
        )
        .await
        .map_err(|error| task_failed("committing the write", &error))
    }

    /// What the catalog would become if `mutate` were written now: applied to a copy of the
    /// current catalog, validated and compiled beside the live snapshot exactly as a write
    /// would be, and nothing stored or published. Returns the current snapshot and the one the
    /// write would publish (the current one again when `mutate` changes nothing).
    pub async fn preview<F>(
        &self,
        focus: Option<&Focus>,
        precondition: &Precondition,
        mutate: F,
    ) -> Result<(Arc<Snapshot>, Arc<Snapshot>), WriteError>
    where
        F: FnOnce(&mut Catalog) -> Result<(), WriteError>,
    {
        self.check(precondition).await?;
        let base = self.snapshot();
        if !precondition.admits(base.revision()) {
            return Err(WriteError::PreconditionFailed {
                current: base.revision(),
            });
        }
        let mut catalog = base.catalog().clone();
        mutate(&mut catalog)?;
        match prepare_off_workers(catalog, &base).await? {
            Prepared::Invalid(catalog, errors) => Err(invalid(focus, &catalog, errors)),
            Prepared::Unchanged => Ok((Arc::clone(&base), base)),
            Prepared::Ready(after, _) => Ok((base, Arc::from(after))),
        }
    }

    /// Fails with [`WriteError::PreconditionFailed`] unless the catalog is at a revision
    /// `precondition` admits: for requests that may turn out to write nothing (a refresh), so
    /// that they answer a stale `If-Match` as a write would.
    pub async fn check(&self, precondition: &Precondition) -> Result<(), WriteError> {
        let revision = self.snapshot().revision();
        if precondition.admits(revision) || self.caught_up(precondition, revision).await? {
            return Ok(());
        }
        Err(WriteError::PreconditionFailed {
            current: self.snapshot().revision(),
        })
    }

    /// When `precondition` names a revision newer than `seen`, this instance may be trailing
    /// another one that wrote it: reloads from the store if it is ahead, and says whether the
    /// precondition holds now.
    async fn caught_up(&self, precondition: &Precondition, seen: u64) -> Result<bool, WriteError> {
        if !precondition.wants_newer_than(seen) || self.store.revision().await? == seen {
            return Ok(false);
        }
        self.reload().await?;
        Ok(precondition.admits(self.snapshot().revision()))
    }

    /// Publishes what the store holds (after losing a race to another instance).
    async fn reload(&self) -> Result<(), WriteError> {
        let fresh = load_snapshot(self.store.as_ref(), Some(&self.snapshot()))
            .await
            .map_err(|error| match error {
                OpenError::Store(error) => WriteError::Store(error),
                OpenError::Compile(error) => WriteError::Uncompilable(error),
            })?;
        self.publish(fresh);
        Ok(())
    }
}

/// A task of a write that did not finish. It panicked (a bug in validation, compilation or
/// the store: an internal error, not the store being unreachable) or was cancelled because the
/// runtime is shutting down (the service is going away: unavailable).
pub(crate) fn task_failed(doing: &str, error: &tokio::task::JoinError) -> WriteError {
    if error.is_panic() {
        WriteError::Internal(format!("{doing} panicked: {error}"))
    } else {
        WriteError::Store(StoreError::Unavailable(format!(
            "{doing} was cancelled: the server is shutting down"
        )))
    }
}

/// A mutated catalog, checked and compiled (or why not).
enum Prepared {
    Invalid(Catalog, Vec<FieldError>),
    Unchanged,
    Ready(Box<Snapshot>, Vec<crate::store::Change>),
}

/// [`prepare`] on a blocking thread. Validating and compiling a large catalog takes tens of
/// milliseconds: off the async workers, so that agent reads keep flowing during an admin write.
async fn prepare_off_workers(
    catalog: Catalog,
    base: &Arc<Snapshot>,
) -> Result<Prepared, WriteError> {
    let previous = Arc::clone(base);
    tokio::task::spawn_blocking(move || prepare(catalog, &previous))
        .await
        .map_err(|error| task_failed("validating and compiling the catalog", &error))?
}

/// The validation errors of an invalid catalog; with a `focus`, those inside that entity
/// relative to it (`claim_matchers[0].operator`).
fn invalid(focus: Option<&Focus>, catalog: &Catalog, errors: Vec<FieldError>) -> WriteError {
    WriteError::Invalid(match focus {
        Some(focus) => focus.relativize(catalog, errors),
        None => errors,
    })
}

/// The audit records of one write, all at one time; the store numbers them (`seq`,
/// `revision`) when it commits. Secrets in a source's before and after are masked.
fn audit_records(
    actor: &Actor,
    notes: Vec<AuditNote>,
    at: chrono::DateTime<Utc>,
) -> Vec<AuditRecord> {
    notes
        .into_iter()
        .map(redact_note)
        .map(|note| AuditRecord {
            seq: 0,
            revision: 0,
            at,
            actor: actor.subject.clone(),
            action: note.action.as_str().to_owned(),
            entity: note.entity,
            id: note.id,
            before: note.before,
            after: note.after,
            request_id: actor.request_id.clone(),
        })
        .collect()
}

/// Normalises, validates (in document order, so error paths point where the author wrote),
/// sorts into canonical order, diffs against `base` and compiles at the next revision.
fn prepare(mut catalog: Catalog, base: &Snapshot) -> Result<Prepared, WriteError> {
    catalog.normalize();
    let errors = validate(&catalog);
    if !errors.is_empty() {
        return Ok(Prepared::Invalid(catalog, errors));
    }
    catalog.sort_by_id();
    let changes = changes_between(base.catalog(), &catalog);
    if changes.is_empty() {
        return Ok(Prepared::Unchanged);
    }
    let snapshot = Snapshot::compile_after(
        catalog,
        base.revision() + 1,
        &Threads::available(),
        Some(base),
    )
    .map_err(|error| {
        WriteError::Invalid(vec![FieldError {
            field: error.field,
            message: error.message,
            kind: ErrorKind::Invalid,
        }])
    })?;
    Ok(Prepared::Ready(Box::new(snapshot), changes))
}

/// The audit log is read by every admin and kept for good: a source's write-only values never
/// enter it, whichever write noted the source.
fn redact_note(mut note: AuditNote) -> AuditNote {
    if note.entity == Subject::Sources {
        for side in [&mut note.before, &mut note.after].into_iter().flatten() {
            secrets::mask_source_json(side);
        }
    }
    note
}

/// What the bus says about a commit: its revision, the kinds and the ids it touched.
fn announcement(revision: u64, changes: &[Change]) -> CatalogChange {
    let mut change = CatalogChange {
        revision,
        ..CatalogChange::default()
    };
    for item in changes {
        let (kind, id) = match item {
            Change::Put(entity) => (Subject::from(entity.kind()), Some(entity.id().to_owned())),
            Change::Delete { kind, id } => (Subject::from(*kind), Some(id.clone())),
            Change::ReplaceAll(_) => (Subject::Catalog, None),
        };
        if !change.kinds.contains(&kind) {
            change.kinds.push(kind);
        }
        change.ids.extend(id);
    }
    change
}

/// The stored catalog, compiled; with the entries of `current`'s unchanged tools carried over.
async fn load_snapshot(
    store: &dyn CatalogStore,
    current: Option<&Snapshot>,
) -> Result<Snapshot, OpenError> {
    let stored = store.load().await?;
    let mut catalog = stored.catalog;
    catalog.normalize();
    catalog.sort_by_id();
    Ok(Snapshot::compile_after(
        catalog,
        stored.revision,
        &Threads::available(),
        current,
    )?)
}

#[cfg(test)]
mod tests;
