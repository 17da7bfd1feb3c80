//! The operational routes of the document: health, readiness, metrics and the document itself,
//! all open (no token).

use utoipa::openapi::ResponseBuilder;
use utoipa::openapi::path::OperationBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Type};

use super::{JSON, bodies, json_content, open_operation, problems, schema_ref};

pub(super) fn healthz() -> OperationBuilder {
    open_operation("healthz", "The process is alive").response(
        "200",
        ResponseBuilder::new()
            .description("Alive.")
            .content(JSON, json_content(schema_ref::<bodies::Health>())),
    )
}

pub(super) fn readyz() -> OperationBuilder {
    let operation = open_operation("readyz", "The backing stores answer").response(
        "200",
        ResponseBuilder::new()
            .description("Ready.")
            .content(JSON, json_content(schema_ref::<bodies::Readiness>())),
    );
    problems(operation, &[503])
}

pub(super) fn metrics() -> OperationBuilder {
    open_operation("metrics", "This instance's metrics").response(
        "200",
        ResponseBuilder::new()
            .description(
                "Prometheus text (exposition format 0.0.4): requests, resolutions, cache, \
                 streams, store and Redis, rate limits. Labels hold route templates and \
                 small enums, never identities.",
            )
            .content(
                "text/plain",
                json_content(ObjectBuilder::new().schema_type(Type::String).into()),
            ),
    )
}

pub(super) fn openapi_json() -> OperationBuilder {
    open_operation("openapi", "This document").response(
        "200",
        ResponseBuilder::new()
            .description("The OpenAPI 3.1 description of the API.")
            .content(
                JSON,
                json_content(ObjectBuilder::new().schema_type(Type::Object).into()),
            ),
    )
}

/// `POST /oauth/token`: a delegated token (RFC 8693 token exchange).
pub(super) fn oauth_token() -> OperationBuilder {
    let form = ObjectBuilder::new()
        .property(
            "grant_type",
            string("urn:ietf:params:oauth:grant-type:token-exchange"),
        )
        .property(
            "subject_token",
            string("A token toolgate accepts (a delegated one too)."),
        )
        .property(
            "subject_token_type",
            string("urn:ietf:params:oauth:token-type:access_token"),
        )
        .property(
            "scope",
            string(
                "What the child may keep, space-separated: tool:<tool_id> and group:<group_id> \
                 items, at least one naming something the subject sees.",
            ),
        )
        .property(
            "expires_in",
            string("Seconds, optional; never past the subject token nor the maximum lifetime."),
        )
        .required("grant_type")
        .required("subject_token")
        .required("subject_token_type")
        .required("scope");
    let issued = ObjectBuilder::new()
        .property(
            "access_token",
            string("The delegated token (ES256, toolgate's key)."),
        )
        .property(
            "issued_token_type",
            string("urn:ietf:params:oauth:token-type:access_token"),
        )
        .property("token_type", string("Bearer"))
        .property(
            "expires_in",
            ObjectBuilder::new().schema_type(Type::Integer),
        )
        .property("scope", string("The scope kept."));
    let error = || {
        ObjectBuilder::new()
            .property(
                "error",
                string(
                    "invalid_request, invalid_grant (the subject token), invalid_scope, \
                 unsupported_grant_type, temporarily_unavailable",
                ),
            )
            .property("error_description", string("What was wrong."))
    };
    open_operation("oauth_token", "A delegated token that can only see less")
        .tag("delegation")
        .description(Some(
            "An agent hands a sub-agent a token whose manifest is its own (evaluated at every \
             request) within `scope`, at every depth. No bearer header: the subject token is \
             the credential. Errors are RFC 6749 JSON, not problem JSON.",
        ))
        .request_body(Some(
            utoipa::openapi::request_body::RequestBodyBuilder::new()
                .content(
                    "application/x-www-form-urlencoded",
                    json_content(form.into()),
                )
                .required(Some(utoipa::openapi::Required::True))
                .build(),
        ))
        .response(
            "200",
            ResponseBuilder::new()
                .description("The delegated token.")
                .content(JSON, json_content(issued.into())),
        )
        .response(
            "400",
            ResponseBuilder::new()
                .description("Refused (RFC 6749 section 5.2).")
                .content(JSON, json_content(error().into())),
        )
        .response(
            "503",
            ResponseBuilder::new()
                .description("No signing key is available yet.")
                .content(JSON, json_content(error().into())),
        )
}

/// `GET /.well-known/jwks.json`: the keys of toolgate's delegated tokens.
pub(super) fn jwks() -> OperationBuilder {
    open_operation("jwks", "The public keys of delegated tokens").response(
        "200",
        ResponseBuilder::new()
            .description(
                "A JWK Set (RFC 7517): toolgate's ES256 keys, each published before it signs \
                 and kept while tokens it signed may live.",
            )
            .content(
                JSON,
                json_content(ObjectBuilder::new().schema_type(Type::Object).into()),
            ),
    )
}

fn string(description: &str) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(description))
}
