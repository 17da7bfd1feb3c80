//! A connection for commands, whatever the Redis: one server's (or the current Sentinel
//! master's) reconnecting connection, or a Redis Cluster connection that routes each key to the
//! node that owns its slot.

use std::sync::Arc;

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisError, RedisFuture, Value};
use tokio::sync::OnceCell;

use super::CONNECT_TIMEOUT;
use super::sentinel::SentinelMaster;

/// A connection for commands; cheap to clone (both kinds multiplex one connection per node).
#[derive(Clone)]
pub enum Commands {
    Single(ConnectionManager),
    Cluster(LazyCluster),
    /// The master the Sentinels name now (asked of them on first use).
    Sentinel(Arc<SentinelMaster>),
}

/// A cluster connection made on first use, so that a gateway starts while the cluster is down
/// and connects when it is back; the connection then follows slot moves and node changes.
#[derive(Clone)]
pub struct LazyCluster {
    client: Arc<ClusterClient>,
    /// Set by the first call that connects; read without a lock after that.
    connection: Arc<OnceCell<ClusterConnection>>,
}

impl LazyCluster {
    pub(super) fn new(client: ClusterClient) -> LazyCluster {
        LazyCluster {
            client: Arc::new(client),
            connection: Arc::default(),
        }
    }

    /// The connection, made now if there is none yet (within [`CONNECT_TIMEOUT`]).
    async fn get(&self) -> Result<ClusterConnection, RedisError> {
        let connect = || async {
            tokio::time::timeout(CONNECT_TIMEOUT, self.client.get_async_connection())
                .await
                .map_err(|_| {
                    RedisError::from((
                        redis::ErrorKind::Io,
                        "timed out connecting to the Redis Cluster",
                    ))
                })?
        };
        self.connection.get_or_try_init(connect).await.cloned()
    }
}

impl ConnectionLike for Commands {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Commands::Single(connection) => connection.req_packed_command(cmd),
            Commands::Cluster(cluster) => Box::pin(async move {
                let mut connection = cluster.get().await?;
                connection.req_packed_command(cmd).await
            }),
            Commands::Sentinel(followed) => Box::pin(async move {
                let mut connection = followed.master().await?.commands.clone();
                connection.req_packed_command(cmd).await
            }),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Commands::Single(connection) => connection.req_packed_commands(pipeline, offset, count),
            Commands::Cluster(cluster) => Box::pin(async move {
                let mut connection = cluster.get().await?;
                connection
                    .req_packed_commands(pipeline, offset, count)
                    .await
            }),
            Commands::Sentinel(followed) => Box::pin(async move {
                let mut connection = followed.master().await?.commands.clone();
                connection
                    .req_packed_commands(pipeline, offset, count)
                    .await
            }),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Commands::Single(connection) => connection.get_db(),
            Commands::Cluster(_) | Commands::Sentinel(_) => 0,
        }
    }
}
