//! The Groups, Policies, Sources and Labels pages: each collection's table, and each entity's
//! page with a JSON editor whose change is shown (`POST /admin/impact`) before `Apply` writes it
//! (`PUT /admin/<collection>/{id}` with `If-Match` on the revision the page showed). A
//! source's page also shows its refresh status and has `Refresh`.

use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;

use super::form::Write;
use super::html::editable_json;
use super::impact;
use super::page::{
    Nav, api_error, changed_by_someone_else, csrf_field, html_response, segment, shell,
};
use super::session::Signed;
use crate::app::AdminDesk;
use crate::domain::model::{AccessPolicy, Label, Source, ToolGroup};
use crate::service::impact::{ChangeOp, Proposal};
use crate::service::{Edit, Precondition, RefreshTrigger};
use crate::store::EntityKind;
use crate::transport::admin::actor;
use crate::transport::admin::crud::{AdminEntity, entity_from};
use crate::transport::errors::ApiError;

/// The collections these pages edit (tools have their own pages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Collection {
    Groups,
    Policies,
    Sources,
    Labels,
}

impl Collection {
    fn parse(name: &str) -> Option<Collection> {
        match name {
            "groups" => Some(Collection::Groups),
            "policies" => Some(Collection::Policies),
            "sources" => Some(Collection::Sources),
            "labels" => Some(Collection::Labels),
            _ => None,
        }
    }

    const fn path(self) -> &'static str {
        match self {
            Collection::Groups => "groups",
            Collection::Policies => "policies",
            Collection::Sources => "sources",
            Collection::Labels => "labels",
        }
    }

    const fn nav(self) -> Nav {
        match self {
            Collection::Groups => Nav::Groups,
            Collection::Policies => Nav::Policies,
            Collection::Sources => Nav::Sources,
            Collection::Labels => Nav::Labels,
        }
    }

    const fn kind(self) -> EntityKind {
        match self {
            Collection::Groups => EntityKind::Groups,
            Collection::Policies => EntityKind::Policies,
            Collection::Sources => EntityKind::Sources,
            Collection::Labels => EntityKind::Labels,
        }
    }
}

fn entity_href(collection: Collection, id: &str) -> String {
    format!("/console/{}/{}", collection.path(), segment(id))
}

/// `GET /console/{collection}`.
pub(super) async fn list(signed: Signed, Path(name): Path<String>) -> Response {
    let Some(collection) = Collection::parse(&name) else {
        return super::html::not_found().await;
    };
    let (headers, rows) = table(&signed.desk, collection);
    let title = nav_name(collection);
    let body = html! {
        h1 { (title) }
        @if collection == Collection::Policies {
            p.muted { "In the order they are evaluated: highest priority first." }
        }
        table {
            thead { tr { @for header in headers { th scope="col" { (header) } } } }
            tbody {
                @for (id, cells) in &rows {
                    tr {
                        td { a href=(entity_href(collection, id)) { (id) } }
                        @for cell in cells { td { (cell) } }
                    }
                }
            }
        }
    };
    html_response(
        StatusCode::OK,
        shell(&signed, collection.nav(), title, body),
    )
}

/// A row per entity: its id, then the other cells.
type Rows = Vec<(String, Vec<String>)>;

/// The column headers and rows of `collection`'s table.
fn table(desk: &AdminDesk, collection: Collection) -> (&'static [&'static str], Rows) {
    let snapshot = desk.snapshot();
    let catalog = snapshot.catalog();
    match collection {
        Collection::Groups => (
            &["Group", "Name", "Active", "Members"],
            catalog
                .groups
                .iter()
                .map(|g| {
                    let members = snapshot.group_members(&g.id).map_or(0, |m| m.len());
                    (
                        g.id.clone(),
                        vec![g.name.clone(), yes_no(g.active), members.to_string()],
                    )
                })
                .collect(),
        ),
        Collection::Policies => {
            let mut policies: Vec<&AccessPolicy> = catalog.policies.iter().collect();
            // The order of evaluation: highest priority first; inactive ones decide nothing.
            policies.sort_by(|a, b| b.priority.cmp(&a.priority).then_with(|| a.id.cmp(&b.id)));
            (
                &["Policy", "Name", "Priority", "Active", "Allows", "Denies"],
                policies
                    .iter()
                    .map(|p| {
                        let cells = vec![
                            p.name.clone(),
                            p.priority.to_string(),
                            yes_no(p.active),
                            p.allowed_group_ids.join(", "),
                            p.denied_group_ids.join(", "),
                        ];
                        (p.id.clone(), cells)
                    })
                    .collect(),
            )
        }
        Collection::Sources => (
            &["Source", "Name", "Type", "Enabled", "Last refresh"],
            catalog
                .sources
                .iter()
                .map(|s| {
                    let refreshed = desk.refresh_status(&s.id).map_or_else(
                        || "none on this instance".to_owned(),
                        |status| {
                            status
                                .last_attempt
                                .format("%Y-%m-%d %H:%M:%S UTC")
                                .to_string()
                        },
                    );
                    let cells = vec![
                        s.name.clone(),
                        s.source_type.clone(),
                        yes_no(s.enabled),
                        refreshed,
                    ];
                    (s.id.clone(), cells)
                })
                .collect(),
        ),
        Collection::Labels => (
            &["Label", "Name"],
            catalog
                .labels
                .iter()
                .map(|l| (l.id.clone(), vec![l.name.clone()]))
                .collect(),
        ),
    }
}

fn nav_name(collection: Collection) -> &'static str {
    match collection {
        Collection::Groups => "Groups",
        Collection::Policies => "Policies",
        Collection::Sources => "Sources",
        Collection::Labels => "Labels",
    }
}

fn yes_no(flag: bool) -> String {
    if flag { "yes" } else { "no" }.to_owned()
}

/// The entity as an admin reads it (credentials masked), pretty-printed.
fn stored<E: AdminEntity>(desk: &AdminDesk, id: &str) -> Option<String> {
    let snapshot = desk.snapshot();
    let entity = E::all(snapshot.catalog()).iter().find(|e| e.id() == id)?;
    serde_json::to_string_pretty(&*entity.redacted()).ok()
}

fn stored_of(desk: &AdminDesk, collection: Collection, id: &str) -> Option<String> {
    match collection {
        Collection::Groups => stored::<ToolGroup>(desk, id),
        Collection::Policies => stored::<AccessPolicy>(desk, id),
        Collection::Sources => stored::<Source>(desk, id),
        Collection::Labels => stored::<Label>(desk, id),
    }
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Saved {
    #[serde(default)]
    saved: Option<String>,
}

/// `GET /console/{collection}/{id}`: the editor.
pub(super) async fn show(
    signed: Signed,
    Path((name, id)): Path<(String, String)>,
    axum::extract::Query(saved): axum::extract::Query<Saved>,
) -> Response {
    let Some(collection) = Collection::parse(&name) else {
        return super::html::not_found().await;
    };
    let revision = signed.desk.snapshot().revision();
    let Some(json) = stored_of(&signed.desk, collection, &id) else {
        let error = ApiError::NotFound(format!(
            "{} '{id}' does not exist",
            collection.kind().noun()
        ));
        return api_error(&signed, collection.nav(), error);
    };
    let notice = saved
        .saved
        .is_some()
        .then(|| html! { p.notice role="status" { "Saved." } });
    let body = editor(&signed, collection, &id, &json, revision, notice);
    html_response(StatusCode::OK, shell(&signed, collection.nav(), &id, body))
}

/// The editor of entity `id` holding `json`, with `notice` above it.
fn editor(
    signed: &Signed,
    collection: Collection,
    id: &str,
    json: &str,
    revision: u64,
    notice: Option<Markup>,
) -> Markup {
    let href = entity_href(collection, id);
    html! {
        h1 { (nav_name(collection)) " " code { (id) } }
        @if let Some(notice) = notice { (notice) }
        @if collection == Collection::Sources { (source_status(signed, &href, id)) }
        form method="post" action=(format!("{href}/preview")) {
            (csrf_field(signed))
            input type="hidden" name="revision" value=(revision);
            label for="definition" { "Definition (JSON)" }
            textarea #definition name="definition" spellcheck="false" { (editable_json(json)) }
            p.muted { "Nothing is written until you press Apply on the next page, which shows what \
                the change would do. Write-only values read \"***\"; leaving them so keeps them, unless the change \
                moves where they are sent (a URL, the servers, a token endpoint): then give them again." }
            button type="submit" { "Preview changes" }
        }
    }
}

/// A source's refresh status on this instance, and `Refresh`.
fn source_status(signed: &Signed, href: &str, id: &str) -> Markup {
    let status = signed.desk.refresh_status(id);
    html! {
        h2 { "Import status" }
        dl {
            @match &status {
                Some(status) => {
                    dt { "Last refresh" } dd { (status.last_attempt.format("%Y-%m-%d %H:%M:%S UTC")) }
                    dt { "Last success" } dd { (status.last_success.map_or("never".to_owned(), |at| at.format("%Y-%m-%d %H:%M:%S UTC").to_string())) }
                    @if let Some(error) = &status.last_error { dt { "Last error" } dd.lost { (error) } }
                    dt { "Skipped or cut" } dd { (status.issue_count) " operations" }
                }
                None => { dt { "Last refresh" } dd { "none on this instance" } }
            }
        }
        @if let Some(status) = &status && !status.issues.is_empty() {
            ul { @for issue in &status.issues { li { code { (issue.operation) } ": " (issue.reason) } } }
        }
        form method="post" action=(format!("{href}/refresh")) {
            (csrf_field(signed))
            button type="submit" { "Refresh" }
        }
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct EditForm {
    revision: u64,
    definition: String,
}

/// `POST /console/{collection}/{id}/preview`: what the edit would do, and `Apply`.
pub(super) async fn preview(
    Path((name, id)): Path<(String, String)>,
    headers: HeaderMap,
    Write { signed, form }: Write<EditForm>,
) -> Response {
    let Some(collection) = Collection::parse(&name) else {
        return super::html::not_found().await;
    };
    let nav = collection.nav();
    let value: Value = match serde_json::from_str(&form.definition) {
        Ok(value) => value,
        Err(error) => {
            return invalid(
                &signed,
                collection,
                &id,
                &form,
                &format!("not JSON: {error}"),
            );
        }
    };
    let proposal = Proposal::Change {
        kind: collection.kind(),
        id: id.clone(),
        op: ChangeOp::Put(value),
    };
    let actor = actor(&signed.desk, &headers);
    let report = match impact::of(&signed.desk, &actor, form.revision, proposal).await {
        Ok(report) => report,
        Err(error) => return refused_edit(&signed, (collection, &id), &form, error),
    };
    let href = entity_href(collection, &id);
    let body = html! {
        h1 { "Change " (nav_name(collection)) " " code { (id) } }
        p { "Nothing changes until you press Apply. The catalog is at revision " (form.revision) "." }
        (impact::section(&report))
        form method="post" action=(href) {
            (csrf_field(&signed))
            input type="hidden" name="revision" value=(form.revision);
            label for="definition" { "Definition (JSON)" }
            textarea #definition name="definition" readonly spellcheck="false" { (editable_json(&form.definition)) }
            p.row {
                button type="submit" { "Apply" }
                a href=(href) { "Cancel" }
            }
        }
    };
    html_response(
        StatusCode::OK,
        shell(&signed, nav, &format!("Change {id}"), body),
    )
}

/// The editor again, with the edit as typed and why it cannot be written (422).
fn invalid(
    signed: &Signed,
    collection: Collection,
    id: &str,
    form: &EditForm,
    why: &str,
) -> Response {
    let notice = html! { p.error role="alert" { "Not valid: " (why) } };
    let body = editor(
        signed,
        collection,
        id,
        &form.definition,
        form.revision,
        Some(notice),
    );
    html_response(
        StatusCode::UNPROCESSABLE_ENTITY,
        shell(signed, collection.nav(), id, body),
    )
}

/// An edit that could not be previewed or written: a lost race (412), the editor again with
/// why (the edit is not valid), or the error.
fn refused_edit(
    signed: &Signed,
    (collection, id): (Collection, &str),
    form: &EditForm,
    error: ApiError,
) -> Response {
    match error {
        ApiError::PreconditionFailed(_) => {
            changed_by_someone_else(signed, collection.nav(), &entity_href(collection, id))
        }
        ApiError::Invalid(_) | ApiError::Conflict(..) | ApiError::Malformed(_) => {
            invalid(signed, collection, id, form, &error.detail())
        }
        error => api_error(signed, collection.nav(), error),
    }
}

/// `POST /console/{collection}/{id}`: `PUT /admin/<collection>/{id}` with `If-Match`.
pub(super) async fn apply(
    Path((name, id)): Path<(String, String)>,
    headers: HeaderMap,
    Write { signed, form }: Write<EditForm>,
) -> Response {
    let Some(collection) = Collection::parse(&name) else {
        return super::html::not_found().await;
    };
    let written = match collection {
        Collection::Groups => put::<ToolGroup>(&signed, &headers, &id, &form).await,
        Collection::Policies => put::<AccessPolicy>(&signed, &headers, &id, &form).await,
        Collection::Sources => put::<Source>(&signed, &headers, &id, &form).await,
        Collection::Labels => put::<Label>(&signed, &headers, &id, &form).await,
    };
    match written {
        Ok(()) => {
            Redirect::to(&format!("{}?saved=1", entity_href(collection, &id))).into_response()
        }
        Err(error) => refused_edit(&signed, (collection, &id), &form, error),
    }
}

async fn put<E: AdminEntity>(
    signed: &Signed,
    headers: &HeaderMap,
    id: &str,
    form: &EditForm,
) -> Result<(), ApiError> {
    let value: Value = serde_json::from_str(&form.definition)
        .map_err(|error| ApiError::Malformed(format!("not JSON: {error}")))?;
    let entity: E = entity_from(value)?;
    let actor = actor(&signed.desk, headers);
    let precondition = Precondition::OneOf(vec![form.revision]);
    signed
        .desk
        .write()?
        .update(&actor, &precondition, id, Edit::Replace(entity))
        .await
        .map(drop)
        .map_err(ApiError::from)
}

#[derive(Debug, Deserialize)]
pub(super) struct Nothing {}

/// `POST /console/sources/{id}/refresh`: `POST /admin/sources/{id}/refresh`, and what it did.
pub(super) async fn refresh(
    Path(id): Path<String>,
    headers: HeaderMap,
    Write { signed, .. }: Write<Nothing>,
) -> Response {
    let actor = actor(&signed.desk, &headers);
    let commands = match signed.write() {
        Ok(commands) => commands,
        Err(limited) => return limited.into_response(),
    };
    let refreshed = commands
        .refresh(&actor, &Precondition::Any, &id, RefreshTrigger::Admin)
        .await;
    let summary = match refreshed {
        Ok(written) => written.value,
        Err(error) => return api_error(&signed, Nav::Sources, ApiError::from(error)),
    };
    let notice = html! {
        div.notice role="status" {
            "Refreshed: " (summary.imported) " tools upstream; " (summary.created) " created, "
            (summary.updated) " updated, " (summary.deprecated) " deprecated, " (summary.restored)
            " restored, " (summary.unchanged) " unchanged; " (summary.skipped) " skipped, "
            (summary.cut) " cut."
            @if !summary.issues.is_empty() {
                ul { @for issue in &summary.issues {
                    li { code { (issue.operation) } ": " (issue.reason) }
                } }
            }
        }
    };
    let revision = signed.desk.snapshot().revision();
    let json = stored_of(&signed.desk, Collection::Sources, &id).unwrap_or_default();
    let body = editor(
        &signed,
        Collection::Sources,
        &id,
        &json,
        revision,
        Some(notice),
    );
    html_response(StatusCode::OK, shell(&signed, Nav::Sources, &id, body))
}
