//! A parsed JWKS: the public keys usable for verification, each with the algorithms it may
//! check.
//!
//! A key is kept only for algorithms matching its key type (and its `alg` member, when
//! present), so a token can never make an EC key check an RSA signature or the like.
//! Symmetric (`oct`) keys are ignored: HS* tokens are checked against the configured secret
//! only.

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{
    AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, KeyOperations, PublicKeyUse,
};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;
use serde_json::Value;

use super::{AuthError, JwksError};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// RSA moduli below this size are refused (NIST SP 800-131A).
const MIN_RSA_BITS: usize = 2048;

const RSA_ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
];

/// The verification keys of one JWKS document.
#[derive(Debug, Default)]
pub(crate) struct KeySet {
    keys: Vec<KeyEntry>,
}

#[derive(Debug)]
struct KeyEntry {
    kid: Option<String>,
    algorithms: &'static [Algorithm],
    key: DecodingKey,
}

#[derive(Deserialize)]
struct JwksDocument {
    keys: Vec<Value>,
}

impl KeySet {
    /// Parses a JWKS document. Keys that cannot be used for signature verification are
    /// skipped (and logged at debug level) rather than failing the whole set, so one exotic
    /// key at the IdP does not lock everyone out.
    pub(super) fn parse(json: &[u8]) -> Result<Self, JwksError> {
        let document: JwksDocument = serde_json::from_slice(json).map_err(JwksError::NotJwks)?;
        let keys = document
            .keys
            .into_iter()
            .filter_map(|value| {
                let kid = value.get("kid").and_then(Value::as_str).map(str::to_owned);
                usable_key(value)
                    .inspect_err(|reason| tracing::debug!(?kid, reason, "skipping JWK"))
                    .ok()
            })
            .collect();
        Ok(Self { keys })
    }

    /// How many usable keys the set holds.
    pub(super) fn len(&self) -> usize {
        self.keys.len()
    }

    /// Checks an asymmetric signature with the key named by `kid`, or, without a `kid`, with
    /// every key allowed for `alg` until one matches.
    ///
    /// [`AuthError::UnknownKey`] means "no candidate key here" (worth a refetch);
    /// [`AuthError::DisallowedAlgorithm`] means the `kid` exists but is not for `alg`.
    pub(super) fn verify(
        &self,
        alg: Algorithm,
        kid: Option<&str>,
        signing_input: &[u8],
        signature_b64: &str,
    ) -> Result<(), AuthError> {
        let mut kid_found = false;
        let mut tried = false;
        let named = self
            .keys
            .iter()
            .filter(|entry| kid.is_none() || entry.kid.as_deref() == kid);
        for entry in named {
            kid_found = true;
            if !entry.algorithms.contains(&alg) {
                continue;
            }
            tried = true;
            match jsonwebtoken::crypto::verify(signature_b64, signing_input, &entry.key, alg) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(error) if matches!(error.kind(), ErrorKind::Base64(_)) => {
                    return Err(AuthError::Malformed);
                }
                Err(error) => {
                    tracing::debug!(kid = ?entry.kid, %error, "JWK unusable for verification");
                }
            }
        }
        Err(if tried {
            AuthError::BadSignature
        } else if kid.is_some() && kid_found {
            AuthError::DisallowedAlgorithm
        } else {
            AuthError::UnknownKey
        })
    }
}

/// Turns one JWK into a verification key, or says why it is not one.
fn usable_key(value: Value) -> Result<KeyEntry, &'static str> {
    let jwk: Jwk = serde_json::from_value(value).map_err(|_| "not a valid JWK")?;
    let common = &jwk.common;
    if common
        .public_key_use
        .as_ref()
        .is_some_and(|usage| *usage != PublicKeyUse::Signature)
    {
        return Err("\"use\" is not \"sig\"");
    }
    if common
        .key_operations
        .as_ref()
        .is_some_and(|ops| !ops.contains(&KeyOperations::Verify))
    {
        return Err("\"key_ops\" does not include \"verify\"");
    }
    let for_key_type: &'static [Algorithm] = match &jwk.algorithm {
        AlgorithmParameters::RSA(rsa) => {
            if modulus_bits(&rsa.n).ok_or("RSA modulus is not base64url")? < MIN_RSA_BITS {
                return Err("RSA modulus shorter than 2048 bits");
            }
            RSA_ALGORITHMS
        }
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => &[Algorithm::ES256],
            EllipticCurve::P384 => &[Algorithm::ES384],
            _ => return Err("unsupported elliptic curve"),
        },
        AlgorithmParameters::OctetKeyPair(okp) => match okp.curve {
            EllipticCurve::Ed25519 => &[Algorithm::EdDSA],
            _ => return Err("unsupported OKP curve"),
        },
        AlgorithmParameters::OctetKey(_) => {
            return Err("symmetric key; HS* tokens use the configured secret only");
        }
        _ => return Err("unsupported key type"),
    };
    let algorithms = match common.key_algorithm {
        None => for_key_type,
        Some(declared) => {
            let position = for_key_type
                .iter()
                .position(|alg| KeyAlgorithm::from(*alg) == declared);
            let position = position.ok_or("\"alg\" does not fit the key type")?;
            &for_key_type[position..=position]
        }
    };
    let key = DecodingKey::from_jwk(&jwk).map_err(|_| "invalid key parameters")?;
    Ok(KeyEntry {
        kid: common.key_id.clone(),
        algorithms,
        key,
    })
}

/// The bit length of a base64url big-endian RSA modulus.
fn modulus_bits(n_b64: &str) -> Option<usize> {
    let bytes = URL_SAFE_NO_PAD.decode(n_b64).ok()?;
    let first = bytes.iter().position(|byte| *byte != 0)?;
    Some((bytes.len() - first) * 8 - bytes[first].leading_zeros() as usize)
}

#[cfg(test)]
mod tests {
    use ed25519_dalek::SigningKey;
    use ed25519_dalek::pkcs8::EncodePrivateKey;
    use jsonwebtoken::{EncodingKey, Header};
    use rsa::rand_core::OsRng;
    use serde_json::json;

    use super::*;

    struct EdKey {
        signing: SigningKey,
    }

    impl EdKey {
        fn generate() -> Self {
            Self {
                signing: SigningKey::generate(&mut OsRng),
            }
        }

        fn jwk(&self, extra: Value) -> Value {
            let mut jwk = json!({
                "kty": "OKP",
                "crv": "Ed25519",
                "x": URL_SAFE_NO_PAD.encode(self.signing.verifying_key().as_bytes()),
            });
            jwk.as_object_mut()
                .expect("object")
                .extend(extra.as_object().expect("object").clone());
            jwk
        }

        fn sign(&self, kid: Option<&str>) -> String {
            let der = self
                .signing
                .to_pkcs8_der()
                .expect("Ed25519 key encodes as PKCS#8");
            let mut header = Header::new(Algorithm::EdDSA);
            header.kid = kid.map(str::to_owned);
            let key = EncodingKey::from_ed_der(der.as_bytes());
            jsonwebtoken::encode(&header, &json!({"sub": "a"}), &key).expect("signing works")
        }
    }

    fn set_of(keys: Vec<Value>) -> KeySet {
        KeySet::parse(json!({ "keys": keys }).to_string().as_bytes()).expect("valid JWKS")
    }

    fn check(
        set: &KeySet,
        alg: Algorithm,
        kid: Option<&str>,
        token: &str,
    ) -> Result<(), AuthError> {
        let (input, signature) = token.rsplit_once('.').expect("three parts");
        set.verify(alg, kid, input.as_bytes(), signature)
    }

    fn rsa_jwk(modulus_bytes: usize) -> Value {
        json!({"kty": "RSA", "e": "AQAB", "n": URL_SAFE_NO_PAD.encode(vec![0xC3u8; modulus_bytes])})
    }

    #[test]
    fn keeps_only_keys_usable_for_signatures() {
        let ed = EdKey::generate();
        let cases: &[(&str, Value, bool)] = &[
            ("plain Ed25519", ed.jwk(json!({})), true),
            ("use sig", ed.jwk(json!({"use": "sig"})), true),
            ("use enc", ed.jwk(json!({"use": "enc"})), false),
            (
                "key_ops verify",
                ed.jwk(json!({"key_ops": ["verify"]})),
                true,
            ),
            (
                "key_ops encrypt",
                ed.jwk(json!({"key_ops": ["encrypt"]})),
                false,
            ),
            ("alg EdDSA", ed.jwk(json!({"alg": "EdDSA"})), true),
            (
                "alg RS256 on an OKP key",
                ed.jwk(json!({"alg": "RS256"})),
                false,
            ),
            ("alg RSA-OAEP", ed.jwk(json!({"alg": "RSA-OAEP"})), false),
            ("oct key", json!({"kty": "oct", "k": "c2VjcmV0"}), false),
            ("RSA 2048", rsa_jwk(256), true),
            ("RSA 1024", rsa_jwk(128), false),
            (
                "P-521",
                json!({"kty": "EC", "crv": "P-521", "x": "AA", "y": "AA"}),
                false,
            ),
            ("unknown kty", json!({"kty": "XYZ"}), false),
            ("not a JWK", json!("just a string"), false),
        ];
        for (name, jwk, kept) in cases {
            assert_eq!(
                set_of(vec![jwk.clone()]).len(),
                usize::from(*kept),
                "case: {name}"
            );
        }
    }

    #[test]
    fn a_document_without_keys_is_not_a_jwks() {
        for document in [&b"{}"[..], b"[]", b"not json", br#"{"keys": {}}"#] {
            assert!(KeySet::parse(document).is_err());
        }
        assert_eq!(
            KeySet::parse(br#"{"keys": []}"#).expect("empty set").len(),
            0
        );
    }

    #[test]
    fn selects_the_key_by_kid() {
        let (first, second) = (EdKey::generate(), EdKey::generate());
        let set = set_of(vec![
            first.jwk(json!({"kid": "one"})),
            second.jwk(json!({"kid": "two"})),
        ]);
        let token = second.sign(Some("two"));
        assert_eq!(check(&set, Algorithm::EdDSA, Some("two"), &token), Ok(()));
        assert_eq!(
            check(&set, Algorithm::EdDSA, Some("one"), &token),
            Err(AuthError::BadSignature)
        );
        assert_eq!(
            check(&set, Algorithm::EdDSA, Some("three"), &token),
            Err(AuthError::UnknownKey)
        );
    }

    #[test]
    fn without_kid_tries_every_compatible_key() {
        let (first, second) = (EdKey::generate(), EdKey::generate());
        let set = set_of(vec![
            first.jwk(json!({"kid": "one"})),
            second.jwk(json!({})),
        ]);
        assert_eq!(
            check(&set, Algorithm::EdDSA, None, &second.sign(None)),
            Ok(())
        );
        assert_eq!(
            check(&set, Algorithm::EdDSA, None, &first.sign(None)),
            Ok(())
        );
        let stranger = EdKey::generate();
        assert_eq!(
            check(&set, Algorithm::EdDSA, None, &stranger.sign(None)),
            Err(AuthError::BadSignature)
        );
        assert_eq!(
            check(&set, Algorithm::ES256, None, &first.sign(None)),
            Err(AuthError::UnknownKey)
        );
    }

    #[test]
    fn a_known_kid_with_another_algorithm_is_disallowed() {
        let ed = EdKey::generate();
        let set = set_of(vec![ed.jwk(json!({"kid": "ed"}))]);
        let token = ed.sign(Some("ed"));
        assert_eq!(
            check(&set, Algorithm::RS256, Some("ed"), &token),
            Err(AuthError::DisallowedAlgorithm)
        );
    }

    #[test]
    fn modulus_bits_ignores_leading_zero_bytes() {
        assert_eq!(
            modulus_bits(&URL_SAFE_NO_PAD.encode([0, 0x01, 0xFF])),
            Some(9)
        );
        assert_eq!(
            modulus_bits(&URL_SAFE_NO_PAD.encode([0x80; 256])),
            Some(2048)
        );
        assert_eq!(modulus_bits("@@"), None);
    }
}
