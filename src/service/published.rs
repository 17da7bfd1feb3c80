//! The snapshot readers see, and what is told when a new one is published.

use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio::sync::watch;

use crate::domain::continuity::Continuity;
use crate::domain::snapshot::Snapshot;

/// The snapshot readers see, and the channel that announces each new one.
pub(super) struct Published {
    pub(super) current: ArcSwap<Snapshot>,
    pub(super) revisions: watch::Sender<u64>,
    /// What keeps state derived from snapshots, told how each new one continues the last.
    pub(super) carriers: std::sync::RwLock<Vec<Arc<dyn CarryOver>>>,
}

/// Something that keeps what it derived from one snapshot (cached decisions and manifests) and
/// can carry what is still true to the next one.
pub trait CarryOver: Send + Sync {
    /// Called with how the snapshot about to be published continues the current one, before
    /// readers can see it, so the first request at the new revision finds what was carried.
    fn carry(&self, continuity: &Continuity);

    /// Called before a snapshot of a lower revision than the current one is published: the
    /// store went back (restored from a backup), so revision numbers will come again with
    /// other content. Everything kept by revision must go, or a request at a number seen
    /// before would be answered from the old catalog.
    fn restart(&self);
}

impl Published {
    pub(super) fn publish(&self, snapshot: Snapshot) {
        let revision = snapshot.revision();
        {
            let carriers = self.carriers.read().unwrap_or_else(|p| p.into_inner());
            let current = self.current.load().revision();
            if revision < current {
                tracing::warn!(
                    from = current,
                    to = revision,
                    "the catalog store went back to an earlier revision (restored from a \
                     backup?): every cached decision and manifest is dropped"
                );
                for carrier in carriers.iter() {
                    carrier.restart();
                }
            } else if !carriers.is_empty()
                && let Some(continuity) = snapshot.continuity_from(&self.current.load())
            {
                for carrier in carriers.iter() {
                    carrier.carry(&continuity);
                }
            }
        }
        self.current.store(Arc::new(snapshot));
        self.revisions.send_replace(revision);
    }
}
