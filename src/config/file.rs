//! The TOML configuration file: its shape (sections and keys, unknown keys rejected) and its
//! conversion into a [`Layer`]. `config/toolgate.example.toml` documents every key.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::domain::model::ClaimMatcher;

use super::layer::{self, BudgetLayer, Layer, non_empty};
use super::{ConfigError, Secret};

/// The whole file. Every section and key is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    server: ServerSection,
    #[serde(default)]
    auth: AuthSection,
    #[serde(default)]
    http: HttpSection,
    #[serde(default)]
    mongodb: MongodbSection,
    #[serde(default)]
    redis: RedisSection,
    #[serde(default)]
    log: LogSection,
    #[serde(default)]
    telemetry: TelemetrySection,
    #[serde(default)]
    rate_limits: RateLimitsSection,
    #[serde(default)]
    mcp: super::mcp::McpSection,
    #[serde(default)]
    delegation: super::delegation::DelegationSection,
    #[serde(default)]
    runs: super::runs::RunsSection,
    #[serde(default)]
    cache: super::cache::CacheSection,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerSection {
    listen: Option<String>,
    data_dir: Option<PathBuf>,
    backup_keep: Option<u64>,
    seed: Option<PathBuf>,
    revision_poll_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthSection {
    jwt_secret: Option<String>,
    jwks_url: Option<String>,
    jwt_issuer: Option<String>,
    jwt_audience: Option<String>,
    jwt_leeway_secs: Option<u64>,
    jwt_require_exp: Option<bool>,
    admin_rule: Option<Vec<ClaimMatcher>>,
    console_oidc_client_id: Option<String>,
    console_oidc_client_secret: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct HttpSection {
    request_timeout_secs: Option<u64>,
    body_limit_bytes: Option<u64>,
    sse_ping_secs: Option<u64>,
    max_streams_per_subject: Option<u64>,
    idle_timeout_secs: Option<u64>,
    header_timeout_secs: Option<u64>,
    max_connections: Option<u64>,
    authz_deny_status: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct MongodbSection {
    uri: Option<String>,
    database: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RedisSection {
    url: Option<String>,
    secret: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LogSection {
    format: Option<String>,
    level: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TelemetrySection {
    otlp_endpoint: Option<String>,
    otlp_protocol: Option<String>,
    service_name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RateLimitsSection {
    agent_reads_per_sec: Option<u64>,
    agent_reads_burst: Option<u64>,
    streams_per_sec: Option<u64>,
    streams_burst: Option<u64>,
    admin_writes_per_sec: Option<u64>,
    admin_writes_burst: Option<u64>,
    decisions_per_sec: Option<u64>,
    decisions_burst: Option<u64>,
    tool_calls_per_sec: Option<u64>,
    tool_calls_burst: Option<u64>,
}

/// Reads and checks the file at `path`.
pub(super) fn read(path: &Path) -> Result<Layer, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::FileRead {
        path: path.to_owned(),
        source,
    })?;
    parse(path, &text)
}

/// Parses `text` as the file at `path` (the path only names the file in messages).
pub(super) fn parse(path: &Path, text: &str) -> Result<Layer, ConfigError> {
    let file: FileConfig = toml::from_str(text).map_err(|error| ConfigError::FileParse {
        path: path.to_owned(),
        message: error.to_string().trim_end().to_owned(),
    })?;
    let at = At {
        place: format!(" in {}", path.display()),
    };
    let mut layer = Layer {
        mongodb_uri: non_empty(file.mongodb.uri).map(Secret::new),
        mongodb_database: non_empty(file.mongodb.database),
        redis_url: non_empty(file.redis.url).map(Secret::new),
        redis_secret: non_empty(file.redis.secret).map(Secret::new),
        ..Layer::default()
    };
    server(&mut layer, file.server, &at)?;
    auth(&mut layer, file.auth, &at)?;
    http(&mut layer, file.http, &at)?;
    observability(&mut layer, file.log, file.telemetry, &at)?;
    rate_limits(&mut layer, &file.rate_limits, &at)?;
    layer.mcp = super::mcp::McpLayer::from_file(file.mcp, &at.place)?;
    layer.delegation = super::delegation::DelegationLayer::from_file(file.delegation, &at.place)?;
    layer.runs = super::runs::RunsLayer::from_file(file.runs, &at.place)?;
    layer.cache = super::cache::CacheLayer::from_file(file.cache, &at.place)?;
    Ok(layer)
}

/// Where a value was read: keys are named with the file in every message.
struct At {
    /// ` in <path>`.
    place: String,
}

impl At {
    fn named(&self, key: &str) -> String {
        format!("{key}{}", self.place)
    }

    /// A count or duration that must be at least 1.
    fn positive(&self, key: &str, value: Option<u64>) -> Result<Option<u64>, ConfigError> {
        value
            .map(|v| layer::at_least_one(&self.named(key), v))
            .transpose()
    }

    /// `rate_limits.<class>_per_sec` and `_burst`.
    fn budget(
        &self,
        class: &str,
        per_second: Option<u64>,
        burst: Option<u64>,
    ) -> Result<BudgetLayer, ConfigError> {
        Ok(BudgetLayer {
            per_second: per_second
                .map(|v| layer::rate(&self.named(&format!("rate_limits.{class}_per_sec")), v))
                .transpose()?,
            burst: burst
                .map(|v| layer::burst(&self.named(&format!("rate_limits.{class}_burst")), v))
                .transpose()?,
        })
    }
}

/// `[server]`.
fn server(layer: &mut Layer, section: ServerSection, at: &At) -> Result<(), ConfigError> {
    layer.listen = non_empty(section.listen)
        .map(|text| layer::listen_address(&at.named("server.listen"), &text))
        .transpose()?;
    layer.data_dir = section.data_dir.filter(|p| !p.as_os_str().is_empty());
    layer.backup_keep = at.positive("server.backup_keep", section.backup_keep)?;
    layer.seed = section.seed.filter(|p| !p.as_os_str().is_empty());
    layer.revision_poll_secs =
        at.positive("server.revision_poll_secs", section.revision_poll_secs)?;
    Ok(())
}

/// `[auth]`.
fn auth(layer: &mut Layer, section: AuthSection, at: &At) -> Result<(), ConfigError> {
    layer.jwt_secret = non_empty(section.jwt_secret).map(Secret::new);
    layer.jwks_url = non_empty(section.jwks_url);
    layer.jwt_issuer = non_empty(section.jwt_issuer);
    layer.jwt_audience = non_empty(section.jwt_audience);
    layer.jwt_leeway_secs = section.jwt_leeway_secs;
    layer.jwt_require_exp = section.jwt_require_exp;
    layer.console_oidc_client_id = non_empty(section.console_oidc_client_id);
    layer.console_oidc_client_secret =
        non_empty(section.console_oidc_client_secret).map(Secret::new);
    layer.admin_rule = section
        .admin_rule
        .map(|rule| layer::admin_rule("auth.admin_rule", &at.place, rule))
        .transpose()?;
    Ok(())
}

/// `[http]`.
fn http(layer: &mut Layer, section: HttpSection, at: &At) -> Result<(), ConfigError> {
    layer.request_timeout_secs =
        at.positive("http.request_timeout_secs", section.request_timeout_secs)?;
    layer.body_limit_bytes = at.positive("http.body_limit_bytes", section.body_limit_bytes)?;
    layer.sse_ping_secs = at.positive("http.sse_ping_secs", section.sse_ping_secs)?;
    layer.max_streams_per_subject = at.positive(
        "http.max_streams_per_subject",
        section.max_streams_per_subject,
    )?;
    layer.idle_timeout_secs = at.positive("http.idle_timeout_secs", section.idle_timeout_secs)?;
    layer.header_timeout_secs =
        at.positive("http.header_timeout_secs", section.header_timeout_secs)?;
    layer.max_connections = at.positive("http.max_connections", section.max_connections)?;
    layer.authz_deny_status = section
        .authz_deny_status
        .map(|v| layer::deny_status(&at.named("http.authz_deny_status"), v))
        .transpose()?;
    Ok(())
}

/// `[log]` and `[telemetry]`.
fn observability(
    layer: &mut Layer,
    log: LogSection,
    telemetry: TelemetrySection,
    at: &At,
) -> Result<(), ConfigError> {
    layer.log_format = non_empty(log.format)
        .map(|text| layer::log_format(&at.named("log.format"), &text))
        .transpose()?;
    layer.log_level = non_empty(log.level)
        .map(|text| layer::log_level(&at.named("log.level"), &text))
        .transpose()?;
    layer.otlp_endpoint = non_empty(telemetry.otlp_endpoint)
        .map(|text| layer::otlp_endpoint(&at.named("telemetry.otlp_endpoint"), &text))
        .transpose()?;
    layer.otlp_protocol = non_empty(telemetry.otlp_protocol)
        .map(|text| layer::otlp_protocol(&at.named("telemetry.otlp_protocol"), &text))
        .transpose()?;
    layer.otel_service_name = non_empty(telemetry.service_name);
    Ok(())
}

/// `[rate_limits]`.
fn rate_limits(layer: &mut Layer, limits: &RateLimitsSection, at: &At) -> Result<(), ConfigError> {
    layer.agent_reads = at.budget(
        "agent_reads",
        limits.agent_reads_per_sec,
        limits.agent_reads_burst,
    )?;
    layer.streams = at.budget("streams", limits.streams_per_sec, limits.streams_burst)?;
    layer.admin_writes = at.budget(
        "admin_writes",
        limits.admin_writes_per_sec,
        limits.admin_writes_burst,
    )?;
    layer.decisions = at.budget(
        "decisions",
        limits.decisions_per_sec,
        limits.decisions_burst,
    )?;
    layer.tool_calls = at.budget(
        "tool_calls",
        limits.tool_calls_per_sec,
        limits.tool_calls_burst,
    )?;
    Ok(())
}
