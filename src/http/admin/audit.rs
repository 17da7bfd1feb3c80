//! `GET /admin/audit`: the change log, filtered by entity, id, actor and time range, paged by
//! an opaque cursor (the last record's sequence number).

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde_json::json;

use crate::http::AppState;
use crate::http::errors::ApiError;
use crate::http::extract::{Admin, QueryPairs};
use crate::store::{AuditQuery, EntityKind};

pub async fn list(
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
            "entity" => query.entity = Some(entity_kind(&value)?),
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
                    .filter(|n| (1..=1000).contains(n))
                    .ok_or_else(|| {
                        ApiError::Malformed(format!(
                            "limit must be a whole number from 1 to 1000, found '{value}'"
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
    let limit = query.limit;
    // One extra record tells whether another page follows.
    query.limit = limit + 1;
    let mut records = state.catalog.store().audit(query).await?;
    let next_cursor = (records.len() > limit).then(|| {
        records.truncate(limit);
        records.last().map(|r| r.seq.to_string())
    });
    let body =
        json!({"data": records, "count": records.len(), "next_cursor": next_cursor.flatten()});
    Ok(Json(body).into_response())
}

fn entity_kind(value: &str) -> Result<EntityKind, ApiError> {
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
