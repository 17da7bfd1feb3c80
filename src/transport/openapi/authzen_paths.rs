//! The AuthZEN part of the document: the decision endpoints (`/access/v1/…`) with their request
//! and response bodies, and the discovery document.
//!
//! The request types below exist only for the document (the handlers read bodies as JSON, to
//! name each problem's field path and to ignore unknown keys, as AuthZEN says); the response
//! types are the ones sent ([`crate::transport::authzen::reply`]). `tests/it/openapi.rs` checks real
//! answers against both.

#![allow(dead_code)]

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa::openapi::path::{HttpMethod, Operation, OperationBuilder, PathItem, PathItemBuilder};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::schema::{OneOfBuilder, Schema};
use utoipa::openapi::{RefOr, Required, ResponseBuilder};

use super::{JSON, get, json_content, open_operation, operation, problems, schema_ref};
use crate::transport::authzen::reply::{Configuration, Decision, Decisions, SearchPage};

/// Who is asked about. Leave it out to ask about the caller.
#[derive(Serialize, ToSchema)]
#[schema(as = AuthzenSubject)]
pub(super) struct Subject {
    /// Any type, e.g. `agent`.
    #[serde(rename = "type")]
    #[schema(example = "agent")]
    kind: String,
    /// Without `properties.claims`: the caller's `sub`.
    #[schema(example = "agent-7")]
    id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    properties: Option<SubjectProperties>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct SubjectProperties {
    /// The claims to evaluate, as if from a verified token. Claims other than the caller's own
    /// need the admin rule (403 otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    claims: Option<Value>,
}

/// What the subject would do: `call` (any other name is a deny).
#[derive(Serialize, ToSchema)]
#[schema(as = AuthzenAction)]
pub(super) struct Action {
    #[schema(example = "call")]
    name: String,
}

/// A tool: `{"type": "tool", "id": "<tool id>"}` (any other type is a deny).
#[derive(Serialize, ToSchema)]
#[schema(as = AuthzenResource)]
pub(super) struct Resource {
    #[serde(rename = "type")]
    #[schema(example = "tool")]
    kind: String,
    #[schema(example = "billing:list_invoices")]
    id: String,
}

/// The resource type searched: `{"type": "tool"}` (an `id` is ignored).
#[derive(Serialize, ToSchema)]
pub(super) struct SearchedResource {
    #[serde(rename = "type")]
    #[schema(example = "tool")]
    kind: String,
}

/// The narrowing of `GET /agents/tools`' `state` and `group` options; other keys are ignored.
#[derive(Serialize, ToSchema)]
#[schema(as = AuthzenContext)]
pub(super) struct Context {
    /// Keep tools available in this state.
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<String>,
    /// Keep members of these granted groups (ids or names); `*` keeps all.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::transport::admin::preview::List>)]
    group: Option<Value>,
}

/// `POST /access/v1/evaluation`.
#[derive(Serialize, ToSchema)]
pub(super) struct EvaluationRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    subject: Option<Subject>,
    action: Action,
    resource: Resource,
    #[serde(skip_serializing_if = "Option::is_none")]
    context: Option<Context>,
}

/// One evaluation of a batch: what it gives overrides the batch's top-level default.
#[derive(Serialize, ToSchema)]
pub(super) struct EvaluationItem {
    #[serde(skip_serializing_if = "Option::is_none")]
    subject: Option<Subject>,
    #[serde(skip_serializing_if = "Option::is_none")]
    action: Option<Action>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resource: Option<Resource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    context: Option<Context>,
}

/// `POST /access/v1/evaluations`: defaults at the top, the evaluations, the semantic.
#[derive(Serialize, ToSchema)]
pub(super) struct EvaluationsRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    subject: Option<Subject>,
    #[serde(skip_serializing_if = "Option::is_none")]
    action: Option<Action>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resource: Option<Resource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    context: Option<Context>,
    /// Without it (or empty), the request is one evaluation and is answered like one. At most
    /// 1000 items (more is a 400 at `evaluations`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(max_items = 1000)]
    evaluations: Option<Vec<EvaluationItem>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    options: Option<EvaluationsOptions>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct EvaluationsOptions {
    /// `execute_all` (the default), `deny_on_first_deny`, `permit_on_first_permit`: the
    /// answers stop after the first deny (or permit), which is included.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = semantic_schema)]
    evaluations_semantic: Option<String>,
}

fn semantic_schema() -> utoipa::openapi::schema::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(crate::service::decisions::Semantic::NAMES))
        .build()
}

/// `POST /access/v1/search/resource`.
#[derive(Serialize, ToSchema)]
pub(super) struct ResourceSearchRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    subject: Option<Subject>,
    action: Action,
    resource: SearchedResource,
    #[serde(skip_serializing_if = "Option::is_none")]
    context: Option<Context>,
    #[serde(skip_serializing_if = "Option::is_none")]
    page: Option<PageRequest>,
}

#[derive(Serialize, ToSchema)]
pub(super) struct PageRequest {
    /// The `next_token` of the previous page (with an otherwise identical request).
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<String>,
    /// Results per page: default 100, at least 1 (0 is a 400), at most 1000 (more is taken as
    /// 1000).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1)]
    limit: Option<u64>,
}

/// Adds the schemas of this part of the document.
pub(super) fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
    super::collect::<EvaluationRequest>(schemas);
    super::collect::<EvaluationsRequest>(schemas);
    super::collect::<ResourceSearchRequest>(schemas);
    super::collect::<Decision>(schemas);
    super::collect::<Decisions>(schemas);
    super::collect::<SearchPage>(schemas);
    super::collect::<Configuration>(schemas);
}

fn post(operation: Operation) -> PathItem {
    PathItemBuilder::new()
        .operation(HttpMethod::Post, operation)
        .build()
}

fn body(schema: RefOr<Schema>, description: &str) -> utoipa::openapi::request_body::RequestBody {
    RequestBodyBuilder::new()
        .required(Some(Required::True))
        .description(Some(description))
        .content(JSON, json_content(schema))
        .build()
}

/// What every decision route says of subjects, reasons and errors.
const COMMON: &str = "Without `subject` (or with a subject naming the caller's `sub` and no \
    claims) the caller's own claims are evaluated; other claims (`subject.properties.claims`) \
    need the admin rule (403). The decision is membership in the manifest `GET /agents/tools` \
    gives for those claims and `context` (`state`, `group`) at the revision in \
    `context.revision`; callers that pass the admin rule also get `context.reason`. A deny is \
    never an error: an unknown tool, another action than `call` or another resource type than \
    `tool` is `\"decision\": false`. A body of the wrong shape is 400 naming each field \
    (`evaluations[3].resource.type`).";

/// The AuthZEN paths, for [`super::paths`].
pub(super) fn paths() -> Vec<(&'static str, PathItem)> {
    use crate::transport::authzen::{CONFIGURATION, EVALUATION, EVALUATIONS, SEARCH_RESOURCE};
    vec![
        (EVALUATION, post(evaluation())),
        (EVALUATIONS, post(evaluations())),
        (SEARCH_RESOURCE, post(search_resource())),
        (CONFIGURATION, get(configuration())),
    ]
}

/// The problems every decision route can answer with.
const DECISION_PROBLEMS: [u16; 5] = [400, 401, 403, 413, 429];

/// `POST /access/v1/evaluation`: one decision; a deny may be configured to answer non-2xx.
fn evaluation() -> Operation {
    let evaluation = operation(
        "evaluate_access",
        "decisions",
        "May this subject call this tool? (AuthZEN Access Evaluation)",
        &format!(
            "{COMMON} With `TOOLGATE_AUTHZ_DENY_STATUS` set (e.g. 403), a deny answers with that \
             status and the same body, for proxies whose external authorization treats any 2xx \
             as allow."
        ),
    )
    .request_body(Some(body(
        schema_ref::<EvaluationRequest>(),
        "One evaluation.",
    )))
    .response(
        "200",
        ResponseBuilder::new()
            .description("The decision; a deny too, unless a deny status is configured.")
            .content(JSON, json_content(schema_ref::<Decision>())),
    )
    .response(
        "4XX",
        ResponseBuilder::new()
            .description(
                "With `TOOLGATE_AUTHZ_DENY_STATUS` set: a deny, with the decision as the body \
                 (not problem JSON).",
            )
            .content(JSON, json_content(schema_ref::<Decision>())),
    );
    problems(evaluation, &DECISION_PROBLEMS).build()
}

/// `POST /access/v1/evaluations`: many decisions, with defaults the items override.
fn evaluations() -> Operation {
    let batch = operation(
        "evaluate_access_batch",
        "decisions",
        "Many decisions at once (AuthZEN Access Evaluations)",
        &format!(
            "{COMMON} The top-level `subject`, `action`, `resource` and `context` are defaults \
             that each item of `evaluations` overrides key by key; at most 1000 items (400 \
             at `evaluations` beyond). Each distinct subject and context is evaluated once, \
             however many tools are asked about, and each one beyond the first takes one more \
             request from the caller's `decisions` rate limit (at most a burst). Always 200."
        ),
    )
    .request_body(Some(body(
        schema_ref::<EvaluationsRequest>(),
        "Defaults, evaluations and options.",
    )))
    .response(
        "200",
        ResponseBuilder::new()
            .description(
                "The decisions in the order asked (fewer when a semantic stopped early); a \
                 single decision when the request had no `evaluations`.",
            )
            .content(
                JSON,
                json_content(
                    OneOfBuilder::new()
                        .item(schema_ref::<Decisions>())
                        .item(schema_ref::<Decision>())
                        .into(),
                ),
            ),
    );
    problems(batch, &DECISION_PROBLEMS).build()
}

/// `POST /access/v1/search/resource`: the tools a subject may call, paged.
fn search_resource() -> Operation {
    let search = operation(
        "search_resources",
        "decisions",
        "The tools a subject may call (AuthZEN Resource Search)",
        "The ids of the manifest `GET /agents/tools` gives for the subject's claims and \
         `context`, ascending, as `{\"type\": \"tool\", \"id\"}`, paged: send `page.next_token` \
         back as `page.token` with an otherwise identical request until it is `\"\"`. Subjects \
         as for evaluations; another action than `call` or resource type than `tool` finds \
         nothing.",
    )
    .request_body(Some(body(
        schema_ref::<ResourceSearchRequest>(),
        "The search and its page.",
    )))
    .response(
        "200",
        ResponseBuilder::new()
            .description("One page.")
            .content(JSON, json_content(schema_ref::<SearchPage>())),
    );
    problems(search, &DECISION_PROBLEMS).build()
}

/// `GET /.well-known/authzen-configuration`: where the decision endpoints are (no token).
fn configuration() -> OperationBuilder {
    let configuration = open_operation(
        "authzen_configuration",
        "AuthZEN Policy Decision Point metadata",
    )
    .tag("decisions")
    .description(Some(
        "Where the decision endpoints are, as absolute URLs on the host the request was sent \
         to (`https` when `X-Forwarded-Proto: https` says a proxy terminates TLS). No token.",
    ))
    .response(
        "200",
        ResponseBuilder::new()
            .description("The metadata.")
            .content(JSON, json_content(schema_ref::<Configuration>())),
    );
    problems(configuration, &[400])
}
