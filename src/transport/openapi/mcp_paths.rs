//! The MCP endpoint and its discovery document, as the OpenAPI document describes them. The
//! JSON-RPC messages themselves are MCP's (its specification has their schemas); here are the
//! HTTP shapes: which media types go in and out, and which refusals are HTTP problems rather
//! than JSON-RPC errors.

use utoipa::openapi::path::{HttpMethod, Operation, OperationBuilder, PathItemBuilder};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{ContentBuilder, PathItem, ResponseBuilder};

use super::{JSON, header_object, json_content, open_operation, operation, problems};

const EVENT_STREAM: &str = "text/event-stream";

/// Any JSON object: a JSON-RPC message, whose schema is MCP's.
fn message() -> utoipa::openapi::Content {
    json_content(ObjectBuilder::new().schema_type(Type::Object).into())
}

fn events() -> utoipa::openapi::Content {
    ContentBuilder::new()
        .schema(Some(super::text_schema()))
        .build()
}

/// `/mcp`: POST a message, GET a session's notification stream, DELETE a session.
pub(super) fn endpoint() -> PathItem {
    PathItemBuilder::new()
        .operation(HttpMethod::Post, post())
        .operation(HttpMethod::Get, get())
        .operation(HttpMethod::Delete, delete())
        .build()
}

fn mcp_operation(id: &str, summary: &str, description: &str) -> OperationBuilder {
    operation(id, "mcp", summary, description)
        .response("401", super::Ref::from_response_name("Unauthorized"))
}

fn post() -> Operation {
    let builder = mcp_operation(
        "mcp_message",
        "One JSON-RPC message",
        "Model Context Protocol over Streamable HTTP (revisions 2025-06-18, 2025-11-25 with \
         sessions, 2026-07-28 without). `tools/list` lists exactly the caller's manifest; \
         `tools/call` is decided by the same evaluator, then forwarded. The 401 carries \
         `WWW-Authenticate: Bearer resource_metadata=\"…/.well-known/oauth-protected-resource\"`. \
         `subscriptions/listen` (2026-07-28) is answered with a notification stream.",
    )
    .request_body(Some(
        utoipa::openapi::request_body::RequestBodyBuilder::new()
            .content(JSON, message())
            .required(Some(utoipa::openapi::Required::True))
            .build(),
    ))
    .response(
        "200",
        ResponseBuilder::new()
            .description(
                "The JSON-RPC response (errors inside it are JSON-RPC errors), or for \
                 `subscriptions/listen` the notification stream.",
            )
            .content(JSON, message())
            .content(EVENT_STREAM, events())
            .header(
                "Mcp-Session-Id",
                header_object("The new session, on the answer to `initialize`."),
            ),
    )
    .response(
        "202",
        ResponseBuilder::new().description("A notification or a response, accepted."),
    );
    problems(builder, &[400, 403, 404, 413, 415, 429]).build()
}

fn get() -> Operation {
    let builder = mcp_operation(
        "mcp_stream",
        "A session's notification stream",
        "`notifications/tools/list_changed` exactly when the caller's manifest changes; ends at \
         the token's `exp` and with the session. Needs `Mcp-Session-Id` and `Accept: \
         text/event-stream`.",
    )
    .response(
        "200",
        ResponseBuilder::new()
            .description("Server-sent events, one JSON-RPC notification each.")
            .content(EVENT_STREAM, events()),
    );
    problems(builder, &[400, 403, 404, 406, 429]).build()
}

fn delete() -> Operation {
    let builder = mcp_operation(
        "mcp_end_session",
        "End a session",
        "Ends the session named by `Mcp-Session-Id` and its notification streams.",
    )
    .response("204", ResponseBuilder::new().description("Ended."));
    problems(builder, &[400, 403, 404]).build()
}

/// The RFC 9728 protected-resource metadata (open).
pub(super) fn protected_resource(id: &str) -> Operation {
    let document = ObjectBuilder::new()
        .schema_type(Type::Object)
        .property(
            "resource",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some("`<base>/mcp`: the protected resource.")),
        )
        .property(
            "authorization_servers",
            utoipa::openapi::schema::ArrayBuilder::new()
                .items(ObjectBuilder::new().schema_type(Type::String))
                .description(Some("The configured token issuer, when there is one.")),
        )
        .property(
            "bearer_methods_supported",
            utoipa::openapi::schema::ArrayBuilder::new()
                .items(ObjectBuilder::new().schema_type(Type::String)),
        )
        .property(
            "resource_name",
            ObjectBuilder::new().schema_type(Type::String),
        )
        .required("resource");
    open_operation(id, "Where an MCP client gets a token (RFC 9728)")
        .response(
            "200",
            ResponseBuilder::new()
                .description(
                    "The protected-resource metadata of `/mcp`; `/…/mcp` is the path-suffixed \
                     form of the same document.",
                )
                .content(JSON, json_content(document.into())),
        )
        .build()
}
