//! Assembles and runs the gateway: store → catalog service → verifier → HTTP.
//!
//! The store is the embedded one (a redb file in the data dir) unless a MongoDB URI is
//! configured: then the catalog lives in MongoDB, shared with every other instance on the same
//! database, and the migrations are applied before the catalog is loaded.
//!
//! [`start`] binds and returns as soon as the gateway is accepting connections (tests and the
//! CLI use the bound address, which matters when listening on port 0); the returned
//! [`Running`] resolves when the server has shut down gracefully.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::auth::{AdminRule, AuthSettings, Verifier};
use crate::bus::{ChangeBus, RedisBus};
use crate::cache::CacheBudgets;
use crate::cache::redis::{SharedCache, SharedKey};
use crate::config::{Secret, Settings, dev_banner, sample_tokens};
use crate::domain::model::Catalog;
use crate::http::limit::{Limiters, RateLimits, RouteClass};
use crate::http::mcp::session::Sessions;
use crate::http::mcp::{McpEndpoint, McpSettings};
use crate::http::{AppState, router};
use crate::redis_link::RedisLink;
use crate::service::{
    CatalogService, CommandError, Commands, Decisions, Manifests, McpTools, RefreshLog, WriteError,
    access::AccessCache,
};
use crate::store::CatalogStore;
use crate::store::embedded::EmbeddedStore;
use crate::store::mongo::{CommitPathChoice, MongoStore};
use crate::store::observed::ObservedStore;
use crate::stream::{HubLimits, StreamBudget, StreamHub};
use crate::telemetry::{Metrics, OtlpSettings};
use crate::upstream::{CallLimits, Upstream};

mod activity;
pub mod fd_limit;
mod listen;
mod observed;

pub use listen::ConnectionLimits;

/// `toolgate serve`: runs the gateway with these settings until SIGINT or SIGTERM.
pub async fn run(settings: Settings) -> anyhow::Result<()> {
    let seed = match &settings.seed {
        Some(path) => {
            let mut catalog = crate::catalog_file::parse_catalog_file(path)
                .with_context(|| format!("reading the seed catalog {}", path.display()))?;
            catalog.normalize();
            Some(catalog)
        }
        None => None,
    };
    let admin_rule = AdminRule::new(&settings.admin_rule)?;
    let store = StoreConfig::from_settings(&settings);
    let open_files = fd_limit::raise_soft_limit();
    let max_connections = match settings.max_connections {
        Some(cap) => {
            if let Some(limit) = open_files.filter(|limit| cap as u64 >= *limit) {
                tracing::warn!(
                    max_connections = cap,
                    open_file_limit = limit,
                    "the connection cap is not below the open-file limit: past the limit, \
                     connections are refused by the system rather than by toolgate"
                );
            }
            cap
        }
        None => fd_limit::default_max_connections(open_files),
    };
    // Only instances that share their store can fall behind it.
    let revision_poll =
        matches!(store, StoreConfig::Mongo { .. }).then_some(settings.revision_poll);
    let config = ServerConfig {
        listen: settings.listen,
        store,
        seed,
        auth: settings.auth(),
        admin_rule,
        body_limit: settings.body_limit_bytes,
        request_timeout: settings.request_timeout,
        connections: ConnectionLimits {
            header_timeout: settings.header_timeout,
            idle_timeout: settings.idle_timeout,
            max_connections,
        },
        cache: settings.cache,
        sse_ping: settings.sse_ping,
        max_streams_per_subject: settings.max_streams_per_subject,
        rate_limits: settings.rate_limits,
        authz_deny_status: settings.authz_deny_status,
        otlp: settings.otlp(),
        redis_url: settings.redis_url.clone(),
        redis_secret: settings.redis_secret.clone(),
        revision_poll,
        mcp: settings.mcp.clone(),
    };
    let running = start(config, shutdown_signal()).await?;
    // One line on stdout that scripts (and the tests) read to find the bound address.
    println!("toolgate listening on http://{}", running.addr);
    if settings.dev_mode {
        let tokens = sample_tokens(&settings).context("minting the sample tokens")?;
        eprintln!("{}", dev_banner(&settings, &tokens.admin, &tokens.agent));
    }
    running.task.await.context("the server task failed")??;
    Ok(())
}

/// Where the catalog is stored.
#[derive(Debug, Clone)]
pub enum StoreConfig {
    /// A redb file in this folder: one instance at a time.
    Embedded { data_dir: PathBuf },
    /// A MongoDB database, shared by any number of instances. `Debug` redacts the URI.
    Mongo { uri: Secret, database: String },
}

impl StoreConfig {
    /// MongoDB when a URI is configured, else the embedded store in the data dir.
    pub fn from_settings(settings: &Settings) -> StoreConfig {
        match &settings.mongodb_uri {
            Some(uri) => StoreConfig::Mongo {
                uri: uri.clone(),
                database: settings.mongodb_database.clone(),
            },
            None => StoreConfig::Embedded {
                data_dir: settings.data_dir.clone(),
            },
        }
    }

    /// Opens the store; for MongoDB, also applies the migrations not yet applied.
    pub async fn open(&self) -> anyhow::Result<Arc<dyn CatalogStore>> {
        match self {
            StoreConfig::Embedded { data_dir } => {
                let data_dir = data_dir.clone();
                let store = tokio::task::spawn_blocking(move || EmbeddedStore::open(&data_dir))
                    .await
                    .context("opening the embedded store")??;
                Ok(Arc::new(store))
            }
            StoreConfig::Mongo { uri, database } => {
                let store = MongoStore::open(uri.expose(), database, CommitPathChoice::Detect)
                    .await
                    .with_context(|| format!("opening the MongoDB database `{database}`"))?;
                let report = store
                    .migrate()
                    .await
                    .with_context(|| format!("migrating the MongoDB database `{database}`"))?;
                tracing::info!(
                    database,
                    commit_path = ?store.commit_path(),
                    applied = ?report.applied,
                    "the catalog is stored in MongoDB"
                );
                Ok(Arc::new(store))
            }
        }
    }
}

/// Everything the server needs, already parsed and validated.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub store: StoreConfig,
    /// Loaded into the store at start when the store is empty.
    pub seed: Option<Catalog>,
    pub auth: AuthSettings,
    pub admin_rule: AdminRule,
    pub body_limit: usize,
    pub request_timeout: Duration,
    /// Timeouts and the cap on open connections.
    pub connections: ConnectionLimits,
    /// Byte budgets of the in-process caches.
    pub cache: CacheBudgets,
    /// Keep-alive comment interval of manifest streams.
    pub sse_ping: Duration,
    /// Concurrent streams per token subject (`sub`); more are refused with 429.
    pub max_streams_per_subject: usize,
    /// Requests per subject and route class; more are refused with 429.
    pub rate_limits: RateLimits,
    /// The status of a denied single AuthZEN evaluation; `None`: 200 (see
    /// [`crate::config::Settings::authz_deny_status`]).
    pub authz_deny_status: Option<u16>,
    /// Where this server's metrics are pushed besides `GET /metrics`; `None`: nowhere. (Traces
    /// are process-wide: `telemetry::init` exports them.)
    pub otlp: Option<OtlpSettings>,
    /// Redis for the shared cache and the change bus between instances (it may hold a
    /// password: `Debug` redacts it).
    pub redis_url: Option<Secret>,
    /// The secret that authenticates access decisions shared through Redis; when `None`, the
    /// HMAC token secret serves, and with neither, decisions are not shared at all.
    pub redis_secret: Option<Secret>,
    /// How often to compare the store's revision with the local one, whatever the bus says;
    /// `None` when this instance is the store's only user.
    pub revision_poll: Option<Duration>,
    /// The MCP endpoint's settings.
    pub mcp: McpSettings,
}

impl ServerConfig {
    /// A gateway on `store` verifying tokens with `auth`; every other setting at its
    /// documented default (`config/toolgate.example.toml`).
    pub fn new(store: StoreConfig, auth: AuthSettings) -> ServerConfig {
        use crate::config::{
            DEFAULT_BODY_LIMIT_BYTES, DEFAULT_HEADER_TIMEOUT_SECS, DEFAULT_IDLE_TIMEOUT_SECS,
            DEFAULT_LISTEN, DEFAULT_MAX_STREAMS_PER_SUBJECT, DEFAULT_REQUEST_TIMEOUT_SECS,
            DEFAULT_SSE_PING_SECS,
        };
        ServerConfig {
            listen: DEFAULT_LISTEN.parse().expect("the default address parses"),
            store,
            seed: None,
            auth,
            admin_rule: AdminRule::default(),
            body_limit: DEFAULT_BODY_LIMIT_BYTES as usize,
            request_timeout: Duration::from_secs(DEFAULT_REQUEST_TIMEOUT_SECS),
            connections: ConnectionLimits {
                header_timeout: Duration::from_secs(DEFAULT_HEADER_TIMEOUT_SECS),
                idle_timeout: Duration::from_secs(DEFAULT_IDLE_TIMEOUT_SECS),
                max_connections: fd_limit::MAX_CONNECTIONS_CEILING,
            },
            cache: CacheBudgets::default(),
            sse_ping: Duration::from_secs(DEFAULT_SSE_PING_SECS),
            max_streams_per_subject: DEFAULT_MAX_STREAMS_PER_SUBJECT as usize,
            rate_limits: RateLimits::default(),
            authz_deny_status: None,
            otlp: None,
            redis_url: None,
            redis_secret: None,
            revision_poll: None,
            mcp: McpSettings::default(),
        }
    }
}

/// A started gateway.
pub struct Running {
    pub addr: SocketAddr,
    pub state: AppState,
    pub task: JoinHandle<std::io::Result<()>>,
}

/// Opens the stores, seeds, binds the listener and starts serving until `shutdown` resolves.
pub async fn start(
    config: ServerConfig,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<Running> {
    // First, so that a start that cannot listen (the port is taken) fails before it has
    // changed anything: a seed stored by a failed start would make a corrected seed be
    // ignored next time (it loads only into an empty store).
    let listener = TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    let store = config.store.open().await?;
    // Building the OTLP exporter makes a blocking HTTP client: not on a runtime thread.
    let otlp = config.otlp.clone();
    let metrics = tokio::task::spawn_blocking(move || Metrics::new(otlp.as_ref()))
        .await
        .context("setting up metrics")??;
    metrics.rate_limit_classes(&RouteClass::ALL.map(RouteClass::name));
    metrics.decision_endpoints(&crate::http::authzen::DECISION_ENDPOINTS);
    let metrics = Arc::new(metrics);
    let store: Arc<dyn CatalogStore> = Arc::new(ObservedStore::new(store, Arc::clone(&metrics)));
    let redis = match &config.redis_url {
        Some(url) => Some(Arc::new(
            RedisLink::open(url.expose()).context("setting up the Redis connection")?,
        )),
        None => None,
    };
    let bus = redis
        .as_ref()
        .map(|link| RedisBus::start(Arc::clone(link)) as Arc<dyn ChangeBus>);
    // Other instances' writes reach this one through the Redis bus or by polling the store; a
    // gateway with neither is its store's only writer and has nothing to follow.
    let follows = bus.is_some() || config.revision_poll.is_some();
    let catalog = Arc::new(
        CatalogService::open_with_bus(store, bus)
            .await
            .context("loading the catalog")?,
    );
    let refresh_log = Arc::new(RefreshLog::default());
    let commands = Arc::new(Commands::new(
        Arc::clone(&catalog),
        Arc::clone(&refresh_log),
        Arc::clone(&metrics),
    ));
    if let Some(seed) = config.seed {
        seed_if_empty(&commands, seed).await?;
    }
    let hmac_secret = config.auth.hmac_secret.clone();
    let issuer = config.auth.issuer.clone();
    let verifier = Verifier::new(config.auth)
        .await
        .context("setting up token verification")?;
    verifier.spawn_refresh();
    if follows {
        crate::service::follow(catalog.bus().as_ref(), &catalog, config.revision_poll);
    }
    let shared = redis.as_ref().and_then(|link| {
        let key = shared_key(config.redis_secret.as_ref(), hmac_secret.as_deref())?;
        Some(Arc::new(SharedCache::new(Arc::clone(link), key)))
    });
    let access = Arc::new(AccessCache::new(config.cache.access_bytes));
    let manifests = Arc::new(Manifests::new(
        Arc::clone(&access),
        config.cache.manifest_bytes,
        shared,
        config.admin_rule.paths(),
        crate::service::seen::DEFAULT_CAPACITY,
        Arc::clone(&metrics),
    ));
    // One budget over every stream's queue, SSE and MCP together.
    let stream_budget = StreamBudget::new(config.cache.stream_total_bytes);
    let hub = StreamHub::new(
        HubLimits {
            max_streams_per_subject: config.max_streams_per_subject,
            queue_bytes: config.cache.stream_queue_bytes,
        },
        Arc::clone(&stream_budget),
        Arc::clone(&manifests),
    );
    hub.spawn(&catalog);
    // MCP notification streams have a hub of their own: capped per subject apart from the SSE
    // streams, fanned out from the same revisions.
    let mcp_hub = StreamHub::new(
        HubLimits {
            max_streams_per_subject: config.mcp.sessions.per_subject,
            queue_bytes: config.cache.stream_queue_bytes,
        },
        stream_budget,
        Arc::clone(&manifests),
    );
    mcp_hub.spawn(&catalog);
    let decisions = Arc::new(Decisions::new(access, config.cache.evaluation_bytes));
    let mcp = Arc::new(McpEndpoint {
        tools: McpTools::new(
            Arc::clone(&decisions),
            Arc::clone(&manifests),
            Upstream::new(CallLimits {
                timeout: config.mcp.call_timeout,
                max_response_bytes: config.mcp.call_max_bytes,
            }),
            config.mcp.page_size,
        ),
        sessions: Sessions::new(config.mcp.sessions),
        hub: mcp_hub,
        issuer,
        settings: config.mcp,
    });
    let authz_deny_status = match config.authz_deny_status {
        Some(status) => Some(
            axum::http::StatusCode::from_u16(status)
                .with_context(|| format!("the AuthZEN deny status {status}"))?,
        ),
        None => None,
    };
    let state = AppState {
        catalog,
        manifests,
        decisions,
        authz_deny_status,
        verifier,
        admin_rule: Arc::new(config.admin_rule),
        body_limit: config.body_limit,
        hub,
        sse_ping: config.sse_ping,
        redis,
        metrics: Arc::clone(&metrics),
        limits: Arc::new(Limiters::new(config.rate_limits)),
        refresh_log,
        commands,
        mcp,
        impact_runs: Arc::new(crate::service::impact::ImpactRuns::default()),
    };
    observed::register(
        &metrics,
        observed::Observed {
            manifests: Arc::downgrade(&state.manifests),
            decisions: Arc::downgrade(&state.decisions),
            hub: Arc::downgrade(&state.hub),
            catalog: Arc::downgrade(&state.catalog),
            redis: state.redis.as_ref().map(Arc::downgrade),
            shared: state.manifests.shared().map(Arc::downgrade),
            mcp: Arc::downgrade(&state.mcp),
        },
    );
    let addr = listener.local_addr()?;
    let app = router(state.clone(), config.request_timeout);
    let refresher = tokio::spawn(crate::service::periodic::run(
        Arc::clone(&state.catalog),
        Arc::clone(&state.commands),
    ));
    let forgetting = Limiters::spawn_forgetting(Arc::downgrade(&state.limits));
    // Open streams never finish on their own: end them when shutdown starts, so that the
    // graceful shutdown only waits for ordinary requests.
    let hub = Arc::clone(&state.hub);
    let mcp_hub = Arc::clone(&state.mcp.hub);
    let shutdown = async move {
        shutdown.await;
        hub.close();
        mcp_hub.close();
    };
    let connections = config.connections;
    let served_metrics = Arc::clone(&metrics);
    let task = tokio::spawn(async move {
        let served = listen::serve(listener, app, connections, served_metrics, shutdown).await;
        // The refresher holds the catalog service (and so the store): end it with the server.
        refresher.abort();
        let _ = refresher.await;
        forgetting.abort();
        // The last metrics go to the collector, if there is one (a blocking export).
        let _ = tokio::task::spawn_blocking(move || metrics.shutdown()).await;
        served
    });
    tracing::info!(%addr, revision = state.catalog.snapshot().revision(), "toolgate is listening");
    Ok(Running { addr, state, task })
}

/// Loads the seed catalog into an empty store (revision 0, nothing in it); otherwise leaves
/// the store alone, so restarting with the same `--seed` never overwrites admin changes.
async fn seed_if_empty(commands: &Commands, seed: Catalog) -> anyhow::Result<()> {
    match commands.seed(seed).await {
        Ok(Some(revision)) => {
            tracing::info!(revision, "loaded the seed catalog");
            Ok(())
        }
        Ok(None) => {
            tracing::info!("the store is not empty; the seed is not loaded");
            Ok(())
        }
        Err(CommandError::Write(WriteError::Invalid(errors))) => {
            let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
            anyhow::bail!("the seed catalog is invalid:\n  {}", lines.join("\n  "))
        }
        Err(error) => Err(error.into()),
    }
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
    tracing::info!("shutting down");
}

/// The key of shared access entries: from the Redis secret, else from the token secret. With
/// neither there is nothing to authenticate entries with, and an entry that cannot be checked
/// must never grant anything: decisions are then not shared (each instance evaluates claims
/// itself, which costs microseconds, not correctness).
fn shared_key(redis_secret: Option<&Secret>, hmac_secret: Option<&str>) -> Option<SharedKey> {
    match (redis_secret, hmac_secret) {
        (Some(secret), _) => Some(SharedKey::derive(secret.expose())),
        (None, Some(secret)) => Some(SharedKey::derive(secret)),
        (None, None) => {
            tracing::warn!(
                "Redis is configured but no TOOLGATE_REDIS_SECRET (nor TOOLGATE_JWT_SECRET) is \
                 set: access decisions are not shared between instances, because entries could \
                 not be authenticated; set the same TOOLGATE_REDIS_SECRET on every instance"
            );
            None
        }
    }
}
