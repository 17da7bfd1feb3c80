//! `GET /openapi.json`: the OpenAPI 3.1 description of the whole HTTP API, generated from the
//! code rather than written by hand.
//!
//! Schemas are derived (`utoipa::ToSchema`) from the types that are really serialised: the model,
//! the explanation, the audit record, the problem body; [`bodies`] covers the few bodies that
//! have no type of their own. Paths are built here with utoipa's builders, the admin
//! collections in a loop over [`admin::COLLECTIONS`], the table the router mounts them from,
//! with each collection's list filters. The document is built and serialised once.

mod admin_paths;
mod agent_paths;
mod authzen_paths;
mod bodies;
mod collection_paths;
mod conditional;
mod mcp_paths;
pub mod model;
mod ops_paths;
mod revision_paths;
mod run_paths;
mod stream_paths;

pub use agent_paths::AGENT_QUERY;

use std::sync::LazyLock;

use axum::body::Bytes;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use utoipa::openapi::path::{
    HttpMethod, Operation, OperationBuilder, Parameter, ParameterBuilder, ParameterIn,
    PathItemBuilder,
};
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::tag::TagBuilder;
use utoipa::openapi::{
    Components, ComponentsBuilder, ContentBuilder, Header, InfoBuilder, LicenseBuilder, OpenApi,
    OpenApiBuilder, OpenApiVersion, Paths, PathsBuilder, Ref, RefOr, Required, ResponseBuilder,
    SecurityRequirement,
};
use utoipa::{PartialSchema, ToSchema};

use super::admin::{self, COLLECTIONS};
use super::errors::Problem;
use crate::store::AuditRecord;

/// The name of the security scheme every non-operational route requires.
pub const BEARER: &str = "bearer";

const JSON: &str = "application/json";
const PROBLEM_JSON: &str = "application/problem+json";
const MERGE_PATCH_JSON: &str = "application/merge-patch+json";

/// The document, serialised once on first use.
static DOCUMENT: LazyLock<Bytes> = LazyLock::new(|| {
    Bytes::from(
        document()
            .to_json()
            .expect("an OpenAPI document built in code always serialises"),
    )
});

/// `GET /openapi.json` (no token needed).
pub async fn serve() -> Response {
    (
        [(header::CONTENT_TYPE, HeaderValue::from_static(JSON))],
        DOCUMENT.clone(),
    )
        .into_response()
}

/// The error responses, shared as components (`#/components/responses/<name>`): status, name,
/// description. Each route lists the ones it can answer with, per docs/api.md.
const PROBLEMS: [(u16, &str, &str); 13] = [
    (
        400,
        "Malformed",
        "The body is not JSON, or a query parameter is unknown or malformed; on the AuthZEN \
         routes, also a body of the wrong shape (`errors` names each field).",
    ),
    (
        401,
        "Unauthorized",
        "A missing, malformed, expired or badly signed token.",
    ),
    (
        403,
        "Forbidden",
        "A valid token that does not pass the admin rule.",
    ),
    (404, "NotFound", "No entity with this id."),
    (
        406,
        "NotAcceptable",
        "The client accepts no representation the route gives (`GET /mcp` without \
         `text/event-stream` in `Accept`).",
    ),
    (
        409,
        "Conflict",
        "An id or name clash, a reference that blocks a delete, or a concurrent write.",
    ),
    (
        412,
        "PreconditionFailed",
        "`If-Match` names a revision the catalog is no longer at: another write came first. \
         Nothing was changed; read again (the answer's `ETag` is the current revision) and \
         reapply the change.",
    ),
    (
        413,
        "PayloadTooLarge",
        "The body is larger than the limit (default 1 MiB).",
    ),
    (
        415,
        "UnsupportedMediaType",
        "The body is in a media type the route does not read (`/mcp` reads JSON).",
    ),
    (
        422,
        "Invalid",
        "Well-formed but invalid content; `errors` names each field.",
    ),
    (
        429,
        "TooManyRequests",
        "The subject (`sub`) spent its rate-limit budget for this class of routes (agent \
         reads, stream opens, admin writes, decisions); `Retry-After` says when to try again.",
    ),
    (
        502,
        "BadGateway",
        "An upstream the gateway imports from (an OpenAPI URL, an MCP server) failed or \
         answered with an unusable definition; `detail` says why. Nothing was changed.",
    ),
    (
        503,
        "Unavailable",
        "A backing store cannot be reached; nothing was changed.",
    ),
];

/// The OpenAPI 3.1 description of every route of [`super::router`].
pub fn document() -> OpenApi {
    OpenApiBuilder::new()
        .openapi(OpenApiVersion::Version31)
        .info(
            InfoBuilder::new()
                .title("toolgate")
                .version(env!("CARGO_PKG_VERSION"))
                .description(Some(env!("CARGO_PKG_DESCRIPTION")))
                .license(Some(
                    LicenseBuilder::new()
                        .name(env!("CARGO_PKG_LICENSE"))
                        .identifier(Some(env!("CARGO_PKG_LICENSE")))
                        .build(),
                )),
        )
        .paths(paths())
        .components(Some(components()))
        .security(Some([bearer()]))
        .tags(Some(
            ["agents", "decisions"]
                .into_iter()
                .chain(COLLECTIONS.iter().map(|c| c.kind.as_str()))
                .chain(["revisions", "runs", "preview", "catalog", "audit", "ops"])
                .map(|name| TagBuilder::new().name(name).build()),
        ))
        .build()
}

fn bearer() -> SecurityRequirement {
    SecurityRequirement::new(BEARER, Vec::<String>::new())
}

fn components() -> Components {
    let mut schemas = Vec::new();
    collect::<model::CatalogSchema>(&mut schemas);
    collect::<AuditRecord>(&mut schemas);
    collect::<Problem>(&mut schemas);
    collect::<admin::tools::Toggle>(&mut schemas);
    collect::<admin::preview::PreviewRequest>(&mut schemas);
    collect::<admin::impact::ImpactBody>(&mut schemas);
    collect::<crate::service::impact::ImpactReport>(&mut schemas);
    collect::<admin::refresh::RefreshReply>(&mut schemas);
    collect::<admin::backup::BackupReply>(&mut schemas);
    collect::<crate::service::RefreshStatus>(&mut schemas);
    collect::<bodies::Manifest>(&mut schemas);
    collect::<bodies::GroupMembers>(&mut schemas);
    collect::<bodies::ToolGroups>(&mut schemas);
    collect::<bodies::ClaimSets>(&mut schemas);
    collect::<bodies::Live>(&mut schemas);
    collect::<bodies::CatalogReplaced>(&mut schemas);
    collect::<bodies::AuditPage>(&mut schemas);
    collect::<bodies::RevisionPage>(&mut schemas);
    collect::<admin::revisions::DecisionBody>(&mut schemas);
    collect::<bodies::Health>(&mut schemas);
    collect::<bodies::Readiness>(&mut schemas);
    authzen_paths::schemas(&mut schemas);
    for collection in COLLECTIONS {
        schemas.push((
            collection_paths::page_name(&collection),
            collection_paths::page_schema(&collection),
        ));
    }
    let mut builder = ComponentsBuilder::new()
        .schemas_from_iter(schemas)
        .security_scheme(
            BEARER,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "A JWT (HS*, RS*, PS256, ES*, EdDSA). Admin routes and the \
                         `include_disabled`/`explain` options also need the admin rule \
                         (default: `roles` or `realm_access.roles` equals `admin`).",
                    ))
                    .build(),
            ),
        );
    for (status, name, description) in PROBLEMS {
        let mut response = ResponseBuilder::new()
            .description(description)
            .content(PROBLEM_JSON, json_content(schema_ref::<Problem>()));
        if status == 429 {
            response = response.header(
                "Retry-After",
                header_object("Seconds until the next request of this class would pass."),
            );
        }
        if status == 401 {
            response = response.header(
                "WWW-Authenticate",
                header_object(
                    "`Bearer` without a token; otherwise `Bearer error=\"invalid_token\", \
                     error_description=\"…\"`.",
                ),
            );
        }
        builder = builder.response(name, response.build());
    }
    builder.build()
}

/// Adds `T`'s schema and every schema it refers to.
fn collect<T: ToSchema>(schemas: &mut Vec<(String, RefOr<Schema>)>) {
    schemas.push((T::name().into_owned(), T::schema()));
    T::schemas(schemas);
}

fn schema_ref<T: ToSchema>() -> RefOr<Schema> {
    Ref::from_schema_name(T::name()).into()
}

fn named_ref(name: impl Into<String>) -> RefOr<Schema> {
    Ref::from_schema_name(name).into()
}

fn paths() -> Paths {
    let mut paths = PathsBuilder::new();
    // Operation ids are unique within a document, so the alias has its own.
    for (path, id) in [
        ("/agents/tools", "list_agent_tools"),
        ("/api/agents/tools", "list_agent_tools_via_api_alias"),
    ] {
        paths = paths.path(path, get(agent_paths::agent_manifest(id)));
    }
    for (path, id) in [
        ("/agents/tools/stream", "stream_agent_tools"),
        ("/agents/stream", "stream_agent_tools_via_short_alias"),
        ("/api/agents/stream", "stream_agent_tools_via_api_alias"),
    ] {
        paths = paths.path(path, get(stream_paths::manifest_stream(id)));
    }
    for (path, item) in authzen_paths::paths() {
        paths = paths.path(path, item);
    }
    for collection in COLLECTIONS {
        let (list_and_create, one) = collection_paths::collection_paths(&collection);
        paths = paths
            .path(collection.path(), list_and_create)
            .path(format!("{}/{{id}}", collection.path()), one);
    }
    paths = paths
        .path("/admin/sources/{id}/refresh", admin_paths::refresh_source())
        .path("/admin/tools/{id}/enable", admin_paths::toggle(true))
        .path("/admin/tools/{id}/disable", admin_paths::toggle(false))
        .path("/admin/groups/{id}/tools", admin_paths::group_members())
        .path("/admin/tools/{id}/groups", admin_paths::tool_groups())
        .path("/admin/claim-sets", admin_paths::claim_sets())
        .path("/admin/live", admin_paths::live())
        .path("/admin/preview", admin_paths::preview())
        .path("/admin/impact", admin_paths::impact())
        .path("/admin/catalog", admin_paths::catalog())
        .path("/admin/audit", admin_paths::audit())
        .path("/admin/backup", admin_paths::backup())
        .path("/admin/revisions", revision_paths::list())
        .path("/admin/revisions/{id}", revision_paths::one())
        .path(
            "/admin/revisions/{id}/approve",
            revision_paths::decide(true),
        )
        .path(
            "/admin/revisions/{id}/reject",
            revision_paths::decide(false),
        )
        .path("/mcp", mcp_paths::endpoint())
        .path(
            "/.well-known/oauth-protected-resource",
            get(mcp_paths::protected_resource("protected_resource_metadata")),
        )
        .path(
            "/.well-known/oauth-protected-resource/mcp",
            get(mcp_paths::protected_resource(
                "protected_resource_metadata_of_mcp",
            )),
        )
        .path("/oauth/token", post(ops_paths::oauth_token()))
        .path("/.well-known/jwks.json", get(ops_paths::jwks()))
        .path("/runs", run_paths::runs())
        .path("/runs/{id}", run_paths::run())
        .path("/runs/{id}/calls", run_paths::calls())
        .path("/admin/runs", run_paths::admin_runs())
        .path("/healthz", get(ops_paths::healthz()))
        .path("/readyz", get(ops_paths::readyz()))
        .path("/metrics", get(ops_paths::metrics()))
        .path("/openapi.json", get(ops_paths::openapi_json()));
    let mut paths = paths.build();
    conditional::describe(&mut paths);
    paths
}

fn get(operation: impl Into<Operation>) -> utoipa::openapi::PathItem {
    PathItemBuilder::new()
        .operation(HttpMethod::Get, operation)
        .build()
}

fn post(operation: impl Into<Operation>) -> utoipa::openapi::PathItem {
    PathItemBuilder::new()
        .operation(HttpMethod::Post, operation)
        .build()
}

/// An operation that needs a token (the document's default security).
fn operation(id: &str, tag: &str, summary: &str, description: &str) -> OperationBuilder {
    let builder = OperationBuilder::new()
        .operation_id(Some(id))
        .tag(tag)
        .summary(Some(summary));
    if description.is_empty() {
        builder
    } else {
        builder.description(Some(description))
    }
}

/// An admin operation: 401 without a valid token, 403 without the admin rule.
fn admin_operation(id: &str, tag: &str, summary: &str, description: &str) -> OperationBuilder {
    problems(operation(id, tag, summary, description), &[401, 403])
}

/// An operational route: no token.
fn open_operation(id: &str, summary: &str) -> OperationBuilder {
    OperationBuilder::new()
        .operation_id(Some(id))
        .tag("ops")
        .summary(Some(summary))
        .securities(Some(Vec::<SecurityRequirement>::new()))
}

/// Adds the shared problem responses with these statuses.
fn problems(mut builder: OperationBuilder, statuses: &[u16]) -> OperationBuilder {
    for status in statuses {
        let (_, name, _) = PROBLEMS
            .iter()
            .find(|(known, _, _)| known == status)
            .expect("every status used is in PROBLEMS");
        builder = builder.response(status.to_string(), Ref::from_response_name(*name));
    }
    builder
}

fn json_content(schema: RefOr<Schema>) -> utoipa::openapi::Content {
    ContentBuilder::new().schema(Some(schema)).build()
}

fn header_object(description: &str) -> Header {
    utoipa::openapi::HeaderBuilder::new()
        .schema(Some(String::schema()))
        .description(Some(description))
        .build()
}

fn revision_header() -> Header {
    utoipa::openapi::HeaderBuilder::new()
        .schema(Some(u64::schema()))
        .description(Some(
            "The catalog revision the response reflects (for writes: the one they produced).",
        ))
        .build()
}

fn text_schema() -> RefOr<Schema> {
    String::schema()
}

fn flag_schema() -> RefOr<Schema> {
    bool::schema()
}

fn query_parameter(name: &str, schema: RefOr<Schema>, description: &str) -> Parameter {
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Query)
        .required(Required::False)
        .schema(Some(schema))
        .description(Some(description))
        .build()
}

fn id_parameter(noun: &str) -> Parameter {
    ParameterBuilder::new()
        .name("id")
        .parameter_in(ParameterIn::Path)
        .required(Required::True)
        .schema(Some(text_schema()))
        .description(Some(format!("The {noun}'s id.")))
        .build()
}

fn limit_parameter() -> Parameter {
    query_parameter(
        "limit",
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(1))
            .maximum(Some(1000))
            .default(Some(100.into()))
            .into(),
        "The most items on one page.",
    )
}

fn cursor_parameter() -> Parameter {
    query_parameter(
        "cursor",
        text_schema(),
        "The `next_cursor` of the previous page.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_reference_resolves() {
        let document = serde_json::to_value(document()).expect("serialises");
        let schemas = document["components"]["schemas"]
            .as_object()
            .expect("schemas");
        let responses = document["components"]["responses"]
            .as_object()
            .expect("responses");
        let mut stack = vec![&document];
        while let Some(value) = stack.pop() {
            match value {
                serde_json::Value::Object(map) => {
                    if let Some(target) = map.get("$ref").and_then(|r| r.as_str()) {
                        let resolved = if let Some(name) =
                            target.strip_prefix("#/components/schemas/")
                        {
                            schemas.contains_key(name)
                        } else if let Some(name) = target.strip_prefix("#/components/responses/") {
                            responses.contains_key(name)
                        } else {
                            false
                        };
                        assert!(resolved, "dangling reference {target}");
                    }
                    stack.extend(map.values());
                }
                serde_json::Value::Array(items) => stack.extend(items),
                _ => {}
            }
        }
    }

    /// utoipa cannot read back a typeless schema (`{}`, "any value", as for `ClaimMatcher::value`;
    /// juhaku/utoipa#1192), so the whole document does not round-trip through its types; the
    /// parts without such schemas do.
    #[test]
    fn paths_and_security_parse_as_openapi() {
        let document = serde_json::to_value(document()).expect("serialises");
        assert_eq!(document["openapi"], "3.1.0");
        let paths: Paths = serde_json::from_value(document["paths"].clone()).expect("paths");
        assert_eq!(
            serde_json::to_value(&paths).expect("serialises"),
            document["paths"]
        );
        let _: utoipa::openapi::Info =
            serde_json::from_value(document["info"].clone()).expect("info");
        let _: std::collections::BTreeMap<String, SecurityScheme> =
            serde_json::from_value(document["components"]["securitySchemes"].clone())
                .expect("security schemes");
    }

    #[test]
    fn operation_ids_are_unique() {
        let document = serde_json::to_value(document()).expect("serialises");
        let mut seen = std::collections::BTreeSet::new();
        for item in document["paths"].as_object().expect("paths").values() {
            for operation in item.as_object().expect("path item").values() {
                let id = operation["operationId"].as_str().expect("operationId");
                assert!(seen.insert(id.to_owned()), "duplicate operationId {id}");
            }
        }
    }
}
