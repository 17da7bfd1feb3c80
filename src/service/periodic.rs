//! Periodic refresh: sources whose config sets `refresh_interval_secs` are re-imported that
//! often, by a background task of the server, as the actor `toolgate`.
//!
//! Timing is kept in memory per instance: the first refresh of a source comes one interval
//! after the task first sees it (creation already imported it), later ones one interval after
//! the previous attempt, successful or not. A failed refresh changes nothing and is logged.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::{Actor, CatalogService, Precondition, RefreshLog, refresh_source};
use crate::domain::source_config::refresh_interval_secs;
use crate::telemetry::metrics::Metrics;

/// How often the task looks for due sources.
const TICK: Duration = Duration::from_secs(1);

/// Runs until the task is aborted (the server aborts it when it stops). Failures and the
/// operations each refresh skipped or cut are counted in `metrics`; each attempt is recorded
/// in `log` (shown by `GET /admin/sources/{id}`).
pub async fn run(catalog: Arc<CatalogService>, metrics: Arc<Metrics>, log: Arc<RefreshLog>) {
    let actor = Actor {
        subject: "toolgate".to_owned(),
        request_id: None,
    };
    let mut last: HashMap<String, Instant> = HashMap::new();
    let mut tick = tokio::time::interval(TICK);
    loop {
        tick.tick().await;
        let snapshot = catalog.snapshot();
        let now = Instant::now();
        let mut due = Vec::new();
        for source in &snapshot.catalog().sources {
            let Some(secs) = refresh_interval_secs(source).filter(|_| source.enabled) else {
                continue;
            };
            let previous = last.entry(source.id.clone()).or_insert(now);
            if now.duration_since(*previous) >= Duration::from_secs(secs) {
                *previous = now;
                due.push(source.id.clone());
            }
        }
        last.retain(|id, _| snapshot.catalog().sources.iter().any(|s| &s.id == id));
        for id in due {
            let result = refresh_source(&catalog, &actor, &id, &Precondition::Any).await;
            log.record(
                &id,
                chrono::Utc::now(),
                result.as_ref().map(|_| ()).map_err(ToString::to_string),
            );
            match result {
                Ok((summary, revision)) => {
                    metrics.import_issues(summary.skipped, summary.cut);
                    if summary.changed() {
                        tracing::info!(source = %id, revision, ?summary, "periodic refresh");
                    }
                }
                Err(error) => {
                    metrics.refresh_failed("periodic");
                    tracing::warn!(source = %id, %error, "periodic refresh failed");
                }
            }
        }
    }
}
