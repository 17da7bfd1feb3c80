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
