//! The cache shared by all instances, in Redis: access decisions and group members, keyed as in
//! the reference design.
//!
//! | key | value | TTL |
//! |---|---|---|
//! | `toolgate:access:{claims fingerprint}` | [`Access`]: the matched policy ids and granted group ids, with the revision | 300 s |
//! | `toolgate:group:{group id}` | `{"revision", "tool_ids"}`: the group's resolved members | 600 s |
//!
//! Invalidation is by revision, not by TTL: every value carries the revision it was computed
//! at, and a reader accepts it only at exactly its own snapshot's revision, so the moment an
//! instance moves to a new revision every older entry is invisible to it (the TTLs only bound
//! the memory that dead entries hold). An instance whose local cache misses asks for the access
//! decision before evaluating claims itself, and shares its own evaluations; group entries are
//! written once per group and revision, for operators and tools that read the shared cache (an
//! instance resolves members from its own snapshot, which is faster than any round trip).
//!
//! Nothing here is on the critical path of a failure: every call is bounded, skipped while
//! Redis is down ([`RedisHealth::may_call`](crate::redis_link::RedisHealth::may_call)), and
//! writes happen in the background.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use redis::AsyncCommands;
use serde::{Deserialize, Serialize};
use tracing::Instrument as _;

use crate::domain::access::Access;
use crate::domain::fingerprint::Fingerprint;
use crate::domain::snapshot::Snapshot;
use crate::redis_link::{RESPONSE_TIMEOUT, RedisLink, command_span};

/// Seconds an access entry lives (the reference design's value).
pub const ACCESS_TTL_SECS: u64 = 300;
/// Seconds a group entry lives (the reference design's value).
pub const GROUP_TTL_SECS: u64 = 600;

/// `toolgate:access:{fingerprint}`.
pub fn access_key(fingerprint: &Fingerprint) -> String {
    format!("toolgate:access:{fingerprint}")
}

/// `toolgate:group:{group id}`.
pub fn group_key(group_id: &str) -> String {
    format!("toolgate:group:{group_id}")
}

/// A group's members as shared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupEntry {
    pub revision: u64,
    pub tool_ids: Vec<String>,
}

/// Access decisions and group members shared through Redis.
pub struct SharedCache {
    link: Arc<RedisLink>,
    /// Groups already written at the revision held (written once per group and revision).
    written: Mutex<(u64, HashSet<String>)>,
}

impl SharedCache {
    pub fn new(link: Arc<RedisLink>) -> SharedCache {
        SharedCache {
            link,
            written: Mutex::new((0, HashSet::new())),
        }
    }

    /// The access decision another instance (or this one) made for these claims at exactly
    /// `revision`; `None` when there is none, it is of another revision, or Redis is down or
    /// slow.
    pub async fn access(&self, fingerprint: &Fingerprint, revision: u64) -> Option<Access> {
        let health = self.link.health();
        if !health.may_call() {
            return None;
        }
        let mut connection = self.link.commands();
        let key = access_key(fingerprint);
        let read =
            tokio::time::timeout(RESPONSE_TIMEOUT, connection.get::<_, Option<Vec<u8>>>(&key));
        let span = command_span("redis GET", "GET");
        let value = match crate::telemetry::in_span(&span, read).await {
            Ok(answer) => health.record(answer).ok()??,
            Err(_) => {
                health.mark_down("a Redis read timed out");
                return None;
            }
        };
        match serde_json::from_slice::<Access>(&value) {
            Ok(access) if access.revision == revision => Some(access),
            Ok(_) => None, // another revision's: invisible
            Err(error) => {
                tracing::warn!(%error, %key, "ignoring an unreadable shared access entry");
                None
            }
        }
    }

    /// Shares an access decision this instance evaluated, and the members of the groups it
    /// grants that were not shared yet at this revision. In the background; never fails.
    pub fn remember(&self, fingerprint: &Fingerprint, access: Access, snapshot: &Snapshot) {
        if self.link.health().is_down() {
            return; // the next successful probe brings writes back
        }
        let groups: Vec<(String, Vec<u8>)> = self
            .unwritten_groups(&access)
            .into_iter()
            .filter_map(|id| {
                let members = snapshot.group_members(&id)?;
                let entry = GroupEntry {
                    revision: access.revision,
                    tool_ids: members.into_iter().map(|member| member.tool_id).collect(),
                };
                Some((group_key(&id), serde_json::to_vec(&entry).ok()?))
            })
            .collect();
        let Ok(value) = serde_json::to_vec(&access) else {
            return;
        };
        let key = access_key(fingerprint);
        let link = Arc::clone(&self.link);
        let span = command_span("redis SET", "SET");
        tokio::spawn(
            async move {
                let mut pipe = redis::pipe();
                pipe.set_ex(&key, value, ACCESS_TTL_SECS).ignore();
                for (key, value) in groups {
                    pipe.set_ex(key, value, GROUP_TTL_SECS).ignore();
                }
                let mut connection = link.commands();
                let written: Result<(), _> = pipe.query_async(&mut connection).await;
                let _ = link.health().record(written);
            }
            .instrument(span),
        );
    }

    /// The granted groups not yet written at `access.revision`, now marked as written.
    fn unwritten_groups(&self, access: &Access) -> Vec<String> {
        let mut written = self
            .written
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if written.0 != access.revision {
            if written.0 > access.revision {
                return Vec::new(); // an older revision's decision: nothing new to share
            }
            *written = (access.revision, HashSet::new());
        }
        access
            .group_ids
            .iter()
            .filter(|id| written.1.insert((*id).clone()))
            .cloned()
            .collect()
    }
}
