//! The admin part of the document beside the collections (see [`super::collection_paths`]): tool
//! toggles, source refreshes, group members, preview, impact, the catalog and the audit log.

use std::borrow::Cow;

use utoipa::ToSchema;
use utoipa::openapi::path::{HttpMethod, PathItem, PathItemBuilder};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::{RefOr, Required, ResponseBuilder};

use super::model::CatalogSchema;
use super::{
    JSON, admin_operation, bodies, cursor_parameter, get, header_object, id_parameter,
    json_content, limit_parameter, named_ref, problems, query_parameter, revision_header,
    schema_ref, text_schema,
};
use crate::transport::admin::{self, REVISION_HEADER};

pub(super) fn toggle(enable: bool) -> PathItem {
    let (verb, summary) = if enable {
        ("enable", "Enable a tool")
    } else {
        ("disable", "Disable a tool")
    };
    let operation = admin_operation(
        &format!("{verb}_tool"),
        "tools",
        summary,
        "Idempotent: no change, no new revision. The body is optional.",
    )
    .parameter(id_parameter("tool"))
    .request_body(Some(
        RequestBodyBuilder::new()
            .required(Some(Required::False))
            .content(JSON, json_content(schema_ref::<admin::tools::Toggle>()))
            .build(),
    ))
    .response(
        "200",
        ResponseBuilder::new()
            .description("The tool as it now is.")
            .content(JSON, json_content(named_ref(tool_schema_name())))
            .header(REVISION_HEADER.as_str(), revision_header()),
    );
    PathItemBuilder::new()
        .operation(
            HttpMethod::Post,
            problems(operation, &[400, 404, 422, 429, 503]),
        )
        .build()
}

fn tool_schema_name() -> Cow<'static, str> {
    <super::model::ToolSchema as ToSchema>::name()
}

/// `POST /admin/sources/{id}/refresh`.
pub(super) fn refresh_source() -> PathItem {
    let operation = admin_operation(
        "refresh_source",
        "sources",
        "Re-import a source",
        "Fetches an `openapi` or `mcp` source's definitions and brings its tools in line: new \
         ones are created (enabled), changed ones updated, vanished ones marked `deprecated` \
         (and restored when they come back). `enabled`, `label_ids` and an admin's `name` or \
         `description` survive. One refresh is one revision and one audit record \
         (`action: refresh`); a refresh that changes nothing makes neither. A failed fetch \
         changes nothing and answers 502. A `tool-service` source has nothing to fetch.",
    )
    .parameter(id_parameter("source"))
    .response(
        "200",
        ResponseBuilder::new()
            .description("What the refresh did, and the revision it produced.")
            .content(
                JSON,
                json_content(schema_ref::<admin::refresh::RefreshReply>()),
            )
            .header(REVISION_HEADER.as_str(), revision_header()),
    );
    PathItemBuilder::new()
        .operation(
            HttpMethod::Post,
            problems(operation, &[404, 409, 422, 429, 502, 503]),
        )
        .build()
}

/// `GET /admin/groups/{id}/tools`.
pub(super) fn group_members() -> PathItem {
    get(problems(
        admin_operation(
            "list_group_members",
            "groups",
            "A group's resolved members",
            "Each member with what brought it in: `selectors[i]` for each selector it \
             matched and `explicit` when listed in `explicit_tool_ids`.",
        )
        .parameter(id_parameter("group"))
        .response(
            "200",
            ResponseBuilder::new()
                .description("The members.")
                .content(JSON, json_content(schema_ref::<bodies::GroupMembers>()))
                .header(REVISION_HEADER.as_str(), revision_header()),
        ),
        &[404],
    ))
}

/// `GET /admin/tools/{id}/groups`.
pub(super) fn tool_groups() -> PathItem {
    get(problems(
        admin_operation(
            "list_tool_groups",
            "tools",
            "The groups a tool is a member of",
            "Each group (active ones: an inactive group has no members) with what brought the \
             tool in: `selectors[i]` for each selector it matched and `explicit` when listed in \
             `explicit_tool_ids`. An exclusion takes the tool out of a group.",
        )
        .parameter(id_parameter("tool"))
        .response(
            "200",
            ResponseBuilder::new()
                .description("The groups.")
                .content(JSON, json_content(schema_ref::<bodies::ToolGroups>()))
                .header(REVISION_HEADER.as_str(), revision_header()),
        ),
        &[404],
    ))
}

/// `GET /admin/claim-sets`.
pub(super) fn claim_sets() -> PathItem {
    get(problems(
        admin_operation(
            "list_claim_sets",
            "preview",
            "The claim sets served recently",
            "Each distinct claim set this instance served in the last 24 hours, as its \
             projection onto the claims the policies read (never a token), most recently seen \
             first: the identities an impact preview compares.",
        )
        .response(
            "200",
            ResponseBuilder::new()
                .description("The claim sets.")
                .content(JSON, json_content(schema_ref::<bodies::ClaimSets>()))
                .header(REVISION_HEADER.as_str(), revision_header()),
        ),
        &[],
    ))
}

/// `POST /admin/backup`.
pub(super) fn backup() -> PathItem {
    let operation = admin_operation(
        "backup_store",
        "catalog",
        "Write a consistent copy of the store",
        "Copies the embedded store at one revision (the catalog with its sources' secrets in \
         clear, the tool revisions and the audit log) into the data dir's `backups` folder as \
         a file of mode 0600, while the gateway keeps serving. Restore: stop the gateway, put \
         the file in place of `toolgate.redb`, start it. One backup per revision: asked again \
         before the next write, it answers the backup this gateway last wrote (200). On MongoDB: 409, \
         use `mongodump`.",
    )
    .response(
        "201",
        ResponseBuilder::new()
            .description("The backup written.")
            .content(
                JSON,
                json_content(schema_ref::<admin::backup::BackupReply>()),
            ),
    )
    .response(
        "200",
        ResponseBuilder::new()
            .description("The backup of the current revision, written by an earlier call.")
            .content(
                JSON,
                json_content(schema_ref::<admin::backup::BackupReply>()),
            ),
    );
    PathItemBuilder::new()
        .operation(HttpMethod::Post, problems(operation, &[409, 429, 503]))
        .build()
}

/// `GET /admin/live`.
pub(super) fn live() -> PathItem {
    get(problems(
        admin_operation(
            "live_streams",
            "preview",
            "Who is listening, and what the last changes reached",
            "This instance's open SSE streams and MCP notification streams grouped by the \
             manifest they see (claims as the policies read them, never a token), the open MCP \
             sessions, and the last change notifications, newest first, with how many manifests \
             changed and how many streams each reached.",
        )
        .response(
            "200",
            ResponseBuilder::new()
                .description("The live view.")
                .content(JSON, json_content(schema_ref::<bodies::Live>()))
                .header(REVISION_HEADER.as_str(), revision_header()),
        ),
        &[],
    ))
}

pub(super) fn preview() -> PathItem {
    let operation = admin_operation(
        "preview_manifest",
        "preview",
        "The manifest any claims would get, explained",
        "The body of `GET /agents/tools` for these claims, always with `explanation`.",
    )
    .request_body(Some(
        RequestBodyBuilder::new()
            .required(Some(Required::True))
            .content(
                JSON,
                json_content(schema_ref::<admin::preview::PreviewRequest>()),
            )
            .build(),
    ))
    .response(
        "200",
        ResponseBuilder::new()
            .description("The manifest with its explanation.")
            .content(JSON, json_content(schema_ref::<bodies::Manifest>()))
            .header("Cache-Control", header_object("`no-store`.")),
    );
    PathItemBuilder::new()
        .operation(HttpMethod::Post, problems(operation, &[400, 413, 422, 429]))
        .build()
}

pub(super) fn impact() -> PathItem {
    let operation = admin_operation(
        "preview_impact",
        "preview",
        "What a change would do to everyone's manifest, before it is made",
        "The change (a catalog document, or one entity `put`, `patch` or `delete`) is validated \
         and compiled beside the live catalog exactly as the write would be; nothing is \
         written. Answers, for each claim set given and each one this instance served in the \
         last 24 hours (remembered as the claims policies read, never whole tokens), the \
         tools gained and lost, with totals per tool. `If-Match` names the revision the \
         change is meant for (412 when the catalog moved). At most 10,000 claim sets (422 at \
         `claims_sets` beyond); the answer lists at most 100,000 tool ids in all (lists cut \
         beyond are marked `truncated`, totals stay exact); at most 2 previews run at once \
         (429 with `Retry-After` for one more).",
    )
    .request_body(Some(
        RequestBodyBuilder::new()
            .required(Some(Required::True))
            .content(
                JSON,
                json_content(schema_ref::<admin::impact::ImpactBody>()),
            )
            .build(),
    ))
    .response(
        "200",
        ResponseBuilder::new()
            .description("The differences, per claim set and per tool.")
            .content(
                JSON,
                json_content(schema_ref::<crate::service::impact::ImpactReport>()),
            )
            .header(REVISION_HEADER.as_str(), revision_header()),
    );
    PathItemBuilder::new()
        .operation(
            HttpMethod::Post,
            problems(operation, &[404, 409, 413, 422, 429, 502, 503]),
        )
        .build()
}

pub(super) fn catalog() -> PathItem {
    let read = admin_operation(
        "get_catalog",
        "catalog",
        "The whole catalog as one document",
        "",
    )
    .response(
        "200",
        ResponseBuilder::new()
            .description("The catalog, every collection by ascending id.")
            .content(JSON, json_content(schema_ref::<CatalogSchema>()))
            .header(REVISION_HEADER.as_str(), revision_header()),
    );
    let replace = admin_operation(
        "replace_catalog",
        "catalog",
        "Replace the whole catalog atomically",
        "Validated as a whole; nothing changes if anything is invalid. Server-set fields are \
         optional.",
    )
    .request_body(Some(
        RequestBodyBuilder::new()
            .required(Some(Required::True))
            .content(JSON, json_content(schema_ref::<CatalogSchema>()))
            .build(),
    ))
    .response(
        "200",
        ResponseBuilder::new()
            .description("The new revision and what the catalog now holds.")
            .content(JSON, json_content(schema_ref::<bodies::CatalogReplaced>()))
            .header(REVISION_HEADER.as_str(), revision_header()),
    );
    PathItemBuilder::new()
        .operation(HttpMethod::Get, read)
        .operation(
            HttpMethod::Put,
            problems(replace, &[400, 409, 413, 422, 429, 503]),
        )
        .build()
}

/// The filters of `GET /admin/audit`: name, schema, description.
fn audit_filters() -> [(&'static str, RefOr<Schema>, &'static str); 6] {
    let order_schema = || {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(["oldest", "newest"]))
            .into()
    };
    let time = || {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                utoipa::openapi::KnownFormat::DateTime,
            )))
            .into()
    };
    [
        (
            "entity",
            schema_ref::<crate::store::Subject>(),
            "Only changes to this kind of entity (or `catalog`: whole-catalog replaces and seeds).",
        ),
        (
            "id",
            text_schema(),
            "Only changes to the entity with this id.",
        ),
        (
            "actor",
            text_schema(),
            "Only changes by this admin (`sub`).",
        ),
        (
            "since",
            time(),
            "Only changes at or after this time (RFC 3339).",
        ),
        ("until", time(), "Only changes before this time (RFC 3339)."),
        (
            "order",
            order_schema(),
            "`oldest` (the default) or `newest` first; a cursor continues in its page's order.",
        ),
    ]
}

pub(super) fn audit() -> PathItem {
    let mut operation = admin_operation(
        "list_audit_records",
        "audit",
        "The change log",
        "Every change with its actor and the entity before and after, oldest first (or newest first).",
    )
    .parameter(limit_parameter())
    .parameter(cursor_parameter());
    for (name, schema, description) in audit_filters() {
        operation = operation.parameter(query_parameter(name, schema, description));
    }
    let operation = operation.response(
        "200",
        ResponseBuilder::new()
            .description("A page of the change log.")
            .content(JSON, json_content(schema_ref::<bodies::AuditPage>())),
    );
    get(problems(operation, &[400, 503]))
}
