//! The change bus of a single instance: announcements go nowhere but to local subscribers.

use tokio::sync::watch;

use super::{CatalogChange, ChangeBus};

/// An in-process [`ChangeBus`]: a watch channel holding the newest announced revision.
pub struct LocalBus {
    revisions: watch::Sender<u64>,
}

impl LocalBus {
    pub fn new(revision: u64) -> LocalBus {
        LocalBus {
            revisions: watch::Sender::new(revision),
        }
    }
}

impl ChangeBus for LocalBus {
    fn publish(&self, change: CatalogChange) {
        // Revisions only move forward, even if announcements were to arrive out of order.
        self.revisions.send_if_modified(|latest| {
            let newer = change.revision > *latest;
            if newer {
                *latest = change.revision;
            }
            newer
        });
    }

    fn subscribe(&self) -> watch::Receiver<u64> {
        self.revisions.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn subscribers_see_the_newest_revision_and_never_an_older_one() {
        let bus = LocalBus::new(3);
        let mut revisions = bus.subscribe();
        bus.publish(CatalogChange {
            revision: 5,
            ..CatalogChange::default()
        });
        bus.publish(CatalogChange {
            revision: 4,
            ..CatalogChange::default()
        });
        revisions.changed().await.expect("open");
        assert_eq!(*revisions.borrow_and_update(), 5);
        assert!(!revisions.has_changed().expect("open"));
    }
}
