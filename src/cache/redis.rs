//! The cache shared by all instances, in Redis: access decisions and group members, keyed as in
//! the reference design.
//!
//! | key | value | TTL |
//! |---|---|---|
//! | `toolgate:access:{claims key}` | [`Access`]: the matched policy ids and granted group ids, with the revision, and `mac` | 300 s |
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
//! Redis is not trusted: anyone who can write to it could otherwise grant any policy to any
//! claims on every instance (`{"revision": 1, "policy_ids": [...]}` under an access key). So an
//! access entry carries a MAC (keyed BLAKE3, with a key derived from a secret every instance
//! shares, [`SharedKey`]) over its key and its content; an entry whose MAC does not check out,
//! or that was copied to another key, is ignored, counted and logged, and the instance
//! evaluates the claims itself (docs/semantics.md section 9). Group entries are never read back.
//!
//! Nothing here is on the critical path of a failure: every call is bounded, skipped while
//! Redis is down ([`RedisHealth::may_call`](crate::redis_link::RedisHealth::may_call)), and
//! writes happen in the background.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
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

/// The key that authenticates shared access entries. Every instance sharing a Redis must have
/// the same one; it is derived (BLAKE3 key derivation) from a configured secret, so the secret
/// itself never serves as a MAC key and no entry reveals anything about it.
#[derive(Clone)]
pub struct SharedKey([u8; 32]);

impl SharedKey {
    /// Derives the key from `secret` (`TOOLGATE_REDIS_SECRET`, or else the HMAC token secret,
    /// which every instance verifying the same tokens already shares).
    pub fn derive(secret: &str) -> SharedKey {
        SharedKey(blake3::derive_key(
            "toolgate 2026-11 shared access entries v1",
            secret.as_bytes(),
        ))
    }

    /// The bytes an instance stores for `access` under Redis key `redis_key`: the decision
    /// and its MAC. (Public so that tests and tools can write entries as an instance would.)
    pub fn seal(&self, redis_key: &str, access: Access) -> Option<Vec<u8>> {
        SignedAccess::sign(self, redis_key, access)
    }

    /// The MAC of an access entry's serialised content under Redis key `key`.
    fn mac(&self, key: &str, content: &[u8]) -> blake3::Hash {
        let mut hasher = blake3::Hasher::new_keyed(&self.0);
        hasher.update(&(key.len() as u64).to_le_bytes());
        hasher.update(key.as_bytes());
        hasher.update(content);
        hasher.finalize()
    }
}

impl std::fmt::Debug for SharedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedKey([redacted])")
    }
}

/// An access entry as stored: the decision and its MAC (hex).
#[derive(Debug, Serialize, Deserialize)]
struct SignedAccess {
    #[serde(flatten)]
    access: Access,
    mac: String,
}

impl SignedAccess {
    fn sign(key: &SharedKey, redis_key: &str, access: Access) -> Option<Vec<u8>> {
        let content = serde_json::to_vec(&access).ok()?;
        let mac = key.mac(redis_key, &content).to_hex().to_string();
        serde_json::to_vec(&SignedAccess { access, mac }).ok()
    }

    /// The decision if its MAC checks out for `redis_key` (compared in constant time).
    fn verify(self, key: &SharedKey, redis_key: &str) -> Option<Access> {
        let content = serde_json::to_vec(&self.access).ok()?;
        let given = blake3::Hash::from_hex(self.mac.as_bytes()).ok()?;
        (key.mac(redis_key, &content) == given).then_some(self.access)
    }
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
    key: SharedKey,
    /// Access entries ignored because they were unreadable or failed the MAC check.
    rejected: AtomicU64,
    /// Groups already written at the revision held (written once per group and revision).
    written: Mutex<(u64, HashSet<String>)>,
}

impl SharedCache {
    pub fn new(link: Arc<RedisLink>, key: SharedKey) -> SharedCache {
        SharedCache {
            link,
            key,
            rejected: AtomicU64::new(0),
            written: Mutex::new((0, HashSet::new())),
        }
    }

    /// The access decision another instance (or this one) made for these claims at exactly
    /// `revision`; `None` when there is none, it is of another revision, it fails the MAC
    /// check, or Redis is down or slow.
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
        let Some(access) = serde_json::from_slice::<SignedAccess>(&value)
            .ok()
            .and_then(|signed| signed.verify(&self.key, &key))
        else {
            self.rejected.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                %key,
                "ignoring a shared access entry that is unreadable or fails its integrity check \
                 (written by something without the shared key: check TOOLGATE_REDIS_SECRET on \
                 every instance, and who can write to this Redis)"
            );
            return None;
        };
        // Another revision's entry is invisible.
        (access.revision == revision).then_some(access)
    }

    /// Access entries ignored since start because they failed the integrity check.
    pub fn rejected_count(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
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
        let key = access_key(fingerprint);
        let Some(value) = self.key.seal(&key, access) else {
            return;
        };
        let link = Arc::clone(&self.link);
        let span = command_span("redis SET", "SET");
        tokio::spawn(
            async move {
                let mut entries = vec![(key, value, ACCESS_TTL_SECS)];
                entries.extend(
                    groups
                        .into_iter()
                        .map(|(key, value)| (key, value, GROUP_TTL_SECS)),
                );
                let written = link.set_all(entries).await;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn access(policies: &[&str]) -> Access {
        Access {
            revision: 3,
            policy_ids: policies.iter().map(|id| (*id).to_owned()).collect(),
            group_ids: vec!["g".to_owned()],
            policies: "d".to_owned(),
        }
    }

    fn stored(key: &SharedKey, redis_key: &str, access: Access) -> SignedAccess {
        let bytes = SignedAccess::sign(key, redis_key, access).expect("serialises");
        serde_json::from_slice(&bytes).expect("parses")
    }

    #[test]
    fn a_signed_entry_verifies_under_its_own_key_only() {
        let key = SharedKey::derive("shared secret");
        let entry = stored(&key, "toolgate:access:a", access(&["p"]));
        assert_eq!(
            entry.verify(&key, "toolgate:access:a"),
            Some(access(&["p"]))
        );
        // Copied under another identity's key: refused.
        let entry = stored(&key, "toolgate:access:a", access(&["p"]));
        assert_eq!(entry.verify(&key, "toolgate:access:b"), None);
        // Written by an instance with another secret: refused.
        let entry = stored(
            &SharedKey::derive("other"),
            "toolgate:access:a",
            access(&["p"]),
        );
        assert_eq!(entry.verify(&key, "toolgate:access:a"), None);
    }

    #[test]
    fn a_tampered_entry_is_refused() {
        let key = SharedKey::derive("shared secret");
        let mut entry = stored(&key, "k", access(&["p-read"]));
        entry.access.policy_ids.push("p-admin".to_owned());
        assert_eq!(entry.verify(&key, "k"), None);
        let mut entry = stored(&key, "k", access(&["p-read", "p-deny"]));
        entry.access.policy_ids.pop();
        assert_eq!(
            entry.verify(&key, "k"),
            None,
            "dropping a deny is tampering too"
        );
        let mut entry = stored(&key, "k", access(&["p"]));
        entry.access.revision += 1;
        assert_eq!(entry.verify(&key, "k"), None);
        let mut entry = stored(&key, "k", access(&["p"]));
        entry.mac = "00".repeat(32);
        assert_eq!(entry.verify(&key, "k"), None);
        // The forged entry of issue 12, with no MAC at all, does not even parse.
        assert!(
            serde_json::from_slice::<SignedAccess>(
                br#"{"revision":1,"policy_ids":["p"],"group_ids":[]}"#
            )
            .is_err()
        );
    }

    /// An entry written by a version without the policies' digest verifies (so it is neither
    /// counted nor reported as forged) and carries an empty digest, which no snapshot has.
    #[test]
    fn an_entry_of_an_older_version_verifies_and_has_no_digest() {
        let key = SharedKey::derive("shared secret");
        let old = Access {
            policies: String::new(),
            ..access(&["p"])
        };
        let signed = SignedAccess::sign(&key, "k", old).expect("serialises");
        assert!(!String::from_utf8_lossy(&signed).contains("policies"));
        let entry: SignedAccess = serde_json::from_slice(&signed).expect("parses");
        let verified = entry.verify(&key, "k").expect("its MAC checks out");
        assert!(verified.policies.is_empty());
    }

    #[test]
    fn the_key_is_never_printed() {
        let key = SharedKey::derive("s3cr3t");
        assert!(!format!("{key:?}").contains("s3cr3t"));
    }
}
