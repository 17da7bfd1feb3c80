//! Log lines: the `tracing` layer that writes them to stderr (text or JSON) and its filter.
//!
//! What reaches a line is what spans and events record, and the code records identities only
//! as hashes (`transport::extract::subject_hash`): never a token, a claim value or a
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
///
/// The HTTP client's crates write whole upstream URLs at `debug` and `trace` (a redirect, a
/// connection), and a source's credentials may ride in a URL's query: unless `level` names
/// them itself, they are kept at `info` however verbose the rest is.
pub fn filter(level: &str) -> Result<Targets, TelemetryError> {
    let mut targets = level
        .parse::<Targets>()
        .map_err(|error| TelemetryError::Filter {
            filter: level.to_owned(),
            message: error.to_string(),
        })?;
    for quoting in URL_QUOTING_TARGETS {
        if !level.contains(quoting) && targets.would_enable(quoting, &tracing::Level::DEBUG) {
            targets = targets.with_target(quoting, tracing::level_filters::LevelFilter::INFO);
        }
    }
    Ok(targets)
}

/// Crates whose `debug` and `trace` lines quote upstream URLs whole.
const URL_QUOTING_TARGETS: [&str; 3] = ["reqwest", "hyper_util", "hyper"];

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

#[cfg(test)]
mod tests {
    use tracing::Level;

    use super::filter;

    #[test]
    fn the_http_clients_url_lines_stay_out_unless_asked_for() {
        let verbose = filter("debug").expect("valid");
        assert!(verbose.would_enable("toolgate::upstream", &Level::DEBUG));
        assert!(!verbose.would_enable("reqwest::async_impl::client", &Level::DEBUG));
        assert!(!verbose.would_enable("hyper_util::client::legacy", &Level::TRACE));
        assert!(verbose.would_enable("reqwest", &Level::INFO));
        let quiet = filter("warn").expect("valid");
        assert!(
            !quiet.would_enable("reqwest", &Level::INFO),
            "never louder than asked"
        );
        let asked = filter("info,reqwest=trace").expect("valid");
        assert!(
            asked.would_enable("reqwest", &Level::TRACE),
            "named: as asked"
        );
    }
}
