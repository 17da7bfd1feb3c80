//! The claims fingerprint: a cache key for "the same agent identity" across token refreshes.
//!
//! It hashes the claims minus the volatile ones (SEMANTICS.md section 6: `exp iat nbf jti
//! auth_time nonce session_state at_hash c_hash sid`), with object keys in canonical (sorted)
//! order at every depth, so two tokens that differ only in issue time, expiry or key order
//! share one fingerprint. It is a cryptographic hash (BLAKE3, 256 bits): the fingerprint keys
//! manifests shared across instances, so a collision must be infeasible even for someone who
//! chooses their own claim values. Canonicalisation is written out here rather than relying on
//! `serde_json`'s map order, which a dependency's `preserve_order` feature would silently change.

use std::fmt::Write as _;

use serde_json::Value;

use super::claims::Claims;

/// Top-level claims that change with every token and say nothing about the agent.
pub const VOLATILE_CLAIMS: [&str; 10] = [
    "exp",
    "iat",
    "nbf",
    "jti",
    "auth_time",
    "nonce",
    "session_state",
    "at_hash",
    "c_hash",
    "sid",
];

/// A 256-bit claims fingerprint, printed as 64 hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    pub fn of(claims: &Claims) -> Fingerprint {
        let mut hasher = blake3::Hasher::new();
        let mut keys: Vec<&String> = claims
            .keys()
            .filter(|key| !VOLATILE_CLAIMS.contains(&key.as_str()))
            .collect();
        keys.sort_unstable();
        hasher.update(b"{");
        for key in keys {
            feed_string(&mut hasher, key);
            feed_value(&mut hasher, &claims[key]);
        }
        hasher.update(b"}");
        Fingerprint(*hasher.finalize().as_bytes())
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    pub fn to_hex(&self) -> String {
        let mut out = String::with_capacity(64);
        for byte in self.0 {
            write!(out, "{byte:02x}").expect("writing to a String cannot fail");
        }
        out
    }
}

impl std::fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// Feeds an unambiguous encoding: a type tag, then a length-prefixed payload.
fn feed_value(hasher: &mut blake3::Hasher, value: &Value) {
    match value {
        Value::Null => {
            hasher.update(b"n");
        }
        Value::Bool(b) => {
            hasher.update(if *b { b"t" } else { b"f" });
        }
        Value::Number(number) => {
            hasher.update(b"#");
            feed_string(hasher, &number.to_string());
        }
        Value::String(text) => {
            hasher.update(b"s");
            feed_string(hasher, text);
        }
        Value::Array(items) => {
            hasher.update(b"[");
            hasher.update(&(items.len() as u64).to_le_bytes());
            for item in items {
                feed_value(hasher, item);
            }
        }
        Value::Object(object) => {
            let mut keys: Vec<&String> = object.keys().collect();
            keys.sort_unstable();
            hasher.update(b"{");
            hasher.update(&(keys.len() as u64).to_le_bytes());
            for key in keys {
                feed_string(hasher, key);
                feed_value(hasher, &object[key]);
            }
        }
    }
}

fn feed_string(hasher: &mut blake3::Hasher, text: &str) {
    hasher.update(&(text.len() as u64).to_le_bytes());
    hasher.update(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn claims(value: Value) -> Claims {
        value.as_object().expect("object").clone()
    }

    #[test]
    fn volatile_claims_and_key_order_do_not_matter() {
        let a = claims(
            json!({"sub": "a", "roles": ["x"], "exp": 1, "iat": 2, "jti": "j1",
                              "realm_access": {"roles": ["r"], "x": 1}}),
        );
        let b = claims(
            json!({"realm_access": {"x": 1, "roles": ["r"]}, "roles": ["x"],
                              "sub": "a", "exp": 99, "nbf": 5, "sid": "s", "nonce": "n"}),
        );
        assert_eq!(Fingerprint::of(&a), Fingerprint::of(&b));
    }

    #[test]
    fn any_other_difference_changes_the_fingerprint() {
        let base = json!({"sub": "a", "roles": ["x", "y"], "n": 1, "o": {"k": "v"}});
        let variants = [
            json!({"sub": "b", "roles": ["x", "y"], "n": 1, "o": {"k": "v"}}),
            json!({"sub": "a", "roles": ["y", "x"], "n": 1, "o": {"k": "v"}}),
            json!({"sub": "a", "roles": ["x", "y"], "n": "1", "o": {"k": "v"}}),
            json!({"sub": "a", "roles": ["x", "y"], "n": 1, "o": {"k": "w"}}),
            json!({"sub": "a", "roles": ["x", "y"], "n": 1, "o": {"k": "v"}, "extra": null}),
            json!({"sub": "a", "roles": ["xy"], "n": 1, "o": {"k": "v"}}),
            // A nested "exp" is not the volatile top-level claim.
            json!({"sub": "a", "roles": ["x", "y"], "n": 1, "o": {"k": "v", "exp": 1}}),
        ];
        let base = Fingerprint::of(&claims(base));
        for variant in variants {
            assert_ne!(Fingerprint::of(&claims(variant.clone())), base, "{variant}");
        }
    }

    #[test]
    fn hex_form_is_64_digits() {
        let hex = Fingerprint::of(&claims(json!({"sub": "a"}))).to_hex();
        assert_eq!(hex.len(), 64);
        assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
