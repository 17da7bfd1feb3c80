//! What the refreshes of each source last did, for `GET /admin/sources/{id}`: a periodic
//! refresh that keeps failing is otherwise only a log line.
//!
//! Kept in memory per instance, like the periodic refresh's timing (each instance refreshes on
//! its own schedule); it starts empty and forgets sources that no longer exist on the next
//! write about them. Creation's own import is not a refresh and is not recorded.

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use serde::Serialize;

/// The last refresh attempt of one source on this instance, and the last that succeeded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct RefreshStatus {
    pub last_attempt: DateTime<Utc>,
    /// Absent when no refresh has succeeded on this instance yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_success: Option<DateTime<Utc>>,
    /// Why the last attempt failed; absent when it succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// The refresh status of every source refreshed on this instance.
#[derive(Debug, Default)]
pub struct RefreshLog {
    by_source: Mutex<HashMap<String, RefreshStatus>>,
}

impl RefreshLog {
    /// Records one attempt on source `id` at `at`: `Err` with the reason when it failed.
    pub fn record(&self, id: &str, at: DateTime<Utc>, outcome: Result<(), String>) {
        let mut by_source = self
            .by_source
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let previous = by_source.get(id).and_then(|s| s.last_success);
        let status = match outcome {
            Ok(()) => RefreshStatus {
                last_attempt: at,
                last_success: Some(at),
                last_error: None,
            },
            Err(reason) => RefreshStatus {
                last_attempt: at,
                last_success: previous,
                last_error: Some(reason),
            },
        };
        by_source.insert(id.to_owned(), status);
    }

    /// The status of source `id`, if it was refreshed on this instance.
    pub fn get(&self, id: &str) -> Option<RefreshStatus> {
        self.by_source
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    /// Forgets source `id` (deleted).
    pub fn forget(&self, id: &str) {
        self.by_source
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_keeps_the_last_success_and_a_success_clears_the_error() {
        let log = RefreshLog::default();
        let (t1, t2, t3) = (
            Utc::now(),
            Utc::now() + chrono::Duration::seconds(1),
            Utc::now() + chrono::Duration::seconds(2),
        );
        log.record("s", t1, Ok(()));
        log.record("s", t2, Err("could not connect".to_owned()));
        assert_eq!(
            log.get("s"),
            Some(RefreshStatus {
                last_attempt: t2,
                last_success: Some(t1),
                last_error: Some("could not connect".to_owned())
            })
        );
        log.record("s", t3, Ok(()));
        assert_eq!(log.get("s").and_then(|s| s.last_error), None);
        log.forget("s");
        assert_eq!(log.get("s"), None);
    }
}
