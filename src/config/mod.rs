//! Settings: read once at start from flags, environment, a TOML file and defaults, checked,
//! then passed by value to whoever needs them. Nothing reads the environment after this.
//!
//! Precedence, highest first: **flags > environment > TOML file > defaults**. Each source is
//! read into a layer of typed, already-checked values (so an error names the
//! flag, variable or file key that holds the bad value), and the layers are stacked.
//!
//! Why `toml` plus a hand-written environment overlay instead of `figment`: the variable names
//! are fixed by the API contract and do not follow one mechanical rule from the TOML keys
//! (`TOOLGATE_LISTEN` ↔ `server.listen`, `RUST_LOG` ↔ `log.level`), the admin rule comes from
//! the environment as JSON, and the loader takes the environment as a value
//! ([`Environment`]) so that tests never touch the process environment. An explicit table of
//! variables ([`KNOWN_VARIABLES`]) is also what lets us warn about misspelt ones.

mod dev;
mod env;
mod environment;
mod error;
mod file;
mod layer;
mod secret;
#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::auth::AuthSettings;
use crate::domain::model::ClaimMatcher;
use crate::http::limit::{Budget, RateLimits};
use crate::telemetry::{OtlpProtocol, OtlpSettings};

pub use dev::{SampleTokens, dev_banner, dev_claims, sample_tokens, unix_now};
pub use env::{KNOWN_VARIABLES, OTEL_VARIABLES};
pub use environment::Environment;
pub use error::ConfigError;
pub use secret::Secret;

/// The configuration file read when none is named, if it exists.
pub const DEFAULT_CONFIG_FILE: &str = "config/toolgate.toml";
/// Default listen address (loopback: exposing the gateway is a deliberate choice).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// Default folder of the embedded store.
pub const DEFAULT_DATA_DIR: &str = "./data";
/// Default MongoDB database name.
pub const DEFAULT_MONGODB_DATABASE: &str = "toolgate";
/// Default clock-skew leeway for `exp`/`nbf`, in seconds.
pub const DEFAULT_JWT_LEEWAY_SECS: u64 = 30;
/// Default per-request timeout, in seconds (SSE streams are exempt by design of the server).
pub const DEFAULT_REQUEST_TIMEOUT_SECS: u64 = 30;
/// Default request body limit: 1 MiB.
pub const DEFAULT_BODY_LIMIT_BYTES: u64 = 1024 * 1024;
/// Default interval between SSE keep-alive pings, in seconds.
pub const DEFAULT_SSE_PING_SECS: u64 = 15;
/// How often an instance sharing its store compares revisions, whatever the bus says.
pub const DEFAULT_REVISION_POLL_SECS: u64 = 5;
/// Default cap on concurrent SSE streams per token subject.
pub const DEFAULT_MAX_STREAMS_PER_SUBJECT: u64 = 16;
/// Default time after which a connection (HTTP/1 or HTTP/2) with no exchange in flight is
/// closed, in seconds. Each idle connection holds a file descriptor; clients reconnect.
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 30;
/// Default time a client has to send its request head (HTTP/1) or preface (HTTP/2), seconds.
pub const DEFAULT_HEADER_TIMEOUT_SECS: u64 = 30;
/// Default log filter.
pub const DEFAULT_LOG_LEVEL: &str = "info";
/// Default `service.name` of exported traces and metrics.
pub const DEFAULT_OTEL_SERVICE_NAME: &str = "toolgate";

/// How log lines are written to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// What the command line says about settings; `None`/`false` means "the flag was not given".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `--config`: the TOML file to read (must exist).
    pub config: Option<PathBuf>,
    /// `--listen`.
    pub listen: Option<SocketAddr>,
    /// `--data-dir`.
    pub data_dir: Option<PathBuf>,
    /// `--seed`.
    pub seed: Option<PathBuf>,
    /// `--dev`: generate a throw-away secret when none is configured, and say so loudly.
    pub dev: bool,
}

/// Everything the gateway is configured with, checked.
///
/// Build one with [`Settings::load`] (any command) or [`Settings::load_for_serve`] (which also
/// insists on key material). In tests, `Settings::load(&Overrides::default(),
/// &Environment::from_pairs([("TOOLGATE_JWT_SECRET", "…")]))` gives defaults plus a secret.
/// `Debug` never prints a secret: they are [`Secret`]s.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where the HTTP server listens.
    pub listen: SocketAddr,
    /// The TOML file that was read, if any.
    pub config_file: Option<PathBuf>,
    /// Folder of the embedded (redb) store; relative paths are relative to the working folder.
    pub data_dir: PathBuf,
    /// Catalog file (JSON or YAML) loaded into an empty store at start.
    pub seed: Option<PathBuf>,
    /// Started with `--dev`: the server prints the secret and sample tokens.
    pub dev_mode: bool,
    /// HMAC secret for HS256/384/512 tokens.
    pub jwt_secret: Option<Secret>,
    /// `jwt_secret` was generated by `--dev` (nothing outside this process knows it).
    pub jwt_secret_generated: bool,
    /// JWKS URL or file for asymmetric tokens.
    pub jwks_url: Option<String>,
    /// Required `iss`; not checked when `None`.
    pub jwt_issuer: Option<String>,
    /// Required member of `aud`; not checked when `None`.
    pub jwt_audience: Option<String>,
    /// Clock skew tolerated on `exp`/`nbf`.
    pub jwt_leeway: Duration,
    /// Tokens without `exp` are refused (the default): a token that never expires is a
    /// credential that can never be taken back, and its streams would never end.
    pub jwt_require_exp: bool,
    /// Claim matchers, ANY of which makes a token admin; never empty, each one compiles.
    pub admin_rule: Vec<ClaimMatcher>,
    /// MongoDB read model; the embedded store is used when `None`.
    pub mongodb_uri: Option<Secret>,
    /// MongoDB database name.
    pub mongodb_database: String,
    /// Redis for the shared cache and change fan-out; in-process when `None`.
    pub redis_url: Option<Secret>,
    /// The key that authenticates what this instance shares through Redis (decisions another
    /// instance may reuse). Without it, decisions are not shared: an entry that cannot be
    /// checked must never grant anything (SEMANTICS.md section 9).
    pub redis_secret: Option<Secret>,
    /// Time limit for one ordinary request (not for SSE streams).
    pub request_timeout: Duration,
    /// Largest accepted request body; larger gets 413.
    pub body_limit_bytes: usize,
    /// Interval between SSE keep-alive comments.
    pub sse_ping: Duration,
    /// How often the store's revision is compared with the local one when instances share a
    /// store (the safety net under the change bus).
    pub revision_poll: Duration,
    /// Concurrent SSE streams allowed per token subject.
    pub max_streams_per_subject: usize,
    /// A connection with no exchange in flight for this long is closed.
    pub idle_timeout: Duration,
    /// How long a client may take to send its request head or HTTP/2 preface.
    pub header_timeout: Duration,
    /// Connections open at once; `None`: derived from the open-file limit at start.
    pub max_connections: Option<usize>,
    /// Text or JSON log lines.
    pub log_format: LogFormat,
    /// `tracing` filter directives, already checked (e.g. `info`, `toolgate=debug,info`).
    pub log_level: String,
    /// Base URL of the OTLP collector; traces and metrics are exported only when it is set.
    pub otlp_endpoint: Option<String>,
    /// How OTLP is sent.
    pub otlp_protocol: OtlpProtocol,
    /// `service.name` of what is exported.
    pub otel_service_name: String,
    /// Requests per subject and route class.
    pub rate_limits: RateLimits,
    /// Non-fatal findings (e.g. an unknown `TOOLGATE_*` variable), to log once logging is up.
    pub warnings: Vec<String>,
}

impl Settings {
    /// Loads settings for any command. Does not require key material (see
    /// [`Settings::load_for_serve`]).
    pub fn load(flags: &Overrides, env: &Environment) -> Result<Settings, ConfigError> {
        Self::load_with_default_file(flags, env, Path::new(DEFAULT_CONFIG_FILE))
    }

    /// Loads settings for `serve`: like [`Settings::load`], then with `--dev` generates a
    /// secret if none is configured, and refuses to go on without any key material.
    pub fn load_for_serve(flags: &Overrides, env: &Environment) -> Result<Settings, ConfigError> {
        Self::load_with_default_file(flags, env, Path::new(DEFAULT_CONFIG_FILE))?
            .require_key_material()
    }

    /// [`Settings::load`] with a different default file, so tests do not depend on what
    /// happens to exist in the working folder.
    pub(crate) fn load_with_default_file(
        flags: &Overrides,
        env: &Environment,
        default_file: &Path,
    ) -> Result<Settings, ConfigError> {
        let config_file = config_file(flags, env, default_file)?;
        let from_file = match &config_file {
            Some(path) => file::read(path)?,
            None => layer::Layer::default(),
        };
        let merged = from_file
            .overlaid_by(env::read(env)?)
            .overlaid_by(flag_layer(flags));
        let mut warnings: Vec<String> = env::unknown_variables(env)
            .into_iter()
            .map(|name| format!("the environment variable {name} is not a toolgate setting (misspelt?); it is ignored"))
            .collect();
        if let Some(rule) = &merged.admin_rule {
            warnings.extend(admin_rule_warnings(rule));
        }
        Ok(Settings::from_layer(
            merged,
            config_file,
            flags.dev,
            warnings,
        ))
    }

    fn from_layer(
        layer: layer::Layer,
        config_file: Option<PathBuf>,
        dev_mode: bool,
        warnings: Vec<String>,
    ) -> Settings {
        let defaults = RateLimits::default();
        Settings {
            listen: layer.listen.unwrap_or_else(default_listen),
            config_file,
            data_dir: layer
                .data_dir
                .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR)),
            seed: layer.seed,
            dev_mode,
            jwt_secret: layer.jwt_secret,
            jwt_secret_generated: false,
            jwks_url: layer.jwks_url,
            jwt_issuer: layer.jwt_issuer,
            jwt_audience: layer.jwt_audience,
            jwt_leeway: Duration::from_secs(
                layer.jwt_leeway_secs.unwrap_or(DEFAULT_JWT_LEEWAY_SECS),
            ),
            jwt_require_exp: layer.jwt_require_exp.unwrap_or(true),
            admin_rule: layer.admin_rule.unwrap_or_else(default_admin_rule),
            mongodb_uri: layer.mongodb_uri,
            mongodb_database: layer
                .mongodb_database
                .unwrap_or_else(|| DEFAULT_MONGODB_DATABASE.to_owned()),
            redis_url: layer.redis_url,
            redis_secret: layer.redis_secret,
            request_timeout: Duration::from_secs(
                layer
                    .request_timeout_secs
                    .unwrap_or(DEFAULT_REQUEST_TIMEOUT_SECS),
            ),
            body_limit_bytes: saturating_usize(
                layer.body_limit_bytes.unwrap_or(DEFAULT_BODY_LIMIT_BYTES),
            ),
            sse_ping: Duration::from_secs(layer.sse_ping_secs.unwrap_or(DEFAULT_SSE_PING_SECS)),
            revision_poll: Duration::from_secs(
                layer
                    .revision_poll_secs
                    .unwrap_or(DEFAULT_REVISION_POLL_SECS),
            ),
            max_streams_per_subject: saturating_usize(
                layer
                    .max_streams_per_subject
                    .unwrap_or(DEFAULT_MAX_STREAMS_PER_SUBJECT),
            ),
            idle_timeout: Duration::from_secs(
                layer.idle_timeout_secs.unwrap_or(DEFAULT_IDLE_TIMEOUT_SECS),
            ),
            header_timeout: Duration::from_secs(
                layer
                    .header_timeout_secs
                    .unwrap_or(DEFAULT_HEADER_TIMEOUT_SECS),
            ),
            max_connections: layer.max_connections.map(saturating_usize),
            log_format: layer.log_format.unwrap_or_default(),
            log_level: layer
                .log_level
                .unwrap_or_else(|| DEFAULT_LOG_LEVEL.to_owned()),
            otlp_endpoint: layer.otlp_endpoint,
            otlp_protocol: layer.otlp_protocol.unwrap_or_default(),
            otel_service_name: layer
                .otel_service_name
                .unwrap_or_else(|| DEFAULT_OTEL_SERVICE_NAME.to_owned()),
            rate_limits: RateLimits {
                agent_reads: budget(layer.agent_reads, defaults.agent_reads),
                streams: budget(layer.streams, defaults.streams),
                admin_writes: budget(layer.admin_writes, defaults.admin_writes),
            },
            warnings,
        }
    }

    /// In dev mode, generates a secret when none is configured (even with a JWKS, so that the
    /// sample tokens work); then refuses settings that could never accept a token.
    fn require_key_material(mut self) -> Result<Settings, ConfigError> {
        if self.dev_mode && self.jwt_secret.is_none() {
            self.jwt_secret = Some(dev::generate_secret()?);
            self.jwt_secret_generated = true;
        }
        if self.jwt_secret.is_none() && self.jwks_url.is_none() {
            return Err(ConfigError::NoKeyMaterial);
        }
        Ok(self)
    }

    /// Where and as what to export traces and metrics; `None` when no endpoint is set.
    pub fn otlp(&self) -> Option<OtlpSettings> {
        self.otlp_endpoint.as_ref().map(|endpoint| OtlpSettings {
            endpoint: endpoint.clone(),
            protocol: self.otlp_protocol,
            service_name: self.otel_service_name.clone(),
        })
    }

    /// What the token verifier needs ([`crate::auth::Verifier::new`]).
    pub fn auth(&self) -> AuthSettings {
        AuthSettings {
            hmac_secret: self.jwt_secret.as_ref().map(|s| s.expose().to_owned()),
            jwks: self.jwks_url.clone(),
            issuer: self.jwt_issuer.clone(),
            audience: self.jwt_audience.clone(),
            leeway: self.jwt_leeway,
            require_exp: self.jwt_require_exp,
            ..AuthSettings::default()
        }
    }
}

/// The file to read: `--config`, else `TOOLGATE_CONFIG` (both must exist), else the default
/// file if it exists.
fn config_file(
    flags: &Overrides,
    env: &Environment,
    default_file: &Path,
) -> Result<Option<PathBuf>, ConfigError> {
    let named = match (&flags.config, env.get("TOOLGATE_CONFIG")) {
        (Some(path), _) => Some((path.clone(), "--config")),
        (None, Some(path)) => Some((PathBuf::from(path), "TOOLGATE_CONFIG")),
        (None, None) => None,
    };
    match named {
        Some((path, named_by)) if !path.exists() => {
            Err(ConfigError::FileMissing { path, named_by })
        }
        Some((path, _)) => Ok(Some(path)),
        None => Ok(default_file.is_file().then(|| default_file.to_owned())),
    }
}

fn flag_layer(flags: &Overrides) -> layer::Layer {
    layer::Layer {
        listen: flags.listen,
        data_dir: flags.data_dir.clone(),
        seed: flags.seed.clone(),
        ..layer::Layer::default()
    }
}

fn default_listen() -> SocketAddr {
    DEFAULT_LISTEN
        .parse()
        .expect("the default listen address is a valid socket address")
}

/// `roles` equals `admin`, or `realm_access.roles` (Keycloak) equals `admin` (an exact string, or
/// an array with an exact element; never a substring): the rule the
/// auth module applies when none is configured.
pub fn default_admin_rule() -> Vec<ClaimMatcher> {
    crate::auth::AdminRule::default_matchers()
}

/// A configured admin rule that compares by substring or expression: on a string claim,
/// `roles contains admin` makes `"non-admin"` and `"badminton-club"` admins. The rule is
/// honoured as written (an operator may mean it), but said out loud at start.
fn admin_rule_warnings(rule: &[ClaimMatcher]) -> Vec<String> {
    rule.iter()
        .enumerate()
        .filter(|(_, matcher)| matches!(matcher.operator.as_str(), "contains" | "matches"))
        .map(|(i, matcher)| {
            format!(
                "admin_rule[{i}] uses '{}' on '{}': on a string claim this also accepts values \
                 that merely contain or resemble the expected one (\"non-admin\" contains \
                 \"admin\"); 'equals' matches the exact string or an exact array element",
                matcher.operator, matcher.json_path
            )
        })
        .collect()
}

/// A class's budget: what the layers say over the default; a rate of 0 turns the limit off.
fn budget(layer: layer::BudgetLayer, default: Option<Budget>) -> Option<Budget> {
    let default_rate = default.map_or(0, |budget| budget.per_second.get());
    let default_burst = default.map_or(1, |budget| budget.burst.get());
    Budget::new(
        layer.per_second.unwrap_or(default_rate),
        layer.burst.unwrap_or(default_burst),
    )
}

/// Sizes beyond the address space cannot be honoured anyway; the largest one can.
fn saturating_usize(value: u64) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}
