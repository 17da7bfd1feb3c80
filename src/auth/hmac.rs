//! HS256/384/512 verification against the configured secret: the hot path.
//!
//! The keyed HMAC states are computed once at start-up; a verification clones one (a stack
//! copy), hashes the signing input and compares in constant time against a signature decoded
//! into a stack buffer. Nothing is allocated and nothing is fetched.

use std::fmt;

use base64::DecodeSliceError;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use jsonwebtoken::Algorithm;
use sha2::{Sha256, Sha384, Sha512};

use super::AuthError;

/// The longest HMAC tag we check (HS512).
const MAX_TAG_BYTES: usize = 64;

/// Pre-keyed HMAC states for the three HS algorithms.
#[derive(Clone)]
pub(crate) struct HmacKeys {
    hs256: Hmac<Sha256>,
    hs384: Hmac<Sha384>,
    hs512: Hmac<Sha512>,
}

impl HmacKeys {
    /// Keys the three HMAC states with `secret`.
    pub(super) fn new(secret: &[u8]) -> Self {
        const ANY_LENGTH: &str = "HMAC accepts keys of any length";
        Self {
            hs256: Hmac::new_from_slice(secret).expect(ANY_LENGTH),
            hs384: Hmac::new_from_slice(secret).expect(ANY_LENGTH),
            hs512: Hmac::new_from_slice(secret).expect(ANY_LENGTH),
        }
    }

    /// Checks an HS* signature over `signing_input`.
    ///
    /// A non-HS algorithm is [`AuthError::DisallowedAlgorithm`]: this key is never used for
    /// anything but HMAC.
    pub(super) fn verify(
        &self,
        alg: Algorithm,
        signing_input: &[u8],
        signature_b64: &str,
    ) -> Result<(), AuthError> {
        let mut tag = [0u8; MAX_TAG_BYTES];
        let len = URL_SAFE_NO_PAD
            .decode_slice(signature_b64, &mut tag)
            .map_err(|error| match error {
                DecodeSliceError::OutputSliceTooSmall => AuthError::BadSignature,
                DecodeSliceError::DecodeError(_) => AuthError::Malformed,
            })?;
        let tag = &tag[..len];
        let verified = match alg {
            Algorithm::HS256 => self
                .hs256
                .clone()
                .chain_update(signing_input)
                .verify_slice(tag),
            Algorithm::HS384 => self
                .hs384
                .clone()
                .chain_update(signing_input)
                .verify_slice(tag),
            Algorithm::HS512 => self
                .hs512
                .clone()
                .chain_update(signing_input)
                .verify_slice(tag),
            _ => return Err(AuthError::DisallowedAlgorithm),
        };
        verified.map_err(|_| AuthError::BadSignature)
    }
}

impl fmt::Debug for HmacKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HmacKeys([redacted])")
    }
}

#[cfg(test)]
mod tests {
    use jsonwebtoken::{EncodingKey, Header};
    use serde_json::json;

    use super::*;

    fn sign(alg: Algorithm, secret: &str) -> String {
        let claims = json!({"sub": "agent-1"});
        jsonwebtoken::encode(
            &Header::new(alg),
            &claims,
            &EncodingKey::from_secret(secret.as_bytes()),
        )
        .expect("HMAC signing cannot fail")
    }

    fn check(keys: &HmacKeys, alg: Algorithm, token: &str) -> Result<(), AuthError> {
        let (input, signature) = token.rsplit_once('.').expect("three parts");
        keys.verify(alg, input.as_bytes(), signature)
    }

    #[test]
    fn accepts_all_three_hs_algorithms() {
        let keys = HmacKeys::new(b"the-secret");
        for alg in [Algorithm::HS256, Algorithm::HS384, Algorithm::HS512] {
            assert_eq!(
                check(&keys, alg, &sign(alg, "the-secret")),
                Ok(()),
                "{alg:?}"
            );
        }
    }

    #[test]
    fn rejects_another_secret() {
        let keys = HmacKeys::new(b"the-secret");
        for alg in [Algorithm::HS256, Algorithm::HS384, Algorithm::HS512] {
            let token = sign(alg, "another-secret");
            assert_eq!(
                check(&keys, alg, &token),
                Err(AuthError::BadSignature),
                "{alg:?}"
            );
        }
    }

    #[test]
    fn rejects_a_tag_for_another_hash() {
        let keys = HmacKeys::new(b"the-secret");
        let token = sign(Algorithm::HS512, "the-secret");
        assert_eq!(
            check(&keys, Algorithm::HS256, &token),
            Err(AuthError::BadSignature)
        );
    }

    #[test]
    fn rejects_truncated_empty_and_oversized_tags() {
        let keys = HmacKeys::new(b"the-secret");
        let token = sign(Algorithm::HS256, "the-secret");
        let (input, signature) = token.rsplit_once('.').expect("three parts");
        let full = URL_SAFE_NO_PAD.decode(signature).expect("valid base64url");
        let truncated = URL_SAFE_NO_PAD.encode(&full[..16]);
        let oversized = URL_SAFE_NO_PAD.encode([7u8; MAX_TAG_BYTES + 1]);
        for tag in [truncated.as_str(), "", oversized.as_str()] {
            let result = keys.verify(Algorithm::HS256, input.as_bytes(), tag);
            assert_eq!(result, Err(AuthError::BadSignature), "tag: {tag}");
        }
        let result = keys.verify(Algorithm::HS256, input.as_bytes(), "not base64!");
        assert_eq!(result, Err(AuthError::Malformed));
    }

    #[test]
    fn refuses_asymmetric_algorithms() {
        let keys = HmacKeys::new(b"the-secret");
        let token = sign(Algorithm::HS256, "the-secret");
        assert_eq!(
            check(&keys, Algorithm::RS256, &token),
            Err(AuthError::DisallowedAlgorithm)
        );
    }
}
