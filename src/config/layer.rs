//! One source of settings (file, environment or flags) as typed, already-checked values.
//!
//! Each source checks its own values while it reads them, so an error names exactly where the
//! bad value came from (`--listen`, `TOOLGATE_LISTEN` or `server.listen in toolgate.toml`).
//! Merging is then plain "the higher layer wins where it has a value".

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::domain::model::ClaimMatcher;

pub(super) use super::number::{at_least_one, integer};
pub(super) use super::rule::admin_rule;
use super::{ConfigError, LogFormat, Secret};
use crate::telemetry::OtlpProtocol;

/// Settings from one source; `None` means "this source does not say".
#[derive(Debug, Default)]
pub(super) struct Layer {
    pub listen: Option<SocketAddr>,
    pub data_dir: Option<PathBuf>,
    pub backup_keep: Option<u64>,
    pub seed: Option<PathBuf>,
    pub jwt_secret: Option<Secret>,
    pub jwks_url: Option<String>,
    pub jwt_issuer: Option<String>,
    pub jwt_audience: Option<String>,
    pub jwt_leeway_secs: Option<u64>,
    pub jwt_require_exp: Option<bool>,
    pub admin_rule: Option<Vec<ClaimMatcher>>,
    pub console_oidc_client_id: Option<String>,
    pub console_oidc_client_secret: Option<Secret>,
    pub mongodb_uri: Option<Secret>,
    pub mongodb_database: Option<String>,
    pub redis_url: Option<Secret>,
    pub redis_secret: Option<Secret>,
    pub request_timeout_secs: Option<u64>,
    pub body_limit_bytes: Option<u64>,
    pub sse_ping_secs: Option<u64>,
    pub revision_poll_secs: Option<u64>,
    pub max_streams_per_subject: Option<u64>,
    pub idle_timeout_secs: Option<u64>,
    pub header_timeout_secs: Option<u64>,
    pub max_connections: Option<u64>,
    pub authz_deny_status: Option<u16>,
    pub log_format: Option<LogFormat>,
    pub log_level: Option<String>,
    pub otlp_endpoint: Option<String>,
    pub otlp_protocol: Option<OtlpProtocol>,
    pub otel_service_name: Option<String>,
    pub agent_reads: BudgetLayer,
    pub streams: BudgetLayer,
    pub admin_writes: BudgetLayer,
    pub decisions: BudgetLayer,
    pub tool_calls: BudgetLayer,
    pub mcp: super::mcp::McpLayer,
    pub delegation: super::delegation::DelegationLayer,
    pub runs: super::runs::RunsLayer,
    pub cache: super::cache::CacheLayer,
}

/// One rate-limit class as one source gives it; `per_second` 0 means "not limited".
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct BudgetLayer {
    pub per_second: Option<u32>,
    pub burst: Option<u32>,
}

impl BudgetLayer {
    fn overlaid_by(self, higher: BudgetLayer) -> BudgetLayer {
        BudgetLayer {
            per_second: higher.per_second.or(self.per_second),
            burst: higher.burst.or(self.burst),
        }
    }
}

impl Layer {
    /// `higher` on top of `self`: each value of `higher` replaces the one below it.
    pub(super) fn overlaid_by(self, higher: Layer) -> Layer {
        Layer {
            listen: higher.listen.or(self.listen),
            data_dir: higher.data_dir.or(self.data_dir),
            backup_keep: higher.backup_keep.or(self.backup_keep),
            seed: higher.seed.or(self.seed),
            jwt_secret: higher.jwt_secret.or(self.jwt_secret),
            jwks_url: higher.jwks_url.or(self.jwks_url),
            jwt_issuer: higher.jwt_issuer.or(self.jwt_issuer),
            jwt_audience: higher.jwt_audience.or(self.jwt_audience),
            jwt_leeway_secs: higher.jwt_leeway_secs.or(self.jwt_leeway_secs),
            jwt_require_exp: higher.jwt_require_exp.or(self.jwt_require_exp),
            admin_rule: higher.admin_rule.or(self.admin_rule),
            console_oidc_client_id: higher
                .console_oidc_client_id
                .or(self.console_oidc_client_id),
            console_oidc_client_secret: higher
                .console_oidc_client_secret
                .or(self.console_oidc_client_secret),
            mongodb_uri: higher.mongodb_uri.or(self.mongodb_uri),
            mongodb_database: higher.mongodb_database.or(self.mongodb_database),
            redis_url: higher.redis_url.or(self.redis_url),
            redis_secret: higher.redis_secret.or(self.redis_secret),
            request_timeout_secs: higher.request_timeout_secs.or(self.request_timeout_secs),
            body_limit_bytes: higher.body_limit_bytes.or(self.body_limit_bytes),
            sse_ping_secs: higher.sse_ping_secs.or(self.sse_ping_secs),
            revision_poll_secs: higher.revision_poll_secs.or(self.revision_poll_secs),
            max_streams_per_subject: higher
                .max_streams_per_subject
                .or(self.max_streams_per_subject),
            idle_timeout_secs: higher.idle_timeout_secs.or(self.idle_timeout_secs),
            header_timeout_secs: higher.header_timeout_secs.or(self.header_timeout_secs),
            max_connections: higher.max_connections.or(self.max_connections),
            authz_deny_status: higher.authz_deny_status.or(self.authz_deny_status),
            log_format: higher.log_format.or(self.log_format),
            log_level: higher.log_level.or(self.log_level),
            otlp_endpoint: higher.otlp_endpoint.or(self.otlp_endpoint),
            otlp_protocol: higher.otlp_protocol.or(self.otlp_protocol),
            otel_service_name: higher.otel_service_name.or(self.otel_service_name),
            agent_reads: self.agent_reads.overlaid_by(higher.agent_reads),
            streams: self.streams.overlaid_by(higher.streams),
            admin_writes: self.admin_writes.overlaid_by(higher.admin_writes),
            decisions: self.decisions.overlaid_by(higher.decisions),
            tool_calls: self.tool_calls.overlaid_by(higher.tool_calls),
            mcp: self.mcp.overlaid_by(higher.mcp),
            delegation: self.delegation.overlaid_by(higher.delegation),
            runs: self.runs.overlaid_by(higher.runs),
            cache: self.cache.overlaid_by(higher.cache),
        }
    }
}

/// A listen address (`--listen`, `TOOLGATE_LISTEN`, `server.listen`).
pub(super) fn listen_address(setting: &str, text: &str) -> Result<SocketAddr, ConfigError> {
    parse_listen(text).map_err(|why| ConfigError::invalid(setting, why))
}

/// A listen address: `IP:PORT` (`127.0.0.1:8080`, `[::1]:8080`), or `HOST:PORT` resolved once,
/// at start (`localhost:8080`; of the host's addresses an IPv4 one if there is one, as clients
/// of `localhost` try it first). The error says what is wrong.
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    let text = text.trim();
    if let Ok(address) = text.parse() {
        return Ok(address);
    }
    let expected = "expected HOST:PORT such as 127.0.0.1:8080, 0.0.0.0:8080, [::]:8080 or \
                    localhost:8080";
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err(format!("'{text}' has no port; {expected}"));
    };
    if port.parse::<u16>().is_err() {
        return Err(format!(
            "'{port}' in '{text}' is not a port (0 to 65535); {expected}"
        ));
    }
    if host.is_empty() {
        return Err(format!("'{text}' has no host; {expected}"));
    }
    let addresses: Vec<SocketAddr> = text
        .to_socket_addrs()
        .map_err(|error| format!("the host '{host}' of '{text}' cannot be resolved: {error}"))?
        .collect();
    addresses
        .iter()
        .find(|address| address.is_ipv4())
        .or(addresses.first())
        .copied()
        .ok_or_else(|| format!("the host '{host}' of '{text}' has no address"))
}

/// `true` or `false` given as text (environment variables).
pub(super) fn boolean(setting: &str, text: &str) -> Result<bool, ConfigError> {
    match text.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(ConfigError::invalid(
            setting,
            format!("'{other}' is not a boolean; expected true or false"),
        )),
    }
}

/// The status of a denied single decision when it should not be 200: a client error (4xx),
/// which every proxy's external-authorization mode reads as "deny".
pub(super) fn deny_status(setting: &str, value: u64) -> Result<u16, ConfigError> {
    match u16::try_from(value) {
        Ok(status @ 400..=499) => Ok(status),
        _ => Err(ConfigError::invalid(
            setting,
            format!(
                "{value} is not a client-error status; expected 400 to 499, e.g. 403 (unset, a \
                 deny is 200 with \"decision\": false)"
            ),
        )),
    }
}

/// A rate: requests per second, 0 for "not limited", at most `u32::MAX`.
pub(super) fn rate(setting: &str, value: u64) -> Result<u32, ConfigError> {
    u32::try_from(value).map_err(|_| {
        ConfigError::invalid(
            setting,
            format!(
                "{value} is too large; expected at most {} (or 0: no limit)",
                u32::MAX
            ),
        )
    })
}

/// A burst: at least 1, at most `u32::MAX`.
pub(super) fn burst(setting: &str, value: u64) -> Result<u32, ConfigError> {
    at_least_one(setting, value)?;
    u32::try_from(value).map_err(|_| {
        ConfigError::invalid(
            setting,
            format!("{value} is too large; expected at most {}", u32::MAX),
        )
    })
}

/// The OTLP collector's base URL (`http://host:4318`): http or https, with a host. The signal
/// paths (`/v1/traces`, `/v1/metrics`) are appended to it, as the OpenTelemetry spec says for
/// `OTEL_EXPORTER_OTLP_ENDPOINT`.
pub(super) fn otlp_endpoint(setting: &str, text: &str) -> Result<String, ConfigError> {
    let text = text.trim();
    let uri: axum::http::Uri = text.parse().map_err(|_| {
        ConfigError::invalid(
            setting,
            format!("'{text}' is not a URL; expected e.g. http://localhost:4318"),
        )
    })?;
    let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
    if !scheme_ok || uri.host().is_none() {
        return Err(ConfigError::invalid(
            setting,
            format!(
                "'{text}' is not an http(s) URL with a host; expected e.g. http://localhost:4318"
            ),
        ));
    }
    Ok(text.trim_end_matches('/').to_owned())
}

/// `http/protobuf`, the one OTLP transport this build exports with.
pub(super) fn otlp_protocol(setting: &str, text: &str) -> Result<OtlpProtocol, ConfigError> {
    match text.trim() {
        "http/protobuf" => Ok(OtlpProtocol::HttpProtobuf),
        other => Err(ConfigError::invalid(
            setting,
            format!(
                "'{other}' is not supported; this build exports OTLP over 'http/protobuf' \
                 (a collector's port 4318), not gRPC or JSON"
            ),
        )),
    }
}

/// `text` or `json`.
pub(super) fn log_format(setting: &str, text: &str) -> Result<LogFormat, ConfigError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "text" => Ok(LogFormat::Text),
        "json" => Ok(LogFormat::Json),
        _ => Err(ConfigError::invalid(
            setting,
            format!("unknown log format '{text}'; expected 'text' or 'json'"),
        )),
    }
}

/// A `tracing` filter such as `info` or `toolgate=debug,tower_http=info`, checked now so that
/// a typo fails at start rather than silently logging nothing.
pub(super) fn log_level(setting: &str, text: &str) -> Result<String, ConfigError> {
    text.parse::<tracing_subscriber::filter::Targets>()
        .map_err(|error| {
            ConfigError::invalid(
                setting,
                format!(
                    "'{text}' is not a log filter ({error}); expected a level such as 'info' \
                     or directives such as 'toolgate=debug,info'"
                ),
            )
        })?;
    Ok(text.to_owned())
}

/// `Some(text)` unless it is empty: an empty value means "not set" in every source.
pub(super) fn non_empty(text: Option<String>) -> Option<String> {
    text.filter(|t| !t.is_empty())
}
