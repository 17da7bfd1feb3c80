//! The claim sets this instance served recently, for the impact of a change on them
//! (`POST /admin/impact`).
//!
//! Kept in memory only, as each identity's projection onto the claims the policies read at the
//! time ([`project`]): never whole tokens, never a claim no policy reads. Bounded in number
//! ([`SeenClaims::new`]) and in age ([`WINDOW`]); when full, the least recently seen set makes
//! room, one at a time (forgetting half at once dropped thousands of projections inside one
//! request: a 20 ms stall). Recording a request is one hash lookup and a timestamp.

use std::collections::HashSet;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use lru::LruCache;

use crate::domain::claims::{ClaimPath, Claims, project};
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
}

impl SeenClaims {
    /// Remembers at most `capacity` claim sets (0: none).
    pub fn new(capacity: usize) -> SeenClaims {
        SeenClaims {
            entries: NonZeroUsize::new(capacity)
                .map(|capacity| Mutex::new(LruCache::new(capacity))),
        }
    }

    /// Notes that claims whose projection onto `paths` has `fingerprint` were served at `now`.
    pub fn record(
        &self,
        fingerprint: &Fingerprint,
        claims: &Claims,
        paths: &[ClaimPath],
        now: DateTime<Utc>,
    ) {
        let Some(entries) = &self.entries else {
            return;
        };
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
        entries.put(
            *fingerprint,
            Seen {
                claims: Arc::new(project(claims, paths)),
                last_seen: now,
            },
        );
    }

    /// The distinct claim sets seen within [`WINDOW`] of `now`, most recently seen first. Sets
    /// that `paths` (what the policies read now) cannot tell apart are listed once, at the
    /// latest time any of them was seen.
    pub fn recent(&self, now: DateTime<Utc>, paths: &[ClaimPath]) -> Vec<Seen> {
        let Some(entries) = &self.entries else {
            return Vec::new();
        };
        let mut recent: Vec<Seen> = {
            let entries = entries.lock().unwrap_or_else(PoisonError::into_inner);
            entries
                .iter()
                .map(|(_, seen)| seen)
                .filter(|seen| within_window(seen, now))
                .cloned()
                .collect()
        };
        recent.sort_by_key(|seen| std::cmp::Reverse(seen.last_seen));
        let mut listed = HashSet::new();
        recent.retain(|seen| listed.insert(Fingerprint::of_projection(&seen.claims, &[paths])));
        recent
    }

    pub fn len(&self) -> usize {
        self.entries.as_ref().map_or(0, |entries| {
            entries.lock().unwrap_or_else(PoisonError::into_inner).len()
        })
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
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
}
