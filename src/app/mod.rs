//! The application: every service the transports use, built once from [`Settings`](crate::config::Settings) by
//! [`App::build`](crate::app::App::build) (zero-to-production's `Application::build`), shared by every request as one
//! `Arc`. Building opens the store, loads the catalog, connects Redis and sets up token
//! verification; [`App::spawn_background`](crate::app::App::spawn_background) starts what runs beside requests (fan-out to
//! streams, periodic refreshes, following other instances, forgetting idle rate buckets).
//!
//! The transports (HTTP, SSE, MCP, decisions, the console) hold an `Arc<App>` and only map: a
//! token becomes a caller through [`App::caller`](crate::app::App::caller) alone, every rule of who may ask what is in
//! [`crate::service`], every stream opens through [`crate::stream::open`]. The way a request
//! takes through the layers is in `docs/architecture.md`.

mod admin;
mod agent;
mod build;
mod decide;
mod runs;
mod store;

use std::sync::Arc;

use crate::auth::{AdminRule, AuthError, Verifier};
use crate::clock::{Clock, SystemClock};
use crate::config::Settings;
use crate::redis_link::RedisLink;
use crate::service::impact::ImpactRuns;
use crate::service::limits::Limiters;
use crate::service::{
    Caller, CatalogService, Commands, Decisions, Manifests, McpTools, RefreshLog,
};
use crate::stream::StreamHub;
use crate::telemetry::Metrics;

pub use crate::cache::Coding;
pub use admin::{AdminDesk, BackupError, ImpactDenied};
pub use agent::{Denied, Served, with_explanation};
pub use decide::DecisionDesk;
pub use runs::{RunDenied, RunSurface};
pub use store::StoreConfig;

/// Everything a request may use besides its transport's own settings. The fields are private:
/// transports reach them only through the use cases (`agent.rs`, `decide.rs`, `admin.rs`),
/// which apply every rule of who may ask what and charge every budget.
pub struct App {
    /// The current snapshot, and the store behind it.
    catalog: Arc<CatalogService>,
    /// Every catalog write.
    commands: Arc<Commands>,
    /// The one resolver of manifests (and their caches).
    manifests: Arc<Manifests>,
    /// Decisions about single tools, from the same evaluation as manifests.
    decisions: Arc<Decisions>,
    /// MCP listings and calls.
    mcp_tools: Arc<McpTools>,
    /// Every open stream (SSE and MCP), capped per subject by class.
    hub: Arc<StreamHub>,
    verifier: Verifier,
    admin_rule: AdminRule,
    /// Per-subject rate limits.
    limits: Arc<Limiters>,
    /// The impact previews running (`POST /admin/impact`), bounded.
    impact_runs: ImpactRuns,
    /// The last refresh of each source on this instance (`GET /admin/sources/{id}`).
    refresh_log: Arc<RefreshLog>,
    /// Redis, when configured: its health for `/readyz`.
    redis: Option<Arc<RedisLink>>,
    /// This server's metrics (`GET /metrics`, OTLP).
    metrics: Arc<Metrics>,
    /// The configured token issuer (named as authorization server by the MCP metadata).
    issuer: Option<String>,
    /// Delegated tokens (`POST /oauth/token`) and toolgate's signing keys.
    delegations: Arc<crate::service::delegation::Delegations>,
    /// Runs (docs/runs.md): their store and rules.
    runs: Arc<crate::service::runs::Runs>,
    /// Who may report executed calls in a run besides admins (`TOOLGATE_EXECUTOR_RULE`).
    executor_rule: Option<AdminRule>,
    /// The time every request reads (expiries, sessions, stamps): the system's in production.
    clock: Arc<dyn Clock>,
    /// Whether other instances write to the store (so there is something to follow), and how
    /// often to poll its revision.
    following: Following,
}

/// What `/readyz` reports.
#[derive(Debug)]
pub struct Readiness {
    /// The store's ping.
    pub store: Result<(), String>,
    /// Redis's ping, when Redis is configured.
    pub redis: Option<Result<(), String>>,
    /// The catalog revision in force.
    pub revision: u64,
}

/// See [`App::internals`].
pub struct Internals<'a> {
    pub catalog: &'a Arc<CatalogService>,
    pub manifests: &'a Arc<Manifests>,
    pub decisions: &'a Arc<Decisions>,
    pub mcp_tools: &'a Arc<McpTools>,
    pub hub: &'a Arc<StreamHub>,
    pub limits: &'a Arc<Limiters>,
    pub redis: Option<&'a Arc<RedisLink>>,
}

/// How this instance learns of other instances' writes.
#[derive(Debug, Clone, Copy)]
struct Following {
    /// Through the Redis bus or the store's revision: only instances sharing a store follow.
    follows: bool,
    /// Polling the store's revision, as a safety net under the bus (MongoDB only).
    poll: Option<std::time::Duration>,
}

/// The work started beside requests; aborted when dropped or [`Background::stop`]ped.
pub struct Background {
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Background {
    /// Ends every task and waits for them (they hold the store).
    pub async fn stop(mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
            let _ = task.await;
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl App {
    /// Builds the application from `settings`, one small step per part (`app/build.rs`).
    pub async fn build(settings: &Settings) -> anyhow::Result<App> {
        App::build_with_clock(settings, Arc::new(SystemClock)).await
    }

    /// [`App::build`] on `clock` (a test's, which it moves by hand).
    pub async fn build_with_clock(
        settings: &Settings,
        clock: Arc<dyn Clock>,
    ) -> anyhow::Result<App> {
        build::app(settings, clock).await
    }

    /// The caller presenting `bearer`: the token verified, then judged by the admin rule. The
    /// one place a token becomes a [`Caller`], whatever the transport (the `Authorization`
    /// header, a token exchange's subject token, a console session or sign-in, single
    /// sign-on), so that no transport verifies without the admin rule or judges claims that
    /// were not verified. Each transport words the refusal in its own protocol.
    ///
    /// A run token acts in its run only while the run is live, on every instance (the run
    /// store is asked): an ended, expired or forgotten run's token is refused (`run ended`).
    pub async fn caller(&self, bearer: &str) -> Result<Caller, AuthError> {
        let token = self.verifier.verify(bearer).await?;
        let run = match crate::domain::run::RunClaim::of(&token.claims) {
            None => None,
            Some(Err(())) => return Err(AuthError::Malformed),
            Some(Ok(claim)) => Some(
                self.runs
                    .live(&claim.id)
                    .await
                    .map_err(|error| {
                        tracing::warn!(%error, "a run token's run could not be read");
                        AuthError::RunUnavailable
                    })?
                    .ok_or(AuthError::RunEnded)?,
            ),
        };
        let is_admin = self.admin_rule.is_admin(&token.claims);
        let caller = Caller::new(token, is_admin);
        Ok(match run {
            Some(run) => caller.in_run(run),
            None => caller,
        })
    }

    /// The catalog revision in force now.
    pub fn revision(&self) -> u64 {
        self.catalog.snapshot().revision()
    }

    /// This server's metrics (recorded by the transports too: request counts per protocol).
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The time every request reads.
    pub fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }

    /// The configured token issuer (the MCP metadata names it as authorization server).
    pub fn issuer(&self) -> Option<&str> {
        self.issuer.as_deref()
    }

    /// Whether the store answers and, when Redis is configured, whether it does (`/readyz`).
    pub async fn readiness(&self) -> Readiness {
        let store = self
            .catalog
            .store()
            .ping()
            .await
            .map_err(|error| error.to_string());
        let redis = match &self.redis {
            None => None,
            Some(link) => Some(link.ping().await.map_err(|error| error.to_string())),
        };
        Readiness {
            store,
            redis,
            revision: self.revision(),
        }
    }

    /// The parts inside, for the server's wiring (metrics observers, shutdown) and for tests
    /// that look inside. Transports never use it (`tests/it/layering.rs`): they go through
    /// the use cases.
    pub fn internals(&self) -> Internals<'_> {
        Internals {
            catalog: &self.catalog,
            manifests: &self.manifests,
            decisions: &self.decisions,
            mcp_tools: &self.mcp_tools,
            hub: &self.hub,
            limits: &self.limits,
            redis: self.redis.as_ref(),
        }
    }

    /// Starts the background work: fan-out of each revision to the streams, periodic refreshes
    /// of sources, following other instances' writes, forgetting idle rate buckets.
    pub fn spawn_background(&self) -> Background {
        let mut tasks = vec![
            self.hub.spawn(),
            tokio::spawn(crate::service::periodic::run(
                Arc::clone(&self.catalog),
                Arc::clone(&self.commands),
            )),
            Limiters::spawn_forgetting(Arc::downgrade(&self.limits)),
            crate::service::runs::Runs::spawn_purging(
                Arc::downgrade(&self.runs),
                std::time::Duration::from_secs(10),
            ),
            runs::spawn_following(&self.runs, &self.hub),
        ];
        if self.following.follows {
            tasks.push(crate::service::follow(
                self.catalog.bus().as_ref(),
                &self.catalog,
                self.following.poll,
            ));
        }
        Background { tasks }
    }
}
