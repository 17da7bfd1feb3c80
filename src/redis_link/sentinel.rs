//! The Redis master that a set of Sentinels names, followed across failovers.
//!
//! The master is asked of the Sentinels (the `redis` crate's client: `SENTINEL MASTERS`, then
//! `ROLE` on the named master, so a demoted master is never taken) on first use and then every
//! [`MASTER_CHECK`] by a task that lives as long as the link. When the Sentinels name another
//! master, commands go to it from then on; the pub/sub listener, whose connection drops with
//! the old master, reconnects to the new one. Commands that fail meanwhile are Redis being
//! down for the gateway: agents are served from the local snapshot, as with one server.

use std::sync::{Arc, Weak};
use std::time::Duration;

use arc_swap::ArcSwapOption;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
use redis::{Client, RedisConnectionInfo, RedisError};
use tokio::sync::Mutex;

use super::{CONNECT_TIMEOUT, LinkError};

/// How often the Sentinels are asked which server is the master.
pub const MASTER_CHECK: Duration = Duration::from_secs(1);

/// The current master: a client (for pub/sub) and a reconnecting command connection.
pub(super) struct Master {
    pub client: Client,
    pub commands: ConnectionManager,
    address: String,
}

/// The Sentinels and the master they name.
pub struct SentinelMaster {
    sentinels: Mutex<SentinelClient>,
    current: ArcSwapOption<Master>,
    config: ConnectionManagerConfig,
}

impl SentinelMaster {
    /// Follows `master` through `sentinels`; nothing is asked yet.
    pub(super) fn new(
        sentinels: &[String],
        master: &str,
        redis: RedisConnectionInfo,
        config: ConnectionManagerConfig,
    ) -> Result<Arc<SentinelMaster>, LinkError> {
        let node = SentinelNodeConnectionInfo::default().set_redis_connection_info(redis);
        let client = SentinelClient::build(
            sentinels.to_vec(),
            master.to_owned(),
            Some(node),
            SentinelServerType::Master,
        )
        .map_err(super::url_error)?;
        let followed = Arc::new(SentinelMaster {
            sentinels: Mutex::new(client),
            current: ArcSwapOption::empty(),
            config,
        });
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(watch(Arc::downgrade(&followed)));
        }
        Ok(followed)
    }

    /// The master, asked of the Sentinels if none is known yet.
    pub(super) async fn master(&self) -> Result<Arc<Master>, RedisError> {
        match self.current.load_full() {
            Some(master) => Ok(master),
            None => self.ask().await,
        }
    }

    /// Asks the Sentinels which server is the master, and switches to it if it changed.
    async fn ask(&self) -> Result<Arc<Master>, RedisError> {
        let mut sentinels = self.sentinels.lock().await;
        let client = tokio::time::timeout(CONNECT_TIMEOUT * 2, sentinels.async_get_client())
            .await
            .map_err(|_| {
                RedisError::from((
                    redis::ErrorKind::Io,
                    "timed out asking the Sentinels for the master",
                ))
            })??;
        drop(sentinels);
        let address = client.get_connection_info().addr().to_string();
        if let Some(current) = self.current.load_full().filter(|m| m.address == address) {
            return Ok(current);
        }
        let commands =
            ConnectionManager::new_lazy_with_config(client.clone(), self.config.clone())?;
        let master = Arc::new(Master {
            client,
            commands,
            address: address.clone(),
        });
        let previous = self.current.swap(Some(Arc::clone(&master)));
        match previous {
            Some(previous) => tracing::warn!(
                from = %previous.address,
                to = %address,
                "the Sentinels name another Redis master: following it"
            ),
            None => tracing::info!(master = %address, "the Sentinels name the Redis master"),
        }
        Ok(master)
    }
}

/// Asks the Sentinels every [`MASTER_CHECK`] until the link is dropped.
async fn watch(followed: Weak<SentinelMaster>) {
    loop {
        tokio::time::sleep(MASTER_CHECK).await;
        let Some(followed) = followed.upgrade() else {
            return;
        };
        if let Err(error) = followed.ask().await {
            tracing::debug!(%error, "the Sentinels could not be asked for the master");
        }
    }
}
