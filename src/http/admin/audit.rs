//! `GET /admin/audit`: the change log, filtered by entity, id, actor and time range, paged by
//! an opaque cursor (the last record's sequence number).
//!
//! `next_cursor` is set exactly when another matching record follows the page. That is asked
//! of the store separately (one record after the page's last) rather than by reading one record
//! more than the page: the store caps a query at [`AuditQuery::MAX_LIMIT`], so "one more" is
//! impossible for a page of the largest size, which would then never have a next page.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde_json::json;

use crate::domain::secrets;
use crate::http::AppState;
use crate::http::errors::ApiError;
use crate::http::extract::{Admin, QueryPairs};
use crate::store::{AuditQuery, AuditRecord, CatalogStore, StoreError, Subject};

pub(super) async fn list(
    State(state): State<AppState>,
    _admin: Admin,
    QueryPairs(pairs): QueryPairs,
) -> Result<Response, ApiError> {
    let mut query = AuditQuery {
        limit: 100,
        ..AuditQuery::default()
    };
    for (key, value) in pairs {
        match key.as_str() {
            "entity" => query.entity = Some(subject(&value)?),
            "id" => query.id = Some(value),
            "actor" => query.actor = Some(value),
            "since" => query.since = Some(timestamp(&key, &value)?),
            "until" => query.until = Some(timestamp(&key, &value)?),
            "cursor" => {
                query.after_seq = Some(value.parse().map_err(|_| {
                    ApiError::Malformed(format!("cursor '{value}' is not one this endpoint issued"))
                })?)
            }
            "limit" => {
                query.limit = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=AuditQuery::MAX_LIMIT).contains(n))
                    .ok_or_else(|| {
                        ApiError::Malformed(format!(
                            "limit must be a whole number from 1 to {}, found '{value}'",
                            AuditQuery::MAX_LIMIT
                        ))
                    })?
            }
            other => {
                return Err(ApiError::Malformed(format!(
                    "unknown filter '{other}'; expected entity, id, actor, since, until, cursor, limit"
                )));
            }
        }
    }
    let (mut records, next_cursor) = page(state.app.catalog.store().as_ref(), query).await?;
    // Records written before sources' secrets were masked on the way in are masked here.
    for record in records.iter_mut().filter(|r| r.entity == Subject::Sources) {
        for side in [&mut record.before, &mut record.after]
            .into_iter()
            .flatten()
        {
            secrets::mask_source_json(side);
        }
    }
    let body = json!({"data": records, "count": records.len(), "next_cursor": next_cursor});
    Ok(Json(body).into_response())
}

/// The records of `query` and, when more match after them, the cursor of the next page.
async fn page(
    store: &dyn CatalogStore,
    query: AuditQuery,
) -> Result<(Vec<AuditRecord>, Option<String>), StoreError> {
    let records = store.audit(query.clone()).await?;
    let Some(last) = records.last().filter(|_| records.len() == query.limit) else {
        return Ok((records, None));
    };
    let probe = AuditQuery {
        after_seq: Some(last.seq),
        limit: 1,
        ..query
    };
    let more = !store.audit(probe).await?.is_empty();
    let cursor = more.then(|| last.seq.to_string());
    Ok((records, cursor))
}

fn subject(value: &str) -> Result<Subject, ApiError> {
    serde_json::from_value(serde_json::Value::String(value.to_owned())).map_err(|_| {
        ApiError::Malformed(format!(
            "unknown entity '{value}'; expected sources, tools, labels, groups, policies or catalog"
        ))
    })
}

fn timestamp(key: &str, value: &str) -> Result<DateTime<Utc>, ApiError> {
    DateTime::parse_from_rfc3339(value)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| {
            ApiError::Malformed(format!(
                "{key} must be an RFC 3339 time such as 2026-01-31T12:00:00Z, found '{value}'"
            ))
        })
}
