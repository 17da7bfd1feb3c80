//! Periodic refresh: sources whose config sets `refresh_interval_secs` are re-imported that
//! often, by a background task of the server, as the actor `toolgate`.
//!
//! Timing is kept in memory per instance: the first refresh of a source comes one interval
//! after the task first sees it (creation already imported it), later ones one interval after
//! the previous attempt, successful or not. A failed refresh changes nothing and is logged.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::commands::toolgate;
use super::{CatalogService, Commands, Precondition, RefreshTrigger};
use crate::domain::source_config::refresh_interval_secs;

/// How often the task looks for due sources.
const TICK: Duration = Duration::from_secs(1);

/// Runs until the task is aborted (the server aborts it when it stops). Each attempt is a
/// [`Commands::refresh`]: counted in the metrics and recorded in the refresh log (shown by
/// `GET /admin/sources/{id}`).
pub async fn run(catalog: Arc<CatalogService>, commands: Arc<Commands>) {
    let actor = toolgate();
    // The clock's monotonic reading at each source's last refresh (the App's clock: a test
    // that moves it makes refreshes due).
    let mut last: HashMap<String, Duration> = HashMap::new();
    let mut tick = tokio::time::interval(TICK);
    loop {
        tick.tick().await;
        let snapshot = catalog.snapshot();
        let now = catalog.clock().monotonic();
        let mut due = Vec::new();
        for source in &snapshot.catalog().sources {
            let Some(secs) = refresh_interval_secs(source).filter(|_| source.enabled) else {
                continue;
            };
            let previous = last.entry(source.id.clone()).or_insert(now);
            if now.saturating_sub(*previous) >= Duration::from_secs(secs) {
                *previous = now;
                due.push(source.id.clone());
            }
        }
        last.retain(|id, _| snapshot.catalog().sources.iter().any(|s| &s.id == id));
        for id in due {
            let trigger = RefreshTrigger::Periodic;
            match commands
                .refresh(&actor, &Precondition::Any, &id, trigger)
                .await
            {
                Ok(written) if written.value.changed() => {
                    let (summary, revision) = (written.value, written.revision);
                    tracing::info!(source = %id, revision, ?summary, "periodic refresh");
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(source = %id, %error, "periodic refresh failed"),
            }
        }
    }
}
