//! The claim sets this instance served recently, for the impact of a change on them
//! (`POST /admin/impact`).
//!
//! Kept in memory only, as each identity's projection onto the claims the policies read at the
//! time ([`project`]): never whole tokens, never a claim no policy reads. Bounded in number
//! ([`SeenClaims::new`]) and in age ([`WINDOW`]); when full, the least recently seen set makes
//! room, one at a time (forgetting half at once dropped thousands of projections inside one
//! request: a 20 ms stall). Recording a request is one hash lookup and a timestamp.
//! Delegated callers are remembered apart, in a tenth of the room: minting sub-agents never
//! pushes a real caller out.

use std::collections::HashSet;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use lru::LruCache;

use crate::domain::claims::{ClaimPath, Claims, DELEGATION_CLAIM as DELEGATION, project};
use crate::domain::delegation::PER_TOKEN;
use crate::domain::fingerprint::Fingerprint;

/// How long a claim set is remembered after it was last served.
pub const WINDOW: Duration = Duration::from_secs(24 * 60 * 60);

/// How many claim sets are remembered when the server is not told otherwise.
pub const DEFAULT_CAPACITY: usize = 10_000;

/// One remembered claim set.
#[derive(Debug, Clone)]
pub struct Seen {
    pub claims: Arc<Claims>,
    pub last_seen: DateTime<Utc>,
}

/// The claim sets served recently, by the fingerprint of their projection.
pub struct SeenClaims {
    /// Least recently seen first out; `None`: remember nothing.
    entries: Option<Mutex<LruCache<Fingerprint, Seen>>>,
    /// Delegated callers, apart: whatever sub-agents an agent mints (each scope it asks for is
    /// another claim set), they push out only each other, never the callers of `entries`.
    delegated: Option<Mutex<LruCache<Fingerprint, Seen>>>,
}

/// The share of the capacity given to delegated callers, on top of it: one in ten.
const DELEGATED_SHARE: usize = 10;

impl SeenClaims {
    /// Remembers at most `capacity` claim sets (0: none), and a tenth as many delegated ones.
    pub fn new(capacity: usize) -> SeenClaims {
        let lru = |capacity| NonZeroUsize::new(capacity).map(|c| Mutex::new(LruCache::new(c)));
        SeenClaims {
            entries: lru(capacity),
            delegated: lru(capacity.div_ceil(DELEGATED_SHARE)),
        }
    }

    /// Notes that claims whose projection onto `paths` has `fingerprint` were served at `now`.
    ///
    /// A delegated caller is remembered without the per-token claims of its chain's levels
    /// ([`PER_TOKEN`]) unless a policy reads one: every token an agent mints for a sub-agent
    /// has its own, and remembering each apart would let any agent push every real caller out
    /// by minting children. One entry per parent chain and scope, as the policies see it.
    pub fn record(
        &self,
        fingerprint: &Fingerprint,
        claims: &Claims,
        paths: &[ClaimPath],
        now: DateTime<Utc>,
    ) {
        let delegated = claims.get(DELEGATION).is_some_and(|chain| !chain.is_null());
        let Some(entries) = (if delegated {
            &self.delegated
        } else {
            &self.entries
        }) else {
            return;
        };
        let (fingerprint, projection) = if delegated {
            let projection = chain_without_tokens(project(claims, paths), paths);
            (
                Fingerprint::of_projection(&projection, &[paths]),
                Some(projection),
            )
        } else {
            (*fingerprint, None)
        };
        let fingerprint = &fingerprint;
        let mut entries = entries.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(seen) = entries.get_mut(fingerprint) {
            seen.last_seen = now;
            return;
        }
        // What is past the window goes first (the least recently seen are at the end).
        while entries
            .peek_lru()
            .is_some_and(|(_, seen)| !within_window(seen, now))
        {
            entries.pop_lru();
        }
        let claims = projection.unwrap_or_else(|| project(claims, paths));
        entries.put(
            *fingerprint,
            Seen {
                claims: Arc::new(claims),
                last_seen: now,
            },
        );
    }

    /// The distinct claim sets seen within [`WINDOW`] of `now`, most recently seen first. Sets
    /// that `paths` (what the policies read now) cannot tell apart are listed once, at the
    /// latest time any of them was seen.
    pub fn recent(&self, now: DateTime<Utc>, paths: &[ClaimPath]) -> Vec<Seen> {
        let mut recent: Vec<Seen> = Vec::new();
        for entries in [&self.entries, &self.delegated].into_iter().flatten() {
            let entries = entries.lock().unwrap_or_else(PoisonError::into_inner);
            recent.extend(
                entries
                    .iter()
                    .map(|(_, seen)| seen)
                    .filter(|seen| within_window(seen, now))
                    .cloned(),
            );
        }
        recent.sort_by_key(|seen| std::cmp::Reverse(seen.last_seen));
        let mut listed = HashSet::new();
        recent.retain(|seen| listed.insert(Fingerprint::of_projection(&seen.claims, &[paths])));
        recent
    }

    pub fn len(&self) -> usize {
        [&self.entries, &self.delegated]
            .into_iter()
            .flatten()
            .map(|entries| entries.lock().unwrap_or_else(PoisonError::into_inner).len())
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `projection` without its delegation chain's per-token claims (`tokens`) when no path of
/// `paths` reads one of [`PER_TOKEN`]: then no decision depends on them.
fn chain_without_tokens(mut projection: Claims, paths: &[ClaimPath]) -> Claims {
    let read = paths.iter().any(|path| {
        path.segments()
            .first()
            .is_some_and(|first| PER_TOKEN.contains(&first.as_str()))
    });
    if !read && let Some(serde_json::Value::Object(chain)) = projection.get_mut(DELEGATION) {
        chain.remove("tokens");
    }
    projection
}

fn within_window(seen: &Seen, now: DateTime<Utc>) -> bool {
    (now - seen.last_seen)
        .to_std()
        .map_or(true, |age| age <= WINDOW)
}

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;
    use serde_json::{Value, json};

    use super::*;

    use crate::domain::claims::claims_of as claims;

    fn paths() -> Vec<ClaimPath> {
        vec![ClaimPath::parse("team").expect("a path")]
    }

    fn record(seen: &SeenClaims, team: u32, at: DateTime<Utc>) {
        let claims = claims(json!({"team": team, "sub": format!("user-{team}"), "email": "x"}));
        let fingerprint = Fingerprint::of_projection(&claims, &[&paths()]);
        seen.record(&fingerprint, &claims, &paths(), at);
    }

    #[test]
    fn only_the_projection_is_kept_and_the_latest_time() {
        let seen = SeenClaims::new(10);
        let start = Utc::now();
        record(&seen, 1, start);
        record(&seen, 1, start + TimeDelta::seconds(5));
        let recent = seen.recent(start + TimeDelta::seconds(6), &paths());
        assert_eq!(recent.len(), 1);
        assert_eq!(
            Value::Object((*recent[0].claims).clone()),
            json!({"team": 1})
        );
        assert_eq!(recent[0].last_seen, start + TimeDelta::seconds(5));
    }

    #[test]
    fn the_bound_holds_and_the_most_recent_survive() {
        let seen = SeenClaims::new(100);
        let start = Utc::now();
        for team in 0..1001 {
            record(&seen, team, start + TimeDelta::seconds(i64::from(team)));
            assert!(seen.len() <= 100);
            if team >= 100 {
                assert_eq!(
                    seen.len(),
                    100,
                    "one at a time makes room: the set stays full"
                );
            }
        }
        let recent = seen.recent(start + TimeDelta::seconds(1001), &paths());
        assert_eq!(recent.len(), 100);
        assert_eq!(recent[0].claims.get("team"), Some(&json!(1000)));
        assert_eq!(
            recent[99].claims.get("team"),
            Some(&json!(901)),
            "the 100 most recent"
        );
    }

    #[test]
    fn what_is_older_than_the_window_is_not_listed() {
        let seen = SeenClaims::new(10);
        let start = Utc::now();
        record(&seen, 1, start);
        record(&seen, 2, start + TimeDelta::hours(20));
        let recent = seen.recent(start + TimeDelta::hours(25), &paths());
        assert_eq!(recent.len(), 1);
        assert_eq!(recent[0].claims.get("team"), Some(&json!(2)));
    }

    #[test]
    fn a_capacity_of_zero_remembers_nothing() {
        let seen = SeenClaims::new(0);
        record(&seen, 1, Utc::now());
        assert!(seen.is_empty());
    }

    /// Claims of a child delegated by `team`'s user with `scope`, as the verifier makes them:
    /// every level's per-token claims in the chain, the child's own at the top.
    fn child(team: u32, scope: &str, n: u32) -> Claims {
        claims(
            json!({"team": team, "sub": format!("user-{team}"), "jti": format!("child-{n}"),
            "iat": n, "exp": n + 60, "act": {"sub": format!("user-{team}")},
            DELEGATION: {"scopes": [[scope]],
                "tokens": [{"jti": "parent"}, {"jti": format!("child-{n}"), "iat": n}]}}),
        )
    }

    fn delegated_paths() -> Vec<ClaimPath> {
        ["team", "act", DELEGATION]
            .iter()
            .map(|p| ClaimPath::parse(p).expect("a path"))
            .collect()
    }

    #[test]
    fn minting_children_never_pushes_a_real_caller_out() {
        let seen = SeenClaims::new(100);
        let start = Utc::now();
        let paths = delegated_paths();
        let real = claims(json!({"team": 7, "sub": "user-7"}));
        let fingerprint = Fingerprint::of_projection(&real, &[&paths]);
        seen.record(&fingerprint, &real, &paths, start);
        // 10,200 children of four parents: one entry per parent chain and scope, the
        // per-token claims (which no policy reads) left out.
        for n in 0..10_200 {
            let claims = child(n % 4, "tool:a", n);
            let fingerprint = Fingerprint::of_projection(&claims, &[&paths]);
            seen.record(&fingerprint, &claims, &paths, start + TimeDelta::seconds(1));
        }
        assert_eq!(seen.len(), 1 + 4);
        // Children with a new scope each: they push out only each other.
        for n in 0..10_000 {
            let claims = child(1, &format!("tool:t{n}"), n);
            let fingerprint = Fingerprint::of_projection(&claims, &[&paths]);
            seen.record(&fingerprint, &claims, &paths, start + TimeDelta::seconds(2));
        }
        let recent = seen.recent(start + TimeDelta::seconds(3), &paths);
        assert!(recent.len() <= 1 + 10, "{}", recent.len());
        assert!(
            recent
                .iter()
                .any(|s| s.claims.get("team") == Some(&json!(7))
                    && !s.claims.contains_key(DELEGATION)),
            "the real caller is still remembered"
        );
        let remembered = recent
            .iter()
            .find(|s| s.claims.contains_key(DELEGATION))
            .expect("a delegated caller");
        assert!(remembered.claims[DELEGATION].get("tokens").is_none());
    }

    #[test]
    fn per_token_claims_are_kept_when_a_policy_reads_one() {
        let seen = SeenClaims::new(100);
        let mut paths = delegated_paths();
        paths.push(ClaimPath::parse("jti").expect("a path"));
        for n in 0..3 {
            let claims = child(1, "tool:a", n);
            let fingerprint = Fingerprint::of_projection(&claims, &[&paths]);
            seen.record(&fingerprint, &claims, &paths, Utc::now());
        }
        assert_eq!(seen.len(), 3, "a deny on one child's jti tells them apart");
    }
}
