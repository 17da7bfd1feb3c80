//! `toolgate token`: mint an HS256 development token.

use std::io::Write;

use anyhow::Context as _;
use serde_json::{Map, Value, json};

use crate::auth::mint_hs256;
use crate::config::{Environment, Overrides, Secret, Settings};

use super::args::TokenArgs;

/// `sub` when no flag or claim sets one.
const DEFAULT_SUBJECT: &str = "dev";

/// A token ready to be signed: the secret and the complete claim set.
#[derive(Debug, Clone)]
pub struct TokenRequest {
    /// The HMAC secret (the gateway's `TOOLGATE_JWT_SECRET`).
    pub secret: Secret,
    /// Every claim of the token.
    pub claims: Map<String, Value>,
}

impl TokenRequest {
    /// Resolves the secret (`--secret`, then `TOOLGATE_JWT_SECRET`, then the config file) and
    /// builds the claims as of `now` (unix seconds).
    pub(super) fn from_args(
        args: TokenArgs,
        env: &Environment,
        now: i64,
    ) -> anyhow::Result<TokenRequest> {
        let settings = Settings::load(
            &Overrides {
                config: args.config.clone(),
                ..Overrides::default()
            },
            env,
        )?;
        let secret = match args.secret.as_deref().filter(|s| !s.is_empty()) {
            Some(secret) => Secret::new(secret),
            None => settings.jwt_secret.clone().context(
                "no secret to sign with: set TOOLGATE_JWT_SECRET (the secret the gateway \
                 verifies HS256 tokens with) or pass --secret",
            )?,
        };
        let claims = token_claims(&args, &settings, now);
        Ok(TokenRequest { secret, claims })
    }
}

/// Sets the claim at a dot path (`org.region`), creating the objects on the way, so that a
/// token minted with `--claim org.region=eu` matches a policy on `org.region` (policies read
/// dots as nesting). A non-object met on the way is replaced. Keys that themselves contain dots
/// are given whole with `--claims`.
fn insert_at_path(claims: &mut Map<String, Value>, path: &str, value: Value) {
    let mut segments = path.split('.');
    let last = segments.next_back().unwrap_or(path);
    let mut object = claims;
    for segment in segments {
        let slot = object
            .entry(segment.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        let Value::Object(inner) = slot else {
            return; // made an object just above
        };
        object = inner;
    }
    object.insert(last.to_owned(), value);
}

/// The claims, built in this order, later steps overriding earlier ones: `iat`/`exp` (from
/// `--ttl-secs`) and the configured `iss`/`aud`; `--claims`; each `--claim`; `--sub` (or
/// `dev` if nothing set `sub`); then `--role`/`--admin` are added to `roles`.
pub(super) fn token_claims(args: &TokenArgs, settings: &Settings, now: i64) -> Map<String, Value> {
    let mut claims = Map::new();
    claims.insert("iat".to_owned(), json!(now));
    let ttl = i64::try_from(args.ttl_secs).unwrap_or(i64::MAX);
    claims.insert("exp".to_owned(), json!(now.saturating_add(ttl)));
    if let Some(issuer) = &settings.jwt_issuer {
        claims.insert("iss".to_owned(), json!(issuer));
    }
    if let Some(audience) = &settings.jwt_audience {
        claims.insert("aud".to_owned(), json!(audience));
    }
    if let Some(extra) = &args.claims {
        claims.extend(extra.clone());
    }
    for (path, value) in &args.claim {
        insert_at_path(&mut claims, path, value.clone());
    }
    match &args.sub {
        Some(sub) => {
            claims.insert("sub".to_owned(), json!(sub));
        }
        None => {
            claims
                .entry("sub")
                .or_insert_with(|| json!(DEFAULT_SUBJECT));
        }
    }
    let added: Vec<&str> = args
        .roles
        .iter()
        .map(String::as_str)
        .chain(args.admin.then_some("admin"))
        .collect();
    if !added.is_empty() {
        let mut roles = match claims.remove("roles") {
            Some(Value::Array(existing)) => existing,
            Some(Value::Null) | None => Vec::new(),
            Some(other) => vec![other],
        };
        for role in added {
            if !roles.iter().any(|r| r == role) {
                roles.push(json!(role));
            }
        }
        claims.insert("roles".to_owned(), Value::Array(roles));
    }
    claims
}

/// Signs the token and writes it, and only it, to `out` (so `$(toolgate token)` works).
pub fn run_token(request: &TokenRequest, out: &mut impl Write) -> anyhow::Result<()> {
    let token = mint_hs256(request.secret.expose(), &request.claims)?;
    writeln!(out, "{token}")?;
    Ok(())
}
