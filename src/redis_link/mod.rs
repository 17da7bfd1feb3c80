//! The gateway's connection to Redis, shared by the cache and the change bus, and the one
//! place that knows whether Redis is up.
//!
//! Redis is an accelerator and a messenger, never the source of truth: when it is down, agent
//! reads go on from the local snapshot and cache, and the catalog store's revision (polled)
//! keeps instances in step. So every call here is bounded by short timeouts, fails into "no
//! answer" rather than into an error for the request, and is recorded in [`RedisHealth`] for
//! `/readyz` and the metrics. While Redis is down, cache lookups are skipped outright except for
//! one probe per [`PROBE_INTERVAL`], so a dead Redis costs agents nothing.

//!
//! The Redis is one server (`redis://`), a Redis Cluster (`redis+cluster://`: each key goes to
//! the node that owns its slot; pub/sub messages reach every node) or the master a set of
//! Sentinels names (`redis+sentinel://`: followed across failovers); [`target`] reads the URL.

mod commands;
mod health;
mod listen;
pub mod sentinel;
mod target;

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig, PubSub};
use redis::cluster::ClusterClient;
use redis::{Client, RedisConnectionInfo, RedisError};

pub use commands::Commands;
pub use health::RedisHealth;
pub use listen::{Listening, listen};
pub use target::Target;

use commands::LazyCluster;
use sentinel::SentinelMaster;

/// Longest wait for one command; a cache answer slower than this is worth less than computing.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_millis(250);
/// Longest wait for a TCP connection to Redis.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// While Redis is down, how often one request may try it again.
pub const PROBE_INTERVAL: Duration = Duration::from_secs(1);

/// A connection to Redis that reconnects by itself.
pub struct RedisLink {
    topology: Topology,
    health: RedisHealth,
}

/// How the gateway reaches its Redis.
enum Topology {
    Single {
        client: Client,
        commands: ConnectionManager,
    },
    Cluster {
        /// A `redis://` URL per seed node, for pub/sub connections.
        nodes: Vec<String>,
        commands: LazyCluster,
    },
    Sentinel(Arc<SentinelMaster>),
}

/// Why the gateway could not use Redis.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("invalid Redis URL: {0}")]
    Url(String),
    #[error("Redis did not answer: {0}")]
    Unavailable(String),
}

/// The client's refusal of a URL, by its kind only: its text may quote a part of the URL,
/// which may be a part of its password.
fn url_error(error: RedisError) -> LinkError {
    LinkError::Url(format!(
        "the Redis client does not accept it ({:?}; expected redis://[user:password@]host:port[/db], \
         rediss://…, redis+cluster://… or redis+sentinel://…){}",
        error.kind(),
        target::ENCODE_HINT
    ))
}

impl RedisLink {
    /// A link to the Redis at `url` (a server, a cluster or a Sentinel master). Connecting is
    /// lazy: the gateway starts (degraded) even if Redis is down, and catches up when it comes
    /// back.
    pub fn open(url: &str) -> Result<RedisLink, LinkError> {
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(2));
        let topology = match Target::parse(url)? {
            Target::Single(url) => {
                let client = Client::open(url).map_err(url_error)?;
                let commands = ConnectionManager::new_lazy_with_config(client.clone(), config)
                    .map_err(url_error)?;
                Topology::Single { client, commands }
            }
            Target::Cluster(nodes) => {
                let client = ClusterClient::builder(nodes.clone())
                    .connection_timeout(CONNECT_TIMEOUT)
                    .response_timeout(RESPONSE_TIMEOUT)
                    .retries(1)
                    .build()
                    .map_err(url_error)?;
                Topology::Cluster {
                    nodes,
                    commands: LazyCluster::new(client),
                }
            }
            Target::Sentinel {
                sentinels,
                master,
                username,
                password,
                db,
            } => {
                let mut redis = RedisConnectionInfo::default().set_db(db);
                if let Some(username) = username {
                    redis = redis.set_username(username);
                }
                if let Some(password) = password {
                    redis = redis.set_password(password);
                }
                Topology::Sentinel(SentinelMaster::new(&sentinels, &master, redis, config)?)
            }
        };
        Ok(RedisLink {
            topology,
            health: RedisHealth::default(),
        })
    }

    /// A connection for commands (cheap to clone; multiplexed).
    pub fn commands(&self) -> Commands {
        match &self.topology {
            Topology::Single { commands, .. } => Commands::Single(commands.clone()),
            Topology::Cluster { commands, .. } => Commands::Cluster(commands.clone()),
            Topology::Sentinel(followed) => Commands::Sentinel(Arc::clone(followed)),
        }
    }

    /// A pub/sub connection of its own, within [`CONNECT_TIMEOUT`] per server tried: to the
    /// server, to the first cluster node that answers (a cluster delivers every `PUBLISH` to
    /// every node), or to the current master.
    pub async fn pubsub(&self) -> Result<PubSub, RedisError> {
        let connect = |client: Client| async move {
            tokio::time::timeout(CONNECT_TIMEOUT, client.get_async_pubsub())
                .await
                .map_err(|_| {
                    RedisError::from((redis::ErrorKind::Io, "timed out connecting to Redis"))
                })?
        };
        match &self.topology {
            Topology::Single { client, .. } => connect(client.clone()).await,
            Topology::Sentinel(followed) => connect(followed.master().await?.client.clone()).await,
            Topology::Cluster { nodes, .. } => {
                let mut last = RedisError::from((redis::ErrorKind::Io, "no cluster node"));
                for node in nodes {
                    match connect(Client::open(node.as_str())?).await {
                        Ok(pubsub) => return Ok(pubsub),
                        Err(error) => last = error,
                    }
                }
                Err(last)
            }
        }
    }

    /// Sets each `(key, value, ttl_secs)`: one pipeline on a server; on a cluster, one command
    /// per key (a cluster refuses a pipeline whose keys live in several slots), all at once.
    pub async fn set_all(&self, entries: Vec<(String, Vec<u8>, u64)>) -> Result<(), RedisError> {
        let mut connection = self.commands();
        if !matches!(self.topology, Topology::Cluster { .. }) {
            let mut pipe = redis::pipe();
            for (key, value, ttl) in entries {
                pipe.set_ex(key, value, ttl).ignore();
            }
            return pipe.query_async(&mut connection).await;
        }
        let writes = entries.into_iter().map(|(key, value, ttl)| {
            let mut connection = connection.clone();
            async move {
                redis::cmd("SET")
                    .arg(key)
                    .arg(value)
                    .arg("EX")
                    .arg(ttl)
                    .query_async::<()>(&mut connection)
                    .await
            }
        });
        futures_util::future::join_all(writes)
            .await
            .into_iter()
            .collect()
    }

    pub fn health(&self) -> &RedisHealth {
        &self.health
    }

    /// Asks Redis whether it is there (for `/readyz`).
    pub async fn ping(&self) -> Result<(), LinkError> {
        let mut connection = self.commands();
        let answer: Result<String, RedisError> =
            redis::cmd("PING").query_async(&mut connection).await;
        self.health.record(answer.map(drop))
    }
}

/// The span of one Redis call, a child of what the caller is doing: `debug`, so free unless
/// traces are exported.
pub fn command_span(name: &'static str, operation: &'static str) -> tracing::Span {
    tracing::debug_span!(
        "redis",
        otel.name = name,
        otel.kind = "client",
        db.system.name = "redis",
        db.operation.name = operation,
    )
}
