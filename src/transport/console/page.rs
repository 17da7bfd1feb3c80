//! The shell every console page shares (head, navigation, sign-out) and the HTML error pages.

use axum::http::StatusCode;
use axum::response::Response;
use maud::{DOCTYPE, Markup, html};

use super::html::head;
pub(super) use super::html::html_response;
use super::session::{CSRF_FIELD, Signed};
use crate::transport::errors::ApiError;

/// The console's pages, as the navigation names them (docs/console.md fixes the names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Nav {
    Tools,
    Groups,
    Policies,
    Sources,
    Labels,
    ViewAs,
    Audit,
    Live,
    Runs,
    Revisions,
}

impl Nav {
    const ALL: [Nav; 10] = [
        Nav::Tools,
        Nav::Groups,
        Nav::Policies,
        Nav::Sources,
        Nav::Labels,
        Nav::ViewAs,
        Nav::Audit,
        Nav::Live,
        Nav::Runs,
        Nav::Revisions,
    ];

    const fn name(self) -> &'static str {
        match self {
            Nav::Tools => "Tools",
            Nav::Groups => "Groups",
            Nav::Policies => "Policies",
            Nav::Sources => "Sources",
            Nav::Labels => "Labels",
            Nav::ViewAs => "View as",
            Nav::Audit => "Audit",
            Nav::Live => "Live",
            Nav::Runs => "Runs",
            Nav::Revisions => "Revisions",
        }
    }

    const fn href(self) -> &'static str {
        match self {
            Nav::Tools => "/console/tools",
            Nav::Groups => "/console/groups",
            Nav::Policies => "/console/policies",
            Nav::Sources => "/console/sources",
            Nav::Labels => "/console/labels",
            Nav::ViewAs => "/console/view-as",
            Nav::Audit => "/console/audit",
            Nav::Live => "/console/live",
            Nav::Runs => "/console/runs",
            Nav::Revisions => "/console/revisions",
        }
    }
}

/// A whole page of a signed-in admin: navigation with `current` marked, sign-out, `body`.
pub(super) fn shell(signed: &Signed, current: Nav, title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body {
                header {
                    a.brand href="/console/tools" { "toolgate" }
                    nav aria-label="Console" {
                        ul {
                            @for item in Nav::ALL {
                                li {
                                    @if item == current {
                                        a href=(item.href()) aria-current="page" { (item.name()) }
                                    } @else {
                                        a href=(item.href()) { (item.name()) }
                                    }
                                }
                            }
                        }
                    }
                    form method="post" action="/console/sign-out" {
                        (csrf_field(signed))
                        button.secondary type="submit" { "Sign out" }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// The hidden anti-CSRF field every form of a session carries.
pub(super) fn csrf_field(signed: &Signed) -> Markup {
    html! { input type="hidden" name=(CSRF_FIELD) value=(signed.session.csrf); }
}

/// An admin API error shown in the shell, with the status the API would answer.
pub(super) fn api_error(signed: &Signed, current: Nav, error: ApiError) -> Response {
    let (status, _, title) = error.status_and_type();
    let detail = error.detail();
    let body = html! {
        h1 { (title) }
        p.error role="alert" { (detail) }
    };
    html_response(status, shell(signed, current, title, body))
}

/// `text` as one URL path segment.
pub(super) fn segment(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// `text` as a query value.
pub(super) fn query_value(text: &str) -> String {
    segment(text)
}

/// A write refused because the catalog moved on since the page was shown (412): nothing was
/// written; `again` shows the change anew on the current catalog.
pub(super) fn changed_by_someone_else(signed: &Signed, current: Nav, again: &str) -> Response {
    let body = html! {
        h1 { "Not applied" }
        p.error role="alert" {
            "The catalog was changed by someone else since this page was shown, so nothing was \
             written. Look at the change again on the current catalog."
        }
        p { a href=(again) { "Reload" } }
    };
    html_response(
        StatusCode::PRECONDITION_FAILED,
        shell(signed, current, "Not applied", body),
    )
}
