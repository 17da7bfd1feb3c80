//! The Tools pages: the catalog's tools, searched and paged on the server; one tool's
//! definition, groups and recent audit records; disabling and enabling it with its impact
//! shown first.

use axum::extract::{Path, Query};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::form::Write;
use super::impact;
use super::page::{Nav, api_error, csrf_field, html_response, shell};
use super::session::Signed;
use crate::app::AdminDesk;
use crate::domain::findings::visible;
use crate::domain::model::Tool;
use crate::service::entity::{ListQuery, page};
use crate::service::impact::{ChangeOp, Proposal};
use crate::service::{CommandError, Precondition, WriteError};
use crate::store::{AuditQuery, Subject};
use crate::transport::admin::actor;
use crate::transport::errors::ApiError;

/// Tools per page of the table.
pub(super) const PAGE_SIZE: usize = 50;
/// Audit records shown on a tool's page.
const AUDIT_SHOWN: usize = 10;

#[derive(Debug, Default, Deserialize)]
pub(super) struct ListParams {
    #[serde(default)]
    q: String,
    #[serde(default)]
    after: Option<String>,
}

/// `/console/tools/<id>`, the id encoded as one path segment.
pub(super) fn tool_href(id: &str) -> String {
    format!("/console/tools/{}", super::page::segment(id))
}

/// A tool's state as the table shows it: disabled wins over deprecated.
fn state_of(tool: &Tool) -> &'static str {
    if !tool.enabled {
        "disabled"
    } else if tool.deprecated {
        "deprecated"
    } else {
        "enabled"
    }
}

/// `GET /console/tools?q=…&after=…`: one page of tools in id order, as
/// `GET /admin/tools?q=…&cursor=…` lists them.
pub(super) async fn list(signed: Signed, Query(params): Query<ListParams>) -> Response {
    let snapshot = signed.desk.snapshot();
    let catalog = snapshot.catalog();
    let query = ListQuery {
        limit: PAGE_SIZE,
        cursor: params.after.clone().filter(|after| !after.is_empty()),
        filters: if params.q.is_empty() {
            Vec::new()
        } else {
            vec![("q".to_owned(), params.q.clone())]
        },
    };
    let listed = match page::<Tool>(catalog, &query) {
        Ok(listed) => listed,
        Err(error) => {
            return api_error(&signed, Nav::Tools, ApiError::Malformed(error.to_string()));
        }
    };
    let source_name = |id: &str| -> String {
        catalog
            .sources
            .iter()
            .find(|source| source.id == id)
            .map_or(id, |source| source.name.as_str())
            .to_owned()
    };
    let q = params.q.as_str();
    let body = html! {
        h1 { "Tools" }
        form.row method="get" action="/console/tools" role="search" {
            div {
                label for="q" { "Search" }
                input #q type="search" name="q" value=(q) placeholder="id, name or description";
            }
            button type="submit" { "Search" }
        }
        p.muted {
            (catalog.tools.len()) " tools in the catalog at revision " (snapshot.revision())
            @if !q.is_empty() { "; showing those that mention “" (q) "”" }
            "."
        }
        @if listed.items.is_empty() {
            p { "No tool matches." }
        } @else {
            table {
                thead { tr { th scope="col" { "Tool" } th scope="col" { "Source" } th scope="col" { "State" } } }
                tbody {
                    @for tool in &listed.items {
                        tr {
                            td {
                                a href=(tool_href(&tool.id)) { (tool.id) }
                                @if tool.name != tool.id { br; span.muted { (tool.name) } }
                            }
                            td { (source_name(&tool.source_id)) }
                            td { span class=(format!("state-{}", state_of(tool))) { (state_of(tool)) } }
                        }
                    }
                }
            }
        }
        nav.pager aria-label="Pages" {
            @if query.cursor.is_some() {
                a href=(format!("/console/tools?q={}", super::page::query_value(q))) { "First page" }
            }
            @if let Some(next) = &listed.next_cursor {
                a href=(format!("/console/tools?q={}&after={}", super::page::query_value(q), super::page::query_value(next))) { "Next page" }
            }
        }
    };
    html_response(StatusCode::OK, shell(&signed, Nav::Tools, "Tools", body))
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Done {
    #[serde(default)]
    done: Option<String>,
}

/// `GET /console/tools/{id}`: the definition, groups, last audit records, and the state toggle.
pub(super) async fn show(
    signed: Signed,
    Path(id): Path<String>,
    Query(done): Query<Done>,
) -> Response {
    let snapshot = signed.desk.snapshot();
    let Some(tool) = snapshot.catalog().tools.iter().find(|tool| tool.id == id) else {
        return api_error(&signed, Nav::Tools, not_found(&id));
    };
    let groups = snapshot.groups_of_tool(&id).unwrap_or_default();
    let audit = match recent_audit(&signed.desk, &id).await {
        Ok(records) => records,
        Err(error) => return api_error(&signed, Nav::Tools, error),
    };
    let href = tool_href(&id);
    let body = html! {
        h1 { "Tool " code { (tool.id) } }
        @match done.done.as_deref() {
            Some("disabled") => p.notice role="status" { "Disabled." },
            Some("enabled") => p.notice role="status" { "Enabled." },
            _ => {},
        }
        dl {
            dt { "Name" } dd { (tool.name) }
            @if let Some(title) = &tool.title { dt { "Title" } dd { (title) } }
            dt { "Source" } dd { (tool.source_id) }
            dt { "State" } dd { span class=(format!("state-{}", state_of(tool))) { (state_of(tool)) } }
            @if let Some(reason) = &tool.disabled_reason { dt { "Disabled because" } dd { (reason) } }
            @if let (Some(method), Some(path)) = (&tool.method, &tool.path) {
                dt { "Operation" } dd { code { (method) " " (path) } }
            }
            dt { "Revision" } dd { (snapshot.revision()) }
        }
        @if tool.enabled {
            form method="get" action=(format!("{href}/disable")) { button.danger type="submit" { "Disable" } }
        } @else {
            form method="get" action=(format!("{href}/enable")) { button type="submit" { "Enable" } }
        }
        h2 { "Description" }
        p { (visible(&tool.description)) }
        h2 { "Input schema" }
        pre { (pretty(&tool.input_schema)) }
        @if let Some(output) = &tool.output_schema {
            h2 { "Output schema" }
            pre { (pretty(output)) }
        }
        h2 { "Groups" }
        @if groups.is_empty() {
            p { "In no active group: no policy can grant it." }
        } @else {
            table {
                thead { tr { th scope="col" { "Group" } th scope="col" { "Name" } th scope="col" { "Member by" } } }
                tbody {
                    @for group in &groups {
                        tr { td { (group.group_id) } td { (group.name) } td { (group.via.join(", ")) } }
                    }
                }
            }
        }
        h2 { "Last changes" }
        (audit_table(&audit))
    };
    html_response(StatusCode::OK, shell(&signed, Nav::Tools, &tool.id, body))
}

fn not_found(id: &str) -> ApiError {
    ApiError::NotFound(format!("tool '{id}' does not exist"))
}

/// A schema as the admin sees it: hidden characters shown as `U+XXXX`.
fn pretty(value: &Value) -> String {
    visible(&serde_json::to_string_pretty(value).unwrap_or_default())
}

/// The tool's newest audit records, newest first.
async fn recent_audit(
    desk: &AdminDesk,
    id: &str,
) -> Result<Vec<crate::store::AuditRecord>, ApiError> {
    let query = AuditQuery {
        entity: Some(Subject::Tools),
        id: Some(id.to_owned()),
        limit: AUDIT_SHOWN,
        newest_first: true,
        ..AuditQuery::default()
    };
    Ok(desk.audit(query).await?.0)
}

fn audit_table(records: &[crate::store::AuditRecord]) -> Markup {
    html! {
        @if records.is_empty() {
            p { "No audit record." }
        } @else {
            table {
                thead { tr { th scope="col" { "When" } th scope="col" { "Actor" } th scope="col" { "Action" } th scope="col" { "Revision" } } }
                tbody {
                    @for record in records {
                        tr {
                            td { (record.at.format("%Y-%m-%d %H:%M:%S UTC")) }
                            td { (record.actor) }
                            td { (record.action) }
                            td { (record.revision) }
                        }
                    }
                }
            }
        }
    }
}

/// `GET /console/tools/{id}/disable`: the impact of disabling, a `Reason`, and `Apply`.
pub(super) async fn confirm_disable(
    signed: Signed,
    path: Path<String>,
    headers: HeaderMap,
) -> Response {
    confirm(signed, path, headers, false).await
}

/// `GET /console/tools/{id}/enable`: the impact of enabling, and `Apply`.
pub(super) async fn confirm_enable(
    signed: Signed,
    path: Path<String>,
    headers: HeaderMap,
) -> Response {
    confirm(signed, path, headers, true).await
}

async fn confirm(
    signed: Signed,
    Path(id): Path<String>,
    headers: HeaderMap,
    enable: bool,
) -> Response {
    let snapshot = signed.desk.snapshot();
    let revision = snapshot.revision();
    if !snapshot.catalog().tools.iter().any(|tool| tool.id == id) {
        return api_error(&signed, Nav::Tools, not_found(&id));
    }
    let mut patch = Map::new();
    patch.insert("enabled".to_owned(), Value::Bool(enable));
    let proposal = Proposal::Change {
        kind: crate::store::EntityKind::Tools,
        id: id.clone(),
        op: ChangeOp::Patch(patch),
    };
    let actor = actor(&signed.desk, &headers);
    let report = match impact::of(&signed.desk, &actor, revision, proposal).await {
        Ok(report) => report,
        Err(error) => return api_error(&signed, Nav::Tools, error),
    };
    let verb = if enable { "Enable" } else { "Disable" };
    let href = tool_href(&id);
    let action = format!("{href}/{}", verb.to_lowercase());
    let body = html! {
        h1 { (verb) " " code { (id) } }
        p { "Nothing changes until you press Apply. The catalog is at revision " (revision)
            "; if anything changes before you apply, the change is refused and you can look again." }
        (impact::section(&report))
        form method="post" action=(action) {
            (csrf_field(&signed))
            input type="hidden" name="revision" value=(revision);
            @if !enable {
                label for="reason" { "Reason" }
                input #reason type="text" name="reason" maxlength="500" required;
            }
            p.row {
                button type="submit" { "Apply" }
                a href=(href) { "Cancel" }
            }
        }
    };
    html_response(
        StatusCode::OK,
        shell(&signed, Nav::Tools, &format!("{verb} {id}"), body),
    )
}

#[derive(Debug, Deserialize)]
pub(super) struct ToggleForm {
    revision: u64,
    #[serde(default)]
    reason: Option<String>,
}

/// `POST /console/tools/{id}/disable`: `POST /admin/tools/{id}/disable` with
/// `If-Match: "r<revision>"`.
pub(super) async fn disable(
    path: Path<String>,
    headers: HeaderMap,
    write: Write<ToggleForm>,
) -> Response {
    toggle(path, headers, write, false).await
}

/// `POST /console/tools/{id}/enable`, as `POST /admin/tools/{id}/enable`.
pub(super) async fn enable(
    path: Path<String>,
    headers: HeaderMap,
    write: Write<ToggleForm>,
) -> Response {
    toggle(path, headers, write, true).await
}

async fn toggle(
    Path(id): Path<String>,
    headers: HeaderMap,
    Write { signed, form }: Write<ToggleForm>,
    enable: bool,
) -> Response {
    let actor = actor(&signed.desk, &headers);
    let reason = form
        .reason
        .map(|reason| reason.trim().to_owned())
        .filter(|r| !r.is_empty());
    let precondition = Precondition::OneOf(vec![form.revision]);
    let commands = match signed.write() {
        Ok(commands) => commands,
        Err(limited) => return limited.into_response(),
    };
    let written = commands
        .toggle(&actor, &precondition, &id, enable, reason)
        .await;
    let verb = if enable { "enable" } else { "disable" };
    match written {
        Ok(_) => {
            let done = if enable { "enabled" } else { "disabled" };
            Redirect::to(&format!("{}?done={done}", tool_href(&id))).into_response()
        }
        Err(CommandError::Write(WriteError::PreconditionFailed { .. })) => {
            super::page::changed_by_someone_else(
                &signed,
                Nav::Tools,
                &format!("{}/{verb}", tool_href(&id)),
            )
        }
        Err(error) => api_error(&signed, Nav::Tools, ApiError::from(error)),
    }
}
