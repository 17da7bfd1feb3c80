//! Runs the gateway: builds the [`App`] from the settings, binds, serves HTTP until shutdown.
//!
//! [`start`] binds and returns as soon as the gateway is accepting connections (tests and the
//! CLI use the bound address, which matters when listening on port 0); the returned
//! [`Running`] resolves when the server has shut down gracefully.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::clock::{Clock, SystemClock};
use crate::config::{Settings, dev_banner, sample_tokens};
use crate::transport::{AppState, router};

mod activity;
pub mod fd_limit;
mod listen;
mod observed;

pub use crate::app::{App, StoreConfig};
pub use listen::ConnectionLimits;

/// `toolgate serve`: runs the gateway with these settings until SIGINT or SIGTERM.
pub async fn run(settings: Settings) -> anyhow::Result<()> {
    let running = start(settings.clone(), shutdown_signal()).await?;
    // One line on stdout that scripts (and the tests) read to find the bound address.
    println!("toolgate listening on http://{}", running.addr);
    if settings.dev_mode {
        let tokens = sample_tokens(&settings).context("minting the sample tokens")?;
        eprintln!("{}", dev_banner(&settings, &tokens.admin, &tokens.agent));
    }
    running.task.await.context("the server task failed")??;
    Ok(())
}

/// A started gateway.
pub struct Running {
    pub addr: SocketAddr,
    pub state: AppState,
    pub task: JoinHandle<std::io::Result<()>>,
}

/// Binds the listener, builds the application, starts its background work and serves until
/// `shutdown` resolves.
pub async fn start(
    settings: Settings,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<Running> {
    start_with_clock(settings, Arc::new(SystemClock), shutdown).await
}

/// [`start`] on `clock` (a test's, which it moves by hand).
pub async fn start_with_clock(
    settings: Settings,
    clock: Arc<dyn Clock>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<Running> {
    // First, so that a start that cannot listen (the port is taken) fails before it has
    // changed anything: a seed stored by a failed start would make a corrected seed be
    // ignored next time (it loads only into an empty store).
    let listener = TcpListener::bind(settings.listen)
        .await
        .with_context(|| format!("cannot listen on {}", settings.listen))?;
    // What the gateway is reached at on this machine, port 0 resolved (single sign-on's
    // loopback redirect URI is made from it).
    let mut settings = settings;
    settings.listen = listener.local_addr()?;
    let app = Arc::new(App::build_with_clock(&settings, clock).await?);
    app.metrics()
        .decision_endpoints(&crate::transport::authzen::DECISION_ENDPOINTS);
    let state = AppState::new(Arc::clone(&app), &settings)?;
    observed::register(app.metrics(), observed::Observed::of(&state));
    let addr = listener.local_addr()?;
    let router = router(state.clone());
    let background = app.spawn_background();
    // Open streams never finish on their own: end them when shutdown starts, so that the
    // graceful shutdown only waits for ordinary requests.
    let hub = Arc::clone(app.internals().hub);
    let shutdown = async move {
        shutdown.await;
        hub.close();
    };
    let connections = connection_limits(&settings);
    let metrics = Arc::clone(app.metrics());
    let task = tokio::spawn(async move {
        let served = listen::serve(
            listener,
            router,
            connections,
            Arc::clone(&metrics),
            shutdown,
        )
        .await;
        // The background work holds the catalog service (and so the store): end it with the
        // server.
        background.stop().await;
        // The last metrics go to the collector, if there is one (a blocking export).
        let _ = tokio::task::spawn_blocking(move || metrics.shutdown()).await;
        served
    });
    tracing::info!(%addr, revision = app.revision(), "toolgate is listening");
    Ok(Running { addr, state, task })
}

/// The connection limits: the configured cap, else one derived from the open-file limit
/// (raised to its hard limit first).
fn connection_limits(settings: &Settings) -> ConnectionLimits {
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
    ConnectionLimits {
        header_timeout: settings.header_timeout,
        idle_timeout: settings.idle_timeout,
        max_connections,
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
