//! The stream hub: who is subscribed to which manifest, and the fan-out of each new revision.
//!
//! Subscribers are grouped by (claims key, options), the manifest cache's key: the claims
//! projected onto the paths the current snapshot's policies and the admin rule read. Per new
//! revision the hub computes each group's manifest once, diffs it once against the group's
//! [`ManifestSummary`], encodes the `tools_changed` event once, and hands the same bytes to every
//! member. Fan-out therefore costs one manifest per distinct group plus one queue push per
//! connection.
//!
//! When a revision changes *which* paths the policies read (a policy on `sid` appears), the
//! grouping is no longer exact: members that shared a key may now differ at a path that is
//! read. Each member keeps its own claims, so that fan-out regroups the members under the new
//! keys, computes one manifest per new key and one diff per (old group, new key) pair: every
//! member gets exactly the change to *its* manifest.
//!
//! Backpressure: each member has an [`Outbox`] bounded in bytes, and every outbox of every hub
//! counts against one [`StreamBudget`]. A member whose outbox would go past its budget is not
//! waited for; its queue is dropped and it is marked *lagged*, and its connection sends a
//! fresh `tools` snapshot once its reader catches up; past the shared budget, the largest
//! queues are coalesced that way first. Nothing here ever blocks on a reader.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;

mod live;
mod plan;
mod runs;

pub use self::live::{LiveManifest, LiveView, NOTIFICATIONS_KEPT, Notified};

use self::plan::{Job, Move, change_frame, plan};
use super::budget::StreamBudget;
use super::frame::EventKind;
pub use super::frame::Frame;
use super::outbox::{Outbox, Pushed};
use crate::cache::CacheKey;
use crate::domain::claims::{ClaimPath, Claims};
use crate::domain::manifest::ManifestOptions;
use crate::domain::manifest_diff::ManifestSummary;
use crate::domain::snapshot::Snapshot;
use crate::service::{CatalogService, Manifests};

/// The kinds of stream, each capped per subject on its own: an agent's SSE manifest streams
/// and its MCP notification streams (`GET /mcp`, `subscriptions/listen`) are opened by
/// different clients, and one kind filling its cap must not lock the other out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamClass {
    /// `GET /agents/tools/stream` and its aliases.
    Sse,
    /// MCP notification streams.
    Mcp,
}

impl StreamClass {
    pub const ALL: [StreamClass; 2] = [StreamClass::Sse, StreamClass::Mcp];

    const fn index(self) -> usize {
        match self {
            StreamClass::Sse => 0,
            StreamClass::Mcp => 1,
        }
    }

    /// What the class's streams are called in messages.
    pub const fn noun(self) -> &'static str {
        match self {
            StreamClass::Sse => "manifest streams",
            StreamClass::Mcp => "MCP notification streams",
        }
    }
}

/// Why a subscription was refused.
#[derive(Debug, thiserror::Error)]
pub enum SubscribeError {
    #[error(
        "this subject already has {limit} open {}; close one before opening another",
        .class.noun()
    )]
    TooManyStreams { limit: usize, class: StreamClass },
    #[error("the gateway is shutting down; reconnect to another instance")]
    ShuttingDown,
}

/// Limits of the hub.
#[derive(Debug, Clone, Copy)]
pub struct HubLimits {
    /// Concurrent streams per `sub`, by [`StreamClass`] (SSE, MCP).
    pub per_subject: [usize; StreamClass::ALL.len()],
    /// Bytes of events queued per connection before it counts as lagging.
    pub queue_bytes: usize,
}

/// All live subscriptions.
pub struct StreamHub {
    state: Mutex<HubState>,
    limits: HubLimits,
    /// Shared with every other hub: all streams' queued and unwritten bytes together.
    budget: Arc<StreamBudget>,
    /// Where claims keys come from (the same keys as the manifest cache's).
    manifests: Arc<Manifests>,
    /// Whose revisions are fanned out, and whose snapshot a subscription joins at.
    catalog: Arc<CatalogService>,
    next_id: AtomicU64,
    /// Times a member's queue was dropped because it went past its budget.
    lagged: AtomicU64,
    /// Events written to streams, by [`EventKind::index`].
    sent: [AtomicU64; EventKind::ALL.len()],
    /// The last revisions fanned out, with their reach.
    notifications: live::Notifications,
}

#[derive(Default)]
struct HubState {
    groups: HashMap<CacheKey, Group>,
    /// The group each member is in now (members move when the read paths change).
    member_keys: HashMap<u64, CacheKey>,
    /// Open streams of each subject, by [`StreamClass`].
    per_subject: HashMap<Arc<str>, [usize; StreamClass::ALL.len()]>,
    /// Open streams by [`StreamClass`].
    subscribers: [usize; StreamClass::ALL.len()],
    /// Set by [`StreamHub::close`]: no new subscriptions.
    closed: bool,
}

/// Subscribers of one manifest and the state their last event left them in.
struct Group {
    /// Claims of one member: equal to every member's at the paths the key was made from.
    claims: Arc<Claims>,
    /// The paths the policies read at the snapshot the key was made at.
    read_paths: Arc<[ClaimPath]>,
    summary: Arc<ManifestSummary>,
    members: HashMap<u64, Member>,
}

struct Member {
    outbox: Arc<Outbox>,
    class: StreamClass,
    subject: Arc<str>,
    /// The member's own claims, to regroup it when the read paths change.
    claims: Arc<Claims>,
    /// The run the member's token acts in, if any (its state moves the member).
    run: Option<Arc<str>>,
}

/// One connection's place in the hub. Dropping it (the connection closed) removes it.
pub struct Subscription {
    hub: Arc<StreamHub>,
    class: StreamClass,
    subject: Arc<str>,
    id: u64,
    /// Events for this connection, in order, bounded in bytes.
    pub outbox: Arc<Outbox>,
    /// The connection's own claims.
    pub claims: Arc<Claims>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut state = self.hub.lock();
        if let Some(key) = state.member_keys.remove(&self.id)
            && let Some(group) = state.groups.get_mut(&key)
        {
            group.members.remove(&self.id);
            if group.members.is_empty() {
                state.groups.remove(&key);
            }
        }
        if let Some(counts) = state.per_subject.get_mut(&self.subject) {
            counts[self.class.index()] -= 1;
            if counts.iter().all(|count| *count == 0) {
                state.per_subject.remove(&self.subject);
            }
        }
        state.subscribers[self.class.index()] -= 1;
    }
}

impl Subscription {
    /// The member's id in the hub.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Counts an event this connection hands to its client.
    pub fn sent(&self, kind: EventKind) {
        self.hub.sent[kind.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// `bytes`, counted in the shared stream budget until the connection's writer has sent
    /// them and let go.
    pub fn writing(&self, bytes: Bytes) -> Bytes {
        self.outbox.writing(bytes)
    }
}

impl StreamHub {
    pub fn new(
        limits: HubLimits,
        budget: Arc<StreamBudget>,
        manifests: Arc<Manifests>,
        catalog: Arc<CatalogService>,
    ) -> Arc<StreamHub> {
        Arc::new(StreamHub {
            state: Mutex::new(HubState::default()),
            limits: HubLimits {
                per_subject: limits.per_subject.map(|cap| cap.max(1)),
                queue_bytes: limits.queue_bytes.max(1),
            },
            budget,
            manifests,
            catalog,
            next_id: AtomicU64::new(0),
            lagged: AtomicU64::new(0),
            sent: Default::default(),
            notifications: live::Notifications::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, HubState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers a connection of class `class` of `subject` for the manifest of (`claims`, `options`). Returns
    /// the subscription, the snapshot its first event must be rendered from and the claims key
    /// at that snapshot.
    ///
    /// The snapshot is the current one when the subscription joins its group, checked under the
    /// hub's lock: every change after it reaches this connection as an event. A new group's
    /// first manifest is computed outside the lock (it is CPU work proportional to the catalog,
    /// and every subscribe and fan-out waits on the lock); if the catalog moved meanwhile, the
    /// subscription starts over at the newer snapshot.
    pub fn subscribe(
        self: &Arc<Self>,
        class: StreamClass,
        subject: &str,
        claims: Arc<Claims>,
        options: ManifestOptions,
    ) -> Result<(Subscription, Arc<Snapshot>, CacheKey), SubscribeError> {
        let catalog = &self.catalog;
        let mut new_group: Option<(u64, Arc<ManifestSummary>)> = None;
        loop {
            let snapshot = catalog.snapshot();
            let key = self.manifests.key(&snapshot, &claims, options.clone());
            let mut state = self.lock();
            if state.closed {
                return Err(SubscribeError::ShuttingDown);
            }
            let limit = self.limits.per_subject[class.index()];
            if self.open_of(&state, class, subject) >= limit {
                return Err(SubscribeError::TooManyStreams { limit, class });
            }
            if catalog.snapshot().revision() != snapshot.revision() {
                continue; // published meanwhile: join at the newer snapshot
            }
            if !state.groups.contains_key(&key) {
                let summary = match new_group.take() {
                    Some((revision, summary)) if revision == snapshot.revision() => summary,
                    _ => {
                        drop(state);
                        let manifest = snapshot.manifest(&claims, &key.options);
                        new_group = Some((
                            snapshot.revision(),
                            Arc::new(ManifestSummary::of(&manifest)),
                        ));
                        continue;
                    }
                };
                state.groups.insert(
                    key.clone(),
                    Group {
                        claims: Arc::clone(&claims),
                        read_paths: Arc::from(snapshot.read_paths()),
                        summary,
                        members: HashMap::new(),
                    },
                );
            }
            let subscription = self.join(&mut state, (class, subject), &claims, &key);
            return Ok((subscription, snapshot, key));
        }
    }

    /// Streams of `class` open for `subject`.
    fn open_of(&self, state: &HubState, class: StreamClass, subject: &str) -> usize {
        state
            .per_subject
            .get(subject)
            .map_or(0, |counts| counts[class.index()])
    }

    /// Adds a member to the group at `key` (which exists) under the lock.
    fn join(
        self: &Arc<Self>,
        state: &mut HubState,
        (class, subject): (StreamClass, &str),
        claims: &Arc<Claims>,
        key: &CacheKey,
    ) -> Subscription {
        let outbox = Outbox::new(&self.budget, self.limits.queue_bytes);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let subject: Arc<str> = match state.per_subject.get_key_value(subject) {
            Some((existing, _)) => Arc::clone(existing),
            None => Arc::from(subject),
        };
        if let Some(group) = state.groups.get_mut(key) {
            group.members.insert(
                id,
                Member {
                    outbox: Arc::clone(&outbox),
                    class,
                    subject: Arc::clone(&subject),
                    claims: Arc::clone(claims),
                    run: match crate::domain::run::RunClaim::of(claims) {
                        Some(Ok(run)) => Some(Arc::from(run.id)),
                        _ => None,
                    },
                },
            );
        }
        state.member_keys.insert(id, key.clone());
        state.per_subject.entry(Arc::clone(&subject)).or_default()[class.index()] += 1;
        state.subscribers[class.index()] += 1;
        Subscription {
            hub: Arc::clone(self),
            class,
            subject,
            id,
            outbox,
            claims: Arc::clone(claims),
        }
    }

    /// Ends every open stream (each sends what it has queued and finishes) and refuses new
    /// ones: what a graceful shutdown needs, since a stream never finishes on its own.
    pub fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        for member in state
            .groups
            .values()
            .flat_map(|group| group.members.values())
        {
            member.outbox.close();
        }
        state.groups.clear();
        state.member_keys.clear();
    }

    /// Open streams of every class.
    pub fn subscriber_count(&self) -> usize {
        self.lock().subscribers.iter().sum()
    }

    /// Open streams of `class`.
    pub fn subscriber_count_of(&self, class: StreamClass) -> usize {
        self.lock().subscribers[class.index()]
    }

    /// Distinct (claims key, options) among open streams.
    pub fn group_count(&self) -> usize {
        self.lock().groups.len()
    }

    /// The budget all streams share.
    pub fn budget(&self) -> &Arc<StreamBudget> {
        &self.budget
    }

    /// The manifest service the hub keys and renders with.
    pub fn manifests(&self) -> &Arc<Manifests> {
        &self.manifests
    }

    /// The catalog whose revisions the hub fans out.
    pub fn catalog(&self) -> &Arc<CatalogService> {
        &self.catalog
    }

    /// Times a connection fell behind and was coalesced to a fresh snapshot.
    pub fn lagged_count(&self) -> u64 {
        self.lagged.load(Ordering::Relaxed)
    }

    /// Events of `kind` written to streams since start.
    pub fn events_sent(&self, kind: EventKind) -> u64 {
        self.sent[kind.index()].load(Ordering::Relaxed)
    }

    /// Brings every group to `snapshot`: one manifest per (new) key, one diff and one encoded
    /// event per group whose manifest changed, handed to each member without waiting for any.
    pub async fn fan_out(&self, snapshot: Arc<Snapshot>) {
        let revision = snapshot.revision();
        // A group ahead of the revision the catalog serves now was made before the store went
        // back (restored from a backup): it is brought to this snapshot too. (A group ahead of
        // `snapshot` only, opened while this fan-out was on its way, is left alone.)
        let serving = self.catalog.snapshot().revision();
        let jobs: Vec<Job> = self
            .lock()
            .groups
            .iter()
            .filter(|(_, group)| {
                let at = group.summary.revision();
                at < revision || at > serving
            })
            .map(|(key, group)| Job {
                from: key.clone(),
                previous: Arc::clone(&group.summary),
                claims: Arc::clone(&group.claims),
                regroup: (*group.read_paths != *snapshot.read_paths()).then(|| {
                    group
                        .members
                        .iter()
                        .map(|(&id, member)| (id, Arc::clone(&member.claims)))
                        .collect()
                }),
            })
            .collect();
        if jobs.is_empty() {
            return;
        }
        // Manifests are CPU work proportional to the catalog: keep them off the I/O threads.
        let manifests = Arc::clone(&self.manifests);
        let new_paths: Arc<[ClaimPath]> = Arc::from(snapshot.read_paths());
        let computed = tokio::task::spawn_blocking(move || plan(&snapshot, &manifests, jobs)).await;
        let moves = match computed {
            Ok(moves) => moves,
            Err(error) => {
                tracing::error!(%error, revision, "the stream fan-out failed");
                return;
            }
        };
        let (mut manifests, mut streams) = (0, 0);
        let mut state = self.lock();
        for step in moves {
            let reached = self.apply(&mut state, step, &new_paths);
            manifests += usize::from(reached > 0);
            streams += reached;
        }
        drop(state);
        self.notifications.record(Notified {
            revision,
            at: self.catalog.clock().now(),
            manifests,
            streams,
        });
    }

    /// Applies `step`; how many streams it sent an event.
    fn apply(&self, state: &mut HubState, step: Move, new_paths: &Arc<[ClaimPath]>) -> usize {
        let Some(group) = state.groups.get_mut(&step.from) else {
            return 0; // everyone left meanwhile
        };
        if !Arc::ptr_eq(&group.summary, &step.previous) {
            return 0; // the group was re-created at a newer revision meanwhile
        }
        let Some(ids) = step.members else {
            group.summary = step.summary;
            let Some(frame) = &step.frame else { return 0 };
            for member in group.members.values() {
                self.deliver(member, frame);
            }
            return group.members.len();
        };
        let moving: Vec<(u64, Member)> = ids
            .into_iter()
            .filter_map(|id| group.members.remove(&id).map(|member| (id, member)))
            .collect();
        if group.members.is_empty() {
            state.groups.remove(&step.from);
        }
        let mut reached = 0;
        if let Some(frame) = &step.frame {
            for (_, member) in &moving {
                self.deliver(member, frame);
            }
            reached = moving.len();
        }
        let target = state
            .groups
            .entry(step.to.clone())
            .or_insert_with(|| Group {
                claims: step.claims,
                read_paths: Arc::clone(new_paths),
                summary: step.summary,
                members: HashMap::new(),
            });
        for (id, member) in moving {
            target.members.insert(id, member);
            state.member_keys.insert(id, step.to.clone());
        }
        reached
    }

    fn deliver(&self, member: &Member, frame: &Arc<Frame>) {
        self.budget.make_room(frame.bytes.len());
        if member.outbox.push(Arc::clone(frame)) == Pushed::Lagged {
            self.lagged.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Fans out every revision the catalog publishes, for as long as both the hub and the
    /// catalog exist. Holds neither: a stopped server must release its store.
    pub fn spawn(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let hub = Arc::downgrade(self);
        let mut revisions = self.catalog.subscribe();
        let catalog = Arc::downgrade(&self.catalog);
        tokio::spawn(async move {
            while revisions.changed().await.is_ok() {
                revisions.mark_unchanged();
                let (Some(hub), Some(catalog)) = (hub.upgrade(), catalog.upgrade()) else {
                    break;
                };
                let snapshot = catalog.snapshot();
                drop(catalog);
                hub.fan_out(snapshot).await;
            }
        })
    }
}
