//! The HTTP server. This module is the seam between the `cli` branch and the server branch,
//! which replaces it with the real `run`.

/// Runs the gateway until shutdown.
pub async fn run(settings: crate::config::Settings) -> anyhow::Result<()> {
    let _ = settings;
    anyhow::bail!("the HTTP server is not part of this build (branch cli)")
}
