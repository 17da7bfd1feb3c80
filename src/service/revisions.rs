//! Reading revisions of imported tools (`GET /admin/revisions`, the console's Revisions page):
//! pending first, then the most recently detected, paged by an opaque cursor.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use crate::domain::model::Catalog;
use crate::domain::revision::{Revision, RevisionStatus};

/// The largest page.
pub const MAX_LIMIT: usize = 500;

/// What to list.
#[derive(Debug, Clone, Default)]
pub struct RevisionQuery {
    pub status: Option<RevisionStatus>,
    pub source_id: Option<String>,
    pub tool_id: Option<String>,
    pub limit: usize,
    /// The last revision of the previous page (its [`cursor_of`]).
    pub cursor: Option<String>,
}

/// A cursor this endpoint did not issue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cursor '{0}' is not one this endpoint issued")]
pub struct BadCursor(pub String);

/// The listing order: pending first, newest first, then by id.
type Key<'r> = (bool, Reverse<i64>, &'r str);

fn key(revision: &Revision) -> Key<'_> {
    (
        !revision.is_pending(),
        Reverse(
            revision
                .detected_at
                .timestamp_nanos_opt()
                .unwrap_or_default(),
        ),
        &revision.id,
    )
}

/// The cursor that continues after `revision`.
fn cursor_of(revision: &Revision) -> String {
    let (decided, Reverse(at), id) = key(revision);
    format!("{}.{at}.{id}", u8::from(decided))
}

fn parse_cursor(cursor: &str) -> Option<(bool, Reverse<i64>, &str)> {
    let (decided, rest) = cursor.split_once('.')?;
    let (at, id) = rest.split_once('.')?;
    let decided = match decided {
        "0" => false,
        "1" => true,
        _ => return None,
    };
    Some((decided, Reverse(at.parse().ok()?), id))
}

/// One page of `query` and the cursor of the next (`None` on the last page).
pub fn list<'c>(
    catalog: &'c Catalog,
    query: &RevisionQuery,
) -> Result<(Vec<&'c Revision>, Option<String>), BadCursor> {
    let after = match &query.cursor {
        Some(cursor) => Some(parse_cursor(cursor).ok_or_else(|| BadCursor(cursor.clone()))?),
        None => None,
    };
    let mut matching: Vec<&Revision> = catalog
        .revisions
        .iter()
        .filter(|r| query.status.is_none_or(|s| r.status == s))
        .filter(|r| query.source_id.as_ref().is_none_or(|s| &r.source_id == s))
        .filter(|r| {
            query
                .tool_id
                .as_ref()
                .is_none_or(|t| &r.tool_id == t || r.previous_tool_id.as_ref() == Some(t))
        })
        .filter(|r| after.is_none_or(|after| key(r) > after))
        .collect();
    matching.sort_by(|a, b| key(a).cmp(&key(b)));
    let limit = query.limit.clamp(1, MAX_LIMIT);
    let next = (matching.len() > limit).then(|| cursor_of(matching[limit - 1]));
    matching.truncate(limit);
    Ok((matching, next))
}

/// One revision by id.
pub fn find<'c>(catalog: &'c Catalog, id: &str) -> Option<&'c Revision> {
    catalog.revisions.iter().find(|r| r.id == id)
}

/// How many revisions are pending, per source that has any (the
/// `toolgate_tool_revisions_pending` gauge).
pub fn pending_by_source(catalog: &Catalog) -> BTreeMap<&str, usize> {
    let mut counts = BTreeMap::new();
    for revision in catalog.revisions.iter().filter(|r| r.is_pending()) {
        *counts.entry(revision.source_id.as_str()).or_default() += 1;
    }
    counts
}
