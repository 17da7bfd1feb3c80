//! Tokens verified before. An agent presents the same token on every call for the token's
//! lifetime, so the signature check and the decoding of the payload are done once per token
//! rather than once per request (Envoy's `jwt_authn` keeps the same kind of cache). On the hot path this is most of what a request costs besides writing the bytes.
//!
//! What makes a hit as good as a fresh verification:
//! - entries are keyed by the whole token text and compared exactly, so a hit is the very
//!   token verified before: a token that differs in any byte (its signature included) misses;
//! - only tokens that passed every check are stored, never a failure;
//! - a hit counts only inside the token's validity window (`nbf` and `exp`, with the leeway) at
//!   the time of the request; outside it the entry is dropped and the token verified afresh,
//!   which gives the precise error;
//! - an entry remembers the generation of the keys that verified it; a JWKS refetch starts a
//!   new generation, so a token signed with a key that has since been retired is checked
//!   against the new keys (and refused) instead of being remembered;
//! - it is bounded: when full, the token verified longest ago makes room (one at a time:
//!   emptying it at once dropped thousands of claim maps inside one request, a 40 ms stall).

use std::num::NonZeroUsize;
use std::sync::{Arc, PoisonError, RwLock};

use lru::LruCache;

use serde_json::{Map, Value};

use super::claims::Validity;

/// A token whose signature and registered claims have been verified.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct VerifiedToken {
    /// The full JWT payload: every claim, nested objects included, for the access policies.
    /// Shared: every stream opened with the token holds these claims (to decide its manifest
    /// again after a catalog change) without a copy of its own.
    pub claims: Arc<Map<String, Value>>,
    /// The `exp` claim in unix seconds, if the token has one (e.g. to bound a stream's life).
    pub expires_at: Option<i64>,
    /// The token as presented: what a token exchange for an upstream call sends as its
    /// subject (and only there). Shared with the cache's key, never logged.
    pub text: TokenText,
}

/// A bearer token's text, kept out of `Debug` output (and so out of every log line).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct TokenText(Arc<str>);

impl From<&str> for TokenText {
    fn from(text: &str) -> TokenText {
        TokenText(Arc::from(text))
    }
}

impl TokenText {
    /// The token itself: for the token endpoint it is exchanged at, nothing else.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for TokenText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenText(..)")
    }
}

/// Tokens kept at most. A token with its claims takes one or two KiB, so a full cache holds a
/// few MiB; a deployment with more agents calling at once than this still works, it just
/// verifies more often.
pub(crate) const CAPACITY: usize = 4096;

struct Entry {
    token: Arc<VerifiedToken>,
    validity: Validity,
    key_generation: u64,
}

/// Bounded map from token text to its verification, in the order tokens were verified (a
/// lookup only reads, so that hits share the lock).
pub(crate) struct VerifiedTokens {
    entries: RwLock<LruCache<Arc<str>, Entry>>,
}

impl VerifiedTokens {
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            entries: RwLock::new(LruCache::new(
                NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN),
            )),
        }
    }

    /// The earlier verification of exactly `token`, if it is valid at unix time `now` and was
    /// made with the keys of `key_generation`.
    pub(super) fn get(
        &self,
        token: &str,
        now: i64,
        key_generation: u64,
    ) -> Option<Arc<VerifiedToken>> {
        {
            let entries = self.entries.read().unwrap_or_else(PoisonError::into_inner);
            let entry = entries.peek(token)?;
            if entry.validity.contains(now) && entry.key_generation == key_generation {
                return Some(Arc::clone(&entry.token));
            }
        }
        // Expired, not yet valid, or verified with keys since replaced: forget it.
        self.entries
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .pop(token);
        None
    }

    /// Remembers a token that passed every check with the keys of `key_generation`.
    pub(super) fn insert(
        &self,
        verified: Arc<VerifiedToken>,
        validity: Validity,
        key_generation: u64,
    ) {
        let mut entries = self.entries.write().unwrap_or_else(PoisonError::into_inner);
        entries.put(
            Arc::clone(&verified.text.0),
            Entry {
                token: verified,
                validity,
                key_generation,
            },
        );
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.entries
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::auth::claims::ClaimRules;

    fn verified(sub: &str) -> (Arc<VerifiedToken>, Validity) {
        let claims = json!({"sub": sub}).as_object().expect("object").clone();
        let rules = ClaimRules {
            issuer: None,
            audience: None,
            leeway_secs: 0,
            require_exp: false,
        };
        let validity = rules.check(&claims, 0).expect("valid");
        let token = VerifiedToken {
            claims: claims.into(),
            expires_at: None,
            text: TokenText(Arc::from(sub)),
        };
        (Arc::new(token), validity)
    }

    #[test]
    fn a_hit_needs_the_same_key_generation() {
        let tokens = VerifiedTokens::new(8);
        let (token, validity) = verified("a");
        let token = Arc::new(VerifiedToken {
            text: TokenText(Arc::from("t.a.x")),
            ..(*token).clone()
        });
        tokens.insert(token, validity, 3);
        assert!(tokens.get("t.a.x", 0, 3).is_some());
        assert!(tokens.get("t.a.x", 0, 4).is_none(), "keys replaced since");
        assert!(tokens.get("t.a.x", 0, 3).is_none(), "and forgotten");
    }

    #[test]
    fn the_memory_is_bounded() {
        let tokens = VerifiedTokens::new(2);
        for sub in ["a", "b", "c", "d", "e"] {
            let (token, validity) = verified(sub);
            tokens.insert(token, validity, 0);
            assert!(tokens.len() <= 2);
        }
        assert!(tokens.get("e", 0, 0).is_some(), "the newest is kept");
        assert!(tokens.get("d", 0, 0).is_some(), "one at a time makes room");
        assert!(tokens.get("c", 0, 0).is_none(), "the oldest went first");
    }
}
