//! Log lines: the `tracing` layer that writes them to stderr (text or JSON) and its filter.
//!
//! What reaches a line is what spans and events record, and the code records identities only
//! as hashes ([`crate::http::extract::subject_hash`]): never a token, a claim value or a
//! request body. `tests/it/log_hygiene.rs` holds the server to that at the most verbose level.

use std::io::IsTerminal as _;

use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

use super::LogFormat;
use super::TelemetryError;

/// The filter of log lines: `level` as target directives (e.g. `info` or
/// `toolgate=debug,tower_http=info`).
///
/// `Targets` rather than `EnvFilter`: the latter's span-field matching pulls in a regex
/// feature (full DFA construction) that, unified across the build, made every regex the
/// catalog compiles several times slower to build.
pub fn filter(level: &str) -> Result<Targets, TelemetryError> {
    level
        .parse::<Targets>()
        .map_err(|error| TelemetryError::Filter {
            filter: level.to_owned(),
            message: error.to_string(),
        })
}

/// Lines in `format` to stderr, so that stdout stays free for command output. JSON lines carry
/// the fields of the current span (request id, method, route, hashed subject) flattened.
pub fn lines<S>(format: LogFormat) -> Box<dyn Layer<S> + Send + Sync>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    match format {
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
    }
}
