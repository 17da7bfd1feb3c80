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

use crate::ingest::ImportIssue;

/// Issues of the last successful refresh kept at most per source (the count says how many
/// there were).
pub const ISSUES_KEPT: usize = 100;

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
    /// How many operations the last successful refresh skipped or cut.
    #[serde(skip_serializing_if = "is_zero")]
    pub issue_count: usize,
    /// What it skipped or cut and why, the first [`ISSUES_KEPT`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<ImportIssue>,
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

/// The refresh status of every source refreshed on this instance.
#[derive(Debug, Default)]
pub struct RefreshLog {
    by_source: Mutex<HashMap<String, RefreshStatus>>,
}

impl RefreshLog {
    /// Records one attempt on source `id` at `at`: what it skipped or cut, or `Err` with the
    /// reason when it failed.
    pub fn record(&self, id: &str, at: DateTime<Utc>, outcome: Result<&[ImportIssue], String>) {
        let mut by_source = self
            .by_source
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let previous = by_source.get(id).cloned();
        let status = match outcome {
            Ok(issues) => RefreshStatus {
                last_attempt: at,
                last_success: Some(at),
                last_error: None,
                issue_count: issues.len(),
                issues: issues.iter().take(ISSUES_KEPT).cloned().collect(),
            },
            Err(reason) => {
                let (last_success, issue_count, issues) = previous
                    .map(|p| (p.last_success, p.issue_count, p.issues))
                    .unwrap_or_default();
                RefreshStatus {
                    last_attempt: at,
                    last_success,
                    last_error: Some(reason),
                    issue_count,
                    issues,
                }
            }
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
        let issue = ImportIssue {
            operation: "GET /x".to_owned(),
            operation_id: None,
            outcome: crate::ingest::IssueOutcome::Skipped,
            reason: "no responses".to_owned(),
        };
        log.record("s", t1, Ok(std::slice::from_ref(&issue)));
        log.record("s", t2, Err("could not connect".to_owned()));
        assert_eq!(
            log.get("s"),
            Some(RefreshStatus {
                last_attempt: t2,
                last_success: Some(t1),
                last_error: Some("could not connect".to_owned()),
                issue_count: 1,
                issues: vec![issue.clone()],
            }),
            "a failure keeps what the last success said"
        );
        let many = vec![issue; ISSUES_KEPT + 5];
        log.record("s", t3, Ok(&many));
        let status = log.get("s").unwrap();
        assert_eq!(
            (status.issue_count, status.issues.len()),
            (ISSUES_KEPT + 5, ISSUES_KEPT)
        );
        log.record("s", t3, Ok(&[]));
        assert_eq!(log.get("s").and_then(|s| s.last_error), None);
        log.forget("s");
        assert_eq!(log.get("s"), None);
    }
}
