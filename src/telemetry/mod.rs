//! Telemetry: log lines ([`logging`]), traces exported over OTLP ([`otel`]), and the metrics
//! each server keeps ([`metrics`]), served as Prometheus text ([`prometheus`]) and pushed over
//! OTLP when a collector is configured.
//!
//! Logging and traces are process-wide (one `tracing` subscriber), set up once by [`init`] in
//! `main`. Metrics belong to one server ([`metrics::Metrics`] in its state), so that two
//! gateways in one process (the tests) count apart.
//!
//! Off means free: without an OTLP endpoint no OpenTelemetry layer is installed, and the spans
//! below the request span (token verification, resolution, store and Redis calls) are at
//! `debug` level, which the default log filter disables at their call sites.

pub mod logging;
pub mod mcp;
pub mod metrics;
pub mod observed;
pub mod otel;
pub mod prometheus;
pub mod redact;
pub mod runs;
mod striped;
pub mod upstream_tokens;

use std::future::Future;

use tracing::Instrument as _;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

pub use metrics::Metrics;
pub use observed::{Reading, ReadingKind};
pub use otel::{OtlpProtocol, OtlpSettings};

/// How log lines are written to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// Why telemetry could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The filter directives do not parse (settings check them first, so this means a caller
    /// bypassed [`crate::config::Settings`]).
    #[error("invalid log filter '{filter}': {message}")]
    Filter {
        /// The directives given.
        filter: String,
        /// The parser's explanation.
        message: String,
    },
    /// A global subscriber is already installed (logging initialised twice).
    #[error("logging is already initialised: {0}")]
    AlreadyInitialised(String),
    /// The OTLP exporter could not be built.
    #[error("cannot set up OTLP export: {0}")]
    Export(String),
}

/// The process's telemetry; dropping it flushes the spans not exported yet. Keep it alive until
/// the server has stopped.
#[must_use = "dropping the guard stops trace export"]
pub struct Telemetry {
    traces: Option<otel::TraceExport>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(traces) = self.traces.take() {
            traces.shutdown();
        }
    }
}

/// Installs the global subscriber: log lines at `level` in `format` to stderr and, with `otlp`,
/// the OpenTelemetry layer that exports toolgate's spans (down to `debug`, whatever the log
/// level). Call once, early in `main`, outside any async runtime.
pub fn init(
    format: LogFormat,
    level: &str,
    otlp: Option<&OtlpSettings>,
) -> Result<Telemetry, TelemetryError> {
    let lines = logging::lines(format).with_filter(logging::filter(level)?);
    let traces = otlp.map(otel::TraceExport::start).transpose()?;
    let exported = traces.as_ref().map(otel::TraceExport::layer);
    tracing_subscriber::registry()
        .with(lines)
        .with(exported)
        .try_init()
        .map_err(|error| TelemetryError::AlreadyInitialised(error.to_string()))?;
    if traces.is_some() {
        otel::mark_exporting();
    }
    Ok(Telemetry { traces })
}

/// Runs `future` in `span`; bare when the span is disabled (traces off, log level above it), so
/// that an unused span costs its call-site check and nothing per poll.
pub async fn in_span<F: Future>(span: &tracing::Span, future: F) -> F::Output {
    if span.is_disabled() {
        future.await
    } else {
        future.instrument(span.clone()).await
    }
}
