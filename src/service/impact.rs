//! The impact of a proposed change before it is made (`POST /admin/impact`): the change is
//! applied by the same pure functions a write uses ([`super::commands`]), validated and
//! compiled beside the live snapshot ([`CatalogService::preview`]), and nothing is written.
//! Then every claim set given, and every one this instance served recently
//! ([`super::seen::SeenClaims`]), is compared between the two snapshots one at a time, into a
//! report of bounded size ([`report`]).
//!
//! A preview compiles a second catalog and compares up to tens of thousands of claim sets, so
//! at most [`MAX_CONCURRENT_RUNS`] run at once ([`ImpactRuns`]); one more is refused at once
//! (429, retry after [`BUSY_RETRY_AFTER_SECS`]) rather than queued behind them with its body
//! held.
//!
//! A remembered claim set is only its projection onto what the policies read when it was
//! served: a change whose policies read other claims evaluates those as absent for it (fewer
//! tools, as everywhere), so such a change can show remembered identities losing tools that
//! their full tokens would keep. The claim sets given in the request are evaluated whole.

mod report;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::commands::{
    Edit, apply_create, apply_decision, apply_delete, apply_replace, apply_update,
};
use super::entity::CatalogEntity;
use super::{Actor, CatalogService, CommandError, Focus, Manifests, Precondition, WriteError};
use crate::domain::claims::Claims;
use crate::domain::findings::Rule;
use crate::domain::model::{AccessPolicy, Catalog, Label, Source, Tool, ToolGroup};
use crate::domain::snapshot::Snapshot;
use crate::domain::stamp::Stamp;
use crate::domain::validate::{ErrorKind, FieldError};
use crate::ingest::decide::Decision;
use crate::ingest::refresh::Prepared;
use crate::store::EntityKind;
use crate::telemetry::Metrics;

/// A change to preview.
#[derive(Debug, Clone)]
pub enum Proposal {
    /// The whole catalog replaced by this document (`PUT /admin/catalog`).
    Catalog(Catalog),
    /// One entity written (`PUT`, `PATCH` or `DELETE /admin/<collection>/{id}`).
    Change {
        kind: EntityKind,
        id: String,
        op: ChangeOp,
    },
    /// A pending revision of an imported tool approved (`{"collection": "revisions", "id",
    /// "op": "approve"}`) or rejected (`"op": "reject"`).
    Revision { id: String, approve: bool },
}

/// What happens to the entity of a [`Proposal::Change`].
#[derive(Debug, Clone)]
pub enum ChangeOp {
    /// The entity as written in a body: it replaces the stored one, or is created when there
    /// is none.
    Put(Value),
    /// An RFC 7396 merge patch of the stored entity.
    Patch(Map<String, Value>),
    Delete,
}

/// The impact on one claim set.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ClaimSetImpact {
    /// The claim set as given, its JSON text echoed: parsed only while it is evaluated.
    #[schema(value_type = Object)]
    pub claims: Box<RawValue>,
    pub gained: Vec<String>,
    pub lost: Vec<String>,
    /// Present (true) when `gained` and `lost` were cut: the answer lists at most
    /// [`MAX_LISTED_IDS`] tool ids in all.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// The impact on one claim set served recently.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SeenImpact {
    /// The claims policies read, as this instance remembers them (never whole tokens).
    #[schema(value_type = Object)]
    pub claims: Arc<Claims>,
    pub last_seen: DateTime<Utc>,
    pub gained: Vec<String>,
    pub lost: Vec<String>,
    /// As [`ClaimSetImpact::truncated`].
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// How many claim sets (given and seen) gain and lose one tool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ToolTotals {
    pub gained: usize,
    pub lost: usize,
}

/// The answer of an impact preview.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ImpactReport {
    /// The revision the change was previewed against (an `If-Match` of the write names it).
    pub revision: u64,
    /// The claim sets given, in order, each with its difference (possibly none).
    pub claims_sets: Vec<ClaimSetImpact>,
    /// The claim sets served recently whose manifest the change would change (but not those
    /// a given claim set stands for: those are answered once, as given).
    pub seen: Vec<SeenImpact>,
    pub totals: BTreeMap<String, ToolTotals>,
    /// What to keep in mind reading `seen`: claims the changed policies read that remembered
    /// claim sets cannot hold.
    pub warnings: Vec<String>,
}

pub use self::report::MAX_LISTED_IDS;

/// How many previews may run at once on one instance.
pub const MAX_CONCURRENT_RUNS: usize = 2;
/// What a preview refused for [`MAX_CONCURRENT_RUNS`] is told to wait: about one run over
/// 10,000 claim sets on the large catalog.
pub const BUSY_RETRY_AFTER_SECS: u64 = 1;

/// The previews running on this instance, at most [`MAX_CONCURRENT_RUNS`].
pub struct ImpactRuns {
    permits: tokio::sync::Semaphore,
    limit: usize,
}

impl ImpactRuns {
    /// At most `limit` at once.
    pub fn new(limit: usize) -> ImpactRuns {
        ImpactRuns {
            permits: tokio::sync::Semaphore::new(limit),
            limit,
        }
    }
}

impl Default for ImpactRuns {
    fn default() -> Self {
        ImpactRuns::new(MAX_CONCURRENT_RUNS)
    }
}

/// Why a preview was not made.
#[derive(Debug, thiserror::Error)]
pub enum ImpactError {
    /// The change was refused as its write would be.
    #[error(transparent)]
    Command(#[from] CommandError),
    /// As many previews as may run at once are running.
    #[error(
        "{limit} impact previews are running, as many as may run at once; retry after \
         {retry_after_secs} s"
    )]
    Busy { limit: usize, retry_after_secs: u64 },
}

/// Previews `proposal` for `claim_sets` and the claim sets `manifests` served recently, if
/// `runs` has room for one more.
pub async fn preview(
    catalog: &CatalogService,
    manifests: &Manifests,
    metrics: &Metrics,
    runs: &ImpactRuns,
    request: ImpactRequest<'_>,
) -> Result<ImpactReport, ImpactError> {
    let Ok(_running) = runs.permits.try_acquire() else {
        return Err(ImpactError::Busy {
            limit: runs.limit,
            retry_after_secs: BUSY_RETRY_AFTER_SECS,
        });
    };
    let started = Instant::now();
    let result = run(catalog, manifests, request).await;
    let outcome = if result.is_ok() { "ok" } else { "refused" };
    metrics.impact(outcome, started.elapsed());
    Ok(result?)
}

/// Who asks, on which condition, for which change and claim sets.
pub struct ImpactRequest<'r> {
    pub actor: &'r Actor,
    pub precondition: &'r Precondition,
    pub proposal: Proposal,
    /// Each a JSON object's text. Kept as text and parsed one at a time while compared: 10,000
    /// parsed claim sets of a few dozen roles each hold tens of MB, their text a few.
    pub claim_sets: Vec<Box<RawValue>>,
}

async fn run(
    catalog: &CatalogService,
    manifests: &Manifests,
    request: ImpactRequest<'_>,
) -> Result<ImpactReport, CommandError> {
    let ImpactRequest {
        actor,
        precondition,
        proposal,
        claim_sets,
    } = request;
    let stamp = Stamp {
        at: manifests.now(),
        by: actor.subject.clone(),
    };
    let (before, after) = match proposal {
        Proposal::Catalog(document) => {
            catalog
                .preview(None, precondition, |current| {
                    apply_replace(current, &document, &stamp).map(drop)
                })
                .await?
        }
        Proposal::Revision { id, approve } => {
            // What approving does, whatever the admin will have to acknowledge.
            let decision = if approve {
                Decision::Approve {
                    acknowledge: Rule::ALL.iter().map(|r| r.id().to_owned()).collect(),
                }
            } else {
                Decision::Reject
            };
            catalog
                .preview(None, precondition, |current| {
                    apply_decision(current, &id, &decision, None, &stamp).map(drop)
                })
                .await?
        }
        Proposal::Change { kind, id, op } => {
            let change = Change {
                catalog,
                precondition,
                id: &id,
                op,
                stamp: &stamp,
            };
            match kind {
                EntityKind::Sources => change.preview::<Source>().await?,
                EntityKind::Tools => change.preview::<Tool>().await?,
                EntityKind::Labels => change.preview::<Label>().await?,
                EntityKind::Groups => change.preview::<ToolGroup>().await?,
                EntityKind::Policies => change.preview::<AccessPolicy>().await?,
                EntityKind::Revisions => {
                    return Err(WriteError::Invalid(vec![FieldError {
                        field: "change.op".to_owned(),
                        message: "a revision is approved or rejected, not written".to_owned(),
                        kind: ErrorKind::Invalid,
                    }])
                    .into());
                }
            }
        }
    };
    let seen = manifests
        .seen()
        .recent(manifests.now(), before.read_paths());
    let warnings = unremembered(&before, &after);
    tokio::task::spawn_blocking(move || {
        report::compare(&before, &after, claim_sets, seen, warnings)
    })
    .await
    .map_err(|error| WriteError::Internal(format!("comparing manifests failed: {error}")).into())
}

/// A warning naming the claims `after`'s policies read and `before`'s do not: remembered claim
/// sets were projected onto `before`'s, so they lack these (absent, hence fewer tools).
fn unremembered(before: &Snapshot, after: &Snapshot) -> Vec<String> {
    let new: Vec<String> = after
        .read_paths()
        .iter()
        .filter(|path| !before.read_paths().contains(path))
        .map(|path| format!("'{}'", path.segments().join(".")))
        .collect();
    if new.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "the change makes policies read claims that remembered claim sets (seen) do not hold: {}; \
         they count as absent for those, so seen may show losses that whole tokens would not \
         have (name such claims in claims_sets to evaluate them)",
        new.join(", ")
    )]
}

/// One entity change to preview.
struct Change<'c> {
    catalog: &'c CatalogService,
    precondition: &'c Precondition,
    id: &'c str,
    op: ChangeOp,
    stamp: &'c Stamp,
}

impl Change<'_> {
    /// The current snapshot and the one the change would give, fetching what it imports as
    /// the write would (a source whose document changes).
    async fn preview<E: CatalogEntity>(
        self,
    ) -> Result<(Arc<Snapshot>, Arc<Snapshot>), CommandError> {
        let Change {
            catalog,
            precondition,
            id,
            op,
            stamp,
        } = self;
        catalog.check(precondition).await?;
        let current = E::all(catalog.snapshot().catalog())
            .iter()
            .find(|e| e.id() == id)
            .cloned();
        let focus = Focus {
            kind: E::KIND,
            id: id.to_owned(),
        };
        match (op, current) {
            (ChangeOp::Delete, _) => Ok(catalog
                .preview(Some(&focus), precondition, |c| {
                    apply_delete::<E>(c, id).map(drop)
                })
                .await?),
            (ChangeOp::Put(body), None) => {
                let mut entity: E = entity_from(body)?;
                if entity.id().is_empty() {
                    entity.set_id(id.to_owned());
                }
                if entity.id() != id {
                    return Err(invalid("change.body.id", "differs from change.id").into());
                }
                let masks = entity.keep_stored_secrets(None);
                if !masks.is_empty() {
                    return Err(WriteError::Invalid(masks).into());
                }
                let imported = entity.import_on_create().await?;
                Ok(catalog
                    .preview(Some(&focus), precondition, |c| {
                        let prepared = Prepared::default();
                        let imported = imported.as_ref().map(|i| (i, &prepared));
                        apply_create(c, &entity, imported, stamp).map(drop)
                    })
                    .await?)
            }
            (ChangeOp::Put(body), Some(before)) => {
                let edit = Edit::Replace(entity_from::<E>(body)?);
                update(catalog, precondition, &focus, edit, &before, stamp).await
            }
            (ChangeOp::Patch(patch), Some(before)) => {
                let edit = Edit::Patch(patch);
                update(catalog, precondition, &focus, edit, &before, stamp).await
            }
            (ChangeOp::Patch(_), None) => Err(WriteError::NotFound {
                kind: E::KIND,
                id: id.to_owned(),
            }
            .into()),
        }
    }
}

/// The snapshots of an update of `before` by `edit`, with what the new version imports.
async fn update<E: CatalogEntity>(
    catalog: &CatalogService,
    precondition: &Precondition,
    focus: &Focus,
    edit: Edit<E>,
    before: &E,
    stamp: &Stamp,
) -> Result<(Arc<Snapshot>, Arc<Snapshot>), CommandError> {
    let mut next = edit.apply(before)?;
    let imported = if next.keep_stored_secrets(Some(before)).is_empty() {
        next.import_on_update(before).await?
    } else {
        None
    };
    Ok(catalog
        .preview(Some(focus), precondition, |c| {
            let prepared = Prepared::default();
            let imported = imported.as_ref().map(|i| (i, &prepared));
            apply_update(c, &focus.id, &edit, imported, stamp).map(drop)
        })
        .await?)
}

/// A change's body as the entity, with errors at their field under `change.body`.
fn entity_from<E: CatalogEntity>(mut body: Value) -> Result<E, WriteError> {
    E::prepare_body(&mut body).map_err(|errors| {
        WriteError::Invalid(
            errors
                .into_iter()
                .map(|mut error| {
                    error.field = under_body(&error.field);
                    error
                })
                .collect(),
        )
    })?;
    serde_path_to_error::deserialize(body).map_err(|error| {
        let path = error.path().to_string();
        let field = if path == "." {
            "change.body".to_owned()
        } else {
            under_body(&path)
        };
        invalid(&field, &error.into_inner().to_string())
    })
}

fn under_body(field: &str) -> String {
    if field.is_empty() {
        "change.body".to_owned()
    } else {
        format!("change.body.{field}")
    }
}

fn invalid(field: &str, message: &str) -> WriteError {
    WriteError::Invalid(vec![FieldError {
        field: field.to_owned(),
        message: message.to_owned(),
        kind: ErrorKind::Invalid,
    }])
}
