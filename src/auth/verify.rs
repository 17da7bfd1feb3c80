//! The request-time verifier: from a bearer token to its verified claims.

use std::fmt;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::AlgorithmFamily;
use serde_json::{Map, Value};
use tokio::task::JoinHandle;

use super::claims::ClaimRules;
use super::hmac::HmacKeys;
use super::jwks::JwksCache;
use super::jwks_source::JwksSource;
use super::token::TokenParts;
use super::{AuthError, AuthSettings, AuthSetupError};

/// HMAC secrets shorter than this are accepted, with a warning (RFC 7518 §3.2 wants at least
/// the hash size).
const RECOMMENDED_SECRET_BYTES: usize = 32;

/// A token whose signature and registered claims have been verified.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedToken {
    /// The full JWT payload: every claim, nested objects included, for the access policies.
    pub claims: Map<String, Value>,
    /// The `exp` claim in unix seconds, if the token has one (e.g. to bound a stream's life).
    pub expires_at: Option<i64>,
}

/// Verifies bearer tokens against the configured secret and JWKS.
///
/// Cheap to clone (one `Arc`); share one per process. HS* tokens are checked against the
/// secret only, asymmetric tokens against JWKS keys only.
#[derive(Clone)]
pub struct Verifier {
    inner: Arc<Inner>,
}

struct Inner {
    hmac: Option<HmacKeys>,
    jwks: Option<Arc<JwksCache>>,
    rules: ClaimRules,
}

impl Verifier {
    /// Builds a verifier, loading the JWKS (if configured) once.
    ///
    /// Fails when no key material is configured, the secret is empty, the JWKS location is
    /// unusable, or a JWKS *file* cannot be loaded. An unreachable JWKS *URL* only logs a
    /// warning: the verifier starts without asymmetric keys and fetches them later.
    pub async fn new(settings: AuthSettings) -> Result<Self, AuthSetupError> {
        if settings.hmac_secret.is_none() && settings.jwks.is_none() {
            return Err(AuthSetupError::NoKeyMaterial);
        }
        let hmac = match settings.hmac_secret.as_deref() {
            None => None,
            Some("") => return Err(AuthSetupError::EmptySecret),
            Some(secret) => {
                if secret.len() < RECOMMENDED_SECRET_BYTES {
                    tracing::warn!(
                        bytes = secret.len(),
                        recommended = RECOMMENDED_SECRET_BYTES,
                        "TOOLGATE_JWT_SECRET is short; use a long random secret"
                    );
                }
                Some(HmacKeys::new(secret.as_bytes()))
            }
        };
        let jwks = match settings.jwks.as_deref() {
            None => None,
            Some(location) => {
                let source = JwksSource::parse(location)?;
                let cache = JwksCache::load(
                    source,
                    settings.jwks_refresh_interval,
                    settings.jwks_min_refetch_interval,
                )
                .await?;
                Some(cache)
            }
        };
        let rules = ClaimRules {
            issuer: settings.issuer,
            audience: settings.audience,
            leeway_secs: i64::try_from(settings.leeway.as_secs()).unwrap_or(i64::MAX),
        };
        Ok(Self {
            inner: Arc::new(Inner { hmac, jwks, rules }),
        })
    }

    /// Verifies a compact JWT (the value after `Bearer `) and returns its claims.
    ///
    /// The signature is checked before the payload is even decoded. HS* tokens never wait
    /// on I/O; an asymmetric token with an unknown key may wait for one (rate-limited, shared)
    /// JWKS refetch.
    pub async fn verify(&self, token: &str) -> Result<VerifiedToken, AuthError> {
        let parts = TokenParts::split(token)?;
        let mut header_json = Vec::new();
        let header = parts.header(&mut header_json)?;
        if header.alg.family() == AlgorithmFamily::Hmac {
            let keys = self
                .inner
                .hmac
                .as_ref()
                .ok_or(AuthError::DisallowedAlgorithm)?;
            keys.verify(header.alg, parts.signing_input, parts.signature)?;
        } else {
            let jwks = self
                .inner
                .jwks
                .as_ref()
                .ok_or(AuthError::DisallowedAlgorithm)?;
            let kid = header.kid.as_deref();
            jwks.verify(header.alg, kid, parts.signing_input, parts.signature)
                .await?;
        }
        let claims = parts.claims()?;
        let expires_at = self.inner.rules.check(&claims, unix_now())?;
        Ok(VerifiedToken { claims, expires_at })
    }

    /// Starts refetching the JWKS every `jwks_refresh_interval` (sooner while fetches fail);
    /// `None` when no JWKS is configured. Call once, inside a Tokio runtime. The task stops by
    /// itself when the last clone of this verifier is dropped, or when the handle is aborted.
    pub fn spawn_refresh(&self) -> Option<JoinHandle<()>> {
        self.inner.jwks.as_ref().map(JwksCache::spawn_refresh)
    }
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verifier")
            .field("hmac", &self.inner.hmac.is_some())
            .field("jwks", &self.inner.jwks.is_some())
            .field("rules", &self.inner.rules)
            .finish()
    }
}

/// Seconds since the epoch; a clock before 1970 counts as 1970.
fn unix_now() -> i64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since_epoch.as_secs()).unwrap_or(i64::MAX)
}
