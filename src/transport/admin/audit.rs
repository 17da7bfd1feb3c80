//! `GET /admin/audit`: the change log, filtered by entity, id, actor and time range, paged by
//! an opaque cursor (the last record's sequence number).
//!
//! `next_cursor` is set exactly when another matching record follows the page. That is asked
//! of the store separately (one record after the page's last) rather than by reading one record
//! more than the page: the store caps a query at [`AuditQuery::MAX_LIMIT`], so "one more" is
//! impossible for a page of the largest size, which would then never have a next page.

use axum::Json;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde_json::json;

use crate::app::AdminDesk;
use crate::store::{AuditQuery, Subject};
use crate::transport::errors::ApiError;
use crate::transport::extract::QueryPairs;

pub(crate) async fn list(
    desk: AdminDesk,
    QueryPairs(pairs): QueryPairs,
) -> Result<Response, ApiError> {
    let mut query = AuditQuery {
        limit: 100,
        ..AuditQuery::default()
    };
    let mut cursor: Option<u64> = None;
    for (key, value) in pairs {
        match key.as_str() {
            "entity" => query.entity = Some(subject(&value)?),
            "id" => query.id = Some(value),
            "actor" => query.actor = Some(value),
            "since" => query.since = Some(timestamp(&key, &value)?),
            "until" => query.until = Some(timestamp(&key, &value)?),
            "cursor" => {
                cursor = Some(value.parse().map_err(|_| {
                    ApiError::Malformed(format!("cursor '{value}' is not one this endpoint issued"))
                })?)
            }
            "order" => {
                query.newest_first = match value.as_str() {
                    "oldest" => false,
                    "newest" => true,
                    _ => {
                        return Err(ApiError::Malformed(format!(
                            "order must be oldest or newest, found '{value}'"
                        )));
                    }
                }
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
                    "unknown filter '{other}'; expected entity, id, actor, since, until, order, \
                     cursor, limit"
                )));
            }
        }
    }
    // A cursor is the last record's `seq`: the next page starts past it in the listing order.
    if query.newest_first {
        query.before_seq = cursor;
    } else {
        query.after_seq = cursor;
    }
    let (records, next_cursor) = desk.audit(query).await?;
    let body = json!({"data": records, "count": records.len(), "next_cursor": next_cursor});
    Ok(Json(body).into_response())
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
