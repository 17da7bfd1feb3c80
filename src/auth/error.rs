//! Errors of the authentication layer: per request, at start-up, while loading a JWKS, and
//! while minting dev tokens.

use std::path::PathBuf;

/// Why a request's bearer token was not accepted.
///
/// The variants are what the HTTP layer needs to answer with `401` and a precise
/// `WWW-Authenticate` header; none of them carries any part of the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization: Bearer` header, or an empty token.
    #[error("{}", self.description())]
    Missing,
    /// Not a well-formed JWT: wrong number of parts, bad base64url, bad JSON, bad claim types.
    #[error("{}", self.description())]
    Malformed,
    /// No `exp` claim, and tokens must expire.
    #[error("{}", self.description())]
    MissingExpiry,
    /// `exp` is in the past by more than the leeway.
    #[error("{}", self.description())]
    Expired,
    /// `nbf` is in the future by more than the leeway.
    #[error("{}", self.description())]
    NotYetValid,
    /// The signature does not match the selected key.
    #[error("{}", self.description())]
    BadSignature,
    /// No key matches the token's `kid` (or, without a `kid`, its algorithm), even after a
    /// JWKS refetch.
    #[error("{}", self.description())]
    UnknownKey,
    /// The algorithm is `none`, unsupported, or not allowed with the configured key material
    /// (e.g. an HMAC token when only a JWKS is configured: algorithm confusion).
    #[error("{}", self.description())]
    DisallowedAlgorithm,
    /// `iss` is missing or differs from the configured issuer.
    #[error("{}", self.description())]
    WrongIssuer,
    /// `aud` is missing or does not contain the configured audience.
    #[error("{}", self.description())]
    WrongAudience,
    /// The token claims toolgate's own issuer, or carries its delegation claim, but is not
    /// signed with one of toolgate's keys.
    #[error("{}", self.description())]
    Forged,
    /// A run token whose run has ended, expired or is not known (docs/runs.md): reason
    /// `run_ended`.
    #[error("{}", self.description())]
    RunEnded,
    /// A run token whose run could not be read (the run store did not answer): nothing is
    /// known of the run, so nothing is served.
    #[error("{}", self.description())]
    RunUnavailable,
}

impl AuthError {
    /// A short, fixed sentence fit for `WWW-Authenticate: Bearer error_description="…"`:
    /// no quotes, no backslashes, no newlines, and never anything taken from the token.
    pub fn description(&self) -> &'static str {
        match self {
            Self::Missing => "no bearer token",
            Self::Malformed => "the token is not a well-formed JWT",
            Self::MissingExpiry => "the token has no exp claim; tokens must expire",
            Self::Expired => "the token has expired",
            Self::NotYetValid => "the token is not valid yet",
            Self::BadSignature => "the token signature is invalid",
            Self::UnknownKey => "the token was signed with an unknown key",
            Self::DisallowedAlgorithm => "the token signing algorithm is not allowed",
            Self::WrongIssuer => "the token issuer is not accepted",
            Self::WrongAudience => "the token audience is not accepted",
            Self::Forged => "the token claims to be toolgate's own but is not signed by its keys",
            Self::RunEnded => "run ended: the run of this token has ended or expired (run_ended)",
            Self::RunUnavailable => "the run of this token cannot be read now; try again",
        }
    }
}

/// Why a [`Verifier`](super::Verifier) could not be built; reported once at start-up.
#[derive(Debug, thiserror::Error)]
pub enum AuthSetupError {
    /// Neither a secret nor a JWKS is configured, so no token could ever be accepted.
    #[error(
        "no token verification key is configured: set TOOLGATE_JWT_SECRET (an HMAC secret for \
         HS256/384/512 tokens) or TOOLGATE_JWKS_URL (a JWKS URL or file for asymmetric tokens)"
    )]
    NoKeyMaterial,
    /// The secret is empty: anyone could mint tokens with it.
    #[error("TOOLGATE_JWT_SECRET is empty; set a long random secret or unset it")]
    EmptySecret,
    /// The JWKS location is neither an `http(s)://` URL, a `file://` URL nor a path.
    #[error(
        "TOOLGATE_JWKS_URL {value:?} is not usable: {reason} \
         (expected an http(s):// URL, a file:// URL or a file path)"
    )]
    InvalidJwksSource {
        /// The configured value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A JWKS file could not be read or parsed at start-up (a URL is retried instead).
    #[error("cannot load the JWKS file {path}: {source}")]
    JwksFile {
        /// The file that was read.
        path: PathBuf,
        /// What went wrong.
        source: JwksError,
    },
    /// The HTTP client for fetching the JWKS could not be created (TLS set-up).
    #[error("cannot create the HTTP client for the JWKS: {0}")]
    HttpClient(#[source] reqwest::Error),
}

/// Why fetching or parsing a JWKS failed; the previous key set stays in use.
#[derive(Debug, thiserror::Error)]
pub enum JwksError {
    /// Reading the JWKS file failed.
    #[error("cannot read the file: {0}")]
    Io(#[from] std::io::Error),
    /// The HTTP request failed (connection, TLS, timeout): why, with the causes reqwest's own
    /// text leaves out ("error sending request" says neither refused nor timed out).
    #[error("request failed: {0}")]
    Http(String),
    /// The server answered with a non-success status.
    #[error("the server answered with HTTP status {0}")]
    Status(u16),
    /// The document exceeds the size limit.
    #[error("the document is larger than {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The document is not a JSON object with a `keys` array.
    #[error("not a JWKS document (expected a JSON object with a \"keys\" array): {0}")]
    NotJwks(#[source] serde_json::Error),
}

/// Why a dev token could not be minted.
#[derive(Debug, thiserror::Error)]
pub enum MintError {
    /// The secret is empty; such a token would verify nowhere that matters.
    #[error("the HMAC secret is empty")]
    EmptySecret,
    /// The claims could not be encoded or signed.
    #[error("cannot encode the token: {0}")]
    Encode(#[from] jsonwebtoken::errors::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [AuthError; 11] = [
        AuthError::Missing,
        AuthError::Malformed,
        AuthError::MissingExpiry,
        AuthError::Expired,
        AuthError::NotYetValid,
        AuthError::BadSignature,
        AuthError::UnknownKey,
        AuthError::DisallowedAlgorithm,
        AuthError::WrongIssuer,
        AuthError::WrongAudience,
        AuthError::Forged,
    ];

    #[test]
    fn descriptions_are_safe_in_a_quoted_header_parameter() {
        for error in ALL {
            let text = error.description();
            assert!(!text.is_empty());
            assert!(
                text.chars()
                    .all(|c| (' '..='~').contains(&c) && c != '"' && c != '\\'),
                "{error:?}: {text}"
            );
            assert_eq!(error.to_string(), text);
        }
    }

    #[test]
    fn descriptions_are_distinct() {
        let mut texts: Vec<_> = ALL.iter().map(AuthError::description).collect();
        texts.sort_unstable();
        texts.dedup();
        assert_eq!(texts.len(), ALL.len());
    }

    #[test]
    fn no_key_material_says_what_to_set() {
        let text = AuthSetupError::NoKeyMaterial.to_string();
        assert!(text.contains("TOOLGATE_JWT_SECRET") && text.contains("TOOLGATE_JWKS_URL"));
    }
}
