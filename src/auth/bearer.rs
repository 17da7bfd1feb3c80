//! Extracting the token from an `Authorization: Bearer <jwt>` header (RFC 6750 §2.1).

use super::AuthError;

/// Returns the token of an `Authorization` header value.
///
/// The scheme is matched case-insensitively. No header, an empty value, another scheme
/// (e.g. `Basic`) or an empty token is [`AuthError::Missing`], so the caller answers with a
/// bare `WWW-Authenticate: Bearer`; a token containing whitespace is [`AuthError::Malformed`].
pub fn bearer_token(header_value: Option<&str>) -> Result<&str, AuthError> {
    let value = header_value.ok_or(AuthError::Missing)?.trim();
    let (scheme, token) = value.split_once([' ', '\t']).unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::Missing);
    }
    let token = token.trim();
    if token.is_empty() {
        return Err(AuthError::Missing);
    }
    if token.bytes().any(|byte| byte.is_ascii_whitespace()) {
        return Err(AuthError::Malformed);
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_header_cases() {
        let cases: &[(&str, Option<&str>, Result<&str, AuthError>)] = &[
            ("no header", None, Err(AuthError::Missing)),
            ("empty header", Some(""), Err(AuthError::Missing)),
            ("scheme only", Some("Bearer"), Err(AuthError::Missing)),
            (
                "scheme and blanks",
                Some("Bearer   "),
                Err(AuthError::Missing),
            ),
            (
                "other scheme",
                Some("Basic dXNlcjpwdw=="),
                Err(AuthError::Missing),
            ),
            (
                "scheme glued to token",
                Some("Bearerabc"),
                Err(AuthError::Missing),
            ),
            ("canonical", Some("Bearer a.b.c"), Ok("a.b.c")),
            ("lower-case scheme", Some("bearer a.b.c"), Ok("a.b.c")),
            ("upper-case scheme", Some("BEARER a.b.c"), Ok("a.b.c")),
            ("extra blanks", Some("  Bearer   a.b.c  "), Ok("a.b.c")),
            ("tab separator", Some("Bearer\ta.b.c"), Ok("a.b.c")),
            (
                "two tokens",
                Some("Bearer a.b.c d.e.f"),
                Err(AuthError::Malformed),
            ),
        ];
        for (name, header, expected) in cases {
            assert_eq!(bearer_token(*header), *expected, "case: {name}");
        }
    }
}
