//! The compact JWS serialisation: splitting a token and decoding its header and payload.
//!
//! Only what the verifier needs is decoded; the payload is decoded after the signature has
//! been checked, so unauthenticated input never reaches the claim checks.

use std::borrow::Cow;
use std::str::FromStr;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::Algorithm;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value};

use super::AuthError;

/// Larger tokens are refused before any decoding; real ones are a few KiB at most.
const MAX_TOKEN_BYTES: usize = 64 * 1024;

/// A token split into its three base64url parts, borrowed from the caller's string.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TokenParts<'a> {
    header: &'a str,
    payload: &'a str,
    /// `header.payload`: the bytes the signature covers.
    pub signing_input: &'a [u8],
    /// The signature, still base64url-encoded.
    pub signature: &'a str,
}

/// The parts of the JOSE header that select the verification key.
#[derive(Debug)]
pub(crate) struct JoseHeader<'a> {
    pub alg: Algorithm,
    pub kid: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct RawHeader<'a> {
    #[serde(borrow, default)]
    alg: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    kid: Option<Cow<'a, str>>,
    #[serde(default)]
    crit: Option<IgnoredAny>,
}

impl<'a> TokenParts<'a> {
    /// Splits `header.payload.signature`; anything else is [`AuthError::Malformed`].
    pub(super) fn split(token: &'a str) -> Result<Self, AuthError> {
        if token.is_empty() {
            return Err(AuthError::Missing);
        }
        if token.len() > MAX_TOKEN_BYTES {
            return Err(AuthError::Malformed);
        }
        let (signing_input, signature) = token.rsplit_once('.').ok_or(AuthError::Malformed)?;
        let (header, payload) = signing_input.split_once('.').ok_or(AuthError::Malformed)?;
        if header.is_empty() || payload.is_empty() || payload.contains('.') {
            return Err(AuthError::Malformed);
        }
        Ok(Self {
            header,
            payload,
            signing_input: signing_input.as_bytes(),
            signature,
        })
    }

    /// Decodes the header into `buf` and returns the algorithm and key id.
    ///
    /// `alg: none` and algorithms outside the supported set are
    /// [`AuthError::DisallowedAlgorithm`]; a `crit` header is refused because none of its
    /// extensions is understood here (RFC 7515 §4.1.11).
    pub(super) fn header<'b>(&self, buf: &'b mut Vec<u8>) -> Result<JoseHeader<'b>, AuthError> {
        URL_SAFE_NO_PAD
            .decode_vec(self.header, buf)
            .map_err(|_| AuthError::Malformed)?;
        // serde would also read a struct from a JSON array; a JOSE header is an object.
        if buf.trim_ascii_start().first() != Some(&b'{') {
            return Err(AuthError::Malformed);
        }
        let raw: RawHeader<'b> = serde_json::from_slice(buf).map_err(|_| AuthError::Malformed)?;
        if raw.crit.is_some() {
            return Err(AuthError::Malformed);
        }
        let alg = raw.alg.ok_or(AuthError::Malformed)?;
        let alg = Algorithm::from_str(&alg).map_err(|_| AuthError::DisallowedAlgorithm)?;
        if !is_supported(alg) {
            return Err(AuthError::DisallowedAlgorithm);
        }
        Ok(JoseHeader { alg, kid: raw.kid })
    }

    /// Decodes the payload into the full claim set; it must be a JSON object.
    pub(super) fn claims(&self) -> Result<Map<String, Value>, AuthError> {
        let json = URL_SAFE_NO_PAD
            .decode(self.payload)
            .map_err(|_| AuthError::Malformed)?;
        serde_json::from_slice(&json).map_err(|_| AuthError::Malformed)
    }
}

/// The algorithms toolgate accepts at all; the key material then narrows them further.
fn is_supported(alg: Algorithm) -> bool {
    use Algorithm::*;
    matches!(
        alg,
        HS256
            | HS384
            | HS512
            | RS256
            | RS384
            | RS512
            | PS256
            | PS384
            | PS512
            | ES256
            | ES384
            | EdDSA
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A case name, the header JSON, and the expected outcome.
    type Case = (
        &'static str,
        &'static str,
        Result<(Algorithm, Option<String>), AuthError>,
    );

    fn b64(json: &str) -> String {
        URL_SAFE_NO_PAD.encode(json)
    }

    fn header_of(header_json: &str) -> Result<(Algorithm, Option<String>), AuthError> {
        let token = format!("{}.{}.sig", b64(header_json), b64("{}"));
        let parts = TokenParts::split(&token)?;
        let mut buf = Vec::new();
        let header = parts.header(&mut buf)?;
        Ok((header.alg, header.kid.map(Cow::into_owned)))
    }

    #[test]
    fn split_cases() {
        let cases: &[(&str, &str, Option<AuthError>)] = &[
            ("empty", "", Some(AuthError::Missing)),
            ("one part", "abc", Some(AuthError::Malformed)),
            ("two parts", "abc.def", Some(AuthError::Malformed)),
            ("four parts", "a.b.c.d", Some(AuthError::Malformed)),
            ("empty header", ".b.c", Some(AuthError::Malformed)),
            ("empty payload", "a..c", Some(AuthError::Malformed)),
            ("three parts", "a.b.c", None),
            ("empty signature is split fine", "a.b.", None),
        ];
        for (name, token, expected) in cases {
            assert_eq!(TokenParts::split(token).err(), *expected, "case: {name}");
        }
        let huge = "a".repeat(MAX_TOKEN_BYTES + 1);
        assert_eq!(TokenParts::split(&huge).err(), Some(AuthError::Malformed));
    }

    #[test]
    fn header_cases() {
        let cases: &[Case] = &[
            (
                "hs256",
                r#"{"alg":"HS256","typ":"JWT"}"#,
                Ok((Algorithm::HS256, None)),
            ),
            (
                "with kid",
                r#"{"alg":"RS256","kid":"k1"}"#,
                Ok((Algorithm::RS256, Some("k1".into()))),
            ),
            (
                "escaped kid",
                r#"{"alg":"EdDSA","kid":"k\u0031"}"#,
                Ok((Algorithm::EdDSA, Some("k1".into()))),
            ),
            (
                "alg none",
                r#"{"alg":"none","typ":"JWT"}"#,
                Err(AuthError::DisallowedAlgorithm),
            ),
            (
                "alg None",
                r#"{"alg":"None"}"#,
                Err(AuthError::DisallowedAlgorithm),
            ),
            (
                "unsupported alg",
                r#"{"alg":"ES512"}"#,
                Err(AuthError::DisallowedAlgorithm),
            ),
            (
                "lower-case alg",
                r#"{"alg":"hs256"}"#,
                Err(AuthError::DisallowedAlgorithm),
            ),
            ("no alg", r#"{"typ":"JWT"}"#, Err(AuthError::Malformed)),
            (
                "alg not a string",
                r#"{"alg":256}"#,
                Err(AuthError::Malformed),
            ),
            (
                "crit header",
                r#"{"alg":"HS256","crit":["exp"]}"#,
                Err(AuthError::Malformed),
            ),
            ("not an object", r#"["HS256"]"#, Err(AuthError::Malformed)),
            ("not json", "alg=HS256", Err(AuthError::Malformed)),
        ];
        for (name, header_json, expected) in cases {
            assert_eq!(header_of(header_json), *expected, "case: {name}");
        }
    }

    #[test]
    fn header_with_bad_base64_is_malformed() {
        let parts = TokenParts::split("!!!.e30.sig").expect("three parts");
        assert_eq!(
            parts.header(&mut Vec::new()).err(),
            Some(AuthError::Malformed)
        );
    }

    #[test]
    fn claims_keep_nested_objects() {
        let token = format!(
            "{}.{}.sig",
            b64("{}"),
            b64(r#"{"sub":"a","realm_access":{"roles":["admin"]}}"#)
        );
        let claims = TokenParts::split(&token)
            .and_then(|p| p.claims())
            .expect("valid payload");
        assert_eq!(claims["realm_access"]["roles"][0], "admin");
    }

    #[test]
    fn claims_must_be_an_object() {
        for payload in ["[1,2]", "\"sub\"", "not json"] {
            let token = format!("{}.{}.sig", b64("{}"), b64(payload));
            let parts = TokenParts::split(&token).expect("three parts");
            assert_eq!(
                parts.claims().err(),
                Some(AuthError::Malformed),
                "payload: {payload}"
            );
        }
    }
}
