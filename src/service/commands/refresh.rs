//! Refreshing a source: fetch its definitions (outside any lock), then apply them in one catalog
//! write, so that one refresh is one revision and one audit record, and a failed fetch changes
//! nothing.

use super::{CommandError, Written};
use crate::domain::model::{Catalog, SourceType};
use crate::domain::source_config::Pinning;
use crate::domain::stamp::Stamp;
use crate::ingest::refresh::{self, Approval, Prepared, RefreshSummary};
use crate::ingest::{self, Import};
use crate::service::{
    Actor, AuditAction, AuditNote, CatalogService, Mutation, Precondition, WriteError,
};
use crate::store::{EntityKind, Subject};

/// Who asked for a refresh (the `trigger` of the failure metric).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshTrigger {
    Admin,
    Periodic,
}

impl RefreshTrigger {
    pub const fn name(self) -> &'static str {
        match self {
            RefreshTrigger::Admin => "admin",
            RefreshTrigger::Periodic => "periodic",
        }
    }
}

/// Re-imports source `id` and commits the result: the summary and the revision (unchanged when
/// nothing changed upstream: no revision, no audit record).
///
/// A `tool-service` source has nothing to fetch (its tools are written by admins and checked on
/// every write): its refresh reports its tools as unchanged.
///
/// `precondition` is checked before the fetch (a stale `If-Match` costs the upstream nothing)
/// and again by the write, against the revision the import is applied to.
pub(super) async fn refresh_source(
    catalog: &CatalogService,
    actor: &Actor,
    id: &str,
    precondition: &Precondition,
    stamp: &Stamp,
) -> Result<Written<RefreshSummary>, CommandError> {
    catalog.check(precondition).await?;
    let snapshot = catalog.snapshot();
    let not_found = || WriteError::NotFound {
        kind: EntityKind::Sources,
        id: id.to_owned(),
    };
    let source = snapshot
        .catalog()
        .sources
        .iter()
        .find(|s| s.id == id)
        .cloned()
        .ok_or_else(not_found)?;
    if source.kind() == Some(SourceType::ToolService) {
        let count = snapshot
            .catalog()
            .tools
            .iter()
            .filter(|t| t.source_id == id)
            .count();
        let summary = RefreshSummary {
            source_id: id.to_owned(),
            imported: count,
            unchanged: count,
            ..RefreshSummary::default()
        };
        return Ok(Written {
            value: summary,
            revision: snapshot.revision(),
        });
    }
    let import = ingest::fetch(&source).await?;
    let (import, prepared) = super::prepare_import(catalog, &source, import).await?;
    let (value, revision) = catalog
        .write_if(actor, None, precondition, |current| {
            if !current.sources.iter().any(|s| s.id == id) {
                return Err(not_found());
            }
            let by = ImportedBy::Refresh;
            let (summary, notes) = apply_import(current, id, &import, &prepared, stamp, by)?;
            Ok(Mutation {
                notes,
                value: summary,
            })
        })
        .await?;
    Ok(Written { value, revision })
}

/// Why an import is applied: an admin wrote the source (created it, or changed its config; the
/// admin approves what it imports) or it was refreshed (what changed follows its pinning).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ImportedBy {
    AdminWrite,
    Refresh,
}

/// Applies an import to `catalog` (with what was `prepared` of it before the write) and returns
/// its summary with the audit note of the refresh (none when nothing changed).
pub(super) fn apply_import(
    catalog: &mut Catalog,
    source_id: &str,
    import: &Import,
    prepared: &Prepared,
    stamp: &Stamp,
    by: ImportedBy,
) -> Result<(RefreshSummary, Vec<AuditNote>), WriteError> {
    let approval = match by {
        ImportedBy::AdminWrite => Approval::Admin,
        ImportedBy::Refresh => Approval::Refresh(
            catalog
                .sources
                .iter()
                .find(|s| s.id == source_id)
                .map(Pinning::of)
                .unwrap_or_default(),
        ),
    };
    let summary = refresh::apply_prepared(catalog, source_id, import, prepared, stamp, approval)
        .map_err(|error| WriteError::Conflict {
            reason: error.to_string(),
            in_the_way: Vec::new(),
        })?;
    let notes = if summary.changed() {
        vec![AuditNote {
            action: AuditAction::Refresh,
            entity: Subject::Sources,
            id: source_id.to_owned(),
            before: None,
            after: serde_json::to_value(&summary).ok(),
        }]
    } else {
        Vec::new()
    };
    Ok((summary, notes))
}
