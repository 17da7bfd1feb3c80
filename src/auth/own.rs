//! toolgate as a token issuer: the ES256 keys it signs delegated tokens with (made here, kept in
//! the store by the service), and what the verifier accepts of its own tokens.
//!
//! Invariants:
//! - a token is toolgate's own only if its header names one of these keys' `kid` with
//!   `alg: ES256` and the signature checks with that key, and its `iss` is [`OwnIssuer::issuer`];
//! - a token of any other key that claims toolgate's issuer, or carries the delegation claim
//!   (which only toolgate puts into a caller's claims), is refused, never trusted;
//! - private keys never leave this module but as the PKCS#8 the store keeps, and never appear
//!   in `Debug` output.

use std::sync::{Arc, OnceLock, PoisonError, RwLock, Weak};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header};
use p256::ecdsa::SigningKey;
use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey};
use serde_json::{Map, Value, json};

use super::AuthError;

/// One signing key: its private half for signing, its public half for verifying and the JWKS.
pub struct OwnKey {
    pub kid: String,
    /// Unix seconds.
    pub created_at: i64,
    encoding: EncodingKey,
    decoding: DecodingKey,
    /// The public JWK, as `/.well-known/jwks.json` lists it.
    pub jwk: Value,
}

impl std::fmt::Debug for OwnKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnKey")
            .field("kid", &self.kid)
            .field("created_at", &self.created_at)
            .finish_non_exhaustive()
    }
}

/// Why a stored key could not be read.
#[derive(Debug, thiserror::Error)]
#[error("the signing key '{kid}' cannot be read: {reason}")]
pub struct OwnKeyError {
    pub kid: String,
    pub reason: String,
}

impl OwnKey {
    /// A new P-256 key made at `created_at`, and its PKCS#8 DER (standard base64) to store.
    pub fn generate(created_at: i64) -> Result<(OwnKey, String), OwnKeyError> {
        let failed = |reason: String| OwnKeyError {
            kid: String::new(),
            reason,
        };
        let signing = loop {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes).map_err(|error| failed(error.to_string()))?;
            // Out of range with a chance of about 2^-32: draw again.
            if let Ok(key) = SigningKey::from_slice(&bytes) {
                break key;
            }
        };
        let der = signing
            .to_pkcs8_der()
            .map_err(|error| failed(error.to_string()))?;
        let mut kid_bytes = [0u8; 12];
        getrandom::fill(&mut kid_bytes).map_err(|error| failed(error.to_string()))?;
        let kid = format!("tg-{}", URL_SAFE_NO_PAD.encode(kid_bytes));
        let stored = STANDARD.encode(der.as_bytes());
        let key = OwnKey::from_pkcs8(&kid, created_at, &stored)?;
        Ok((key, stored))
    }

    /// The key kept as `private_key` (PKCS#8 DER, standard base64).
    pub fn from_pkcs8(
        kid: &str,
        created_at: i64,
        private_key: &str,
    ) -> Result<OwnKey, OwnKeyError> {
        let failed = |reason: &str| OwnKeyError {
            kid: kid.to_owned(),
            reason: reason.to_owned(),
        };
        let der = STANDARD
            .decode(private_key)
            .map_err(|_| failed("not base64"))?;
        let signing =
            SigningKey::from_pkcs8_der(&der).map_err(|_| failed("not a P-256 PKCS#8 key"))?;
        let point = signing.verifying_key().to_encoded_point(false);
        let (Some(x), Some(y)) = (point.x(), point.y()) else {
            return Err(failed("the public point has no coordinates"));
        };
        let (x, y) = (URL_SAFE_NO_PAD.encode(x), URL_SAFE_NO_PAD.encode(y));
        let decoding =
            DecodingKey::from_ec_components(&x, &y).map_err(|_| failed("unusable public key"))?;
        Ok(OwnKey {
            kid: kid.to_owned(),
            created_at,
            encoding: EncodingKey::from_ec_der(&der),
            decoding,
            jwk: json!({"kty": "EC", "crv": "P-256", "x": x, "y": y, "kid": kid,
                        "alg": "ES256", "use": "sig"}),
        })
    }

    /// `claims` signed with this key (ES256, its `kid` in the header).
    pub fn sign(&self, claims: &Map<String, Value>) -> Result<String, jsonwebtoken::errors::Error> {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding)
    }
}

/// Where toolgate's keys are read from again when a token names a key not known here yet: one
/// another instance on the same store has just made (the service's key ring).
#[async_trait::async_trait]
pub trait OwnKeySource: Send + Sync {
    /// Reads the keys and publishes them ([`OwnIssuer::set_keys`]).
    async fn reload(&self);
}

/// Unknown toolgate kids make the keys be read again at most this often.
const RELOAD_EVERY: Duration = Duration::from_secs(1);

/// The prefix of the kids [`OwnKey::generate`] makes: only such a kid makes the keys be read
/// again.
const KID_PREFIX: &str = "tg-";

/// The keys toolgate's tokens are checked against, and its issuer name. Cheap to clone; the
/// service replaces the keys as it rotates them, the verifier reads them on every own token.
#[derive(Clone)]
pub struct OwnIssuer {
    inner: Arc<Inner>,
}

struct Inner {
    issuer: String,
    keys: RwLock<Keys>,
    source: OnceLock<Weak<dyn OwnKeySource>>,
    /// When the keys were last read for an unknown kid; held while reading (one at a time).
    reloaded: tokio::sync::Mutex<Option<Instant>>,
}

#[derive(Default)]
struct Keys {
    keys: Vec<Arc<OwnKey>>,
    generation: u64,
}

impl std::fmt::Debug for OwnIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnIssuer")
            .field("issuer", &self.inner.issuer)
            .finish_non_exhaustive()
    }
}

impl OwnIssuer {
    /// An issuer named `issuer` (the `iss` of its tokens), without keys yet.
    pub fn new(issuer: String) -> OwnIssuer {
        OwnIssuer {
            inner: Arc::new(Inner {
                issuer,
                keys: RwLock::new(Keys::default()),
                source: OnceLock::new(),
                reloaded: tokio::sync::Mutex::new(None),
            }),
        }
    }

    pub fn issuer(&self) -> &str {
        &self.inner.issuer
    }

    /// Where to read the keys again when a token names an unknown one of toolgate's (set once).
    pub fn set_source(&self, source: Weak<dyn OwnKeySource>) {
        let _ = self.inner.source.set(source);
    }

    /// Replaces the published keys (oldest first). The generation moves only when a key is
    /// gone: a token verified with a key still here stays verified, and a refresh that
    /// changes nothing must not make every caller's token be checked again.
    pub fn set_keys(&self, keys: Vec<Arc<OwnKey>>) {
        let mut held = self
            .inner
            .keys
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let removed = held
            .keys
            .iter()
            .any(|old| !keys.iter().any(|key| key.kid == old.kid));
        held.keys = keys;
        if removed {
            held.generation += 1;
        }
    }

    /// The published keys, oldest first.
    pub fn keys(&self) -> Vec<Arc<OwnKey>> {
        self.read().keys.clone()
    }

    /// Changes whenever a key is removed (a verification remembered under another generation
    /// is checked again).
    pub(super) fn generation(&self) -> u64 {
        self.read().generation
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Keys> {
        self.inner
            .keys
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The key `kid` names, if it is one of these.
    pub fn key(&self, kid: Option<&str>) -> Option<Arc<OwnKey>> {
        let kid = kid?;
        self.read().keys.iter().find(|key| key.kid == kid).cloned()
    }

    /// [`OwnIssuer::key`], reading the keys again first when `kid` looks like one of toolgate's
    /// and is not known here (at most once a second, one reading at a time: a flood of made-up
    /// kids costs one store read a second).
    pub async fn key_or_reload(&self, kid: Option<&str>) -> Option<Arc<OwnKey>> {
        if let Some(key) = self.key(kid) {
            return Some(key);
        }
        let kid = kid.filter(|kid| kid.starts_with(KID_PREFIX))?;
        let source = self.inner.source.get()?.upgrade()?;
        let mut reloaded = self.inner.reloaded.lock().await;
        // Read meanwhile by whoever held the lock.
        if let Some(key) = self.key(Some(kid)) {
            return Some(key);
        }
        if reloaded.is_some_and(|at| at.elapsed() < RELOAD_EVERY) {
            return None;
        }
        source.reload().await;
        *reloaded = Some(Instant::now());
        self.key(Some(kid))
    }

    /// Checks a token of the key `key` (already known to be one of these): `alg` ES256 and the
    /// signature.
    pub(super) fn check_signature(
        key: &OwnKey,
        alg: Algorithm,
        signing_input: &[u8],
        signature: &str,
    ) -> Result<(), AuthError> {
        if alg != Algorithm::ES256 {
            return Err(AuthError::DisallowedAlgorithm);
        }
        match jsonwebtoken::crypto::verify(signature, signing_input, &key.decoding, alg) {
            Ok(true) => Ok(()),
            Ok(false) => Err(AuthError::BadSignature),
            Err(_) => Err(AuthError::Malformed),
        }
    }
}

/// The claims one of toolgate's own tokens is evaluated as: a run token's
/// ([`run_claims`]) or a delegated token's ([`delegated_claims`]), with the gateway's computed
/// claim (`toolgate`: `{"depth"}`, the `act` levels toolgate minted) set last.
pub(super) fn own_claims(payload: &Map<String, Value>) -> Result<Map<String, Value>, AuthError> {
    use crate::domain::run::{GATEWAY_CLAIM, RUN_CLAIM, gateway_claim};
    let mut claims = if payload.contains_key(RUN_CLAIM) {
        run_claims(payload)?
    } else {
        delegated_claims(payload)?
    };
    let depth = match crate::domain::delegation::Chain::of(&claims) {
        Some(Ok(chain)) => chain.scopes.len(),
        Some(Err(())) => return Err(AuthError::Malformed),
        None => 0,
    };
    if let Some(Ok(run)) = crate::domain::run::RunClaim::of(&claims)
        && run.depth != depth
    {
        return Err(AuthError::Malformed);
    }
    claims.insert(GATEWAY_CLAIM.to_owned(), gateway_claim(depth));
    Ok(claims)
}

/// The claims a run token is evaluated as (docs/runs.md): the claims it was made from, as
/// toolgate signed them in `toolgate_run.claims`, and the run (`toolgate_run`: `{"id", "root",
/// "depth"}`). `Malformed` when the payload is not what toolgate signs.
fn run_claims(payload: &Map<String, Value>) -> Result<Map<String, Value>, AuthError> {
    use crate::domain::run::{GATEWAY_CLAIM, RUN_CLAIM, RunClaim};
    let run = payload
        .get(RUN_CLAIM)
        .and_then(Value::as_object)
        .ok_or(AuthError::Malformed)?;
    let mut claims = run
        .get("claims")
        .and_then(Value::as_object)
        .cloned()
        .ok_or(AuthError::Malformed)?;
    claims.remove(GATEWAY_CLAIM);
    let mut named = run.clone();
    named.remove("claims");
    claims.insert(RUN_CLAIM.to_owned(), Value::Object(named));
    match RunClaim::of(&claims) {
        Some(Ok(_)) => Ok(claims),
        _ => Err(AuthError::Malformed),
    }
}

/// The claims a delegated token is evaluated as (`C_n` of `crate::domain::delegation`): the
/// claims it was made from with the token's own `jti`/`iat`/`exp`/`nbf`, its `act`, and the
/// chain (every scope, every level's per-token claims, this token's last). `Malformed` when
/// the payload is not what toolgate signs.
pub fn delegated_claims(payload: &Map<String, Value>) -> Result<Map<String, Value>, AuthError> {
    use crate::domain::claims::{ACT_CLAIM, DELEGATION_CLAIM};
    use crate::domain::delegation::{PER_TOKEN, per_token};
    let chain = payload
        .get(DELEGATION_CLAIM)
        .and_then(Value::as_object)
        .ok_or(AuthError::Malformed)?;
    let mut claims = chain
        .get("claims")
        .and_then(Value::as_object)
        .cloned()
        .ok_or(AuthError::Malformed)?;
    let scopes = chain
        .get("scopes")
        .and_then(Value::as_array)
        .filter(|scopes| !scopes.is_empty())
        .ok_or(AuthError::Malformed)?;
    // One entry per level before this token.
    let mut tokens = chain
        .get("tokens")
        .and_then(Value::as_array)
        .filter(|tokens| tokens.len() == scopes.len())
        .cloned()
        .ok_or(AuthError::Malformed)?;
    let act = payload
        .get(ACT_CLAIM)
        .filter(|act| act.is_object())
        .cloned()
        .ok_or(AuthError::Malformed)?;
    let own = per_token(payload);
    for name in PER_TOKEN {
        claims.remove(name);
    }
    if let Value::Object(own) = &own {
        claims.extend(
            own.iter()
                .map(|(name, value)| (name.clone(), value.clone())),
        );
    }
    tokens.push(own);
    claims.insert(ACT_CLAIM.to_owned(), act);
    let mut chain_claim = json!({ "scopes": scopes, "tokens": tokens });
    if let Some(carried) = chain.get(crate::domain::delegation::CARRIED) {
        chain_claim[crate::domain::delegation::CARRIED] = carried.clone();
    }
    claims.insert(DELEGATION_CLAIM.to_owned(), chain_claim);
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_key_signs_what_it_verifies_and_round_trips_through_storage() {
        let (key, stored) = OwnKey::generate(7).expect("a key");
        assert!(key.kid.starts_with("tg-"));
        assert!(!format!("{key:?}").contains(&stored));
        let again = OwnKey::from_pkcs8(&key.kid, 7, &stored).expect("read back");
        assert_eq!(again.jwk, key.jwk);
        let claims = json!({"sub": "a"}).as_object().cloned().expect("object");
        let token = key.sign(&claims).expect("signed");
        let (input, signature) = token.rsplit_once('.').expect("three parts");
        assert!(
            OwnIssuer::check_signature(&again, Algorithm::ES256, input.as_bytes(), signature)
                .is_ok()
        );
        let (other, _) = OwnKey::generate(8).expect("another key");
        assert_eq!(
            OwnIssuer::check_signature(&other, Algorithm::ES256, input.as_bytes(), signature),
            Err(AuthError::BadSignature)
        );
        assert_eq!(
            OwnIssuer::check_signature(&again, Algorithm::HS256, input.as_bytes(), signature),
            Err(AuthError::DisallowedAlgorithm)
        );
    }

    #[test]
    fn unreadable_stored_keys_are_errors_naming_the_kid() {
        let error = OwnKey::from_pkcs8("k1", 0, "not base64!").expect_err("refused");
        assert_eq!(error.kid, "k1");
        assert!(OwnKey::from_pkcs8("k1", 0, &STANDARD.encode(b"junk")).is_err());
    }

    #[test]
    fn delegated_claims_are_the_origin_with_act_and_the_chain() {
        let payload = json!({
            "iss": "https://gw", "sub": "u", "exp": 9, "jti": "j1", "act": {"sub": "u"},
            "toolgate_delegation": {"claims": {"sub": "u", "roles": ["r"], "jti": "j0", "exp": 99},
                                     "scopes": [["tool:a"]], "tokens": [{"jti": "j0", "exp": 99}]}
        });
        let claims = delegated_claims(payload.as_object().expect("object")).expect("read");
        assert_eq!(
            Value::Object(claims),
            json!({"sub": "u", "roles": ["r"], "jti": "j1", "exp": 9, "act": {"sub": "u"},
                   "toolgate_delegation": {"scopes": [["tool:a"]],
                                           "tokens": [{"jti": "j0", "exp": 99},
                                                      {"jti": "j1", "exp": 9}]}})
        );
        let no_act = json!({"toolgate_delegation": {"claims": {}, "scopes": [["tool:a"]],
                                                    "tokens": [{}]}});
        assert_eq!(
            delegated_claims(no_act.as_object().expect("object")),
            Err(AuthError::Malformed)
        );
    }
}
