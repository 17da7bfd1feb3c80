//! The change bus of a single instance: announcements go nowhere but to local subscribers.

use tokio::sync::watch;

use super::{CatalogChange, ChangeBus, Heard};

/// An in-process [`ChangeBus`]: a watch channel holding the newest announced revision. It
/// never disconnects, so it loses nothing.
pub struct LocalBus {
    heard: watch::Sender<Heard>,
}

impl LocalBus {
    pub fn new(revision: u64) -> LocalBus {
        LocalBus {
            heard: watch::Sender::new(Heard {
                revision,
                connections: 1,
            }),
        }
    }
}

impl ChangeBus for LocalBus {
    fn publish(&self, change: CatalogChange) {
        // Revisions only move forward, even if announcements were to arrive out of order.
        announce(&self.heard, change.revision);
    }

    fn subscribe(&self) -> watch::Receiver<Heard> {
        self.heard.subscribe()
    }
}

/// Moves the heard revision forward to `revision`; never back, even if announcements arrive
/// out of order.
pub(super) fn announce(heard: &watch::Sender<Heard>, revision: u64) {
    heard.send_if_modified(|heard| {
        let newer = revision > heard.revision;
        if newer {
            heard.revision = revision;
        }
        newer
    });
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
        assert_eq!(revisions.borrow_and_update().revision, 5);
        assert!(!revisions.has_changed().expect("open"));
    }
}
