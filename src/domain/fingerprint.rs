//! The claims key: what every cache and shared entry keyed by claims is keyed by.
//!
//! A decision depends on the claims only through the values at the paths the active policies
//! read (and whether the caller is an admin only through the paths the admin rule reads). So
//! the key is the **projection** of the claims onto those paths: for each path, in a fixed
//! order, the path and the value found there (or "absent"). That is exact in both directions
//! (docs/semantics.md section 6.4):
//! - two tokens that differ in a claim a policy reads never share a key, whatever the claim is
//!   called (`sid`, `jti`, `iat` included: a deny on `sid` is what an administrator writes
//!   during an incident, and a key that dropped "volatile" claims let a denied token reuse an
//!   allowed one's manifest);
//! - two tokens that differ only in claims nobody reads (issue times, expiry, e-mail…) share
//!   one, which is what makes the cache hit across token refreshes.
//!
//! The paths belong to a snapshot, so a key is meaningful only with the revision it was made
//! at; every cache that uses one is scoped to a revision. The key is a cryptographic hash
//! (BLAKE3, 256 bits) of an unambiguous encoding that includes the paths themselves: keys are
//! shared across instances, so a collision must be infeasible even for someone who chooses
//! their own claim values, and projections onto different path lists never collide.
//! Canonicalisation is written out here (object keys sorted at every depth) rather than relying
//! on `serde_json`'s map order, which a dependency's `preserve_order` feature would silently
//! change.

use std::fmt::Write as _;

use serde_json::Value;

use super::claims::{ClaimPath, Claims};

/// A 256-bit claims key, printed as 64 hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// The key of `claims` projected onto each list of `path_lists` in turn (a snapshot's
    /// [`read_paths`](super::snapshot::Snapshot::read_paths), then the admin rule's paths).
    /// A path's value is what a matcher sees there: `null` and a missing value are both
    /// absent.
    pub fn of_projection(claims: &Claims, path_lists: &[&[ClaimPath]]) -> Fingerprint {
        let mut hasher = blake3::Hasher::new();
        hasher.update(&(path_lists.len() as u64).to_le_bytes());
        for paths in path_lists {
            hasher.update(&(paths.len() as u64).to_le_bytes());
            for path in *paths {
                let segments = path.segments();
                hasher.update(&(segments.len() as u64).to_le_bytes());
                for segment in segments {
                    feed_string(&mut hasher, segment);
                }
                match path.resolve(claims) {
                    Some(value) => {
                        hasher.update(b"=");
                        feed_value(&mut hasher, value);
                    }
                    None => {
                        hasher.update(b"-");
                    }
                }
            }
        }
        Fingerprint(*hasher.finalize().as_bytes())
    }

    /// The key of a whole JSON value, in the same canonical encoding (object keys sorted at
    /// every depth): equal values get equal keys whatever their key order. Never equal to a
    /// projection's key (the encodings differ from the first byte).
    pub fn of_value(value: &Value) -> Fingerprint {
        let mut hasher = blake3::Hasher::new();
        hasher.update(b"value");
        feed_value(&mut hasher, value);
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

    use crate::domain::claims::claims_of as claims;

    fn paths(texts: &[&str]) -> Vec<ClaimPath> {
        let mut paths: Vec<ClaimPath> = texts
            .iter()
            .map(|text| ClaimPath::parse(text).expect("valid path"))
            .collect();
        paths.sort_unstable();
        paths.dedup();
        paths
    }

    fn key(value: Value, read: &[&str]) -> Fingerprint {
        Fingerprint::of_projection(&claims(value), &[&paths(read)])
    }

    #[test]
    fn claims_nobody_reads_and_key_order_do_not_matter() {
        let read = ["roles", "realm_access.roles"];
        let a = json!({"sub": "a", "roles": ["x"], "exp": 1, "iat": 2, "jti": "j1",
                       "realm_access": {"roles": ["r"], "x": 1}});
        let b = json!({"realm_access": {"x": 2, "roles": ["r"]}, "roles": ["x"],
                       "sub": "b", "exp": 99, "nbf": 5, "sid": "s", "nonce": "n"});
        assert_eq!(key(a, &read), key(b, &read));
    }

    #[test]
    fn a_value_key_ignores_key_order_and_nothing_else() {
        let a = json!({"subject": {"id": "x", "type": "agent"}, "n": [1, 2]});
        let b = json!({"n": [1, 2], "subject": {"type": "agent", "id": "x"}});
        assert_eq!(Fingerprint::of_value(&a), Fingerprint::of_value(&b));
        let c = json!({"n": [2, 1], "subject": {"type": "agent", "id": "x"}});
        assert_ne!(Fingerprint::of_value(&a), Fingerprint::of_value(&c));
        assert_ne!(
            Fingerprint::of_value(&json!("1")),
            Fingerprint::of_value(&json!(1))
        );
    }

    #[test]
    fn a_read_claim_counts_whatever_its_name() {
        // The deny-on-`sid` repro of issue 12: `sid` is "volatile", and read by a policy.
        for read in [
            &["sid"][..],
            &["jti", "roles"],
            &["iat"],
            &["exp"],
            &["auth_time"],
        ] {
            let base = json!({"sub": "a", "roles": ["x"], "sid": "new", "jti": "1", "iat": 1,
                              "exp": 10, "auth_time": 5});
            let mut other = base.clone();
            other[read[0]] = json!("stolen");
            assert_ne!(key(base, read), key(other, read), "{read:?}");
        }
    }

    #[test]
    fn any_difference_at_a_read_path_changes_the_key() {
        let read = ["sub", "roles", "n", "o", "o.k", "groups.0"];
        let base = json!({"sub": "a", "roles": ["x", "y"], "n": 1, "o": {"k": "v"}});
        let variants = [
            json!({"sub": "b", "roles": ["x", "y"], "n": 1, "o": {"k": "v"}}),
            json!({"sub": "a", "roles": ["y", "x"], "n": 1, "o": {"k": "v"}}),
            json!({"sub": "a", "roles": ["x", "y"], "n": "1", "o": {"k": "v"}}),
            json!({"sub": "a", "roles": ["x", "y"], "n": 1, "o": {"k": "w"}}),
            json!({"sub": "a", "roles": ["xy"], "n": 1, "o": {"k": "v"}}),
            json!({"sub": "a", "roles": ["x", "y"], "o": {"k": "v"}}),
            json!({"sub": "a", "roles": ["x", "y"], "n": 1, "o": {"k": "v", "exp": 1}}),
            json!({"sub": "a", "roles": ["x", "y"], "n": 1, "o": {"k": "v"}, "groups": ["g"]}),
        ];
        let base = key(base, &read);
        for variant in variants {
            assert_ne!(key(variant.clone(), &read), base, "{variant}");
        }
    }

    #[test]
    fn null_and_missing_are_both_absent_but_differ_from_any_value() {
        let read = ["a"];
        assert_eq!(key(json!({}), &read), key(json!({"a": null}), &read));
        assert_ne!(key(json!({}), &read), key(json!({"a": ""}), &read));
        assert_ne!(key(json!({}), &read), key(json!({"a": "-"}), &read));
    }

    #[test]
    fn projections_onto_different_paths_never_share_a_key() {
        let claims = json!({"a": "x", "b": "x"});
        assert_ne!(key(claims.clone(), &["a"]), key(claims.clone(), &["b"]));
        assert_ne!(key(claims.clone(), &["a"]), key(claims.clone(), &[]));
        let split = Fingerprint::of_projection(
            &self::claims(claims.clone()),
            &[&paths(&["a"]), &paths(&["b"])],
        );
        let joined = Fingerprint::of_projection(&self::claims(claims), &[&paths(&["a", "b"])]);
        assert_ne!(split, joined);
    }

    #[test]
    fn hex_form_is_64_digits() {
        let hex = key(json!({"sub": "a"}), &["sub"]).to_hex();
        assert_eq!(hex.len(), 64);
        assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
