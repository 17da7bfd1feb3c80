//! The stream hub: who is subscribed to which manifest, and the fan-out of each new revision.
//!
//! Subscribers are grouped by (claims fingerprint, options) — the manifest cache's key. Per new
//! revision the hub computes each group's manifest once, diffs it once against the group's
//! [`ManifestSummary`], encodes the `tools_changed` event once, and hands the same bytes to every
//! member. Fan-out therefore costs one manifest per distinct group plus one `try_send` per
//! connection.
//!
//! Backpressure: each member has a bounded channel. A member whose channel is full is not
//! waited for; it is marked *lagged*, and its connection replaces whatever it missed with a
//! fresh `tools` snapshot once its reader catches up. Nothing here ever blocks on a reader.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use tokio::sync::mpsc;

use super::frame::{EventKind, encode};
use crate::cache::CacheKey;
use crate::domain::claims::Claims;
use crate::domain::fingerprint::Fingerprint;
use crate::domain::manifest::ManifestOptions;
use crate::domain::manifest_diff::{ManifestDiff, ManifestSummary};
use crate::domain::snapshot::Snapshot;
use crate::service::CatalogService;

/// A `tools_changed` event, shared by every member of a group.
#[derive(Debug)]
pub struct Frame {
    /// The etag the change applies to; a connection at another etag needs a snapshot instead.
    pub from: Arc<str>,
    /// The etag after the change (the event's `id`).
    pub to: Arc<str>,
    /// The encoded event.
    pub bytes: Bytes,
}

/// Why a subscription was refused.
#[derive(Debug, thiserror::Error)]
pub enum SubscribeError {
    #[error("this subject already has {limit} open streams; close one before opening another")]
    TooManyStreams { limit: usize },
    #[error("the gateway is shutting down; reconnect to another instance")]
    ShuttingDown,
}

/// Limits of the hub.
#[derive(Debug, Clone, Copy)]
pub struct HubLimits {
    /// Concurrent streams per `sub`.
    pub max_streams_per_subject: usize,
    /// Events buffered per connection before it counts as lagging.
    pub buffer: usize,
}

/// All live subscriptions.
pub struct StreamHub {
    state: Mutex<HubState>,
    limits: HubLimits,
    next_id: AtomicU64,
    /// Times a member was coalesced because its buffer was full.
    lagged: AtomicU64,
    /// Events written to streams, by [`EventKind::index`].
    sent: [AtomicU64; EventKind::ALL.len()],
}

#[derive(Default)]
struct HubState {
    groups: HashMap<CacheKey, Group>,
    per_subject: HashMap<Arc<str>, usize>,
    subscribers: usize,
    /// Set by [`StreamHub::close`]: no new subscriptions.
    closed: bool,
}

/// Subscribers of one manifest and the state their last event left them in.
struct Group {
    claims: Arc<Claims>,
    summary: Arc<ManifestSummary>,
    members: HashMap<u64, Member>,
}

struct Member {
    frames: mpsc::Sender<Arc<Frame>>,
    lagged: Arc<AtomicBool>,
}

/// One connection's place in the hub. Dropping it (the connection closed) removes it.
pub struct Subscription {
    hub: Arc<StreamHub>,
    key: CacheKey,
    subject: Arc<str>,
    id: u64,
    /// Events for this connection, in order.
    pub frames: mpsc::Receiver<Arc<Frame>>,
    /// Set when an event could not be buffered: the connection must resynchronise.
    pub lagged: Arc<AtomicBool>,
    /// The group's claims (equal to the connection's up to volatile claims).
    pub claims: Arc<Claims>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut state = self.hub.lock();
        if let Some(group) = state.groups.get_mut(&self.key) {
            group.members.remove(&self.id);
            if group.members.is_empty() {
                state.groups.remove(&self.key);
            }
        }
        if let Some(count) = state.per_subject.get_mut(&self.subject) {
            *count -= 1;
            if *count == 0 {
                state.per_subject.remove(&self.subject);
            }
        }
        state.subscribers -= 1;
    }
}

impl Subscription {
    /// Counts an event this connection hands to its client.
    pub fn sent(&self, kind: EventKind) {
        self.hub.sent[kind.index()].fetch_add(1, Ordering::Relaxed);
    }
}

impl StreamHub {
    pub fn new(limits: HubLimits) -> Arc<StreamHub> {
        Arc::new(StreamHub {
            state: Mutex::new(HubState::default()),
            limits: HubLimits {
                max_streams_per_subject: limits.max_streams_per_subject.max(1),
                buffer: limits.buffer.max(1),
            },
            next_id: AtomicU64::new(0),
            lagged: AtomicU64::new(0),
            sent: Default::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, HubState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers a connection of `subject` for the manifest of (`claims`, `options`). Returns
    /// the subscription and the snapshot its first event must be rendered from.
    ///
    /// The snapshot is loaded under the hub's lock, so it is never older than the state of the
    /// group being joined: every change after it reaches this connection as an event.
    pub fn subscribe(
        self: &Arc<Self>,
        subject: &str,
        claims: &Claims,
        options: ManifestOptions,
        catalog: &CatalogService,
    ) -> Result<(Subscription, Arc<Snapshot>), SubscribeError> {
        let key = CacheKey {
            fingerprint: Fingerprint::of(claims),
            options,
        };
        let mut state = self.lock();
        if state.closed {
            return Err(SubscribeError::ShuttingDown);
        }
        let subject: Arc<str> = match state.per_subject.get_key_value(subject) {
            Some((_, &count)) if count >= self.limits.max_streams_per_subject => {
                return Err(SubscribeError::TooManyStreams {
                    limit: self.limits.max_streams_per_subject,
                });
            }
            Some((existing, _)) => Arc::clone(existing),
            None => Arc::from(subject),
        };
        let snapshot = catalog.snapshot();
        let group = state.groups.entry(key.clone()).or_insert_with(|| {
            let manifest = snapshot.manifest(claims, &key.options);
            Group {
                claims: Arc::new(claims.clone()),
                summary: Arc::new(ManifestSummary::of(&manifest)),
                members: HashMap::new(),
            }
        });
        let (sender, frames) = mpsc::channel(self.limits.buffer);
        let lagged = Arc::new(AtomicBool::new(false));
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        group.members.insert(
            id,
            Member {
                frames: sender,
                lagged: Arc::clone(&lagged),
            },
        );
        let claims = Arc::clone(&group.claims);
        *state.per_subject.entry(Arc::clone(&subject)).or_insert(0) += 1;
        state.subscribers += 1;
        drop(state);
        let subscription = Subscription {
            hub: Arc::clone(self),
            key,
            subject,
            id,
            frames,
            lagged,
            claims,
        };
        Ok((subscription, snapshot))
    }

    /// Ends every open stream (their event channels close, so each sends what it has and
    /// finishes) and refuses new ones: what a graceful shutdown needs, since a stream never
    /// finishes on its own.
    pub fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        state.groups.clear();
    }

    /// Open streams.
    pub fn subscriber_count(&self) -> usize {
        self.lock().subscribers
    }

    /// Distinct (claims fingerprint, options) among open streams.
    pub fn group_count(&self) -> usize {
        self.lock().groups.len()
    }

    /// Times a connection fell behind and was coalesced to a fresh snapshot.
    pub fn lagged_count(&self) -> u64 {
        self.lagged.load(Ordering::Relaxed)
    }

    /// Events of `kind` written to streams since start.
    pub fn events_sent(&self, kind: EventKind) -> u64 {
        self.sent[kind.index()].load(Ordering::Relaxed)
    }

    /// Brings every group to `snapshot`: one manifest, one diff and one encoded event per
    /// group whose manifest changed, handed to each member without waiting for any.
    pub async fn fan_out(&self, snapshot: Arc<Snapshot>) {
        let revision = snapshot.revision();
        let work: Vec<(CacheKey, Arc<Claims>, Arc<ManifestSummary>)> = self
            .lock()
            .groups
            .iter()
            .filter(|(_, group)| group.summary.revision() < revision)
            .map(|(key, group)| {
                (
                    key.clone(),
                    Arc::clone(&group.claims),
                    Arc::clone(&group.summary),
                )
            })
            .collect();
        if work.is_empty() {
            return;
        }
        // Manifests are CPU work proportional to the catalog: keep them off the I/O threads.
        let computed = tokio::task::spawn_blocking(move || {
            work.into_iter()
                .map(|(key, claims, previous)| {
                    let update = next_state(&snapshot, &key, &claims, &previous);
                    (key, previous, update)
                })
                .collect::<Vec<_>>()
        })
        .await;
        let computed = match computed {
            Ok(computed) => computed,
            Err(error) => {
                tracing::error!(%error, revision, "the stream fan-out failed");
                return;
            }
        };
        let mut state = self.lock();
        for (key, previous, (summary, frame)) in computed {
            let Some(group) = state.groups.get_mut(&key) else {
                continue; // everyone left meanwhile
            };
            if !Arc::ptr_eq(&group.summary, &previous) {
                continue; // the group was re-created at a newer revision meanwhile
            }
            group.summary = summary;
            let Some(frame) = frame else { continue };
            for member in group.members.values() {
                if let Err(mpsc::error::TrySendError::Full(_)) =
                    member.frames.try_send(Arc::clone(&frame))
                {
                    member.lagged.store(true, Ordering::Release);
                    self.lagged.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// Fans out every revision the catalog publishes, for as long as both the hub and the
    /// catalog exist. Holds neither: a stopped server must release its store.
    pub fn spawn(self: &Arc<Self>, catalog: &Arc<CatalogService>) -> tokio::task::JoinHandle<()> {
        let hub = Arc::downgrade(self);
        let mut revisions = catalog.subscribe();
        let catalog = Arc::downgrade(catalog);
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

/// A group's summary at `snapshot`, and the event to send when its etag moved.
fn next_state(
    snapshot: &Snapshot,
    key: &CacheKey,
    claims: &Claims,
    previous: &ManifestSummary,
) -> (Arc<ManifestSummary>, Option<Arc<Frame>>) {
    let manifest = snapshot.manifest(claims, &key.options);
    let summary = Arc::new(ManifestSummary::of(&manifest));
    if summary.etag() == previous.etag() {
        return (summary, None);
    }
    let diff = ManifestDiff::between(previous, &manifest);
    let frame = Frame {
        from: Arc::clone(previous.etag()),
        to: Arc::clone(summary.etag()),
        bytes: encode(
            EventKind::ToolsChanged,
            Some(manifest.etag()),
            &diff.to_json(),
        ),
    };
    (summary, Some(Arc::new(frame)))
}
