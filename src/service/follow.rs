//! Keeping this instance's snapshot in step with the store when other instances write to it.
//!
//! [`follow`] reloads the local snapshot when the bus announces a revision ahead of it, when the
//! bus reconnects (announcements made while it was away are lost), and every `poll` (if set)
//! whatever the bus says, as a last safety net. The reload publishes the snapshot locally, so it
//! reaches this instance's streams like a local write.

use std::sync::Arc;
use std::time::Duration;

use super::CatalogService;
use crate::bus::ChangeBus;

/// Reloads the local snapshot when the bus announces a revision ahead of it, when the bus
/// reconnects, and every `poll` (if set) whatever the bus says. Runs until the catalog service
/// is gone (it does not keep the service, or its store, alive).
pub fn follow(
    bus: &dyn ChangeBus,
    catalog: &Arc<CatalogService>,
    poll: Option<Duration>,
) -> tokio::task::JoinHandle<()> {
    let mut heard = bus.subscribe();
    let catalog = Arc::downgrade(catalog);
    let mut ticks = poll.map(|every| {
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks
    });
    tokio::spawn(async move {
        let mut connections = heard.borrow().connections;
        loop {
            let reason = tokio::select! {
                changed = heard.changed() => match changed {
                    Ok(()) => {
                        let now = *heard.borrow_and_update();
                        let reconnected = now.connections != connections;
                        connections = now.connections;
                        Wake::Heard { revision: now.revision, reconnected }
                    }
                    Err(_) => break, // the bus is gone
                },
                _ = async {
                    match ticks.as_mut() {
                        Some(ticks) => ticks.tick().await,
                        None => std::future::pending().await,
                    }
                } => Wake::Poll,
            };
            let Some(catalog) = catalog.upgrade() else {
                break;
            };
            let local = catalog.snapshot().revision();
            if let Wake::Heard {
                revision,
                reconnected: false,
            } = reason
                && revision <= local
            {
                continue; // our own write, or one we already have
            }
            if let Err(error) = catalog.refresh().await {
                tracing::warn!(%error, ?reason, "cannot reload the catalog from the store");
            }
        }
    })
}

#[derive(Debug, Clone, Copy)]
enum Wake {
    Heard { revision: u64, reconnected: bool },
    Poll,
}
