//! Listing the change log. Records are keyed by `seq`, so the cursor (`after_seq`) is where the
//! scan starts; the other filters are checked record by record, which is a scan of the log past
//! the cursor: fine for an embedded store whose log grows by one record per admin write.

use std::ops::Bound;

use redb::{Database, ReadableDatabase};

use super::error::During;
use super::tables::{self, AUDIT};
use crate::store::{AuditQuery, AuditRecord, StoreError};

/// The records matching `query`, in its order, at most [`AuditQuery::effective_limit`].
pub(super) fn list(db: &Database, query: &AuditQuery) -> Result<Vec<AuditRecord>, StoreError> {
    let limit = query.effective_limit();
    let txn = db.begin_read().during("starting a read of the audit log")?;
    let log = txn.open_table(AUDIT).during("opening table `audit`")?;
    let after = Bound::Excluded(query.after_seq.unwrap_or(0));
    let before = query.before_seq.map_or(Bound::Unbounded, Bound::Excluded);
    let range = log
        .range((after, before))
        .during("scanning the audit log")?;
    let rows: Box<dyn Iterator<Item = _>> = if query.newest_first {
        Box::new(range.rev())
    } else {
        Box::new(range)
    };
    let mut found = Vec::new();
    for row in rows {
        if found.len() >= limit {
            break;
        }
        let (seq, bytes) = row.during("scanning the audit log")?;
        let record: AuditRecord = tables::decode(bytes.value(), "audit", &seq.value())?;
        if matches(query, &record) {
            found.push(record);
        }
    }
    Ok(found)
}

/// Whether `record` passes every filter of `query` other than the cursor and the limit.
fn matches(query: &AuditQuery, record: &AuditRecord) -> bool {
    query.entity.is_none_or(|entity| record.entity == entity)
        && query.id.as_ref().is_none_or(|id| &record.id == id)
        && query
            .actor
            .as_ref()
            .is_none_or(|actor| &record.actor == actor)
        && query.since.is_none_or(|since| record.at >= since)
        && query.until.is_none_or(|until| record.at < until)
}
