//! Minting HS256 tokens for development (`toolgate token`) and tests.

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Map, Value};

use super::MintError;

/// Signs `claims` as an HS256 JWT with `secret` (its UTF-8 bytes, as the verifier uses them).
///
/// The claims are taken as given: add `exp` yourself if the token should expire.
pub fn mint_hs256(secret: &str, claims: &Map<String, Value>) -> Result<String, MintError> {
    if secret.is_empty() {
        return Err(MintError::EmptySecret);
    }
    let key = EncodingKey::from_secret(secret.as_bytes());
    Ok(jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &key,
    )?)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn refuses_an_empty_secret() {
        assert!(matches!(
            mint_hs256("", &Map::new()),
            Err(MintError::EmptySecret)
        ));
    }

    #[test]
    fn mints_a_three_part_hs256_token() {
        let Value::Object(claims) = json!({"sub": "dev"}) else {
            unreachable!()
        };
        let token = mint_hs256("dev-secret", &claims).expect("HS256 signing cannot fail");
        assert_eq!(token.split('.').count(), 3);
        let header = jsonwebtoken::decode_header(&token).expect("valid header");
        assert_eq!(header.alg, Algorithm::HS256);
    }
}
