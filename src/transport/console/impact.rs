//! The impact of a proposed change, as `POST /admin/impact` answers it, shown before the
//! button that makes the change.

use maud::{Markup, html};

use crate::app::AdminDesk;
use crate::service::impact::{ImpactReport, ImpactRequest, Proposal};
use crate::service::{Actor, Precondition};
use crate::transport::errors::ApiError;

/// Previews `proposal` against exactly revision `revision` (what the page shows), for the claim
/// sets served recently.
pub(super) async fn of(
    desk: &AdminDesk,
    actor: &Actor,
    revision: u64,
    proposal: Proposal,
) -> Result<ImpactReport, ApiError> {
    let precondition = Precondition::OneOf(vec![revision]);
    let request = ImpactRequest {
        actor,
        precondition: &precondition,
        proposal,
        claim_sets: Vec::new(),
    };
    Ok(desk.impact(request).await?)
}

/// The report: each affected identity with the tools it gains and loses, then the totals per
/// tool.
pub(super) fn section(report: &ImpactReport) -> Markup {
    let affected = report.claims_sets.len() + report.seen.len();
    html! {
        section aria-labelledby="impact" {
            h2 #impact { "Impact" }
            @for warning in &report.warnings {
                p.notice role="note" { (warning) }
            }
            @if affected == 0 {
                p { "No identity served in the last 24 hours would gain or lose a tool." }
            } @else {
                p {
                    (affected) @if affected == 1 { " identity" } @else { " identities" }
                    " served in the last 24 hours would see a different manifest."
                }
                table {
                    caption.muted { "Identities affected (their claims as the policies read them)" }
                    thead { tr { th { "Claims" } th { "Last seen" } th { "Gains" } th { "Loses" } } }
                    tbody {
                        @for seen in &report.seen {
                            tr {
                                td { code { (serde_json::to_string(&*seen.claims).unwrap_or_default()) } }
                                td { (seen.last_seen.format("%Y-%m-%d %H:%M:%S UTC")) }
                                td.gained { (list(&seen.gained)) }
                                td.lost { (list(&seen.lost)) }
                            }
                        }
                        @for given in &report.claims_sets {
                            tr {
                                td { code { (given.claims.get()) } }
                                td { "given" }
                                td.gained { (list(&given.gained)) }
                                td.lost { (list(&given.lost)) }
                            }
                        }
                    }
                }
                table {
                    caption.muted { "Totals per tool" }
                    thead { tr { th { "Tool" } th.num { "Gained by" } th.num { "Lost by" } } }
                    tbody {
                        @for (tool, totals) in &report.totals {
                            tr {
                                td { (tool) }
                                td.num { (totals.gained) }
                                td.num { (totals.lost) }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn list(ids: &[String]) -> Markup {
    html! {
        @if ids.is_empty() {
            span.muted { "none" }
        } @else {
            (ids.join(", "))
        }
    }
}
