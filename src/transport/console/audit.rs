//! The Audit page: the change log newest first (`GET /admin/audit?order=newest`), filtered by
//! entity and actor, each change as a readable difference of its before and after.

use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;

use super::page::{Nav, api_error, html_response, query_value, shell};
use super::session::Signed;
use crate::store::{AuditQuery, AuditRecord, Subject};
use crate::transport::errors::ApiError;

/// Records per page.
const PAGE_SIZE: usize = 50;
/// Lines of difference shown per record.
const DIFF_LINES: usize = 20;
/// Characters of one value shown in a difference.
const VALUE_CHARS: usize = 120;

const ENTITIES: [&str; 6] = [
    "sources", "tools", "labels", "groups", "policies", "catalog",
];

#[derive(Debug, Default, Deserialize)]
pub(super) struct AuditParams {
    #[serde(default)]
    entity: String,
    #[serde(default)]
    actor: String,
    #[serde(default)]
    cursor: Option<u64>,
}

/// `GET /console/audit`.
pub(super) async fn page(signed: Signed, Query(params): Query<AuditParams>) -> Response {
    let entity = match params.entity.as_str() {
        "" => None,
        name => match serde_json::from_value::<Subject>(Value::String(name.to_owned())) {
            Ok(subject) => Some(subject),
            Err(_) => {
                let error = ApiError::Malformed(format!("unknown entity '{name}'"));
                return api_error(&signed, Nav::Audit, error);
            }
        },
    };
    let query = AuditQuery {
        entity,
        actor: Some(params.actor.clone()).filter(|actor| !actor.is_empty()),
        before_seq: params.cursor,
        newest_first: true,
        limit: PAGE_SIZE,
        ..AuditQuery::default()
    };
    let (records, next) = match signed.desk.audit(query).await.map_err(ApiError::from) {
        Ok(found) => found,
        Err(error) => return api_error(&signed, Nav::Audit, error),
    };
    let body = html! {
        h1 { "Audit" }
        form.row method="get" action="/console/audit" {
            div {
                label for="entity" { "Entity" }
                select #entity name="entity" {
                    option value="" { "all" }
                    @for name in ENTITIES {
                        @if name == params.entity {
                            option value=(name) selected { (name) }
                        } @else {
                            option value=(name) { (name) }
                        }
                    }
                }
            }
            div {
                label for="actor" { "Actor" }
                input #actor type="text" name="actor" value=(params.actor);
            }
            button type="submit" { "Filter" }
        }
        @if records.is_empty() {
            p { "No change matches." }
        } @else {
            table {
                thead { tr {
                    th scope="col" { "When" } th scope="col" { "Actor" } th scope="col" { "Action" }
                    th scope="col" { "Entity" } th scope="col" { "Change" }
                } }
                tbody { @for record in &records { (row(record)) } }
            }
        }
        @if let Some(next) = next {
            nav.pager aria-label="Pages" {
                a href=(format!("/console/audit?entity={}&actor={}&cursor={next}",
                    query_value(&params.entity), query_value(&params.actor))) { "Older changes" }
            }
        }
    };
    html_response(StatusCode::OK, shell(&signed, Nav::Audit, "Audit", body))
}

fn row(record: &AuditRecord) -> Markup {
    let lines = difference(record.before.as_ref(), record.after.as_ref());
    html! {
        tr {
            td { (record.at.format("%Y-%m-%d %H:%M:%S UTC")) br; span.muted { "revision " (record.revision) } }
            td { (record.actor) }
            td { (record.action) }
            td { (record.entity.as_str()) @if !record.id.is_empty() { " " code { (record.id) } } }
            td {
                @if lines.is_empty() {
                    span.muted { "no field changed" }
                } @else {
                    ul.diff {
                        @for line in lines.iter().take(DIFF_LINES) { li { code { (line) } } }
                        @if lines.len() > DIFF_LINES { li.muted { (lines.len() - DIFF_LINES) " more" } }
                    }
                }
            }
        }
    }
}

/// The fields that differ between `before` and `after`, one line each: `path: old → new`,
/// `path: + new` (added), `path: − old` (removed), paths in dotted form (`[i]` for arrays),
/// compared down to scalars and short arrays.
pub(super) fn difference(before: Option<&Value>, after: Option<&Value>) -> Vec<String> {
    // A created or deleted entity lists its fields, each added or removed.
    let nothing = Value::Object(serde_json::Map::new());
    let before = before.or(after.filter(|after| after.is_object()).map(|_| &nothing));
    let after = after.or(before.filter(|before| before.is_object()).map(|_| &nothing));
    let mut lines = Vec::new();
    walk("", before, after, &mut lines);
    lines
}

/// Fields the server sets on every write (who and when): the record's own columns say it.
const STAMPS: [&str; 4] = ["created_at", "created_by", "updated_at", "updated_by"];

fn walk(path: &str, before: Option<&Value>, after: Option<&Value>, lines: &mut Vec<String>) {
    if STAMPS.contains(&path) {
        return;
    }
    match (before, after) {
        (Some(Value::Object(old)), Some(Value::Object(new))) => {
            let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                walk(&child, old.get(key), new.get(key), lines);
            }
        }
        (Some(old), Some(new)) if old == new => {}
        (Some(old), Some(new)) => {
            lines.push(format!("{}: {} → {}", name(path), shown(old), shown(new)))
        }
        (None, Some(new)) => lines.push(format!("{}: + {}", name(path), shown(new))),
        (Some(old), None) => lines.push(format!("{}: − {}", name(path), shown(old))),
        (None, None) => {}
    }
}

fn name(path: &str) -> &str {
    if path.is_empty() { "(entity)" } else { path }
}

fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= VALUE_CHARS {
        return text;
    }
    let cut: String = text.chars().take(VALUE_CHARS).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::difference;

    #[test]
    fn a_difference_lists_each_changed_added_and_removed_field() {
        let before =
            json!({"name": "a", "enabled": true, "tags": ["x"], "config": {"url": "u", "old": 1}});
        let after = json!({"name": "a", "enabled": false, "tags": ["x", "y"], "config": {"url": "v"}, "new": 2});
        assert_eq!(
            difference(Some(&before), Some(&after)),
            [
                "config.old: − 1",
                "config.url: \"u\" → \"v\"",
                "enabled: true → false",
                "new: + 2",
                "tags: [\"x\"] → [\"x\",\"y\"]",
            ]
        );
        assert_eq!(difference(None, Some(&json!({"id": "t"}))), ["id: + \"t\""]);
        assert_eq!(difference(Some(&json!({"id": "t"})), None), ["id: − \"t\""]);
        assert!(difference(Some(&before), Some(&before)).is_empty());
        let stamped = json!({"name": "a", "updated_at": "t2", "updated_by": "bob"});
        let earlier = json!({"name": "a", "updated_at": "t1", "updated_by": "alice"});
        assert!(
            difference(Some(&earlier), Some(&stamped)).is_empty(),
            "stamps are not news"
        );
        let long = json!({"d": "x".repeat(500)});
        assert!(difference(None, Some(&long))[0].ends_with('…'));
    }
}
