//! What the hub can tell an admin (`GET /admin/live`, the console's Live page): the open
//! streams grouped by the manifest they see, and the last notifications with how many streams
//! each reached. Claims are shown as their projection onto what the policies read, never whole.

use std::collections::{HashSet, VecDeque};
use std::sync::{Mutex, PoisonError};

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{StreamClass, StreamHub};
use crate::domain::claims::{Claims, project};

/// Notifications remembered.
pub const NOTIFICATIONS_KEPT: usize = 20;

/// One revision fanned out: how many manifests changed and how many streams were sent an event.
#[derive(Debug, Clone, Serialize)]
pub struct Notified {
    pub revision: u64,
    pub at: DateTime<Utc>,
    pub manifests: usize,
    pub streams: usize,
}

/// The streams that see one manifest.
#[derive(Debug, Clone, Serialize)]
pub struct LiveManifest {
    /// The claims the policies read, as one member has them (all members agree there).
    pub claims: Claims,
    /// Whether the streams see the admin preview (hidden tools included).
    pub include_disabled: bool,
    pub tools: usize,
    /// The catalog revision the manifest is at.
    pub revision: u64,
    /// Open `GET /agents/tools/stream` streams.
    pub sse: usize,
    /// Open MCP notification streams.
    pub mcp: usize,
    /// Distinct subjects among them.
    pub identities: usize,
}

/// The hub as an admin sees it.
#[derive(Debug, Clone, Serialize)]
pub struct LiveView {
    pub sse: usize,
    pub mcp: usize,
    /// Most streams first.
    pub manifests: Vec<LiveManifest>,
    /// Newest first.
    pub notifications: Vec<Notified>,
}

/// The last [`NOTIFICATIONS_KEPT`] notifications.
#[derive(Debug, Default)]
pub(super) struct Notifications(Mutex<VecDeque<Notified>>);

impl Notifications {
    pub(super) fn record(&self, notified: Notified) {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() == NOTIFICATIONS_KEPT {
            kept.pop_back();
        }
        kept.push_front(notified);
    }

    fn newest_first(&self) -> Vec<Notified> {
        let kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        kept.iter().cloned().collect()
    }
}

impl StreamHub {
    /// The open streams by manifest, and the last notifications.
    pub fn live(&self) -> LiveView {
        let (mut manifests, counts) = {
            let state = self.lock();
            let manifests: Vec<LiveManifest> = state
                .groups
                .iter()
                .map(|(key, group)| {
                    let count = |class| {
                        group
                            .members
                            .values()
                            .filter(|member| member.class == class)
                            .count()
                    };
                    let subjects: HashSet<&str> =
                        group.members.values().map(|m| &*m.subject).collect();
                    LiveManifest {
                        claims: project(&group.claims, &group.read_paths),
                        include_disabled: key.options.include_disabled,
                        tools: group.summary.len(),
                        revision: group.summary.revision(),
                        sse: count(StreamClass::Sse),
                        mcp: count(StreamClass::Mcp),
                        identities: subjects.len(),
                    }
                })
                .collect();
            (manifests, state.subscribers)
        };
        manifests.sort_by_key(|m| std::cmp::Reverse(m.sse + m.mcp));
        LiveView {
            sse: counts[StreamClass::Sse.index()],
            mcp: counts[StreamClass::Mcp.index()],
            manifests,
            notifications: self.notifications.newest_first(),
        }
    }
}
