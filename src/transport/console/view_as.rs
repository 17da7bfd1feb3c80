//! View as: any claims' tools as the gateway would serve them (`POST /admin/preview`), the
//! hidden ones marked, and for each tool of the catalog those claims do not get, on demand, why
//! not: the domain's reason ([`Snapshot::why_not`]) from the same explanation the preview
//! answers with, rendered as the domain renders it.
//!
//! A GET form: the URL holds the claims (never a token), so reloading or sharing it shows the
//! same view. (Query strings are never logged.)

use std::collections::HashSet;

use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;

use super::html::editable_json;
use super::page::{Nav, html_response, shell};
use super::session::Signed;
use crate::domain::claims::Claims;
use crate::domain::manifest::ManifestOptions;
use crate::domain::snapshot::Snapshot;

/// Tools listed at most in the "do not get" table (search narrows it).
const NOT_GRANTED_SHOWN: usize = 200;

#[derive(Debug, Default, Deserialize)]
pub(super) struct ViewAsParams {
    #[serde(default)]
    claims: String,
    #[serde(default)]
    seen: String,
    #[serde(default)]
    include_disabled: Option<String>,
    /// Narrows the "do not get" list.
    #[serde(default)]
    q: String,
    /// The tool whose "Why not?" was asked.
    #[serde(default)]
    why: Option<String>,
    /// A run id: its claims, within its pinned set and in its state (docs/runs.md).
    #[serde(default)]
    run: String,
}

impl ViewAsParams {
    /// The claims text to evaluate: the text area, else the chosen recent set.
    fn claims_text(&self) -> &str {
        if self.claims.trim().is_empty() {
            self.seen.trim()
        } else {
            self.claims.trim()
        }
    }

    fn include_disabled(&self) -> bool {
        self.include_disabled.is_some()
    }
}

/// `GET /console/view-as`.
pub(super) async fn page(signed: Signed, Query(params): Query<ViewAsParams>) -> Response {
    let snapshot = signed.desk.snapshot();
    let recent = signed.desk.recent_claim_sets(&snapshot);
    let recent: Vec<(String, String)> = recent
        .iter()
        .map(|seen| {
            let text = serde_json::to_string(&*seen.claims).unwrap_or_default();
            let label = format!(
                "{text} (last seen {})",
                seen.last_seen.format("%H:%M:%S UTC")
            );
            (text, label)
        })
        .collect();
    let text = params.claims_text();
    let plain = ManifestOptions {
        include_disabled: params.include_disabled(),
        ..ManifestOptions::default()
    };
    let run = params.run.trim();
    let result = if !run.is_empty() {
        Some(match signed.desk.run_preview(run).await {
            Ok(Some((claims, options))) => {
                let options = ManifestOptions {
                    include_disabled: params.include_disabled(),
                    ..options
                };
                result(&snapshot, &claims, options, &params)
            }
            Ok(None) => html! {
                p.error role="alert" { "Run " code { (run) } " is not live: it ended, expired or is not known." }
            },
            Err(error) => html! { p.error role="alert" { (error) } },
        })
    } else if text.is_empty() {
        None
    } else {
        Some(match serde_json::from_str::<Claims>(text) {
            Ok(claims) => result(&snapshot, &claims, plain, &params),
            Err(error) => html! {
                p.error role="alert" { "Claims (JSON) must be a JSON object of claims: " (error) }
            },
        })
    };
    let body = html! {
        h1 { "View as" }
        form method="get" action="/console/view-as" {
            label for="claims" { "Claims (JSON)" }
            textarea #claims name="claims" spellcheck="false" { (editable_json(&params.claims)) }
            label for="run" { "Run" }
            input #run type="text" name="run" value=(params.run) spellcheck="false";
            label for="seen" { "Recently seen claim sets" }
            select #seen name="seen" {
                option value="" { "(none: use the claims above)" }
                @for (value, label) in &recent {
                    @if *value == params.seen {
                        option value=(value) selected { (label) }
                    } @else {
                        option value=(value) { (label) }
                    }
                }
            }
            p {
                @if params.include_disabled() {
                    input #include_disabled type="checkbox" name="include_disabled" checked;
                } @else {
                    input #include_disabled type="checkbox" name="include_disabled";
                }
                " "
                label.inline for="include_disabled" { "Include disabled" }
            }
            button type="submit" { "Preview" }
        }
        @if let Some(result) = result { (result) }
    };
    html_response(StatusCode::OK, shell(&signed, Nav::ViewAs, "View as", body))
}

/// The tools `claims` get under `options`, and the ones they do not with their "Why not?".
fn result(
    snapshot: &Snapshot,
    claims: &Claims,
    options: ManifestOptions,
    params: &ViewAsParams,
) -> Markup {
    let explained = snapshot.explain(claims, &options);
    let granted: HashSet<&str> = explained.manifest.tool_ids().collect();
    let catalog = snapshot.catalog();
    let needle = params.q.to_lowercase();
    let not_granted: Vec<&str> = catalog
        .tools
        .iter()
        .map(|tool| tool.id.as_str())
        .filter(|id| !granted.contains(id))
        .filter(|id| needle.is_empty() || id.to_lowercase().contains(&needle))
        .collect();
    let why = params
        .why
        .as_deref()
        .filter(|id| !granted.contains(id))
        .map(|id| (id, snapshot.why_not(&explained.explanation, id).to_string()));
    // Granted tools that agents do not see (the preview lists them): one pass over the catalog.
    let disabled: HashSet<&str> = catalog
        .tools
        .iter()
        .filter(|tool| !tool.enabled)
        .map(|tool| tool.id.as_str())
        .collect();
    html! {
        section aria-labelledby="granted" {
            h2 #granted { (granted.len()) " tools these claims get" }
            table {
                thead { tr { th scope="col" { "Tool" } th scope="col" { "State" } } }
                tbody {
                    @for id in explained.manifest.tool_ids() {
                        tr {
                            td { a href=(super::tools::tool_href(id)) { (id) } }
                            td { @if disabled.contains(id) { span.state-disabled { "disabled" } } }
                        }
                    }
                }
            }
        }
        section aria-labelledby="not-granted" {
            h2 #not-granted { (catalog.tools.len() - granted.len()) " tools of the catalog these claims do not get" }
            @if let Some((id, reason)) = &why {
                p.notice role="status" { code { (id) } ": " (reason) }
            }
            form.row method="get" action="/console/view-as" {
                input type="hidden" name="claims" value=(params.claims_text());
                input type="hidden" name="run" value=(params.run);
                @if params.include_disabled() { input type="hidden" name="include_disabled" value="on"; }
                div {
                    label for="q" { "Search" }
                    input #q type="search" name="q" value=(params.q);
                }
                button type="submit" { "Search" }
            }
            @if not_granted.len() > NOT_GRANTED_SHOWN {
                p.muted { "The first " (NOT_GRANTED_SHOWN) " of " (not_granted.len()) "; search to narrow." }
            }
            // One form for every row: each button sends its tool as `why`.
            form method="get" action="/console/view-as" {
                input type="hidden" name="claims" value=(params.claims_text());
                input type="hidden" name="run" value=(params.run);
                input type="hidden" name="q" value=(params.q);
                @if params.include_disabled() { input type="hidden" name="include_disabled" value="on"; }
                table {
                    thead { tr { th scope="col" { "Tool" } th scope="col" { "Why not" } } }
                    tbody {
                        @for id in not_granted.iter().take(NOT_GRANTED_SHOWN) {
                            tr {
                                td { (id) }
                                td {
                                    @if let Some((asked, reason)) = &why && asked == id {
                                        (reason)
                                    } @else {
                                        button.secondary type="submit" name="why" value=(id) { "Why not?" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
