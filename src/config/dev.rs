//! Development mode (`serve --dev`): a throw-away secret, sample tokens, and a banner that
//! makes it impossible to mistake such a server for a production one.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value, json};

use crate::auth::{MintError, mint_hs256};

use super::{ConfigError, Secret, Settings};
use crate::clock::unix_now;

/// Random bytes in a generated secret: the HS256 key size (RFC 7518 §3.2).
const SECRET_BYTES: usize = 32;
/// Sample tokens live for a working day.
const SAMPLE_TOKEN_TTL_SECS: u64 = 24 * 60 * 60;

/// A fresh 32-byte secret from the operating system, base64url-encoded (43 characters) so it
/// can be pasted into `TOOLGATE_JWT_SECRET` and `toolgate token --secret`.
pub(super) fn generate_secret() -> Result<Secret, ConfigError> {
    let mut bytes = [0u8; SECRET_BYTES];
    getrandom::fill(&mut bytes).map_err(ConfigError::Random)?;
    Ok(Secret::new(URL_SAFE_NO_PAD.encode(bytes)))
}

/// The claims of a development token: `sub`, `roles` (when any), `iat` = `now`, and
/// `exp` = `now + ttl_secs` (unix seconds).
pub fn dev_claims(sub: &str, roles: &[String], ttl_secs: u64, now: i64) -> Map<String, Value> {
    let mut claims = Map::new();
    claims.insert("sub".to_owned(), json!(sub));
    if !roles.is_empty() {
        claims.insert("roles".to_owned(), json!(roles));
    }
    claims.insert("iat".to_owned(), json!(now));
    let ttl = i64::try_from(ttl_secs).unwrap_or(i64::MAX);
    claims.insert("exp".to_owned(), json!(now.saturating_add(ttl)));
    claims
}

/// Two ready-to-use tokens for a development server.
#[derive(Clone)]
pub struct SampleTokens {
    /// `sub: dev-admin`, `roles: [admin]`: passes the default admin rule.
    pub admin: String,
    /// `sub: dev-agent`, `roles: [agent]`: an ordinary agent.
    pub agent: String,
}

impl std::fmt::Debug for SampleTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SampleTokens([redacted])")
    }
}

/// Mints the sample tokens with the configured secret (valid for 24 hours, carrying the
/// configured `iss`/`aud` so the server accepts them). Fails only without a secret, which
/// cannot happen in dev mode.
pub fn sample_tokens(settings: &Settings) -> Result<SampleTokens, MintError> {
    let secret = settings.jwt_secret.as_ref().map_or("", Secret::expose);
    let now = unix_now();
    let mint = |sub: &str, role: &str| {
        let mut claims = dev_claims(sub, &[role.to_owned()], SAMPLE_TOKEN_TTL_SECS, now);
        if let Some(issuer) = &settings.jwt_issuer {
            claims.insert("iss".to_owned(), json!(issuer));
        }
        if let Some(audience) = &settings.jwt_audience {
            claims.insert("aud".to_owned(), json!(audience));
        }
        mint_hs256(secret, &claims)
    };
    Ok(SampleTokens {
        admin: mint("dev-admin", "admin")?,
        agent: mint("dev-agent", "agent")?,
    })
}

/// The loud multi-line notice `serve --dev` prints at start: that this is for development
/// only, the secret (only when it was generated — a configured one is not echoed), and the
/// sample tokens with a command to try them.
pub fn dev_banner(settings: &Settings, admin_token: &str, agent_token: &str) -> String {
    let rule = "=".repeat(78);
    let base = format!("http://{}", settings.listen);
    let mut out = String::new();
    let mut line = |text: &str| {
        out.push_str(text);
        out.push('\n');
    };
    line(&rule);
    line("  !!  DEVELOPMENT MODE (--dev): NOT FOR PRODUCTION  !!");
    line(&rule);
    match (&settings.jwt_secret, settings.jwt_secret_generated) {
        (Some(secret), true) => {
            line("  A throw-away HMAC secret was generated for this run. Anyone who has it can");
            line("  mint admin tokens; it changes at every start.");
            line("");
            line(&format!("  TOOLGATE_JWT_SECRET={}", secret.expose()));
        }
        _ => line("  Tokens are signed with the configured TOOLGATE_JWT_SECRET (not shown)."),
    }
    line("");
    line("  Admin token (sub dev-admin, roles [admin], valid 24 h):");
    line(&format!("    {admin_token}"));
    line("");
    line("  Agent token (sub dev-agent, roles [agent], valid 24 h):");
    line(&format!("    {agent_token}"));
    line("");
    line("  Try:");
    line(&format!(
        "    curl -H 'Authorization: Bearer {agent_token}' {base}/agents/tools"
    ));
    line("  Mint more with the same secret in TOOLGATE_JWT_SECRET:");
    line("    toolgate token --sub NAME --role ROLE [--admin]");
    line(&rule);
    out
}
