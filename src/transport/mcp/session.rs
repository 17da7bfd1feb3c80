//! MCP sessions of the 2025 protocol revisions: what `initialize` creates and `Mcp-Session-Id`
//! names. A session holds no authority: the bearer token is verified on every request, and a
//! session answers only to the identity that created it (a hash of the token's claims,
//! [`crate::service::Caller::identity`]; "subject" below) — to anyone else it does not
//! exist (404), so a leaked session id is worth nothing without a token of that identity.
//!
//! Sessions live in this instance's memory (a client whose session is unknown, after a restart
//! or on another instance, gets 404 and starts a new one, as the transport specifies). They are
//! bounded: at most `per_subject` per subject (a new one evicts that subject's least recently
//! used), and one idle longer than `idle` is gone. Ending a session (DELETE, eviction, expiry)
//! also ends its notification streams.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::watch;

use super::version::Version;
pub use crate::service::mcp::SessionLimits;

/// How often, at most, a new session sweeps out idle ones.
const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// One live session.
#[derive(Debug, Clone)]
pub struct Session {
    /// The negotiated protocol revision.
    pub version: Version,
    /// Resolves when the session ends (its streams stop).
    pub ended: watch::Receiver<()>,
}

struct Entry {
    subject: Arc<str>,
    version: Version,
    /// The App clock's monotonic reading when last used.
    last_used: Duration,
    /// Dropped when the session ends, which wakes every `ended` receiver.
    _alive: watch::Sender<()>,
    ended: watch::Receiver<()>,
}

#[derive(Default)]
struct Table {
    sessions: HashMap<String, Entry>,
    per_subject: HashMap<Arc<str>, usize>,
    last_sweep: Option<Duration>,
}

impl Table {
    fn remove(&mut self, id: &str) -> bool {
        let Some(entry) = self.sessions.remove(id) else {
            return false;
        };
        if let Some(count) = self.per_subject.get_mut(&entry.subject) {
            *count -= 1;
            if *count == 0 {
                self.per_subject.remove(&entry.subject);
            }
        }
        true
    }
}

/// The live sessions of this instance.
pub struct Sessions {
    table: Mutex<Table>,
    limits: SessionLimits,
}

/// What [`Sessions::create`] did besides creating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Created {
    /// Sessions of the same subject ended to stay within the cap.
    pub evicted: usize,
}

impl Sessions {
    pub fn new(limits: SessionLimits) -> Sessions {
        Sessions {
            table: Mutex::new(Table::default()),
            limits: SessionLimits {
                per_subject: limits.per_subject.max(1),
                idle: limits.idle,
            },
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new session of `subject` at `version`, at `now` (the App clock's monotonic reading);
    /// its id is 128 random bits in hex.
    pub fn create(&self, subject: &str, version: Version, now: Duration) -> (String, Created) {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let mut table = self.lock();
        if table
            .last_sweep
            .is_none_or(|last| now.saturating_sub(last) >= SWEEP_EVERY)
        {
            table.last_sweep = Some(now);
            let idle = self.limits.idle;
            let expired: Vec<String> = table
                .sessions
                .iter()
                .filter(|(_, entry)| now.saturating_sub(entry.last_used) >= idle)
                .map(|(id, _)| id.clone())
                .collect();
            for id in expired {
                table.remove(&id);
            }
        }
        let subject: Arc<str> = match table.per_subject.get_key_value(subject) {
            Some((existing, _)) => Arc::clone(existing),
            None => Arc::from(subject),
        };
        let mut evicted = 0;
        while table.per_subject.get(&subject).copied().unwrap_or(0) >= self.limits.per_subject {
            let oldest = table
                .sessions
                .iter()
                .filter(|(_, entry)| entry.subject == subject)
                .min_by_key(|(_, entry)| entry.last_used)
                .map(|(id, _)| id.clone());
            match oldest {
                Some(oldest) => {
                    table.remove(&oldest);
                    evicted += 1;
                }
                None => break,
            }
        }
        let (alive, ended) = watch::channel(());
        table.sessions.insert(
            id.clone(),
            Entry {
                subject: Arc::clone(&subject),
                version,
                last_used: now,
                _alive: alive,
                ended,
            },
        );
        *table.per_subject.entry(subject).or_insert(0) += 1;
        (id, Created { evicted })
    }

    /// The session `id` of `subject`, marked used at `now`; `None` when there is no such
    /// session, it idled out, or another subject owns it.
    pub fn touch(&self, id: &str, subject: &str, now: Duration) -> Option<Session> {
        let mut table = self.lock();
        let entry = table.sessions.get_mut(id)?;
        if &*entry.subject != subject {
            return None;
        }
        if now.saturating_sub(entry.last_used) >= self.limits.idle {
            table.remove(id);
            return None;
        }
        entry.last_used = now;
        Some(Session {
            version: entry.version,
            ended: entry.ended.clone(),
        })
    }

    /// Ends the session `id` of `subject`; whether there was one.
    pub fn end(&self, id: &str, subject: &str) -> bool {
        let mut table = self.lock();
        match table.sessions.get(id) {
            Some(entry) if &*entry.subject == subject => table.remove(id),
            _ => false,
        }
    }

    /// Live sessions.
    pub fn count(&self) -> usize {
        self.lock().sessions.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sessions(per_subject: usize, idle: Duration) -> Sessions {
        Sessions::new(SessionLimits { per_subject, idle })
    }

    /// The clock's reading `ms` milliseconds in.
    fn at(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    #[test]
    fn a_session_answers_only_to_its_subject() {
        let table = sessions(4, Duration::from_secs(60));
        let (id, _) = table.create("alice", Version::V2025_11_25, at(0));
        assert_eq!(
            table.touch(&id, "alice", at(1)).map(|s| s.version),
            Some(Version::V2025_11_25)
        );
        assert!(table.touch(&id, "mallory", at(1)).is_none());
        assert!(!table.end(&id, "mallory"), "nor can another subject end it");
        assert!(table.touch("nope", "alice", at(1)).is_none());
        assert!(table.end(&id, "alice"));
        assert!(table.touch(&id, "alice", at(1)).is_none(), "ended");
        assert_eq!(table.count(), 0);
    }

    #[tokio::test]
    async fn the_cap_evicts_the_least_recently_used_and_ends_its_streams() {
        let table = sessions(2, Duration::from_secs(60));
        let (first, _) = table.create("alice", Version::V2025_06_18, at(0));
        let mut first_ended = table.touch(&first, "alice", at(0)).expect("live").ended;
        let (second, _) = table.create("alice", Version::V2025_06_18, at(2));
        table.touch(&first, "alice", at(4)).expect("live"); // first is now the more recent
        let mut second_ended = table.touch(&second, "alice", at(4)).expect("live").ended;
        table.touch(&first, "alice", at(6)).expect("live");
        let (_third, created) = table.create("alice", Version::V2025_06_18, at(6));
        assert_eq!(created.evicted, 1);
        assert!(
            table.touch(&second, "alice", at(6)).is_none(),
            "the LRU went"
        );
        assert!(second_ended.changed().await.is_err(), "its streams end");
        assert!(table.touch(&first, "alice", at(6)).is_some());
        let (_other, created) = table.create("bob", Version::V2025_06_18, at(6));
        assert_eq!(created.evicted, 0, "the cap is per subject");
        assert_eq!(table.count(), 3);
        assert!(
            tokio::time::timeout(Duration::from_millis(20), first_ended.changed())
                .await
                .is_err(),
            "a live session's streams go on"
        );
    }

    #[test]
    fn an_idle_session_is_gone() {
        let table = sessions(2, Duration::from_millis(5));
        let (id, _) = table.create("alice", Version::V2025_06_18, at(0));
        assert!(
            table.touch(&id, "alice", at(4)).is_some(),
            "used within the idle time"
        );
        assert!(
            table.touch(&id, "alice", at(8)).is_some(),
            "idle time counts from last use"
        );
        assert!(table.touch(&id, "alice", at(14)).is_none());
        assert_eq!(table.count(), 0);
    }
}
