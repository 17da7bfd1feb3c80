//! The response bodies of the AuthZEN endpoints, as sent (and as `/openapi.json` describes
//! them): decisions, batches of decisions, a page of search results, the PDP metadata.

use serde::Serialize;
use utoipa::ToSchema;

use crate::service::decisions::{Answer, Reason, TOOL};

/// A decision (AuthZEN section 5.5).
#[derive(Debug, Serialize, ToSchema)]
pub struct Decision {
    /// `true`: the subject may call the tool; `false`: it must not.
    pub decision: bool,
    pub context: DecisionContext,
}

/// What comes with every decision.
#[derive(Debug, Serialize, ToSchema)]
pub struct DecisionContext {
    /// The catalog revision the decision was made at (the same as a `GET /agents/tools` at
    /// that revision lists).
    pub revision: u64,
    /// Why; only for callers that pass the admin rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
}

impl Decision {
    pub fn new(answer: Answer, revision: u64) -> Decision {
        Decision {
            decision: answer.permitted,
            context: DecisionContext {
                revision,
                reason: answer.reason,
            },
        }
    }
}

/// The decisions of a batch, in the order of its `evaluations` (fewer when a semantic stopped
/// early).
#[derive(Debug, Serialize, ToSchema)]
pub struct Decisions {
    pub evaluations: Vec<Decision>,
}

/// One page of a resource search (AuthZEN section 8).
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchPage {
    pub page: Page,
    pub context: SearchContext,
    /// The tools, by ascending id.
    pub results: Vec<ToolRef>,
}

/// Where a page stands.
#[derive(Debug, Serialize, ToSchema)]
pub struct Page {
    /// Send as `page.token` (with the same request) for the next page; `""` on the last page.
    pub next_token: String,
    /// Results on this page.
    pub count: usize,
    /// Results on all pages, at this revision.
    pub total: usize,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SearchContext {
    /// The catalog revision this page was computed at.
    pub revision: u64,
}

/// A tool as an AuthZEN resource.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolRef {
    /// Always `tool`.
    #[serde(rename = "type")]
    #[schema(example = "tool")]
    pub kind: &'static str,
    /// The tool id.
    #[schema(example = "billing:list_invoices")]
    pub id: String,
}

impl ToolRef {
    pub fn new(id: String) -> ToolRef {
        ToolRef { kind: TOOL, id }
    }
}

/// `GET /.well-known/authzen-configuration` (AuthZEN section 9): where the endpoints are.
/// toolgate has no subject or action search, so those endpoints are not listed.
#[derive(Debug, Serialize, ToSchema)]
pub struct Configuration {
    /// This PDP's identifier: the base URL the document was fetched from.
    #[schema(example = "https://toolgate.example.com")]
    pub policy_decision_point: String,
    pub access_evaluation_endpoint: String,
    pub access_evaluations_endpoint: String,
    pub search_resource_endpoint: String,
}

impl Configuration {
    /// The document for a gateway reached at `base` (`https://host`, no trailing slash).
    pub fn at(base: &str) -> Configuration {
        Configuration {
            policy_decision_point: base.to_owned(),
            access_evaluation_endpoint: format!("{base}{}", super::EVALUATION),
            access_evaluations_endpoint: format!("{base}{}", super::EVALUATIONS),
            search_resource_endpoint: format!("{base}{}", super::SEARCH_RESOURCE),
        }
    }
}
