//! toolgate's signing keys over time: made when there is none or the newest is older than the
//! rotation period, published (JWKS, verifier) as soon as they are in the store, used for
//! signing only once every instance has had time to read them, and removed once no token they
//! signed can still be valid. Every instance on one store runs the same schedule against the
//! same keys, so they agree on which key signs without talking to each other.

use std::sync::Arc;
use std::time::Duration;

use crate::auth::{OwnIssuer, OwnKey, OwnKeySource};
use crate::store::{CatalogStore, SigningKeyRecord, StoreError};

/// How often each instance reads the keys again.
pub const REFRESH: Duration = Duration::from_secs(10);

/// A new key signs only this long after it was made: longer than [`REFRESH`], so that every
/// instance verifies its tokens before the first is issued.
pub const PUBLISH_DELAY: Duration = Duration::from_secs(30);

/// Added to a retired key's last possible token lifetime before it is removed (clock skew).
const REMOVAL_LEEWAY: i64 = 60;

/// The keys of one store, kept in step with it.
pub struct KeyRing {
    store: Arc<dyn CatalogStore>,
    own: OwnIssuer,
    rotation: Duration,
    max_lifetime: Duration,
    /// What the background rotation reads the time from: the App's clock.
    clock: Arc<dyn crate::clock::Clock>,
}

impl KeyRing {
    /// Keys kept in `store`, published through `own`, rotated every `rotation`, for tokens
    /// that live at most `max_lifetime`.
    pub fn new(
        store: Arc<dyn CatalogStore>,
        own: OwnIssuer,
        rotation: Duration,
        max_lifetime: Duration,
    ) -> KeyRing {
        KeyRing {
            store,
            own,
            rotation,
            max_lifetime,
            clock: Arc::new(crate::clock::SystemClock),
        }
    }

    /// The same ring, rotating by `clock` (the App's, which its tokens are stamped by).
    pub fn with_clock(mut self, clock: Arc<dyn crate::clock::Clock>) -> KeyRing {
        self.clock = clock;
        self
    }

    pub fn issuer(&self) -> &OwnIssuer {
        &self.own
    }

    /// Reads the keys, makes one when due, removes retired ones, and publishes the rest.
    pub async fn refresh(&self, now: i64) -> Result<(), StoreError> {
        let mut records = self.store.signing_keys().await?;
        let due = records
            .last()
            .is_none_or(|newest| now - newest.created_at >= secs(self.rotation));
        if due {
            let (key, private_key) = OwnKey::generate(now)
                .map_err(|error| StoreError::Unavailable(error.to_string()))?;
            let record = SigningKeyRecord {
                kid: key.kid.clone(),
                created_at: now,
                private_key,
            };
            self.store.add_signing_key(record).await?;
            tracing::info!(kid = %key.kid, "made a new signing key for delegated tokens");
            // Another instance may have made one at the same time: both are kept and read.
            records = self.store.signing_keys().await?;
        }
        let mut keys = Vec::with_capacity(records.len());
        for (position, record) in records.iter().enumerate() {
            let newer = &records[position + 1..];
            if self.retired(record, newer, now) {
                self.store.remove_signing_key(&record.kid).await?;
                tracing::info!(kid = %record.kid, "removed a retired signing key");
                continue;
            }
            match OwnKey::from_pkcs8(&record.kid, record.created_at, &record.private_key) {
                Ok(key) => keys.push(Arc::new(key)),
                Err(error) => tracing::error!(%error, "a stored signing key is unusable"),
            }
        }
        self.own.set_keys(keys);
        Ok(())
    }

    /// Whether no token `record` signed can still be valid: a newer key has signed instead
    /// for longer than a token lives.
    fn retired(&self, record: &SigningKeyRecord, newer: &[SigningKeyRecord], now: i64) -> bool {
        newer.iter().any(|successor| {
            let last_token_ends = successor
                .created_at
                .saturating_add(secs(PUBLISH_DELAY))
                .saturating_add(secs(self.max_lifetime))
                .saturating_add(REMOVAL_LEEWAY);
            last_token_ends <= now && successor.created_at > record.created_at
        })
    }

    /// The key that signs at `now`: the newest one published for [`PUBLISH_DELAY`], or, when
    /// none is that old yet (a new store), the oldest one.
    pub fn signing_key(&self, now: i64) -> Option<Arc<OwnKey>> {
        let keys = self.own.keys();
        keys.iter()
            .rev()
            .find(|key| key.created_at + secs(PUBLISH_DELAY) <= now)
            .or_else(|| keys.first())
            .cloned()
    }

    /// Refreshes every [`REFRESH`] until the ring is dropped elsewhere.
    pub fn spawn_refresh(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let ring = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(REFRESH);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks.tick().await;
            loop {
                ticks.tick().await;
                let Some(ring) = ring.upgrade() else { return };
                if let Err(error) = ring.refresh(ring.clock.unix_now()).await {
                    tracing::warn!(%error, "the signing keys could not be read; the last ones stay");
                }
            }
        })
    }
}

/// A token named a key of toolgate's not known here: another instance made it (on a new store,
/// instances that start together each make one); read the keys now rather than at the next
/// tick.
#[async_trait::async_trait]
impl OwnKeySource for KeyRing {
    async fn reload(&self) {
        if let Err(error) = self.refresh(self.clock.unix_now()).await {
            tracing::warn!(%error, "the signing keys could not be read; the last ones stay");
        }
    }
}

fn secs(duration: Duration) -> i64 {
    i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::embedded::EmbeddedStore;

    fn ring(store: Arc<dyn CatalogStore>) -> KeyRing {
        KeyRing::new(
            store,
            OwnIssuer::new("https://gw".to_owned()),
            Duration::from_secs(1000),
            Duration::from_secs(100),
        )
    }

    #[tokio::test]
    async fn keys_are_made_rotated_published_late_and_removed_when_retired() {
        let dir = tempfile::tempdir().expect("dir");
        let store: Arc<dyn CatalogStore> =
            Arc::new(EmbeddedStore::open(dir.path()).expect("store"));
        let ring = ring(Arc::clone(&store));
        ring.refresh(10_000).await.expect("refresh");
        let first = ring
            .signing_key(10_000)
            .expect("a key at once on a new store");
        // Another instance on the same store reads the same key and makes none.
        let other = super::KeyRing::new(
            Arc::clone(&store),
            OwnIssuer::new("https://gw".to_owned()),
            Duration::from_secs(1000),
            Duration::from_secs(100),
        );
        other.refresh(10_005).await.expect("refresh");
        assert_eq!(other.signing_key(10_005).expect("key").kid, first.kid);
        // Rotation: a new key is published at once, signs only after the publish delay.
        ring.refresh(11_000).await.expect("refresh");
        assert_eq!(ring.issuer().keys().len(), 2);
        assert_eq!(ring.signing_key(11_000).expect("key").kid, first.kid);
        let second = ring.signing_key(11_030).expect("key");
        assert_ne!(second.kid, first.kid);
        // The first is kept while its tokens may live, then removed.
        ring.refresh(11_030 + 100 + 59).await.expect("refresh");
        assert_eq!(ring.issuer().keys().len(), 2);
        ring.refresh(11_030 + 100 + 60).await.expect("refresh");
        let kids: Vec<String> = ring.issuer().keys().iter().map(|k| k.kid.clone()).collect();
        assert_eq!(kids, vec![second.kid.clone()]);
        assert_eq!(store.signing_keys().await.expect("keys").len(), 1);
    }

    #[tokio::test]
    async fn a_key_another_instance_made_is_read_when_a_token_names_it() {
        let dir = tempfile::tempdir().expect("dir");
        let store: Arc<dyn CatalogStore> =
            Arc::new(EmbeddedStore::open(dir.path()).expect("store"));
        let b = Arc::new(ring(Arc::clone(&store)));
        b.refresh(10_000).await.expect("refresh");
        let source: std::sync::Weak<dyn OwnKeySource> = Arc::downgrade(&b) as _;
        b.issuer().set_source(source);
        // Another instance rotates; this one has not read the store since.
        let a = ring(Arc::clone(&store));
        a.refresh(11_000).await.expect("refresh");
        let newest = a.issuer().keys().last().expect("a key").kid.clone();
        assert!(b.issuer().key(Some(&newest)).is_none());
        assert!(b.issuer().key_or_reload(Some(&newest)).await.is_some());
        // Made-up kids: not toolgate's shape, or read again no more than once a second.
        assert!(b.issuer().key_or_reload(Some("other-kid")).await.is_none());
        assert!(b.issuer().key_or_reload(Some("tg-made-up")).await.is_none());
    }
}
