//! The five admin collections (from [`crate::transport::admin::COLLECTIONS`], the table the router
//! mounts them from): each one's list and item paths, and the schema of its pages.

use utoipa::PartialSchema;
use utoipa::openapi::path::{HttpMethod, OperationBuilder, PathItem, PathItemBuilder};
use utoipa::openapi::request_body::{RequestBody, RequestBodyBuilder};
use utoipa::openapi::schema::{
    AllOfBuilder, ArrayBuilder, ObjectBuilder, Schema, SchemaType, Type,
};
use utoipa::openapi::{ContentBuilder, RefOr, Required, ResponseBuilder};

use super::{
    JSON, MERGE_PATCH_JSON, admin_operation, cursor_parameter, flag_schema, header_object,
    id_parameter, json_content, limit_parameter, named_ref, problems, query_parameter,
    revision_header, schema_ref, text_schema,
};
use crate::ingest::refresh::RefreshSummary;
use crate::service::{ListFilter, RefreshStatus};
use crate::transport::admin::{Collection, REVISION_HEADER};

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
    let entity = Entity::of(collection);
    (
        PathItemBuilder::new()
            .operation(HttpMethod::Get, entity.list())
            .operation(HttpMethod::Post, entity.create())
            .build(),
        PathItemBuilder::new()
            .operation(HttpMethod::Get, entity.read())
            .operation(HttpMethod::Put, entity.replace())
            .operation(HttpMethod::Patch, entity.patch())
            .operation(HttpMethod::Delete, entity.delete())
            .build(),
    )
}

/// One collection as its six operations show it. The operations of every collection differ
/// only in these names and in what sources add, so the bodies and answers they share are built
/// here once and each operation states only what sets it apart.
struct Entity<'c> {
    collection: &'c Collection,
    /// Plural, for paths and tags: `sources`, `policies`, …
    kind: &'static str,
    /// Singular, for operation ids and summaries: `source`, `policy`, …
    noun: &'static str,
}

impl<'c> Entity<'c> {
    fn of(collection: &'c Collection) -> Self {
        Entity {
            collection,
            kind: collection.kind.as_str(),
            noun: collection.noun,
        }
    }

    /// A source's answers carry one more key than the entity: `import` on create (what the
    /// import did), `refresh` on get (how this instance's refreshes went).
    fn is_sources(&self) -> bool {
        self.collection.kind == crate::store::EntityKind::Sources
    }

    fn schema(&self) -> RefOr<Schema> {
        named_ref((self.collection.schema_name)())
    }

    fn body(&self, description: &str) -> RequestBody {
        RequestBodyBuilder::new()
            .required(Some(Required::True))
            .description(Some(description))
            .content(JSON, json_content(self.schema()))
            .build()
    }

    fn response(&self, description: &str) -> ResponseBuilder {
        ResponseBuilder::new()
            .description(description)
            .content(JSON, json_content(self.schema()))
            .header(REVISION_HEADER.as_str(), revision_header())
    }

    /// The entity with a source's one more key (see [`Entity::is_sources`]).
    fn source_response(
        &self,
        description: &str,
        key: &str,
        schema: RefOr<Schema>,
        about: &str,
    ) -> ResponseBuilder {
        let with_key = AllOfBuilder::new().item(self.schema()).item(
            ObjectBuilder::new()
                .property(key, schema)
                .description(Some(about)),
        );
        ResponseBuilder::new()
            .description(description)
            .content(JSON, json_content(with_key.into()))
            .header(REVISION_HEADER.as_str(), revision_header())
    }

    /// `GET /admin/<kind>`: paged, with the collection's own filters after `limit` and `cursor`.
    fn list(&self) -> OperationBuilder {
        let kind = self.kind;
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
        } in self.collection.filters
        {
            let schema = if *is_flag {
                flag_schema()
            } else {
                text_schema()
            };
            list = list.parameter(query_parameter(name, schema, description));
        }
        problems(list, &[400]).response(
            "200",
            ResponseBuilder::new()
                .description(format!("A page of {kind}."))
                .content(JSON, json_content(named_ref(page_name(self.collection)))),
        )
    }

    /// `POST /admin/<kind>`.
    fn create(&self) -> OperationBuilder {
        let (kind, noun) = (self.kind, self.noun);
        let create = admin_operation(
            &format!("create_{noun}"),
            kind,
            &format!("Create a {noun}"),
            "Validated against the whole catalog. An `id` may be supplied, else one is generated; \
             server-set fields (`created_at`, …) are ignored.",
        )
        .request_body(Some(self.body(&format!("The new {noun}."))))
        .response(
            "201",
            if self.is_sources() {
                self.source_response(
                    "The stored source; an `openapi` or `mcp` source also says what its import did.",
                    "import",
                    schema_ref::<RefreshSummary>(),
                    "Present for a source whose tools were imported on creation.",
                )
            } else {
                self.response(&format!("The stored {noun}."))
            }
            .header(
                "Location",
                header_object(&format!("`/admin/{kind}/{{id}}`.")),
            ),
        );
        // A new openapi or mcp source is imported before it is stored: its fetch can fail (502).
        if self.is_sources() {
            problems(create, &[400, 409, 413, 422, 429, 502, 503])
        } else {
            problems(create, &[400, 409, 413, 422, 429, 503])
        }
    }

    /// `GET /admin/<kind>/{id}`.
    fn read(&self) -> OperationBuilder {
        let noun = self.noun;
        let read = admin_operation(
            &format!("get_{noun}"),
            self.kind,
            &format!("Get a {noun}"),
            "",
        )
        .parameter(id_parameter(noun))
        .response(
            "200",
            if self.is_sources() {
                self.source_response(
                    "The source, and how its refreshes went on this instance.",
                    "refresh",
                    schema_ref::<RefreshStatus>(),
                    "Present once this instance has tried to refresh the source.",
                )
            } else {
                self.response(&format!("The {noun}."))
            },
        );
        problems(read, &[404])
    }

    /// `PUT /admin/<kind>/{id}`.
    fn replace(&self) -> OperationBuilder {
        let noun = self.noun;
        let replace = admin_operation(
            &format!("replace_{noun}"),
            self.kind,
            &format!("Replace a {noun}"),
            "The id and the creation stamps are kept.",
        )
        .parameter(id_parameter(noun))
        .request_body(Some(self.body(&format!("The whole new {noun}."))))
        .response("200", self.response(&format!("The stored {noun}.")));
        problems(replace, &[400, 404, 409, 413, 422, 429, 503])
    }

    /// `PATCH /admin/<kind>/{id}`: the same loose body under both media types it accepts.
    fn patch(&self) -> OperationBuilder {
        let noun = self.noun;
        let patch_body = ContentBuilder::new()
            .schema(Some(
                ObjectBuilder::new()
                    .schema_type(Type::Object)
                    .description(Some(format!(
                        "Some fields of a {noun} (`#/components/schemas/{}`).",
                        (self.collection.schema_name)()
                    ))),
            ))
            .build();
        let patch = admin_operation(
            &format!("patch_{noun}"),
            self.kind,
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
        .response("200", self.response(&format!("The stored {noun}.")));
        problems(patch, &[400, 404, 409, 413, 422, 429, 503])
    }

    /// `DELETE /admin/<kind>/{id}`.
    fn delete(&self) -> OperationBuilder {
        let noun = self.noun;
        let delete = admin_operation(
            &format!("delete_{noun}"),
            self.kind,
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
        problems(delete, &[404, 409, 429, 503])
    }
}
