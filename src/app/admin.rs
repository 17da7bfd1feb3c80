//! The admin desk: everything an admin does (catalog reads and writes, audit, backup, impact and
//! preview, what is live), reached only through the admin rule ([`App::admin`]), whatever the
//! transport (the admin API, the console). Writes, backups, impact and previews are charged to
//! the caller's `admin_writes` budget here, for every transport alike; reads are not limited.

use std::sync::Arc;

use super::App;
use crate::domain::claims::Claims;
use crate::domain::manifest::ManifestOptions;
use crate::domain::snapshot::Snapshot;
use crate::service::impact::{ImpactError, ImpactReport, ImpactRequest};
use crate::service::limits::{Limited, RouteClass};
use crate::service::refresh_log::RefreshStatus;
use crate::service::seen::Seen;
use crate::service::{Actor, Caller, Commands, Refusal, read};
use crate::store::Backup;
use crate::store::{AuditQuery, AuditRecord, StoreError, Subject};
use crate::stream::hub::LiveView;

/// An admin's access to the gateway: made only by [`App::admin`], so that holding one means
/// the admin rule passed for its caller.
#[derive(Clone)]
pub struct AdminDesk {
    app: Arc<App>,
    caller: Caller,
}

impl App {
    /// The admin desk of `caller`, when the admin rule passes (403 otherwise).
    pub fn admin(self: &Arc<App>, caller: Caller) -> Result<AdminDesk, Refusal> {
        read::admin_route(&caller)?;
        Ok(AdminDesk {
            app: Arc::clone(self),
            caller,
        })
    }
}

impl AdminDesk {
    /// The admin this desk serves.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// `GET /admin/runs`: runs matching `filter`, at most 500, by id.
    pub async fn runs(
        &self,
        filter: &crate::service::runs::RunFilter,
    ) -> Result<Vec<serde_json::Value>, super::RunDenied> {
        self.app.list_runs(filter).await
    }

    /// Run `id` as `GET /runs/{id}` shows it (an admin sees every run).
    pub async fn run(&self, id: &str) -> Result<serde_json::Value, super::RunDenied> {
        self.app.run_status(&self.caller, id).await
    }

    /// Ends run `id` and its subtree; the runs ended now.
    pub async fn end_run(&self, id: &str) -> Result<Vec<String>, super::RunDenied> {
        self.app.end_run(&self.caller, id).await
    }

    /// What View as shows for run `id`: the claims its token is evaluated as and the options
    /// its rules narrow with (its pinned set, its state); `None` when it is not live.
    pub async fn run_preview(
        &self,
        id: &str,
    ) -> Result<Option<(crate::domain::claims::Claims, ManifestOptions)>, super::RunDenied> {
        self.app.run_preview(id).await
    }

    /// Who the audit log names for a request of this admin: its `sub`, and the request's id.
    pub fn actor(&self, request_id: Option<&str>) -> Actor {
        Actor {
            subject: self.caller.sub().to_owned(),
            request_id: request_id.map(str::to_owned),
        }
    }

    /// The catalog as it is now.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.app.catalog.snapshot()
    }

    /// The catalog's commands, for one write: charged to the `admin_writes` budget.
    pub fn write(&self) -> Result<&Commands, Limited> {
        self.charge()?;
        Ok(&self.app.commands)
    }

    /// A backup of the embedded store (`None`: the catalog is in MongoDB), charged as a write.
    pub async fn backup(&self, actor: &Actor) -> Result<Option<Backup>, BackupError> {
        self.charge()?;
        Ok(self.app.commands.backup(actor).await?)
    }

    /// The impact of a proposed change on everyone recently served, charged as a write (it
    /// evaluates the catalog for every identity).
    pub async fn impact(&self, request: ImpactRequest<'_>) -> Result<ImpactReport, ImpactDenied> {
        self.charge()?;
        let app = &self.app;
        Ok(crate::service::impact::preview(
            &app.catalog,
            &app.manifests,
            &app.metrics,
            &app.impact_runs,
            request,
        )
        .await?)
    }

    /// The manifest any `claims` would get, with its explanation, and the revision it was
    /// made at; charged as a write.
    pub fn preview(
        &self,
        claims: &Claims,
        options: &ManifestOptions,
    ) -> Result<(bytes::Bytes, u64), Limited> {
        self.charge()?;
        let snapshot = self.app.catalog.snapshot();
        let explained = snapshot.explain(claims, options);
        let body = super::agent::with_explanation(&explained.manifest, &explained.explanation);
        Ok((body, snapshot.revision()))
    }

    /// The audit records of `query`, sources' secrets masked, and the cursor of the next page
    /// exactly when another matching record follows. That is asked of the store separately
    /// (one record after the page's last) rather than by reading one record more: the store
    /// caps a query at [`AuditQuery::MAX_LIMIT`], so a page of the largest size could then
    /// never have a next page.
    pub async fn audit(
        &self,
        query: AuditQuery,
    ) -> Result<(Vec<AuditRecord>, Option<String>), StoreError> {
        let store = self.app.catalog.store();
        let records = store.audit(query.clone()).await?;
        let more = match records.last().filter(|_| records.len() == query.limit) {
            None => None,
            Some(last) => {
                let probe = if query.newest_first {
                    AuditQuery {
                        before_seq: Some(last.seq),
                        limit: 1,
                        ..query
                    }
                } else {
                    AuditQuery {
                        after_seq: Some(last.seq),
                        limit: 1,
                        ..query
                    }
                };
                let more = !store.audit(probe).await?.is_empty();
                more.then(|| last.seq.to_string())
            }
        };
        let mut records = records;
        // Records written before sources' secrets were masked on the way in are masked here.
        for record in records.iter_mut().filter(|r| r.entity == Subject::Sources) {
            for side in [&mut record.before, &mut record.after]
                .into_iter()
                .flatten()
            {
                crate::domain::secrets::mask_source_json(side);
            }
        }
        Ok((records, more))
    }

    /// The last refresh of source `id` on this instance.
    pub fn refresh_status(&self, id: &str) -> Option<RefreshStatus> {
        self.app.refresh_log.get(id)
    }

    /// The claim sets served recently, projected onto what `snapshot`'s policies read.
    pub fn recent_claim_sets(&self, snapshot: &Snapshot) -> Vec<Seen> {
        self.app.manifests.recent_claim_sets(snapshot)
    }

    /// The open streams, grouped by manifest.
    pub fn live(&self) -> LiveView {
        self.app.hub.live()
    }

    fn charge(&self) -> Result<(), Limited> {
        self.app
            .limits
            .charge(RouteClass::AdminWrites, &self.caller)
    }
}

/// Why a backup was not made.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error(transparent)]
    Limited(#[from] Limited),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why an impact was not previewed.
#[derive(Debug, thiserror::Error)]
pub enum ImpactDenied {
    #[error(transparent)]
    Limited(#[from] Limited),
    #[error(transparent)]
    Impact(#[from] ImpactError),
}
