//! Process-wide telemetry set-up: today the `tracing` subscriber that writes log lines to
//! stderr; OpenTelemetry export joins here as one more layer (see [`init_logging`]).

use std::io::IsTerminal as _;

use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

use crate::config::LogFormat;

/// Why logging could not be set up.
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
}

/// Installs the global subscriber: `level` as target directives (e.g. `info` or
/// `toolgate=debug,tower_http=info`), lines in `format` to stderr so that stdout stays free
/// for command output. Call once, early in `main`.
///
/// `Targets` rather than `EnvFilter`: the latter's span-field matching pulls in a regex
/// feature (full DFA construction) that, unified across the build, made every regex the
/// catalog compiles several times slower to build.
pub fn init_logging(format: LogFormat, level: &str) -> Result<(), TelemetryError> {
    let filter = level
        .parse::<Targets>()
        .map_err(|error| TelemetryError::Filter {
            filter: level.to_owned(),
            message: error.to_string(),
        })?;
    let lines = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .with_target(true)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(std::io::stderr)
            .boxed(),
    };
    tracing_subscriber::registry()
        .with(filter)
        .with(lines)
        // OpenTelemetry: add the `tracing_opentelemetry` layer here (and return a guard that
        // flushes the exporter on shutdown).
        .try_init()
        .map_err(|error| TelemetryError::AlreadyInitialised(error.to_string()))
}
