//! Who is asking: made once per request by a transport (from a verified bearer token and the
//! admin rule), then handed to every service call that decides something for that caller.
//!
//! Every access rule reads the caller from here, and only from here: whether the caller may
//! use an admin-only read option, whose claims it may have evaluated ([`super::read`]), which
//! rate-limit bucket a request spends ([`super::limits`]) and which MCP sessions it owns
//! ([`Caller::identity`]). A transport never looks at claims to decide access itself.

use std::sync::Arc;

use super::runs::RunView;
use crate::auth::VerifiedToken;
use crate::domain::claims::Claims;

/// An authenticated caller. Cheap to clone (one `Arc`).
///
/// Invariant: `token` passed every check of the verifier (signature, `exp`/`nbf`, issuer,
/// audience), and `is_admin` is the admin rule applied to exactly its claims.
#[derive(Debug, Clone)]
pub struct Caller {
    token: Arc<VerifiedToken>,
    is_admin: bool,
    /// The run the token acts in (docs/runs.md), live when the caller was made.
    run: Option<Arc<RunView>>,
}

impl Caller {
    /// The caller holding `token`; `is_admin` is what the admin rule says of its claims.
    pub fn new(token: Arc<VerifiedToken>, is_admin: bool) -> Caller {
        Caller {
            token,
            is_admin,
            run: None,
        }
    }

    /// The same caller acting in `run` (its token's run, read live from the run store).
    pub fn in_run(mut self, run: Arc<RunView>) -> Caller {
        self.run = Some(run);
        self
    }

    /// The run the caller acts in, as it was when the request began.
    pub fn run(&self) -> Option<&Arc<RunView>> {
        self.run.as_ref()
    }

    /// Every claim of the token.
    pub fn claims(&self) -> &Claims {
        &self.token.claims
    }

    /// Every claim of the token, shared (what a stream keeps for as long as it is open).
    pub fn shared_claims(&self) -> Arc<Claims> {
        Arc::clone(&self.token.claims)
    }

    /// The `sub` claim (`""` when absent or not a string): the rate-limit and stream-cap key.
    pub fn sub(&self) -> &str {
        self.claims()
            .get("sub")
            .and_then(|sub| sub.as_str())
            .unwrap_or_default()
    }

    /// Whether the token passes the admin rule.
    pub fn is_admin(&self) -> bool {
        self.is_admin
    }

    /// The token as presented, for the one place it may go: a token endpoint that exchanges
    /// it for a token of an upstream (`config.auth` `token_exchange`).
    pub fn token_text(&self) -> &str {
        self.token.text.expose()
    }

    /// The token's `exp` in unix seconds: what ends the caller's streams.
    pub fn expires_at(&self) -> Option<i64> {
        self.token.expires_at
    }

    /// Who an MCP session answers to: a hash of every claim but those a new token of the same
    /// identity changes (`iat`, `exp`, `nbf`, `jti`, `auth_time`). Not `sub` alone: tokens
    /// without a string `sub` would all be one identity, and could use and end each other's
    /// sessions. A refreshed token with the same claims keeps its sessions.
    pub fn identity(&self) -> String {
        const PER_TOKEN: [&str; 5] = ["iat", "exp", "nbf", "jti", "auth_time"];
        let mut hasher = blake3::Hasher::new();
        for (name, value) in self.claims() {
            if PER_TOKEN.contains(&name.as_str()) {
                continue;
            }
            // Length-prefixed, so that no two claim sets hash the same bytes.
            let value = value.to_string();
            for part in [name.as_str(), value.as_str()] {
                hasher.update(&(part.len() as u64).to_le_bytes());
                hasher.update(part.as_bytes());
            }
        }
        hasher.finalize().to_hex().to_string()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn caller(claims: serde_json::Value) -> Caller {
        let claims = claims.as_object().cloned().expect("an object");
        Caller::new(
            Arc::new(VerifiedToken {
                claims: claims.into(),
                expires_at: None,
                ..Default::default()
            }),
            false,
        )
    }

    #[test]
    fn identity_ignores_per_token_claims_and_nothing_else() {
        let a = caller(json!({"sub": "a", "team": "x", "exp": 1, "iat": 1, "jti": "1"}));
        let refreshed = caller(json!({"sub": "a", "team": "x", "exp": 9, "iat": 9, "jti": "9"}));
        let other_team = caller(json!({"sub": "a", "team": "y", "exp": 1}));
        assert_eq!(a.identity(), refreshed.identity());
        assert_ne!(a.identity(), other_team.identity());
        // Without a string `sub`, identities still differ by their other claims.
        assert_ne!(
            caller(json!({"team": "x"})).identity(),
            caller(json!({"team": "y"})).identity()
        );
        // Length prefixes: moving bytes between a name and its value is another identity.
        assert_ne!(
            caller(json!({"ab": "c"})).identity(),
            caller(json!({"a": "bc"})).identity()
        );
    }

    #[test]
    fn sub_is_empty_unless_a_string() {
        assert_eq!(caller(json!({"sub": 7})).sub(), "");
        assert_eq!(caller(json!({"sub": "s"})).sub(), "s");
    }
}
