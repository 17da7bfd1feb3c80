//! The command line as clap sees it. Flags that are settings mirror a `TOOLGATE_*` variable
//! and a TOML key; the precedence is applied in [`crate::config`], not here.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use serde_json::{Map, Value};

/// `toolgate [serve] [flags]`, `toolgate token`, `toolgate check FILE`, `toolgate migrate`.
#[derive(Debug, Parser)]
#[command(
    name = "toolgate",
    version,
    about = "A tool-access gateway for AI agents: JWT claims -> access policies -> tool groups -> manifest",
    long_about = None,
    args_conflicts_with_subcommands = true,
    after_help = "With no subcommand, toolgate runs `serve` with the flags given.\n\
                  Precedence of settings: flags > TOOLGATE_* environment > TOML file > defaults \
                  (see config/toolgate.example.toml)."
)]
pub(super) struct Cli {
    /// Flags of the default `serve` command.
    #[command(flatten)]
    pub serve: ServeArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(super) enum Command {
    /// Run the gateway (the default).
    Serve(ServeArgs),
    /// Mint an HS256 token for development; prints only the token.
    Token(TokenArgs),
    /// Parse, normalise and validate a catalog file (JSON or YAML).
    Check(CheckArgs),
    /// Prepare the configured store's schema and indexes.
    Migrate(MigrateArgs),
    /// Ask a running gateway what a proposed catalog would change for whom; writes nothing.
    Impact(ImpactArgs),
    /// Serve a small demo HTTP service and its OpenAPI document, to import as a source and
    /// call through the gateway (for trying toolgate; not part of the gateway)
    DemoUpstream(DemoUpstreamArgs),
}

/// Flags of `serve`.
#[derive(Debug, Clone, Default, Args)]
pub(super) struct ServeArgs {
    /// Listen address, IP:PORT or HOST:PORT [env: TOOLGATE_LISTEN] [default: 127.0.0.1:8080]
    #[arg(long, value_name = "HOST:PORT", value_parser = crate::config::parse_listen)]
    pub listen: Option<SocketAddr>,
    /// TOML configuration file [env: TOOLGATE_CONFIG] [default: config/toolgate.toml if present]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Folder of the embedded store [env: TOOLGATE_DATA_DIR] [default: ./data]
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Catalog file (JSON/YAML) loaded into an empty store at start [env: TOOLGATE_SEED]
    #[arg(long, value_name = "FILE")]
    pub seed: Option<PathBuf>,
    /// Development mode: generate a throw-away secret if none is set, print sample tokens
    #[arg(long)]
    pub dev: bool,
}

/// Flags of `token`.
#[derive(Debug, Clone, Args)]
pub(super) struct TokenArgs {
    /// The `sub` claim [default: dev, unless --claims/--claim set one]
    #[arg(long, value_name = "SUBJECT")]
    pub sub: Option<String>,
    /// Adds ROLE to the `roles` claim (repeatable)
    #[arg(long = "role", value_name = "ROLE")]
    pub roles: Vec<String>,
    /// Adds `admin` to the `roles` claim
    #[arg(long)]
    pub admin: bool,
    /// Sets a claim at a dot path (org.region=eu nests, as policies read it); VALUE is JSON if it parses (3, true, ["a"]), else a string (repeatable)
    #[arg(long = "claim", value_name = "KEY=VALUE", value_parser = parse_claim)]
    pub claim: Vec<(String, Value)>,
    /// Claims as a JSON object, e.g. '{"realm_access": {"roles": ["admin"]}}'
    #[arg(long = "claims", value_name = "JSON", value_parser = parse_claims)]
    pub claims: Option<Map<String, Value>>,
    /// Lifetime in seconds: sets `iat` to now and `exp` to now + TTL (--claim can override both)
    #[arg(long, value_name = "SECONDS", default_value_t = 3600,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub ttl_secs: u64,
    /// HMAC secret [default: TOOLGATE_JWT_SECRET, then auth.jwt_secret in the config file].
    /// Visible to other local users in the process list: prefer the environment variable
    #[arg(long, value_name = "SECRET")]
    pub secret: Option<String>,
    /// TOML configuration file to take the secret, issuer and audience from [env: TOOLGATE_CONFIG]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// Flags of `check`.
#[derive(Debug, Clone, Args)]
pub(super) struct CheckArgs {
    /// The catalog file: .json, .yaml/.yml, or anything else (tried as JSON, then YAML)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

/// Flags of `impact`.
#[derive(Debug, Clone, Args)]
pub(super) struct ImpactArgs {
    /// The proposed catalog (JSON or YAML), as `PUT /admin/catalog` would write it
    #[arg(long, value_name = "FILE")]
    pub catalog: PathBuf,
    /// The running gateway [env: TOOLGATE_URL] [default: http://127.0.0.1:8080]
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// An admin token [env: TOOLGATE_TOKEN]. Visible to other local users in the process
    /// list: prefer the environment variable
    #[arg(long, value_name = "JWT")]
    pub token: Option<String>,
    /// Claims to evaluate besides those the gateway served recently, as a JSON object
    /// (repeatable)
    #[arg(long = "claims", value_name = "JSON", value_parser = parse_claims)]
    pub claims: Vec<Map<String, Value>>,
    /// Only against this revision of the catalog (`42` or the ETag `"r42"`): refused if it moved
    #[arg(long, value_name = "REVISION")]
    pub if_match: Option<String>,
    /// Print the gateway's JSON answer instead of the summary
    #[arg(long)]
    pub json: bool,
}

/// Flags of `demo-upstream`.
#[derive(Debug, Clone, Args)]
pub(super) struct DemoUpstreamArgs {
    /// Listen address, IP:PORT or HOST:PORT
    #[arg(long, value_name = "HOST:PORT", default_value = super::demo_upstream::DEFAULT_LISTEN,
          value_parser = crate::config::parse_listen)]
    pub listen: SocketAddr,
}

/// Flags of `migrate`.
#[derive(Debug, Clone, Args)]
pub(super) struct MigrateArgs {
    /// TOML configuration file [env: TOOLGATE_CONFIG] [default: config/toolgate.toml if present]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Folder of the embedded store [env: TOOLGATE_DATA_DIR] [default: ./data]
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

/// `KEY=VALUE`: the value as JSON when it parses, otherwise as a string.
fn parse_claim(text: &str) -> Result<(String, Value), String> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("'{text}' is not KEY=VALUE"))?;
    if key.is_empty() {
        return Err(format!("'{text}' has an empty claim name"));
    }
    let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()));
    Ok((key.to_owned(), value))
}

/// A JSON object.
fn parse_claims(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str(text) {
        Ok(Value::Object(claims)) => Ok(claims),
        Ok(_) => Err("expected a JSON object such as '{\"tenant\": \"acme\"}'".to_owned()),
        Err(error) => Err(format!("not valid JSON: {error}")),
    }
}
