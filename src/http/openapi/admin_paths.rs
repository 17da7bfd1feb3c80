//! The admin part of the document: the five collections (from [`admin::COLLECTIONS`], the table the
//! router mounts them from), tool toggles, group members, preview, the catalog and the audit log.

use std::borrow::Cow;

use utoipa::openapi::path::{HttpMethod, PathItem, PathItemBuilder};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::schema::{
    AllOfBuilder, ArrayBuilder, ObjectBuilder, Schema, SchemaType, Type,
};
use utoipa::openapi::{ContentBuilder, RefOr, Required, ResponseBuilder};
use utoipa::{PartialSchema, ToSchema};

use super::model::CatalogSchema;
use super::{
    JSON, MERGE_PATCH_JSON, admin_operation, bodies, cursor_parameter, flag_schema, get,
    header_object, id_parameter, json_content, limit_parameter, named_ref, problems,
    query_parameter, revision_header, schema_ref, text_schema,
};
use crate::http::admin::{self, Collection, REVISION_HEADER};
use crate::ingest::refresh::RefreshSummary;
use crate::service::{ListFilter, RefreshStatus};

pub(super) fn page_name(collection: &Collection) -> String {
    format!("{}Page", (collection.schema_name)())
}

/// `{"data": [entity], "count", "next_cursor", "revision"}`.
pub(super) fn page_schema(collection: &Collection) -> RefOr<Schema> {
    ObjectBuilder::new()
        .description(Some(format!(
            "One page of {}, by ascending id.",
            collection.kind.as_str()
        )))
        .property(
            "data",
            ArrayBuilder::new().items(named_ref((collection.schema_name)())),
        )
        .required("data")
        .property("count", usize::schema())
        .required("count")
        .property(
            "next_cursor",
            ObjectBuilder::new()
                .schema_type(SchemaType::Array(vec![Type::String, Type::Null]))
                .description(Some(
                    "Pass as `cursor` to get the next page; `null` on the last page.",
                )),
        )
        .required("next_cursor")
        .property("revision", u64::schema())
        .required("revision")
        .into()
}

/// `/admin/<kind>` (list, create) and `/admin/<kind>/{id}` (get, put, patch, delete).
pub(super) fn collection_paths(collection: &Collection) -> (PathItem, PathItem) {
    let kind = collection.kind.as_str();
    let noun = collection.noun;
    let entity = || named_ref((collection.schema_name)());
    let entity_body = |description: &str| {
        RequestBodyBuilder::new()
            .required(Some(Required::True))
            .description(Some(description))
            .content(JSON, json_content(entity()))
            .build()
    };
    let entity_response = |description: &str| {
        ResponseBuilder::new()
            .description(description)
            .content(JSON, json_content(entity()))
            .header(REVISION_HEADER.as_str(), revision_header())
    };
    // A source's answers carry one more key than the entity: `import` on create (what the
    // import did), `refresh` on get (how this instance's refreshes went).
    let is_sources = collection.kind == crate::store::EntityKind::Sources;
    let source_response = |description: &str, key: &str, schema: RefOr<Schema>, about: &str| {
        let with_key = AllOfBuilder::new().item(entity()).item(
            ObjectBuilder::new()
                .property(key, schema)
                .description(Some(about)),
        );
        ResponseBuilder::new()
            .description(description)
            .content(JSON, json_content(with_key.into()))
            .header(REVISION_HEADER.as_str(), revision_header())
    };

    let mut list = admin_operation(
        &format!("list_{kind}"),
        kind,
        &format!("List {kind}"),
        "Filters narrow; pages follow `next_cursor`.",
    )
    .parameter(limit_parameter())
    .parameter(cursor_parameter());
    for ListFilter {
        name,
        is_flag,
        description,
    } in collection.filters
    {
        let schema = if *is_flag {
            flag_schema()
        } else {
            text_schema()
        };
        list = list.parameter(query_parameter(name, schema, description));
    }
    let list = problems(list, &[400]).response(
        "200",
        ResponseBuilder::new()
            .description(format!("A page of {kind}."))
            .content(JSON, json_content(named_ref(page_name(collection)))),
    );

    let create = admin_operation(
        &format!("create_{noun}"),
        kind,
        &format!("Create a {noun}"),
        "Validated against the whole catalog. An `id` may be supplied, else one is generated; \
         server-set fields (`created_at`, …) are ignored.",
    )
    .request_body(Some(entity_body(&format!("The new {noun}."))))
    .response(
        "201",
        if is_sources {
            source_response(
                "The stored source; an `openapi` or `mcp` source also says what its import did.",
                "import",
                schema_ref::<RefreshSummary>(),
                "Present for a source whose tools were imported on creation.",
            )
        } else {
            entity_response(&format!("The stored {noun}."))
        }
        .header(
            "Location",
            header_object(&format!("`/admin/{kind}/{{id}}`.")),
        ),
    );
    // A new openapi or mcp source is imported before it is stored: its fetch can fail (502).
    let create = if collection.kind == crate::store::EntityKind::Sources {
        problems(create, &[400, 409, 413, 422, 429, 502, 503])
    } else {
        problems(create, &[400, 409, 413, 422, 429, 503])
    };

    let read = admin_operation(&format!("get_{noun}"), kind, &format!("Get a {noun}"), "")
        .parameter(id_parameter(noun))
        .response(
            "200",
            if is_sources {
                source_response(
                    "The source, and how its refreshes went on this instance.",
                    "refresh",
                    schema_ref::<RefreshStatus>(),
                    "Present once this instance has tried to refresh the source.",
                )
            } else {
                entity_response(&format!("The {noun}."))
            },
        );
    let read = problems(read, &[404]);

    let replace = admin_operation(
        &format!("replace_{noun}"),
        kind,
        &format!("Replace a {noun}"),
        "The id and the creation stamps are kept.",
    )
    .parameter(id_parameter(noun))
    .request_body(Some(entity_body(&format!("The whole new {noun}."))))
    .response("200", entity_response(&format!("The stored {noun}.")));
    let replace = problems(replace, &[400, 404, 409, 413, 422, 429, 503]);

    let patch_body = ContentBuilder::new()
        .schema(Some(
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .description(Some(format!(
                    "Some fields of a {noun} (`#/components/schemas/{}`).",
                    (collection.schema_name)()
                ))),
        ))
        .build();
    let patch = admin_operation(
        &format!("patch_{noun}"),
        kind,
        &format!("Change some fields of a {noun}"),
        "An RFC 7396 JSON merge patch: objects merge, `null` removes, anything else replaces. \
         The result is validated like a replacement.",
    )
    .parameter(id_parameter(noun))
    .request_body(Some(
        RequestBodyBuilder::new()
            .required(Some(Required::True))
            .content(JSON, patch_body.clone())
            .content(MERGE_PATCH_JSON, patch_body)
            .build(),
    ))
    .response("200", entity_response(&format!("The stored {noun}.")));
    let patch = problems(patch, &[400, 404, 409, 413, 422, 429, 503]);

    let delete = admin_operation(
        &format!("delete_{noun}"),
        kind,
        &format!("Delete a {noun}"),
        "Ids pointing at removed tools are removed in the same revision; a label that a \
         selector requires or a group that a policy names cannot be removed (409).",
    )
    .parameter(id_parameter(noun))
    .response(
        "204",
        ResponseBuilder::new()
            .description("Deleted.")
            .header(REVISION_HEADER.as_str(), revision_header()),
    );
    let delete = problems(delete, &[404, 409, 429, 503]);

    (
        PathItemBuilder::new()
            .operation(HttpMethod::Get, list)
            .operation(HttpMethod::Post, create)
            .build(),
        PathItemBuilder::new()
            .operation(HttpMethod::Get, read)
            .operation(HttpMethod::Put, replace)
            .operation(HttpMethod::Patch, patch)
            .operation(HttpMethod::Delete, delete)
            .build(),
    )
}

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
fn audit_filters() -> [(&'static str, RefOr<Schema>, &'static str); 5] {
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
    ]
}

pub(super) fn audit() -> PathItem {
    let mut operation = admin_operation(
        "list_audit_records",
        "audit",
        "The change log",
        "Every change with its actor and the entity before and after, oldest first.",
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
