//! Listing the change log: one query, filtered and paged by the server on the fields stored
//! beside each record (`seq`, `entity`, `id`, `actor`, `at_ns`), using the indexes of
//! `migrations/0002_indexes.json`.

use mongodb::Database;
use mongodb::bson::{Document, doc};

use super::documents::{self, AUDIT, at_ns, int64};
use super::error::During;
use crate::store::{AuditQuery, AuditRecord, StoreError};

/// The records matching `query`, in its order, at most [`AuditQuery::effective_limit`].
pub(super) async fn list(
    db: &Database,
    query: &AuditQuery,
) -> Result<Vec<AuditRecord>, StoreError> {
    let limit = query.effective_limit();
    let doing = "listing the audit log";
    let mut cursor = db
        .collection::<Document>(AUDIT)
        .find(filter(query))
        .sort(doc! {"seq": if query.newest_first { -1 } else { 1 }})
        .limit(i64::try_from(limit).unwrap_or(i64::MAX))
        .await
        .during(doing)?;
    let mut found = Vec::new();
    while found.len() < limit && cursor.advance().await.during(doing)? {
        let doc: Document = cursor.deserialize_current().during(doing)?;
        found.push(documents::decode_audit(&doc)?);
    }
    Ok(found)
}

/// The server-side filter for every field of `query` but the limit.
fn filter(query: &AuditQuery) -> Document {
    let mut seq = doc! {"$gt": int64(query.after_seq.unwrap_or(0))};
    if let Some(before) = query.before_seq {
        seq.insert("$lt", int64(before));
    }
    let mut filter = doc! {"seq": seq};
    if let Some(entity) = query.entity {
        filter.insert("entity", entity.as_str());
    }
    if let Some(id) = &query.id {
        filter.insert("id", id);
    }
    if let Some(actor) = &query.actor {
        filter.insert("actor", actor);
    }
    let mut at = Document::new();
    if let Some(since) = query.since {
        at.insert("$gte", at_ns(since));
    }
    if let Some(until) = query.until {
        at.insert("$lt", at_ns(until));
    }
    if !at.is_empty() {
        filter.insert("at_ns", at);
    }
    filter
}
