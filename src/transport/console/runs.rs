//! The Runs page (docs/runs.md, docs/console.md): the runs the gateway keeps, with their state,
//! budget left and children (`GET /admin/runs`); a run's page with its last calls, its place in
//! its tree, a link to View as that run, and `End run` (`DELETE /runs/{id}`, the subtree too).

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;

use super::form::Write;
use super::page::{Nav, api_error, csrf_field, html_response, query_value, segment, shell};
use super::session::Signed;
use crate::service::runs::RunFilter;
use crate::transport::errors::ApiError;

#[derive(Debug, Default, Deserialize)]
pub(super) struct RunsParams {
    /// `true`: live runs only.
    #[serde(default)]
    active: Option<String>,
    #[serde(default)]
    sub: Option<String>,
}

/// `GET /console/runs`.
pub(super) async fn list(signed: Signed, Query(params): Query<RunsParams>) -> Response {
    let active = params.active.as_deref() == Some("true");
    let filter = RunFilter {
        sub: params.sub.clone().filter(|sub| !sub.is_empty()),
        active,
    };
    let runs = match signed.desk.runs(&filter).await {
        Ok(runs) => runs,
        Err(denied) => return api_error(&signed, Nav::Runs, ApiError::from(denied)),
    };
    let body = html! {
        h1 { "Runs" }
        form method="get" action="/console/runs" {
            label for="sub" { "Subject" }
            input #sub type="text" name="sub" value=(params.sub.as_deref().unwrap_or_default());
            p {
                @if active {
                    input #active type="checkbox" name="active" value="true" checked;
                } @else {
                    input #active type="checkbox" name="active" value="true";
                }
                " "
                label.inline for="active" { "Active only" }
            }
            button type="submit" { "Filter" }
        }
        @if runs.is_empty() {
            p { "No run is kept." }
        } @else {
            table {
                thead { tr {
                    th scope="col" { "Run" } th scope="col" { "Subject" }
                    th scope="col" { "State" } th scope="col" { "Budget left" }
                    th scope="col" { "Children" } th scope="col" { "Active" }
                } }
                tbody {
                    @for run in &runs {
                        (row(run))
                    }
                }
            }
        }
    };
    html_response(StatusCode::OK, shell(&signed, Nav::Runs, "Runs", body))
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// A budget's counters left, as `calls: 3, per_tool.db:*: 1`; `unlimited` for none.
fn budget(value: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(calls) = value.get("calls") {
        parts.push(format!("calls: {calls}"));
    }
    for key in ["per_tool", "per_label"] {
        if let Some(Value::Object(counters)) = value.get(key) {
            for (name, left) in counters {
                parts.push(format!("{key}.{name}: {left}"));
            }
        }
    }
    if parts.is_empty() {
        "unlimited".to_owned()
    } else {
        parts.join(", ")
    }
}

fn row(run: &Value) -> Markup {
    let id = text(&run["run_id"]);
    html! {
        tr {
            td { a href={ "/console/runs/" (segment(id)) } { code { (id) } } }
            td { (text(&run["sub"])) }
            td { (text(&run["state"])) }
            td { (budget(&run["budget"])) }
            td.num { (run["children"].as_array().map_or(0, Vec::len)) }
            td { @if run["active"] == true { "active" } @else { "ended" } }
        }
    }
}

/// `GET /console/runs/{id}`.
pub(super) async fn show(signed: Signed, Path(id): Path<String>) -> Response {
    let run = match signed.desk.run(&id).await {
        Ok(run) => run,
        Err(denied) => return api_error(&signed, Nav::Runs, ApiError::from(denied)),
    };
    let active = run["active"] == true;
    let body = html! {
        h1 { "Run " code { (id) } }
        dl {
            dt { "State" } dd { (text(&run["state"])) }
            dt { "Active" } dd { @if active { "active" } @else { "ended" } }
            dt { "Subject" } dd { (text(&run["sub"])) }
            dt { "Depth" } dd { (run["depth"]) }
            dt { "Budget left" } dd { (budget(&run["budget"])) }
            dt { "Pinned at revision" } dd { (run["pinned_revision"]) }
            @if let Some(parent) = run["parent_run_id"].as_str() {
                dt { "Parent" }
                dd { a href={ "/console/runs/" (segment(parent)) } { code { (parent) } } }
            }
        }
        @if active {
            p { a href={ "/console/view-as?run=" (query_value(&id)) } { "View as this run" } }
            form method="post" action={ "/console/runs/" (segment(&id)) "/end" } {
                (csrf_field(&signed))
                button type="submit" { "End run" }
            }
        }
        section aria-labelledby="run-children" {
            h2 #run-children { "Children" }
            @match run["children"].as_array() {
                Some(children) if !children.is_empty() => ul {
                    @for child in children {
                        li { a href={ "/console/runs/" (segment(text(child))) } { code { (text(child)) } } }
                    }
                },
                _ => p { "No child run." },
            }
        }
        section aria-labelledby="run-calls" {
            h2 #run-calls { "Last calls" }
            (calls(&run["calls"]))
        }
    };
    html_response(StatusCode::OK, shell(&signed, Nav::Runs, "Run", body))
}

fn calls(calls: &Value) -> Markup {
    let calls = calls.as_array().map(Vec::as_slice).unwrap_or_default();
    html! {
        @if calls.is_empty() {
            p { "No call was made in this run." }
        } @else {
            table {
                thead { tr {
                    th scope="col" { "Tool" } th scope="col" { "Outcome" }
                    th scope="col" { "Transition" } th scope="col" { "At" }
                } }
                tbody {
                    @for call in calls {
                        tr {
                            td { code { (text(&call["tool_id"])) } }
                            td { (text(&call["outcome"])) }
                            td { (call["transition"].as_str().unwrap_or("—")) }
                            td { (at(&call["at"])) }
                        }
                    }
                }
            }
        }
    }
}

fn at(value: &Value) -> String {
    value
        .as_i64()
        .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0))
        .map_or_else(String::new, |at| at.format("%H:%M:%S UTC").to_string())
}

/// `POST /console/runs/{id}/end`: ends the run and its subtree, then shows it.
pub(super) async fn end(Path(id): Path<String>, write: Write<EndForm>) -> Response {
    let signed = write.signed;
    match signed.desk.end_run(&id).await {
        Ok(_) => Redirect::to(&format!("/console/runs/{}", segment(&id))).into_response(),
        Err(denied) => api_error(&signed, Nav::Runs, ApiError::from(denied)),
    }
}

/// The end form carries nothing but the anti-CSRF token.
#[derive(Debug, Deserialize)]
pub(super) struct EndForm {}
