//! The Revisions pages: what upstreams changed in imported tools, pending first; one revision's
//! diff, findings and the impact of approving it, then `Approve` or `Reject` (as
//! `POST /admin/revisions/{id}/approve|reject` with `If-Match`).

use axum::extract::{Path, Query};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;

use super::form::Write;
use super::impact;
use super::page::{Nav, api_error, csrf_field, html_response, query_value, segment, shell};
use super::session::Signed;
use crate::domain::findings::Severity;
use crate::domain::revision::{Revision, RevisionStatus};
use crate::ingest::decide::Decision;
use crate::service::impact::Proposal;
use crate::service::revisions::{self, RevisionQuery};
use crate::service::{CommandError, Precondition, WriteError};
use crate::transport::admin::actor;
use crate::transport::errors::ApiError;

/// Revisions per page of the table.
const PAGE_SIZE: usize = 50;

fn revision_href(id: &str) -> String {
    format!("/console/revisions/{}", segment(id))
}

const fn status_name(status: RevisionStatus) -> &'static str {
    match status {
        RevisionStatus::Pending => "pending",
        RevisionStatus::Approved => "approved",
        RevisionStatus::Rejected => "rejected",
    }
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct ListParams {
    #[serde(default)]
    status: String,
    #[serde(default)]
    after: Option<String>,
}

/// `GET /console/revisions?status=…&after=…`: pending first, then the newest.
pub(super) async fn list(signed: Signed, Query(params): Query<ListParams>) -> Response {
    let status = match params.status.as_str() {
        "" => None,
        other => match RevisionStatus::parse(other) {
            Some(status) => Some(status),
            None => {
                let error =
                    format!("status must be pending, approved or rejected, found '{other}'");
                return api_error(&signed, Nav::Revisions, ApiError::Malformed(error));
            }
        },
    };
    let snapshot = signed.desk.snapshot();
    let query = RevisionQuery {
        status,
        limit: PAGE_SIZE,
        cursor: params.after.clone().filter(|after| !after.is_empty()),
        ..RevisionQuery::default()
    };
    let (page, next) = match revisions::list(snapshot.catalog(), &query) {
        Ok(listed) => listed,
        Err(error) => {
            return api_error(
                &signed,
                Nav::Revisions,
                ApiError::Malformed(error.to_string()),
            );
        }
    };
    let pending = revisions::pending_by_source(snapshot.catalog())
        .values()
        .sum::<usize>();
    let body = html! {
        h1 { "Revisions" }
        p.muted { (pending) " pending. Agents keep the approved definition of a tool until a revision of it is approved." }
        nav.row aria-label="Filter" {
            a href="/console/revisions" { "All" }
            a href="/console/revisions?status=pending" { "Pending" }
            a href="/console/revisions?status=approved" { "Approved" }
            a href="/console/revisions?status=rejected" { "Rejected" }
        }
        @if page.is_empty() {
            p { "No revision." }
        } @else {
            table {
                thead { tr {
                    th scope="col" { "Tool" } th scope="col" { "Kind" } th scope="col" { "Status" }
                    th scope="col" { "Detected" } th scope="col" { "Findings" }
                } }
                tbody {
                    @for revision in &page {
                        tr {
                            td { a href=(revision_href(&revision.id)) { (revision.tool_id) } }
                            td { (revision.kind.as_str()) }
                            td { span class=(format!("state-{}", status_name(revision.status))) { (status_name(revision.status)) } }
                            td { (revision.detected_at.format("%Y-%m-%d %H:%M:%S UTC")) }
                            td { (findings_summary(revision)) }
                        }
                    }
                }
            }
        }
        nav.pager aria-label="Pages" {
            @if let Some(next) = &next {
                a href=(format!("/console/revisions?status={}&after={}", query_value(&params.status), query_value(next))) { "Next page" }
            }
        }
    };
    html_response(
        StatusCode::OK,
        shell(&signed, Nav::Revisions, "Revisions", body),
    )
}

fn findings_summary(revision: &Revision) -> Markup {
    let high = revision.high_rules();
    html! {
        @if revision.findings.is_empty() {
            span.muted { "none" }
        } @else if high.is_empty() {
            (revision.findings.len()) " medium"
        } @else {
            span.lost { (high.join(", ")) }
        }
    }
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Done {
    #[serde(default)]
    done: Option<String>,
}

/// `GET /console/revisions/{id}`: what changed, the findings, and (pending) the impact of
/// approving with the decision form.
pub(super) async fn show(
    signed: Signed,
    Path(id): Path<String>,
    Query(done): Query<Done>,
    headers: HeaderMap,
) -> Response {
    let snapshot = signed.desk.snapshot();
    let revision_number = snapshot.revision();
    let Some(revision) = revisions::find(snapshot.catalog(), &id).cloned() else {
        let error = ApiError::NotFound(format!("revision '{id}' does not exist"));
        return api_error(&signed, Nav::Revisions, error);
    };
    let decision = if revision.is_pending() {
        let proposal = Proposal::Revision {
            id: id.clone(),
            approve: true,
        };
        let actor = actor(&signed.desk, &headers);
        match impact::of(&signed.desk, &actor, revision_number, proposal).await {
            Ok(report) => decision_form(&signed, &revision, revision_number, &report),
            Err(error) => return api_error(&signed, Nav::Revisions, error),
        }
    } else {
        html! {}
    };
    let body = html! {
        h1 { "Revision of " code { (revision.tool_id) } }
        @match done.done.as_deref() {
            Some("approved") => p.notice role="status" { "Approved." },
            Some("rejected") => p.notice role="status" { "Rejected." },
            _ => {},
        }
        (facts(&revision))
        h2 { "Findings" }
        (findings_table(&revision))
        h2 { "Changes" }
        (diff_list(&revision.diff))
        (decision)
    };
    html_response(
        StatusCode::OK,
        shell(&signed, Nav::Revisions, &format!("Revision {id}"), body),
    )
}

fn facts(revision: &Revision) -> Markup {
    html! {
        dl {
            dt { "Kind" } dd { (revision.kind.as_str()) }
            @if let Some(previous) = &revision.previous_tool_id {
                dt { "Previous tool" } dd { a href=(super::tools::tool_href(previous)) { (previous) } }
            }
            dt { "Source" } dd { (revision.source_id) }
            dt { "Status" } dd { (status_name(revision.status)) }
            dt { "Detected" } dd { (revision.detected_at.format("%Y-%m-%d %H:%M:%S UTC")) }
            @if let Some(by) = &revision.decided_by { dt { "Decided by" } dd { (by) } }
            @if let Some(reason) = &revision.reason { dt { "Reason" } dd { (reason) } }
            @if let Some(hash) = &revision.previous_hash { dt { "Approved hash" } dd { code { (hash) } } }
            @if let Some(hash) = &revision.hash { dt { "Upstream hash" } dd { code { (hash) } } }
        }
    }
}

fn findings_table(revision: &Revision) -> Markup {
    html! {
        @if revision.findings.is_empty() {
            p { "No finding." }
        } @else {
            table {
                thead { tr {
                    th scope="col" { "Rule" } th scope="col" { "Severity" }
                    th scope="col" { "Where" } th scope="col" { "Excerpt" }
                } }
                tbody {
                    @for finding in &revision.findings {
                        tr {
                            td { code { (finding.rule.id()) } }
                            td { @if finding.severity == Severity::High { span.lost { "high" } } @else { "medium" } }
                            td { code { (finding.path) } }
                            td { (finding.excerpt) }
                        }
                    }
                }
            }
        }
    }
}

/// The RFC 6902 operations, one per row: what an agent would be served differently.
fn diff_list(diff: &Value) -> Markup {
    let operations = diff.as_array().map(Vec::as_slice).unwrap_or_default();
    html! {
        @if operations.is_empty() {
            p { "No change." }
        } @else {
            table {
                thead { tr { th scope="col" { "Operation" } th scope="col" { "Where" } th scope="col" { "Value" } } }
                tbody {
                    @for operation in operations {
                        tr {
                            td { (operation["op"].as_str().unwrap_or("")) }
                            td { code { (crate::domain::findings::visible(operation["path"].as_str().unwrap_or(""))) } }
                            td { pre { (operation.get("value").map(pretty).unwrap_or_default()) } }
                        }
                    }
                }
            }
        }
    }
}

/// A value of the diff as the reviewer sees it: hidden characters shown as `U+XXXX` (raw, a
/// bidirectional override would reorder the page before the reviewer's eyes).
fn pretty(value: &Value) -> String {
    crate::domain::findings::visible(&serde_json::to_string_pretty(value).unwrap_or_default())
}

fn decision_form(
    signed: &Signed,
    revision: &Revision,
    catalog_revision: u64,
    report: &crate::service::impact::ImpactReport,
) -> Markup {
    let high = revision.high_rules();
    html! {
        (impact::section(report))
        form method="post" action=(revision_href(&revision.id)) {
            (csrf_field(signed))
            input type="hidden" name="revision" value=(catalog_revision);
            @if !high.is_empty() {
                p {
                    input #acknowledge type="checkbox" name="acknowledge" value=(high.join(","));
                    label for="acknowledge" { "Acknowledge the high findings: " (high.join(", ")) }
                }
            }
            label for="reason" { "Reason" }
            input #reason type="text" name="reason" maxlength="500";
            p.row {
                button type="submit" name="decision" value="approve" { "Approve" }
                button.danger type="submit" name="decision" value="reject" { "Reject" }
            }
        }
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct DecisionForm {
    revision: u64,
    decision: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    acknowledge: Option<String>,
}

/// `POST /console/revisions/{id}`: `POST /admin/revisions/{id}/approve|reject` with
/// `If-Match: "r<revision>"`.
pub(super) async fn decide(
    Path(id): Path<String>,
    headers: HeaderMap,
    Write { signed, form }: Write<DecisionForm>,
) -> Response {
    let decision = match form.decision.as_str() {
        "approve" => Decision::Approve {
            acknowledge: form
                .acknowledge
                .iter()
                .flat_map(|rules| rules.split(','))
                .map(|rule| rule.trim().to_owned())
                .filter(|rule| !rule.is_empty())
                .collect(),
        },
        "reject" => Decision::Reject,
        other => {
            let error = format!("decision must be approve or reject, found '{other}'");
            return api_error(&signed, Nav::Revisions, ApiError::Malformed(error));
        }
    };
    let done = if matches!(decision, Decision::Reject) {
        "rejected"
    } else {
        "approved"
    };
    let reason = form
        .reason
        .map(|reason| reason.trim().to_owned())
        .filter(|reason| !reason.is_empty());
    let actor = actor(&signed.desk, &headers);
    let precondition = Precondition::OneOf(vec![form.revision]);
    let commands = match signed.write() {
        Ok(commands) => commands,
        Err(limited) => return limited.into_response(),
    };
    let written = commands
        .decide_revision(&actor, &precondition, &id, decision, reason)
        .await;
    match written {
        Ok(_) => Redirect::to(&format!("{}?done={done}", revision_href(&id))).into_response(),
        Err(CommandError::Write(WriteError::PreconditionFailed { .. })) => {
            super::page::changed_by_someone_else(&signed, Nav::Revisions, &revision_href(&id))
        }
        Err(error) => api_error(&signed, Nav::Revisions, ApiError::from(error)),
    }
}
