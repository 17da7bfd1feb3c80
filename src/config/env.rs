//! The environment variables as a [`Layer`]: `TOOLGATE_` + the TOML key (with the section name
//! for `[mongodb]`, `[redis]` and `[log]`; `TOOLGATE_RATE_LIMIT_` + the key for
//! `[rate_limits]`), plus the conventional `RUST_LOG` and, for `[telemetry]`, the standard
//! OpenTelemetry variables ([`OTEL_VARIABLES`]).

use std::path::PathBuf;

use crate::domain::model::ClaimMatcher;

use super::layer::{self, BudgetLayer, Layer};
use super::{ConfigError, Environment, Secret};

/// Every variable toolgate reads besides the MCP endpoint's ([`super::mcp::VARIABLES`]); any
/// other `TOOLGATE_*` variable is reported as a likely typo.
pub const KNOWN_VARIABLES: &[&str] = &[
    "TOOLGATE_CONFIG",
    "TOOLGATE_LISTEN",
    "TOOLGATE_DATA_DIR",
    "TOOLGATE_SEED",
    "TOOLGATE_JWT_SECRET",
    "TOOLGATE_JWKS_URL",
    "TOOLGATE_JWT_ISSUER",
    "TOOLGATE_JWT_AUDIENCE",
    "TOOLGATE_JWT_LEEWAY_SECS",
    "TOOLGATE_JWT_REQUIRE_EXP",
    "TOOLGATE_ADMIN_RULE",
    "TOOLGATE_MONGODB_URI",
    "TOOLGATE_MONGODB_DATABASE",
    "TOOLGATE_REDIS_URL",
    "TOOLGATE_REDIS_SECRET",
    "TOOLGATE_REQUEST_TIMEOUT_SECS",
    "TOOLGATE_BODY_LIMIT_BYTES",
    "TOOLGATE_SSE_PING_SECS",
    "TOOLGATE_REVISION_POLL_SECS",
    "TOOLGATE_MAX_STREAMS_PER_SUBJECT",
    "TOOLGATE_IDLE_TIMEOUT_SECS",
    "TOOLGATE_HEADER_TIMEOUT_SECS",
    "TOOLGATE_MAX_CONNECTIONS",
    "TOOLGATE_AUTHZ_DENY_STATUS",
    "TOOLGATE_LOG_FORMAT",
    "TOOLGATE_LOG_LEVEL",
    "TOOLGATE_RATE_LIMIT_AGENT_READS_PER_SEC",
    "TOOLGATE_RATE_LIMIT_AGENT_READS_BURST",
    "TOOLGATE_RATE_LIMIT_STREAMS_PER_SEC",
    "TOOLGATE_RATE_LIMIT_STREAMS_BURST",
    "TOOLGATE_RATE_LIMIT_ADMIN_WRITES_PER_SEC",
    "TOOLGATE_RATE_LIMIT_ADMIN_WRITES_BURST",
    "TOOLGATE_RATE_LIMIT_DECISIONS_PER_SEC",
    "TOOLGATE_RATE_LIMIT_DECISIONS_BURST",
    "TOOLGATE_RATE_LIMIT_TOOL_CALLS_PER_SEC",
    "TOOLGATE_RATE_LIMIT_TOOL_CALLS_BURST",
];

/// The standard OpenTelemetry variables toolgate reads itself (the SDK reads the other
/// `OTEL_*` ones, such as `OTEL_EXPORTER_OTLP_HEADERS`, directly).
pub const OTEL_VARIABLES: &[&str] = &[
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_SERVICE_NAME",
];

/// Reads and checks the variables in `env`.
pub(super) fn read(env: &Environment) -> Result<Layer, ConfigError> {
    let text = |name: &str| env.get(name).map(str::to_owned);
    let positive = |name: &str| -> Result<Option<u64>, ConfigError> {
        env.get(name)
            .map(|t| layer::integer(name, t).and_then(|n| layer::at_least_one(name, n)))
            .transpose()
    };
    let budget = |class: &str| -> Result<BudgetLayer, ConfigError> {
        let per_second = format!("TOOLGATE_RATE_LIMIT_{class}_PER_SEC");
        let burst = format!("TOOLGATE_RATE_LIMIT_{class}_BURST");
        Ok(BudgetLayer {
            per_second: env
                .get(&per_second)
                .map(|t| layer::integer(&per_second, t).and_then(|n| layer::rate(&per_second, n)))
                .transpose()?,
            burst: env
                .get(&burst)
                .map(|t| layer::integer(&burst, t).and_then(|n| layer::burst(&burst, n)))
                .transpose()?,
        })
    };
    // TOOLGATE_LOG_LEVEL is toolgate's own; RUST_LOG is honoured as the usual fallback.
    let log_level = match env.get("TOOLGATE_LOG_LEVEL") {
        Some(level) => Some(layer::log_level("TOOLGATE_LOG_LEVEL", level)?),
        None => env
            .get("RUST_LOG")
            .map(|level| layer::log_level("RUST_LOG", level))
            .transpose()?,
    };
    Ok(Layer {
        listen: env
            .get("TOOLGATE_LISTEN")
            .map(|t| layer::listen_address("TOOLGATE_LISTEN", t))
            .transpose()?,
        data_dir: env.get("TOOLGATE_DATA_DIR").map(PathBuf::from),
        seed: env.get("TOOLGATE_SEED").map(PathBuf::from),
        jwt_secret: env.get("TOOLGATE_JWT_SECRET").map(Secret::new),
        jwks_url: text("TOOLGATE_JWKS_URL"),
        jwt_issuer: text("TOOLGATE_JWT_ISSUER"),
        jwt_audience: text("TOOLGATE_JWT_AUDIENCE"),
        jwt_leeway_secs: env
            .get("TOOLGATE_JWT_LEEWAY_SECS")
            .map(|t| layer::integer("TOOLGATE_JWT_LEEWAY_SECS", t))
            .transpose()?,
        jwt_require_exp: env
            .get("TOOLGATE_JWT_REQUIRE_EXP")
            .map(|t| layer::boolean("TOOLGATE_JWT_REQUIRE_EXP", t))
            .transpose()?,
        admin_rule: env.get("TOOLGATE_ADMIN_RULE").map(admin_rule).transpose()?,
        mongodb_uri: env.get("TOOLGATE_MONGODB_URI").map(Secret::new),
        mongodb_database: text("TOOLGATE_MONGODB_DATABASE"),
        redis_url: env.get("TOOLGATE_REDIS_URL").map(Secret::new),
        redis_secret: env
            .get("TOOLGATE_REDIS_SECRET")
            .filter(|t| !t.is_empty())
            .map(Secret::new),
        request_timeout_secs: positive("TOOLGATE_REQUEST_TIMEOUT_SECS")?,
        body_limit_bytes: positive("TOOLGATE_BODY_LIMIT_BYTES")?,
        sse_ping_secs: positive("TOOLGATE_SSE_PING_SECS")?,
        revision_poll_secs: positive("TOOLGATE_REVISION_POLL_SECS")?,
        max_streams_per_subject: positive("TOOLGATE_MAX_STREAMS_PER_SUBJECT")?,
        idle_timeout_secs: positive("TOOLGATE_IDLE_TIMEOUT_SECS")?,
        header_timeout_secs: positive("TOOLGATE_HEADER_TIMEOUT_SECS")?,
        max_connections: positive("TOOLGATE_MAX_CONNECTIONS")?,
        authz_deny_status: env
            .get("TOOLGATE_AUTHZ_DENY_STATUS")
            .map(|t| {
                layer::integer("TOOLGATE_AUTHZ_DENY_STATUS", t)
                    .and_then(|n| layer::deny_status("TOOLGATE_AUTHZ_DENY_STATUS", n))
            })
            .transpose()?,
        log_format: env
            .get("TOOLGATE_LOG_FORMAT")
            .map(|t| layer::log_format("TOOLGATE_LOG_FORMAT", t))
            .transpose()?,
        log_level,
        otlp_endpoint: env
            .get("OTEL_EXPORTER_OTLP_ENDPOINT")
            .map(|t| layer::otlp_endpoint("OTEL_EXPORTER_OTLP_ENDPOINT", t))
            .transpose()?,
        otlp_protocol: env
            .get("OTEL_EXPORTER_OTLP_PROTOCOL")
            .map(|t| layer::otlp_protocol("OTEL_EXPORTER_OTLP_PROTOCOL", t))
            .transpose()?,
        otel_service_name: text("OTEL_SERVICE_NAME"),
        agent_reads: budget("AGENT_READS")?,
        streams: budget("STREAMS")?,
        admin_writes: budget("ADMIN_WRITES")?,
        decisions: budget("DECISIONS")?,
        tool_calls: budget("TOOL_CALLS")?,
        mcp: super::mcp::McpLayer::from_env(env)?,
        cache: super::cache::CacheLayer::from_env(env)?,
    })
}

/// `TOOLGATE_ADMIN_RULE` holds the matcher list as JSON, the same shape as in the file.
fn admin_rule(text: &str) -> Result<Vec<ClaimMatcher>, ConfigError> {
    let matchers: Vec<ClaimMatcher> = serde_json::from_str(text).map_err(|error| {
        ConfigError::invalid(
            "TOOLGATE_ADMIN_RULE",
            format!(
                "not a JSON list of claim matchers ({error}); expected e.g. \
                 [{{\"json_path\": \"roles\", \"operator\": \"contains\", \"value\": \"admin\"}}]"
            ),
        )
    })?;
    layer::admin_rule("TOOLGATE_ADMIN_RULE", "", matchers)
}

/// `TOOLGATE_*` variables that toolgate does not read, most likely misspelt.
pub(super) fn unknown_variables(env: &Environment) -> Vec<String> {
    env.toolgate_names()
        .filter(|name| {
            !KNOWN_VARIABLES.contains(name)
                && !super::mcp::VARIABLES.contains(name)
                && !super::cache::VARIABLES.contains(name)
        })
        .map(str::to_owned)
        .collect()
}
