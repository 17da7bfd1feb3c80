//! Signing keys generated in the test process (RSA, P-256, P-384, Ed25519) with their JWKs.

use std::sync::LazyLock;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rsa::RsaPrivateKey;
use rsa::pkcs1::EncodeRsaPrivateKey;
use rsa::rand_core::OsRng;
use rsa::traits::PublicKeyParts;
use serde_json::{Value, json};

/// RSA key generation is slow; one key serves every RSA test in this binary.
pub static RSA_KEY: LazyLock<RsaPrivateKey> =
    LazyLock::new(|| RsaPrivateKey::new(&mut OsRng, 2048).expect("RSA key generation"));

/// A generated signing key with its public JWK.
pub struct TestKey {
    pub kid: String,
    pub encoding: EncodingKey,
    pub jwk: Value,
}

impl TestKey {
    pub fn rsa(kid: &str) -> Self {
        let public = RSA_KEY.to_public_key();
        let der = RSA_KEY.to_pkcs1_der().expect("PKCS#1 encoding");
        Self::new(
            kid,
            EncodingKey::from_rsa_der(der.as_bytes()),
            json!({
                "kty": "RSA",
                "n": URL_SAFE_NO_PAD.encode(public.n().to_bytes_be()),
                "e": URL_SAFE_NO_PAD.encode(public.e().to_bytes_be()),
            }),
        )
    }

    pub fn p256(kid: &str) -> Self {
        use p256::pkcs8::EncodePrivateKey;
        let signing = p256::ecdsa::SigningKey::random(&mut OsRng);
        let point = signing.verifying_key().to_encoded_point(false);
        let der = signing.to_pkcs8_der().expect("PKCS#8 encoding");
        Self::new(
            kid,
            EncodingKey::from_ec_der(der.as_bytes()),
            json!({
                "kty": "EC",
                "crv": "P-256",
                "x": URL_SAFE_NO_PAD.encode(point.x().expect("uncompressed point")),
                "y": URL_SAFE_NO_PAD.encode(point.y().expect("uncompressed point")),
            }),
        )
    }

    pub fn p384(kid: &str) -> Self {
        use p384::pkcs8::EncodePrivateKey;
        let signing = p384::ecdsa::SigningKey::random(&mut OsRng);
        let point = signing.verifying_key().to_encoded_point(false);
        let der = signing.to_pkcs8_der().expect("PKCS#8 encoding");
        Self::new(
            kid,
            EncodingKey::from_ec_der(der.as_bytes()),
            json!({
                "kty": "EC",
                "crv": "P-384",
                "x": URL_SAFE_NO_PAD.encode(point.x().expect("uncompressed point")),
                "y": URL_SAFE_NO_PAD.encode(point.y().expect("uncompressed point")),
            }),
        )
    }

    pub fn ed25519(kid: &str) -> Self {
        use ed25519_dalek::pkcs8::EncodePrivateKey;
        let signing = ed25519_dalek::SigningKey::generate(&mut OsRng);
        let der = signing.to_pkcs8_der().expect("PKCS#8 encoding");
        Self::new(
            kid,
            EncodingKey::from_ed_der(der.as_bytes()),
            json!({
                "kty": "OKP",
                "crv": "Ed25519",
                "x": URL_SAFE_NO_PAD.encode(signing.verifying_key().as_bytes()),
            }),
        )
    }

    pub fn new(kid: &str, encoding: EncodingKey, mut jwk: Value) -> Self {
        jwk["kid"] = json!(kid);
        jwk["use"] = json!("sig");
        Self {
            kid: kid.to_owned(),
            encoding,
            jwk,
        }
    }

    /// A token with this key's `kid` in the header.
    pub fn sign(&self, alg: Algorithm, claims: &Value) -> String {
        self.sign_with_kid(alg, Some(&self.kid), claims)
    }

    pub fn sign_with_kid(&self, alg: Algorithm, kid: Option<&str>, claims: &Value) -> String {
        let mut header = Header::new(alg);
        header.kid = kid.map(str::to_owned);
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("signing")
    }
}

pub fn jwks(keys: &[&TestKey]) -> Value {
    json!({ "keys": keys.iter().map(|key| key.jwk.clone()).collect::<Vec<_>>() })
}
