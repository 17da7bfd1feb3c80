//! What the operator configures for token verification.

use std::fmt;
use std::time::Duration;

/// Key material and claim rules for verifying bearer tokens.
///
/// Filled from `TOOLGATE_JWT_SECRET`, `TOOLGATE_JWKS_URL`, `TOOLGATE_JWT_ISSUER` and
/// `TOOLGATE_JWT_AUDIENCE`; at least one of `hmac_secret` and `jwks` must be set.
/// `Debug` never prints the secret.
#[derive(Clone)]
pub struct AuthSettings {
    /// Shared secret for HS256/384/512 tokens; its UTF-8 bytes are the HMAC key.
    pub hmac_secret: Option<String>,
    /// Where the JWKS for asymmetric tokens lives: an `http(s)://` URL, a `file://` URL or a
    /// plain file path.
    pub jwks: Option<String>,
    /// Required `iss` claim; not checked when `None`.
    pub issuer: Option<String>,
    /// Required member of the `aud` claim (a string or an array); not checked when `None`.
    pub audience: Option<String>,
    /// Clock skew tolerated when checking `exp` and `nbf`.
    pub leeway: Duration,
    /// Refuse tokens without `exp` (docs/api.md, Authentication; on unless
    /// `TOOLGATE_JWT_REQUIRE_EXP=false`).
    pub require_exp: bool,
    /// How often the JWKS is refetched in the background.
    pub jwks_refresh_interval: Duration,
    /// Minimum time between two refetches triggered by tokens with an unknown `kid`, so that
    /// a flood of forged `kid`s cannot turn the gateway into a load generator for the IdP.
    pub jwks_min_refetch_interval: Duration,
}

impl fmt::Debug for AuthSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthSettings")
            .field(
                "hmac_secret",
                &self.hmac_secret.as_ref().map(|_| "[redacted]"),
            )
            .field("jwks", &self.jwks)
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("leeway", &self.leeway)
            .field("require_exp", &self.require_exp)
            .field("jwks_refresh_interval", &self.jwks_refresh_interval)
            .field("jwks_min_refetch_interval", &self.jwks_min_refetch_interval)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_secret() {
        let settings = AuthSettings {
            hmac_secret: Some("s3cr3t-value".into()),
            ..AuthSettings::default()
        };
        let printed = format!("{settings:?}");
        assert!(!printed.contains("s3cr3t-value"), "{printed}");
        assert!(printed.contains("[redacted]"), "{printed}");
    }

    #[test]
    fn defaults_match_the_spec() {
        let settings = AuthSettings::default();
        assert_eq!(settings.leeway, Duration::from_secs(30));
        assert_eq!(settings.jwks_refresh_interval, Duration::from_secs(300));
        assert_eq!(settings.jwks_min_refetch_interval, Duration::from_secs(10));
    }
}
