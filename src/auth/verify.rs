//! The request-time verifier: from a bearer token to its verified claims.

use std::fmt;
use std::sync::Arc;

use jsonwebtoken::AlgorithmFamily;
use tokio::task::JoinHandle;

use super::claims::ClaimRules;
use super::hmac::HmacKeys;
use super::jwks::JwksCache;
use super::jwks_source::JwksSource;
use super::own::OwnIssuer;
use super::token::TokenParts;
use super::verified::{self, TokenText, VerifiedToken, VerifiedTokens};
use super::{AuthError, AuthSettings, AuthSetupError};
use crate::clock::{Clock, SystemClock};

/// HMAC secrets shorter than this are accepted, with a warning (RFC 7518 §3.2 wants at least
/// the hash size).
const RECOMMENDED_SECRET_BYTES: usize = 32;

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
    verified: VerifiedTokens,
    /// toolgate's own keys (delegated tokens), when it issues any.
    own: Option<OwnIssuer>,
    /// What `exp` and `nbf` are checked against.
    clock: Arc<dyn Clock>,
}

impl Verifier {
    /// Builds a verifier, loading the JWKS (if configured) once.
    ///
    /// Fails when no key material is configured, the secret is empty, the JWKS location is
    /// unusable, or a JWKS *file* cannot be loaded. An unreachable JWKS *URL* only logs a
    /// warning: the verifier starts without asymmetric keys and fetches them later.
    pub async fn new(settings: AuthSettings) -> Result<Self, AuthSetupError> {
        Verifier::with_own(settings, None).await
    }

    /// [`Verifier::new`], also accepting toolgate's own tokens signed with `own`'s keys.
    pub async fn with_own(
        settings: AuthSettings,
        own: Option<OwnIssuer>,
    ) -> Result<Self, AuthSetupError> {
        Verifier::with_own_and_clock(settings, own, Arc::new(SystemClock)).await
    }

    /// [`Verifier::with_own`], checking `exp` and `nbf` against `clock`.
    pub async fn with_own_and_clock(
        settings: AuthSettings,
        own: Option<OwnIssuer>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, AuthSetupError> {
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
                    Arc::clone(&clock),
                )
                .await?;
                Some(cache)
            }
        };
        let rules = ClaimRules {
            issuer: settings.issuer,
            audience: settings.audience,
            leeway_secs: i64::try_from(settings.leeway.as_secs()).unwrap_or(i64::MAX),
            require_exp: settings.require_exp,
        };
        Ok(Self {
            inner: Arc::new(Inner {
                hmac,
                jwks,
                rules,
                verified: VerifiedTokens::new(verified::CAPACITY),
                own,
                clock,
            }),
        })
    }

    /// Verifies a compact JWT (the value after `Bearer `) and returns its claims.
    ///
    /// The signature is checked before the payload is even decoded. HS* tokens never wait
    /// on I/O; an asymmetric token with an unknown key may wait for one (rate-limited, shared)
    /// JWKS refetch. A token verified before and still valid is answered from memory (see
    /// [`verified`](super::verified) for why that is as good as checking it again).
    pub async fn verify(&self, token: &str) -> Result<Arc<VerifiedToken>, AuthError> {
        self.verify_at(token, self.inner.clock.unix_now()).await
    }

    /// [`Verifier::verify`] at unix time `now`.
    async fn verify_at(&self, token: &str, now: i64) -> Result<Arc<VerifiedToken>, AuthError> {
        // Read before verifying: keys replaced meanwhile make the entry stale, never the
        // reverse.
        let key_generation = self.key_generation();
        if let Some(known) = self.inner.verified.get(token, now, key_generation) {
            return Ok(known);
        }
        let parts = TokenParts::split(token)?;
        let mut header_json = Vec::new();
        let header = parts.header(&mut header_json)?;
        let own = self.inner.own.as_ref();
        let own_key = match own {
            Some(own) => own.key_or_reload(header.kid.as_deref()).await,
            None => None,
        };
        let (claims, validity) = match own_key {
            Some(key) => {
                OwnIssuer::check_signature(&key, header.alg, parts.signing_input, parts.signature)?;
                self.own_claims(&parts, now)?
            }
            None => {
                self.check_signature(&header, &parts).await?;
                let claims = parts.claims()?;
                let validity = self.inner.rules.check(&claims, now)?;
                // Only toolgate's keys make toolgate's tokens: a token of any other key that
                // claims its issuer or carries its delegation claim is forged.
                let own_issuer = own.map(OwnIssuer::issuer);
                if claims.contains_key(crate::domain::claims::DELEGATION_CLAIM)
                    || claims.contains_key(crate::domain::run::GATEWAY_CLAIM)
                    || claims.contains_key(crate::domain::run::RUN_CLAIM)
                    || (own_issuer.is_some()
                        && claims.get("iss").and_then(|iss| iss.as_str()) == own_issuer)
                {
                    return Err(AuthError::Forged);
                }
                let mut claims = claims;
                // Toolgate minted no `act` level of a token it did not sign.
                claims.insert(
                    crate::domain::run::GATEWAY_CLAIM.to_owned(),
                    crate::domain::run::gateway_claim(0),
                );
                (claims, validity)
            }
        };
        let verified = Arc::new(VerifiedToken {
            claims: Arc::new(claims),
            expires_at: validity.expires_at,
            text: TokenText::from(token),
        });
        self.inner
            .verified
            .insert(Arc::clone(&verified), validity, key_generation);
        Ok(verified)
    }

    /// Which key set verifications use now: the JWKS's and toolgate's own keys' generations
    /// (the secret never changes).
    fn key_generation(&self) -> u64 {
        let jwks = self.inner.jwks.as_ref().map_or(0, |jwks| jwks.generation());
        let own = self.inner.own.as_ref().map_or(0, OwnIssuer::generation);
        jwks ^ own.rotate_left(32)
    }

    /// The signature of a token of the configured key material: HS* against the secret only,
    /// anything else against the JWKS only.
    async fn check_signature(
        &self,
        header: &super::token::JoseHeader<'_>,
        parts: &TokenParts<'_>,
    ) -> Result<(), AuthError> {
        if header.alg.family() == AlgorithmFamily::Hmac {
            let keys = self
                .inner
                .hmac
                .as_ref()
                .ok_or(AuthError::DisallowedAlgorithm)?;
            keys.verify(header.alg, parts.signing_input, parts.signature)
        } else {
            let jwks = self
                .inner
                .jwks
                .as_ref()
                .ok_or(AuthError::DisallowedAlgorithm)?;
            let kid = header.kid.as_deref();
            jwks.verify(header.alg, kid, parts.signing_input, parts.signature)
                .await
        }
    }

    /// The claims of one of toolgate's own tokens (its signature checked): it must expire and
    /// name toolgate as its issuer; any audience (it is the one of the claims it was made
    /// from, checked when they were).
    fn own_claims(
        &self,
        parts: &TokenParts<'_>,
        now: i64,
    ) -> Result<
        (
            serde_json::Map<String, serde_json::Value>,
            super::claims::Validity,
        ),
        AuthError,
    > {
        let own = self.inner.own.as_ref().ok_or(AuthError::UnknownKey)?;
        let rules = ClaimRules {
            issuer: Some(own.issuer().to_owned()),
            audience: None,
            leeway_secs: self.inner.rules.leeway_secs,
            require_exp: true,
        };
        let payload = parts.claims()?;
        let validity = rules.check(&payload, now)?;
        Ok((super::own::own_claims(&payload)?, validity))
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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::auth::mint_hs256;

    const SECRET: &str = "a-test-secret-of-at-least-32-bytes!";
    const NOW: i64 = 1_800_000_000;
    const LEEWAY: i64 = 30;

    async fn verifier() -> Verifier {
        Verifier::new(AuthSettings {
            hmac_secret: Some(SECRET.to_owned()),
            leeway: std::time::Duration::from_secs(LEEWAY as u64),
            ..AuthSettings::default()
        })
        .await
        .expect("verifier")
    }

    fn token(claims: Value) -> String {
        mint_hs256(SECRET, claims.as_object().expect("object")).expect("mint")
    }

    /// `token` with the character at `at` (from the end when negative) changed.
    fn tampered(token: &str, at: isize) -> String {
        let mut bytes = token.as_bytes().to_vec();
        let i = if at < 0 {
            bytes.len() - at.unsigned_abs()
        } else {
            at as usize
        };
        bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
        String::from_utf8(bytes).expect("ascii")
    }

    #[tokio::test]
    async fn a_token_presented_again_is_answered_from_memory() {
        let verifier = verifier().await;
        let token = token(json!({"sub": "a", "roles": ["agent"], "exp": NOW + 600}));
        let first = verifier.verify_at(&token, NOW).await.expect("valid");
        let again = verifier.verify_at(&token, NOW + 1).await.expect("valid");
        assert!(Arc::ptr_eq(&first, &again), "the second call is a hit");
        assert_eq!(first.expires_at, Some(NOW + 600));
        assert_eq!(verifier.inner.verified.len(), 1);
    }

    #[tokio::test]
    async fn a_remembered_token_is_held_to_its_validity_window_at_each_request() {
        let verifier = verifier().await;
        let token = token(json!({"sub": "a", "nbf": NOW + 100, "exp": NOW + 200}));
        verifier
            .verify_at(&token, NOW + 150)
            .await
            .expect("valid then");
        let cases = [
            (NOW + 100 - LEEWAY - 1, Err(AuthError::NotYetValid)),
            (NOW + 100 - LEEWAY, Ok(())),
            (NOW + 200 + LEEWAY - 1, Ok(())),
            (NOW + 200 + LEEWAY, Err(AuthError::Expired)),
        ];
        for (now, expected) in cases {
            assert_eq!(
                verifier.verify_at(&token, now).await.map(drop),
                expected,
                "at NOW{:+}",
                now - NOW
            );
        }
        assert_eq!(
            verifier.inner.verified.len(),
            0,
            "an expired token is forgotten"
        );
    }

    #[tokio::test]
    async fn only_the_exact_token_hits_and_failures_are_not_remembered() {
        let verifier = verifier().await;
        let token = token(json!({"sub": "a", "roles": ["agent"], "exp": NOW + 600}));
        verifier.verify_at(&token, NOW).await.expect("valid");
        let signature_changed = tampered(&token, -2);
        let header_changed = tampered(&token, 5);
        let payload_start = token.find('.').expect("three parts") as isize + 3;
        let payload_changed = tampered(&token, payload_start);
        for forged in [signature_changed, header_changed, payload_changed] {
            assert!(
                verifier.verify_at(&forged, NOW).await.is_err(),
                "{forged} must not verify"
            );
        }
        let expired = self::token(json!({"sub": "b", "exp": NOW - 3600}));
        assert_eq!(
            verifier.verify_at(&expired, NOW).await,
            Err(AuthError::Expired)
        );
        assert_eq!(verifier.inner.verified.len(), 1, "only the valid token");
    }
}
