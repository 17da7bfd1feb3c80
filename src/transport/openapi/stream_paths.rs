//! The manifest stream (`GET /agents/tools/stream` and its aliases) as the OpenAPI document
//! describes it: the same options as `GET /agents/tools`, a `text/event-stream` body whose
//! events are named in the description (OpenAPI has no schema for a stream of events).

use utoipa::openapi::path::{Operation, ParameterBuilder, ParameterIn};
use utoipa::openapi::{ContentBuilder, Required, ResponseBuilder};

use super::{operation, problems, text_schema};

/// The stream's events, for the description.
const EVENTS: &str = "Server-sent events, each `event:`, `id:` (an etag) and one `data:` line \
    of JSON:\n\
    - `tools`: first, the whole body of `GET /agents/tools` (`id` is its etag);\n\
    - `unchanged`: first instead of `tools` when `Last-Event-ID` names the current etag: \
    `{\"etag\", \"revision\"}`;\n\
    - `tools_changed`: whenever this subscriber's manifest changes, and only then: \
    `{\"revision\", \"etag\", \"added\": [entries], \"updated\": [entries], \"removed\": \
    [tool ids], \"count\"}`;\n\
    - `token_expired`: at the token's `exp` (`{\"exp\"}`), after which the stream ends.\n\
    Keep-alive comments (`: ping`) come at a configurable interval. A reader that falls behind \
    by more than its queue gets one fresh `tools` event instead of the changes it missed.";

/// `GET` of one of the stream's paths.
pub(super) fn manifest_stream(operation_id: &str) -> Operation {
    let mut builder = operation(
        operation_id,
        "agents",
        "The agent's manifest, live",
        "The manifest for the token's claims, then each change to it. `/agents/stream` and \
         `/api/agents/stream` are aliases. `explain` is refused here (400).",
    );
    builder = super::agent_paths::with_agent_query(builder);
    builder = builder
        .parameter(
            ParameterBuilder::new()
                .name("Last-Event-ID")
                .parameter_in(ParameterIn::Header)
                .required(Required::False)
                .schema(Some(text_schema()))
                .description(Some(
                    "The etag of the last event received: the stream resumes with `unchanged` \
                     if the manifest still has it.",
                ))
                .build(),
        )
        .response(
            "200",
            ResponseBuilder::new().description(EVENTS).content(
                "text/event-stream",
                ContentBuilder::new().schema(Some(text_schema())).build(),
            ),
        );
    problems(builder, &[400, 401, 403, 429, 503]).build()
}
