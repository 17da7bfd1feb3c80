//! The run routes of the document (docs/runs.md): `POST /runs`, `GET`/`DELETE /runs/{id}`,
//! `POST /runs/{id}/calls`, `GET /admin/runs`.

use utoipa::openapi::path::{HttpMethod, PathItemBuilder};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{PathItem, Required, ResponseBuilder};

use super::{
    JSON, admin_operation, flag_schema, id_parameter, json_content, operation, problems,
    query_parameter, text_schema,
};

fn object(description: &str) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(description))
}

fn ok(description: &str, body: ObjectBuilder) -> utoipa::openapi::Response {
    ResponseBuilder::new()
        .description(description)
        .content(JSON, json_content(body.into()))
        .build()
}

fn run_status() -> ObjectBuilder {
    object(
        "run_id, root_run_id, parent_run_id, sub, depth, state, active, created_at, \
         expires_at, ended_at, budget (what is left of each counter), flow, pinned_revision, \
         children, pending_approvals, calls (the last 50, newest first: tool_id, outcome, \
         transition, at).",
    )
}

/// `POST /runs`.
pub(super) fn runs() -> PathItem {
    let body = object(
        "Every member optional: state (initial, default \"undefined\"), scope (tool:<id> and \
         group:<id> items), budget ({calls, per_tool: {<id or glob>: n}, per_label: {<label>: \
         n}}), expires_in (seconds).",
    );
    let started = object(
        "run_id, access_token (the run token), token_type (Bearer), expires_in, state, \
         budget, depth, parent_run_id (child runs).",
    );
    let start = operation(
        "start_run",
        "runs",
        "Start a run",
        "A run token acts in the run on every transport: its tools are what the token sees \
         now within what it saw at the start, in the run's state; calls are counted against \
         its budget. Started with a run token: a child run (one more delegation level, within \
         its parent's scope and budget).",
    )
    .request_body(Some(
        RequestBodyBuilder::new()
            .content(JSON, json_content(body.into()))
            .required(Some(Required::False))
            .build(),
    ))
    .response("201", ok("The run and its token.", started));
    PathItemBuilder::new()
        .operation(
            HttpMethod::Post,
            problems(start, &[400, 401, 413, 422, 429, 503]),
        )
        .build()
}

/// `GET` and `DELETE /runs/{id}`.
pub(super) fn run() -> PathItem {
    let read = operation(
        "get_run",
        "runs",
        "A run's state, budget left, children and last calls",
        "With the run's token, an ancestor run's token, or an admin token.",
    )
    .parameter(id_parameter("run"))
    .response("200", ok("The run.", run_status()));
    let end = operation(
        "end_run",
        "runs",
        "End a run and every run below it",
        "With the run's token, an ancestor run's token, or an admin token. Their tokens are \
         refused from then on (401, run ended) on every instance; what children leave of \
         their budget returns to their parents.",
    )
    .parameter(id_parameter("run"))
    .response(
        "200",
        ok("The runs ended now.", object("run_id, ended (ids).")),
    );
    PathItemBuilder::new()
        .operation(HttpMethod::Get, problems(read, &[401, 404, 429, 503]))
        .operation(HttpMethod::Delete, problems(end, &[401, 404, 429, 503]))
        .build()
}

/// `POST /runs/{id}/calls`.
pub(super) fn calls() -> PathItem {
    let report = operation(
        "report_run_call",
        "runs",
        "An executor reports a call it ran",
        "For tools toolgate cannot execute: {tool_id, outcome: success | error}; a success \
         of a tool with next_state moves the run. Only a token passing the admin rule or \
         TOOLGATE_EXECUTOR_RULE; never the run's own token.",
    )
    .parameter(id_parameter("run"))
    .request_body(Some(
        RequestBodyBuilder::new()
            .content(JSON, json_content(object("tool_id, outcome.").into()))
            .required(Some(Required::True))
            .build(),
    ))
    .response("200", ok("The state after.", object("run_id, state.")));
    PathItemBuilder::new()
        .operation(
            HttpMethod::Post,
            problems(report, &[400, 401, 403, 404, 422, 429, 503]),
        )
        .build()
}

/// `GET /admin/runs`.
pub(super) fn admin_runs() -> PathItem {
    let list = admin_operation(
        "list_runs",
        "runs",
        "Runs",
        "At most 500, by id; `sub` keeps one subject's, `active=true` the live ones.",
    )
    .parameter(query_parameter(
        "sub",
        text_schema(),
        "Only runs of this subject.",
    ))
    .parameter(query_parameter(
        "active",
        flag_schema(),
        "Only runs live now.",
    ))
    .response(
        "200",
        ok(
            "The runs.",
            object("runs: each as GET /runs/{id} shows it."),
        ),
    );
    PathItemBuilder::new()
        .operation(HttpMethod::Get, problems(list, &[400, 503]))
        .build()
}
