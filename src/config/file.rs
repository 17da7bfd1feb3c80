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
    cache: super::cache::CacheSection,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerSection {
    listen: Option<String>,
    data_dir: Option<PathBuf>,
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
    let place = format!(" in {}", path.display());
    let named = |key: &str| format!("{key}{place}");
    let positive = |key: &str, value: Option<u64>| {
        value
            .map(|v| layer::at_least_one(&named(key), v))
            .transpose()
    };
    let budget = |class: &str, per_second: Option<u64>, burst: Option<u64>| {
        Ok::<_, ConfigError>(BudgetLayer {
            per_second: per_second
                .map(|v| layer::rate(&named(&format!("rate_limits.{class}_per_sec")), v))
                .transpose()?,
            burst: burst
                .map(|v| layer::burst(&named(&format!("rate_limits.{class}_burst")), v))
                .transpose()?,
        })
    };
    let limits = &file.rate_limits;
    Ok(Layer {
        listen: non_empty(file.server.listen)
            .map(|text| layer::listen_address(&named("server.listen"), &text))
            .transpose()?,
        data_dir: file.server.data_dir.filter(|p| !p.as_os_str().is_empty()),
        seed: file.server.seed.filter(|p| !p.as_os_str().is_empty()),
        jwt_secret: non_empty(file.auth.jwt_secret).map(Secret::new),
        jwks_url: non_empty(file.auth.jwks_url),
        jwt_issuer: non_empty(file.auth.jwt_issuer),
        jwt_audience: non_empty(file.auth.jwt_audience),
        jwt_leeway_secs: file.auth.jwt_leeway_secs,
        jwt_require_exp: file.auth.jwt_require_exp,
        admin_rule: file
            .auth
            .admin_rule
            .map(|rule| layer::admin_rule("auth.admin_rule", &place, rule))
            .transpose()?,
        mongodb_uri: non_empty(file.mongodb.uri).map(Secret::new),
        mongodb_database: non_empty(file.mongodb.database),
        redis_url: non_empty(file.redis.url).map(Secret::new),
        redis_secret: non_empty(file.redis.secret).map(Secret::new),
        request_timeout_secs: positive(
            "http.request_timeout_secs",
            file.http.request_timeout_secs,
        )?,
        body_limit_bytes: positive("http.body_limit_bytes", file.http.body_limit_bytes)?,
        sse_ping_secs: positive("http.sse_ping_secs", file.http.sse_ping_secs)?,
        revision_poll_secs: positive("server.revision_poll_secs", file.server.revision_poll_secs)?,
        max_streams_per_subject: positive(
            "http.max_streams_per_subject",
            file.http.max_streams_per_subject,
        )?,
        idle_timeout_secs: positive("http.idle_timeout_secs", file.http.idle_timeout_secs)?,
        header_timeout_secs: positive("http.header_timeout_secs", file.http.header_timeout_secs)?,
        max_connections: positive("http.max_connections", file.http.max_connections)?,
        authz_deny_status: file
            .http
            .authz_deny_status
            .map(|v| layer::deny_status(&named("http.authz_deny_status"), v))
            .transpose()?,
        log_format: non_empty(file.log.format)
            .map(|text| layer::log_format(&named("log.format"), &text))
            .transpose()?,
        log_level: non_empty(file.log.level)
            .map(|text| layer::log_level(&named("log.level"), &text))
            .transpose()?,
        otlp_endpoint: non_empty(file.telemetry.otlp_endpoint)
            .map(|text| layer::otlp_endpoint(&named("telemetry.otlp_endpoint"), &text))
            .transpose()?,
        otlp_protocol: non_empty(file.telemetry.otlp_protocol)
            .map(|text| layer::otlp_protocol(&named("telemetry.otlp_protocol"), &text))
            .transpose()?,
        otel_service_name: non_empty(file.telemetry.service_name),
        agent_reads: budget(
            "agent_reads",
            limits.agent_reads_per_sec,
            limits.agent_reads_burst,
        )?,
        streams: budget("streams", limits.streams_per_sec, limits.streams_burst)?,
        admin_writes: budget(
            "admin_writes",
            limits.admin_writes_per_sec,
            limits.admin_writes_burst,
        )?,
        decisions: budget(
            "decisions",
            limits.decisions_per_sec,
            limits.decisions_burst,
        )?,
        tool_calls: budget(
            "tool_calls",
            limits.tool_calls_per_sec,
            limits.tool_calls_burst,
        )?,
        mcp: super::mcp::McpLayer::from_file(file.mcp, &place)?,
        cache: super::cache::CacheLayer::from_file(file.cache, &place)?,
    })
}
