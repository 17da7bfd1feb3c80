//! `/admin/revisions` in the document: pending and decided revisions of imported tools, and the
//! admins' decisions on them (docs/api.md, "Approved tool definitions").

use utoipa::openapi::path::{HttpMethod, PathItem, PathItemBuilder};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{Required, ResponseBuilder};

use super::{
    JSON, admin_operation, cursor_parameter, get, id_parameter, json_content, limit_parameter,
    problems, query_parameter, revision_header, schema_ref, text_schema,
};
use crate::transport::admin::{self, REVISION_HEADER};
use crate::transport::openapi::model::RevisionSchema;

/// `GET /admin/revisions`.
pub(super) fn list() -> PathItem {
    let status = ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(["pending", "approved", "rejected"]))
        .into();
    let operation = admin_operation(
        "list_revisions",
        "revisions",
        "Revisions of imported tools",
        "What refreshes found upstream (`new`, `changed`, `removed`, `renamed`), pending first, \
         then the most recently detected. Under pinning `hold` (the default) and `hide` agents \
         are served the approved definition until an admin approves a revision.",
    )
    .parameter(query_parameter(
        "status",
        status,
        "Only revisions with this status.",
    ))
    .parameter(query_parameter(
        "source_id",
        text_schema(),
        "Only revisions of this source's tools.",
    ))
    .parameter(query_parameter(
        "tool_id",
        text_schema(),
        "Only revisions of this tool (as the tool, or as a renamed tool's previous id).",
    ))
    .parameter(limit_parameter())
    .parameter(cursor_parameter())
    .response(
        "200",
        ResponseBuilder::new()
            .description("A page of revisions.")
            .content(
                JSON,
                json_content(schema_ref::<super::bodies::RevisionPage>()),
            ),
    );
    get(problems(operation, &[400]))
}

/// `GET /admin/revisions/{id}`.
pub(super) fn one() -> PathItem {
    let operation = admin_operation(
        "read_revision",
        "revisions",
        "One revision",
        "The revision with its diff (RFC 6902, from the approved definition), its findings and \
         the upstream's definition.",
    )
    .parameter(id_parameter("revision"))
    .response(
        "200",
        ResponseBuilder::new()
            .description("The revision.")
            .content(JSON, json_content(schema_ref::<RevisionSchema>())),
    );
    get(problems(operation, &[404]))
}

/// `POST /admin/revisions/{id}/approve` and `/reject`.
pub(super) fn decide(approve: bool) -> PathItem {
    let (verb, summary, description) = if approve {
        (
            "approve",
            "Approve a revision",
            "Applies the upstream's definition in one catalog revision with one audit record \
             (`action: approve`) and notifies exactly the identities whose manifest changed. A \
             definition with `high` findings needs each of their rule ids in `acknowledge` \
             (else 422 naming them). A `renamed` tool takes the old one's labels, enabled state \
             and group memberships; the old one is deprecated.",
        )
    } else {
        (
            "reject",
            "Reject a revision",
            "Keeps the approved definition (or keeps a new tool out). The same upstream \
             definition is not proposed again until the upstream changes it again.",
        )
    };
    let operation = admin_operation(
        &format!("{verb}_revision"),
        "revisions",
        summary,
        description,
    )
    .parameter(id_parameter("revision"))
    .request_body(Some(
        RequestBodyBuilder::new()
            .required(Some(Required::False))
            .content(
                JSON,
                json_content(schema_ref::<admin::revisions::DecisionBody>()),
            )
            .build(),
    ))
    .response(
        "200",
        ResponseBuilder::new()
            .description("The revision as decided.")
            .content(JSON, json_content(schema_ref::<RevisionSchema>()))
            .header(REVISION_HEADER.as_str(), revision_header()),
    );
    PathItemBuilder::new()
        .operation(
            HttpMethod::Post,
            problems(operation, &[400, 404, 409, 422, 429, 503]),
        )
        .build()
}
