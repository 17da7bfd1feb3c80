//! [`App::build`](super::App::build), one small step per part: the settings that must parse,
//! metrics, the store and catalog, Redis, the caches, the stream hub, the call adapter.
//! Anything that cannot be set up fails the start with what went wrong, before the gateway
//! serves a request.

use std::sync::Arc;

use anyhow::Context;

use super::{App, Following, StoreConfig};
use crate::auth::OwnIssuer;
use crate::auth::{AdminRule, Verifier};
use crate::bus::{ChangeBus, RedisBus};
use crate::cache::redis::{SharedCache, SharedKey};
use crate::clock::Clock;
use crate::config::{Secret, Settings};
use crate::domain::model::Catalog;
use crate::redis_link::RedisLink;
use crate::service::access::AccessCache;
use crate::service::delegation::{Delegations, KeyRing};
use crate::service::impact::ImpactRuns;
use crate::service::limits::{Limiters, RouteClass};
use crate::service::{
    CatalogService, CommandError, Commands, Decisions, Manifests, McpTools, RefreshLog, WriteError,
};
use crate::store::CatalogStore;
use crate::store::observed::ObservedStore;
use crate::stream::{HubLimits, StreamBudget, StreamHub};
use crate::telemetry::Metrics;
use crate::upstream::Upstream;

/// Builds every part in dependency order.
pub(super) async fn app(settings: &Settings, clock: Arc<dyn Clock>) -> anyhow::Result<App> {
    // What can be refused without touching anything is checked first.
    let admin_rule = AdminRule::new(&settings.admin_rule)?;
    let seed = seed_catalog(settings)?;
    let upstream = Upstream::new(settings.mcp.calls).context("setting up the upstream client")?;
    let metrics = metrics(settings).await?;
    let upstream = upstream.with_tokens(metrics.upstream_tokens.clone(), Arc::clone(&clock));
    let store = StoreConfig::from_settings(settings);
    let redis = redis(settings)?;
    let bus = redis
        .as_ref()
        .map(|link| RedisBus::start(Arc::clone(link)) as Arc<dyn ChangeBus>);
    // Other instances' writes reach this one through the Redis bus or by polling the store; a
    // gateway with neither is its store's only writer and has nothing to follow.
    let poll = store.is_shared().then_some(settings.revision_poll);
    let following = Following {
        follows: bus.is_some() || poll.is_some(),
        poll,
    };
    let store: Arc<dyn CatalogStore> = Arc::new(ObservedStore::new(
        store.open().await?,
        Arc::clone(&metrics),
    ));
    let delegations = delegations(settings, &store, &clock).await?;
    let catalog = Arc::new(
        CatalogService::open_with_bus(store, bus)
            .await
            .context("loading the catalog")?
            .with_clock(Arc::clone(&clock)),
    );
    let refresh_log = Arc::new(RefreshLog::default());
    let commands = Arc::new(Commands::new(
        Arc::clone(&catalog),
        Arc::clone(&refresh_log),
        Arc::clone(&metrics),
    ));
    if let Some(seed) = seed {
        seed_if_empty(
            &commands,
            seed,
            &store_place(settings),
            catalog.snapshot().revision(),
        )
        .await?;
    }
    let own = Some(delegations.keys().issuer().clone());
    let verifier = Verifier::with_own_and_clock(settings.auth(), own, Arc::clone(&clock))
        .await
        .context("setting up token verification")?;
    verifier.spawn_refresh();
    let (manifests, decisions) = caches(settings, redis.as_ref(), &admin_rule, &metrics, &clock);
    catalog.carry_into(Arc::clone(&manifests) as Arc<dyn crate::service::catalog::CarryOver>);
    catalog.carry_into(Arc::clone(&decisions) as Arc<dyn crate::service::catalog::CarryOver>);
    let hub = hub(settings, &manifests, &catalog);
    let mcp_tools = Arc::new(McpTools::new(
        Arc::clone(&decisions),
        Arc::clone(&manifests),
        Arc::new(upstream),
        settings.mcp.page_size,
        settings.cache.mcp_page_bytes,
    ));
    catalog.carry_into(Arc::clone(&mcp_tools) as Arc<dyn crate::service::catalog::CarryOver>);
    let limits = Limiters::with_clock(settings.rate_limits, Arc::clone(&clock))
        .observed(Arc::clone(&metrics));
    let (runs, executor_rule) = runs(settings, redis.as_ref(), &clock, &metrics).await?;
    Ok(App {
        catalog,
        commands,
        manifests,
        decisions,
        mcp_tools,
        hub,
        verifier,
        admin_rule,
        limits: Arc::new(limits),
        impact_runs: ImpactRuns::default(),
        refresh_log,
        redis,
        metrics,
        issuer: settings.jwt_issuer.clone(),
        delegations,
        runs,
        executor_rule,
        clock,
        following,
    })
}

/// Runs (docs/runs.md): on Redis when it is configured (shared by every instance on it);
/// otherwise kept in memory and written behind to `runs.redb` in the data dir when the catalog
/// is embedded (so that they survive a restart), in memory only on MongoDB without Redis. The
/// executor rule beside them, when one is configured.
async fn runs(
    settings: &Settings,
    redis: Option<&Arc<RedisLink>>,
    clock: &Arc<dyn Clock>,
    metrics: &Arc<Metrics>,
) -> anyhow::Result<(Arc<crate::service::runs::Runs>, Option<AdminRule>)> {
    use crate::service::runs::RunStore;
    use crate::service::runs::memory::MemoryRuns;
    use crate::service::runs::redis::RedisRuns;
    let store: Arc<dyn RunStore> = match (redis, StoreConfig::from_settings(settings)) {
        (Some(link), _) => RedisRuns::start(Arc::clone(link), settings.runs.keep_ended),
        (None, StoreConfig::Embedded { data_dir, .. }) => {
            let path = data_dir.join("runs.redb");
            let store = tokio::task::spawn_blocking(move || MemoryRuns::open(&path))
                .await
                .context("opening the run store")??;
            let store = Arc::new(store);
            MemoryRuns::spawn_flushing(Arc::downgrade(&store));
            store
        }
        (None, StoreConfig::Mongo { .. }) => Arc::new(MemoryRuns::in_memory()),
    };
    let executor_rule = settings
        .executor_rule
        .as_ref()
        .map(|rule| AdminRule::new(rule))
        .transpose()?;
    let runs = crate::service::runs::Runs::new(store, settings.runs, Arc::clone(clock))
        .observed(Arc::clone(metrics));
    Ok((Arc::new(runs), executor_rule))
}

/// Delegated tokens: toolgate's signing keys, read (or made) now and kept in step with the
/// store in the background. Their issuer is the public URL, or else the listen address: set
/// `TOOLGATE_PUBLIC_URL` where several instances serve one store.
async fn delegations(
    settings: &Settings,
    store: &Arc<dyn CatalogStore>,
    clock: &Arc<dyn Clock>,
) -> anyhow::Result<Arc<Delegations>> {
    let issuer = settings
        .mcp
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{}", settings.listen));
    let keys = Arc::new(
        KeyRing::new(
            Arc::clone(store),
            OwnIssuer::new(issuer),
            settings.delegation.key_rotation,
            settings.delegation.max_lifetime,
        )
        .with_clock(Arc::clone(clock)),
    );
    let source: std::sync::Weak<dyn crate::auth::OwnKeySource> = Arc::downgrade(&keys) as _;
    keys.issuer().set_source(source);
    keys.refresh(clock.unix_now())
        .await
        .context("reading toolgate's signing keys")?;
    keys.spawn_refresh();
    Ok(Arc::new(
        Delegations::new(keys, settings.delegation).with_clock(Arc::clone(clock)),
    ))
}

/// The seed catalog (`--seed`), read and normalised before anything is opened.
fn seed_catalog(settings: &Settings) -> anyhow::Result<Option<Catalog>> {
    let Some(path) = &settings.seed else {
        return Ok(None);
    };
    let mut catalog = crate::catalog_file::parse_catalog_file(path)
        .with_context(|| format!("reading the seed catalog {}", path.display()))?;
    catalog.normalize();
    Ok(Some(catalog))
}

/// This server's metrics. Building the OTLP exporter makes a blocking HTTP client: not on a
/// runtime thread.
async fn metrics(settings: &Settings) -> anyhow::Result<Arc<Metrics>> {
    let otlp = settings.otlp();
    let metrics = tokio::task::spawn_blocking(move || Metrics::new(otlp.as_ref()))
        .await
        .context("setting up metrics")??;
    metrics.rate_limit_classes(&RouteClass::ALL.map(RouteClass::name));
    Ok(Arc::new(metrics))
}

/// The Redis connection, when configured.
fn redis(settings: &Settings) -> anyhow::Result<Option<Arc<RedisLink>>> {
    settings
        .redis_url
        .as_ref()
        .map(|url| {
            RedisLink::open(url.expose())
                .map(Arc::new)
                .context("setting up the Redis connection")
        })
        .transpose()
}

/// The manifest and decision caches, over one cache of access decisions; manifests are
/// shared through Redis when there is a key to authenticate them with.
fn caches(
    settings: &Settings,
    redis: Option<&Arc<RedisLink>>,
    admin_rule: &AdminRule,
    metrics: &Arc<Metrics>,
    clock: &Arc<dyn Clock>,
) -> (Arc<Manifests>, Arc<Decisions>) {
    let hmac_secret = settings.jwt_secret.as_ref().map(Secret::expose);
    let shared = redis.and_then(|link| {
        let key = shared_key(settings.redis_secret.as_ref(), hmac_secret)?;
        Some(Arc::new(SharedCache::new(Arc::clone(link), key)))
    });
    let budgets = settings.cache;
    let access = Arc::new(AccessCache::new(budgets.access_bytes));
    let manifests = Arc::new(
        Manifests::new(
            Arc::clone(&access),
            budgets.manifest_bytes,
            shared,
            admin_rule.paths(),
            crate::service::seen::DEFAULT_CAPACITY,
            Arc::clone(metrics),
        )
        .with_clock(Arc::clone(clock)),
    );
    let decisions = Arc::new(Decisions::new(access, budgets.evaluation_bytes));
    (manifests, decisions)
}

/// The one hub of every stream, SSE and MCP: one fan-out per revision, one byte budget over
/// every queue, and a per-subject cap for each class of stream.
fn hub(
    settings: &Settings,
    manifests: &Arc<Manifests>,
    catalog: &Arc<CatalogService>,
) -> Arc<StreamHub> {
    StreamHub::new(
        HubLimits {
            per_subject: [
                settings.max_streams_per_subject,
                settings.mcp.sessions.per_subject,
            ],
            queue_bytes: settings.cache.stream_queue_bytes,
        },
        StreamBudget::new(settings.cache.stream_total_bytes),
        Arc::clone(manifests),
        Arc::clone(catalog),
    )
}

/// Where the catalog lives, for messages: the embedded store's data dir, or MongoDB's
/// database (never the URI: it may hold a password).
fn store_place(settings: &Settings) -> String {
    match settings.mongodb_uri {
        Some(_) => format!("the MongoDB database `{}`", settings.mongodb_database),
        None => format!("the data dir {}", settings.data_dir.display()),
    }
}

/// Loads the seed catalog into an empty store (revision 0, nothing in it); otherwise leaves
/// the store alone, so restarting with the same `--seed` never overwrites admin changes.
/// A store that is not empty is said so at `warn`: a walk-through started on a data dir an
/// earlier run changed answers otherwise than it says, and nothing else would tell why.
async fn seed_if_empty(
    commands: &Commands,
    seed: Catalog,
    place: &str,
    revision: u64,
) -> anyhow::Result<()> {
    match commands.seed(seed).await {
        Ok(Some(revision)) => {
            tracing::info!(revision, "loaded the seed catalog");
            Ok(())
        }
        Ok(None) => {
            tracing::warn!(
                revision,
                "the seed catalog was not loaded: {place} already holds a catalog (the seed \
                 only fills an empty store; start on another data dir for a fresh one)"
            );
            Ok(())
        }
        Err(CommandError::Write(WriteError::Invalid(errors))) => {
            let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
            anyhow::bail!("the seed catalog is invalid:\n  {}", lines.join("\n  "))
        }
        Err(error) => Err(error.into()),
    }
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
