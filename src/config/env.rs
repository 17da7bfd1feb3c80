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
    "TOOLGATE_BACKUP_KEEP",
    "TOOLGATE_SEED",
    "TOOLGATE_JWT_SECRET",
    "TOOLGATE_JWKS_URL",
    "TOOLGATE_JWT_ISSUER",
    "TOOLGATE_JWT_AUDIENCE",
    "TOOLGATE_JWT_LEEWAY_SECS",
    "TOOLGATE_JWT_REQUIRE_EXP",
    "TOOLGATE_ADMIN_RULE",
    "TOOLGATE_CONSOLE_OIDC_CLIENT_ID",
    "TOOLGATE_CONSOLE_OIDC_CLIENT_SECRET",
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
    let vars = Vars(env);
    let text = |name: &str| env.get(name).map(str::to_owned);
    Ok(Layer {
        listen: vars.parsed("TOOLGATE_LISTEN", layer::listen_address)?,
        data_dir: env.get("TOOLGATE_DATA_DIR").map(PathBuf::from),
        backup_keep: vars.positive("TOOLGATE_BACKUP_KEEP")?,
        seed: env.get("TOOLGATE_SEED").map(PathBuf::from),
        jwt_secret: env.get("TOOLGATE_JWT_SECRET").map(Secret::new),
        jwks_url: text("TOOLGATE_JWKS_URL"),
        jwt_issuer: text("TOOLGATE_JWT_ISSUER"),
        jwt_audience: text("TOOLGATE_JWT_AUDIENCE"),
        jwt_leeway_secs: vars.parsed("TOOLGATE_JWT_LEEWAY_SECS", layer::integer)?,
        jwt_require_exp: vars.parsed("TOOLGATE_JWT_REQUIRE_EXP", layer::boolean)?,
        admin_rule: vars.parsed("TOOLGATE_ADMIN_RULE", |_, text| admin_rule(text))?,
        console_oidc_client_id: text("TOOLGATE_CONSOLE_OIDC_CLIENT_ID").filter(|t| !t.is_empty()),
        console_oidc_client_secret: env
            .get("TOOLGATE_CONSOLE_OIDC_CLIENT_SECRET")
            .filter(|t| !t.is_empty())
            .map(Secret::new),
        mongodb_uri: env.get("TOOLGATE_MONGODB_URI").map(Secret::new),
        mongodb_database: text("TOOLGATE_MONGODB_DATABASE"),
        redis_url: env.get("TOOLGATE_REDIS_URL").map(Secret::new),
        redis_secret: env
            .get("TOOLGATE_REDIS_SECRET")
            .filter(|t| !t.is_empty())
            .map(Secret::new),
        request_timeout_secs: vars.positive("TOOLGATE_REQUEST_TIMEOUT_SECS")?,
        body_limit_bytes: vars.positive("TOOLGATE_BODY_LIMIT_BYTES")?,
        sse_ping_secs: vars.positive("TOOLGATE_SSE_PING_SECS")?,
        revision_poll_secs: vars.positive("TOOLGATE_REVISION_POLL_SECS")?,
        max_streams_per_subject: vars.positive("TOOLGATE_MAX_STREAMS_PER_SUBJECT")?,
        idle_timeout_secs: vars.positive("TOOLGATE_IDLE_TIMEOUT_SECS")?,
        header_timeout_secs: vars.positive("TOOLGATE_HEADER_TIMEOUT_SECS")?,
        max_connections: vars.positive("TOOLGATE_MAX_CONNECTIONS")?,
        authz_deny_status: vars.parsed("TOOLGATE_AUTHZ_DENY_STATUS", |name, text| {
            layer::integer(name, text).and_then(|n| layer::deny_status(name, n))
        })?,
        log_format: vars.parsed("TOOLGATE_LOG_FORMAT", layer::log_format)?,
        log_level: log_level(&vars)?,
        otlp_endpoint: vars.parsed("OTEL_EXPORTER_OTLP_ENDPOINT", layer::otlp_endpoint)?,
        otlp_protocol: vars.parsed("OTEL_EXPORTER_OTLP_PROTOCOL", layer::otlp_protocol)?,
        otel_service_name: text("OTEL_SERVICE_NAME"),
        agent_reads: vars.budget("AGENT_READS")?,
        streams: vars.budget("STREAMS")?,
        admin_writes: vars.budget("ADMIN_WRITES")?,
        decisions: vars.budget("DECISIONS")?,
        tool_calls: vars.budget("TOOL_CALLS")?,
        mcp: super::mcp::McpLayer::from_env(env)?,
        delegation: super::delegation::DelegationLayer::from_env(env)?,
        runs: super::runs::RunsLayer::from_env(env)?,
        cache: super::cache::CacheLayer::from_env(env)?,
    })
}

/// The environment's variables, each parsed with the name it came from in every message.
struct Vars<'e>(&'e Environment);

impl Vars<'_> {
    /// The variable `name` parsed by `parse` (given the name and the text), if set.
    fn parsed<T>(
        &self,
        name: &str,
        parse: impl FnOnce(&str, &str) -> Result<T, ConfigError>,
    ) -> Result<Option<T>, ConfigError> {
        self.0.get(name).map(|text| parse(name, text)).transpose()
    }

    /// A count or duration that must be at least 1.
    fn positive(&self, name: &str) -> Result<Option<u64>, ConfigError> {
        self.parsed(name, |name, text| {
            layer::integer(name, text).and_then(|n| layer::at_least_one(name, n))
        })
    }

    /// `TOOLGATE_RATE_LIMIT_<class>_PER_SEC` and `_BURST`.
    fn budget(&self, class: &str) -> Result<BudgetLayer, ConfigError> {
        let per_second = format!("TOOLGATE_RATE_LIMIT_{class}_PER_SEC");
        let burst = format!("TOOLGATE_RATE_LIMIT_{class}_BURST");
        Ok(BudgetLayer {
            per_second: self.parsed(&per_second, |name, text| {
                layer::integer(name, text).and_then(|n| layer::rate(name, n))
            })?,
            burst: self.parsed(&burst, |name, text| {
                layer::integer(name, text).and_then(|n| layer::burst(name, n))
            })?,
        })
    }
}

/// TOOLGATE_LOG_LEVEL is toolgate's own; RUST_LOG is honoured as the usual fallback.
fn log_level(vars: &Vars<'_>) -> Result<Option<String>, ConfigError> {
    match vars.parsed("TOOLGATE_LOG_LEVEL", layer::log_level)? {
        Some(level) => Ok(Some(level)),
        None => vars.parsed("RUST_LOG", layer::log_level),
    }
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

/// Every `TOOLGATE_*` variable `serve` reads, and the `OTEL_*` ones it reads itself: what
/// deployment files may set.
pub fn setting_variables() -> impl Iterator<Item = &'static str> {
    KNOWN_VARIABLES
        .iter()
        .chain(&super::mcp::VARIABLES)
        .chain(&super::delegation::VARIABLES)
        .chain(&super::runs::VARIABLES)
        .chain(&super::cache::VARIABLES)
        .chain(OTEL_VARIABLES)
        .copied()
}

/// `TOOLGATE_*` variables that toolgate does not read, most likely misspelt.
pub(super) fn unknown_variables(env: &Environment) -> Vec<String> {
    env.toolgate_names()
        .filter(|name| !setting_variables().any(|known| known == *name))
        .map(str::to_owned)
        .collect()
}
