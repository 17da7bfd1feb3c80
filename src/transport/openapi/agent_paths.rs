//! The agents' part of the document: `GET /agents/tools` and its alias, with the query options
//! the manifest takes (the stream routes take the same, see [`super::stream_paths`]).

use utoipa::openapi::path::{Operation, ParameterBuilder, ParameterIn};
use utoipa::openapi::{Required, ResponseBuilder};

use super::{
    JSON, bodies, flag_schema, header_object, json_content, operation, problems, query_parameter,
    schema_ref, text_schema,
};

/// The query options of `GET /agents/tools`: name, whether it is a flag, description.
pub const AGENT_QUERY: [(&str, bool, &str); 6] = [
    (
        "group",
        false,
        "Keep members of these granted groups (ids or names, comma-separated; may repeat). \
         `*` keeps all, an empty list keeps none.",
    ),
    ("state", false, "Keep tools available in this state."),
    (
        "tools",
        false,
        "Keep tools whose name matches one of these case-sensitive globs (comma-separated; \
         may repeat).",
    ),
    (
        "fields",
        false,
        "Only these entry fields (comma-separated; may repeat): `tool_id` (always there), \
         `name`, `title`, `description`, `input_schema`, `output_schema`, `source_id`, `source_path`, \
         `method`, `tags`, `version`, `available_in_states`, `next_state`, `groups`. Narrows \
         every entry, never which tools are listed; the narrowed manifest has its own ETag, \
         and its stream is silent about changes to fields it did not ask for. Not at `/mcp`.",
    ),
    (
        "include_disabled",
        true,
        "Also list tools agents do not see (disabled, deprecated, disabled source), with \
         `enabled` and `deprecated`. Admin only (else 403).",
    ),
    (
        "explain",
        true,
        "Add `explanation`: why each tool is or is not there. Admin only (else 403).",
    ),
];

pub(super) fn agent_manifest(operation_id: &str) -> Operation {
    let mut builder = operation(
        operation_id,
        "agents",
        "The tools this agent may call",
        "The manifest for the token's claims. `/api/agents/tools` is an alias.",
    );
    builder = with_agent_query(builder);
    builder = builder
        .parameter(
            ParameterBuilder::new()
                .name("If-None-Match")
                .parameter_in(ParameterIn::Header)
                .required(Required::False)
                .schema(Some(text_schema()))
                .description(Some(
                    "An etag from an earlier response: 304 if it still holds.",
                ))
                .build(),
        )
        .response(
            "200",
            ResponseBuilder::new()
                .description("The manifest.")
                .content(JSON, json_content(schema_ref::<bodies::Manifest>()))
                .header("ETag", header_object("The manifest's etag (as `etag`)."))
                .header("Cache-Control", header_object("`private, no-cache`.")),
        )
        .response(
            "304",
            ResponseBuilder::new()
                .description("`If-None-Match` names the current etag; no body.")
                .header("ETag", header_object("The manifest's etag."))
                .header("Cache-Control", header_object("`private, no-cache`.")),
        );
    problems(builder, &[400, 401, 403, 429]).build()
}

/// `builder` with the query options of the agent endpoints ([`AGENT_QUERY`]), shared by the
/// manifest and its stream.
pub(super) fn with_agent_query(
    mut builder: utoipa::openapi::path::OperationBuilder,
) -> utoipa::openapi::path::OperationBuilder {
    for (name, is_flag, description) in AGENT_QUERY {
        let schema = if is_flag {
            flag_schema()
        } else {
            text_schema()
        };
        builder = builder.parameter(query_parameter(name, schema, description));
    }
    builder
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::read::read_request;

    #[test]
    fn every_documented_agent_option_is_accepted() {
        for (name, is_flag, _) in AGENT_QUERY {
            let value = match name {
                _ if is_flag => "true",
                "fields" => "name,input_schema",
                _ => "x",
            };
            assert!(
                read_request(&[(name.to_owned(), value.to_owned())]).is_ok(),
                "{name}"
            );
        }
    }
}
