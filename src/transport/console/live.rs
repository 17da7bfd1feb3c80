//! The Live page: this instance's open streams grouped by the manifest they see, and the last
//! change notifications with how many streams each reached (`GET /admin/live`). The region
//! refreshes itself twice a second (`console.js` fetches `/console/live/fragment`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};

use super::page::{Nav, html_response, shell};
use super::session::Signed;
use crate::app::AdminDesk;
use crate::transport::AppState;

/// How often the page asks for the region again, milliseconds.
const REFRESH_MS: u32 = 500;

/// `GET /console/live`.
pub(super) async fn page(State(state): State<AppState>, signed: Signed) -> Response {
    let body = html! {
        h1 { "Live" }
        p.muted { "Streams open on this instance, updated twice a second." }
        div #live aria-live="polite" data-refresh="/console/live/fragment" data-every=(REFRESH_MS) {
            (region(&state, &signed.desk))
        }
    };
    html_response(StatusCode::OK, shell(&signed, Nav::Live, "Live", body))
}

/// `GET /console/live/fragment`: the region alone.
pub(super) async fn fragment(State(state): State<AppState>, signed: Signed) -> Response {
    html_response(StatusCode::OK, region(&state, &signed.desk))
}

fn region(state: &AppState, desk: &AdminDesk) -> Markup {
    let live = desk.live();
    let sessions = state.mcp.sessions.count();
    let revision = desk.snapshot().revision();
    html! {
        p #live-counts {
            "Revision " (revision) ": " (live.sse) " SSE streams, " (live.mcp)
            " MCP notification streams, " (sessions) " MCP sessions."
        }
        section aria-labelledby="live-manifests" {
            h2 #live-manifests { "Manifests being watched" }
            @if live.manifests.is_empty() {
                p { "No stream is open." }
            } @else {
                table {
                    thead { tr {
                        th scope="col" { "Claims" } th scope="col" { "Tools" }
                        th.num scope="col" { "SSE streams" } th.num scope="col" { "MCP streams" }
                        th.num scope="col" { "Identities" }
                    } }
                    tbody {
                        @for manifest in &live.manifests {
                            tr {
                                td {
                                    code { (serde_json::to_string(&manifest.claims).unwrap_or_default()) }
                                    @if manifest.include_disabled { " " span.muted { "(preview)" } }
                                }
                                td { (manifest.tools) " at revision " (manifest.revision) }
                                td.num { (manifest.sse) }
                                td.num { (manifest.mcp) }
                                td.num { (manifest.identities) }
                            }
                        }
                    }
                }
            }
        }
        section aria-labelledby="live-notifications" {
            h2 #live-notifications { "Last notifications" }
            @if live.notifications.is_empty() {
                p { "No change was sent since the gateway started." }
            } @else {
                table {
                    thead { tr {
                        th scope="col" { "Revision" } th scope="col" { "At" }
                        th.num scope="col" { "Manifests changed" } th.num scope="col" { "Streams reached" }
                    } }
                    tbody {
                        @for notified in &live.notifications {
                            tr {
                                td { (notified.revision) }
                                td { (notified.at.format("%H:%M:%S%.3f UTC")) }
                                td.num { (notified.manifests) }
                                td.num { (notified.streams) }
                            }
                        }
                    }
                }
            }
        }
    }
}
