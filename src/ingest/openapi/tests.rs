//! The document → tools rules, on small documents written to show one rule each (real
//! documents are in `tests/fixtures/openapi/`, used by `tests/it/ingest_real.rs`).

use serde_json::{Value, json};

use super::*;

fn import(document: Value) -> Import {
    tools_from_document(&document).expect("imports")
}

fn tool<'i>(import: &'i Import, operation_id: &str) -> &'i ImportedTool {
    import
        .tools
        .iter()
        .find(|t| t.operation_id == operation_id)
        .unwrap_or_else(|| panic!("no tool {operation_id} in {:?}", import.tools))
}

fn reasons(import: &Import) -> Vec<(String, IssueOutcome, String)> {
    import
        .issues
        .iter()
        .map(|i| (i.operation.clone(), i.outcome, i.reason.clone()))
        .collect()
}

#[test]
fn generated_ids_are_method_and_path_slug() {
    assert_eq!(
        generated_operation_id("get", "/pets/{petId}"),
        "get_pets_petId"
    );
    assert_eq!(generated_operation_id("post", "/"), "post_root");
    assert_eq!(
        generated_operation_id("delete", "/v1/a-b/{id}/x.json"),
        "delete_v1_a_b_id_x_json"
    );
}

#[test]
fn summaries_become_one_line_titles() {
    let ok = json!({"responses": {"200": {"description": "ok"}}});
    let with = |summary: Value| {
        let mut op = ok.clone();
        op["operationId"] = json!("op");
        if !summary.is_null() {
            op["summary"] = summary;
        }
        let imported = import(json!({"openapi": "3.0.3", "paths": {"/x": {"get": op}}}));
        tool(&imported, "op").title.clone()
    };
    assert_eq!(
        with(json!("Get a repository")),
        Some("Get a repository".into())
    );
    assert_eq!(
        with(json!("  List\n\tall  pets\r\n")),
        Some("List all pets".into())
    );
    assert_eq!(with(json!(" \n ")), None);
    assert_eq!(with(json!(7)), None);
    assert_eq!(with(Value::Null), None);
}

#[test]
fn swagger_2_is_rejected() {
    let error = tools_from_document(&json!({"swagger": "2.0", "paths": {}})).unwrap_err();
    assert!(error.to_string().contains("Swagger 2.0"), "{error}");
}

#[test]
fn one_bad_operation_is_skipped_with_its_reason_and_the_rest_imported() {
    let ok = json!({"responses": {"200": {"description": "ok"}}});
    let imported = import(json!({
        "openapi": "3.1.0",
        "paths": {
            "/a": {"get": {"operationId": "same", "responses": {}}},
            "/b": {"get": {"operationId": "same", "responses": {}}},
            "/x": {"post": {"operationId": "remote", "requestBody": {"content": {"application/json": {
                "schema": {"$ref": "https://evil.example/schema.json"}}}}}},
            "/pets/{id}": {"get": ok},
            "/pets/{id}/": {"get": ok},
            "/out": {"get": {"operationId": "out", "responses": {"200": {"description": "ok",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Gone"}}}}}}}
        }
    }));
    let ids: Vec<&str> = imported
        .tools
        .iter()
        .map(|t| t.operation_id.as_str())
        .collect();
    assert_eq!(ids, ["get_pets_id", "get_pets_id_2", "out", "same"]);
    assert_eq!(tool(&imported, "out").output_schema, None);
    assert_eq!(
        reasons(&imported),
        [
            (
                "GET /b".to_owned(),
                IssueOutcome::Skipped,
                "operationId 'same' is already used by GET /a".to_owned()
            ),
            (
                "GET /out".to_owned(),
                IssueOutcome::Cut,
                "output schema left out: the output schema: $ref '#/components/schemas/Gone' points at nothing".to_owned()
            ),
            (
                "POST /x".to_owned(),
                IssueOutcome::Skipped,
                "the input schema: remote $ref 'https://evil.example/schema.json' is not followed: only local references ('#/...') are resolved".to_owned()
            ),
        ]
    );
}

#[test]
fn equal_schemas_share_one_arc() {
    let body =
        json!({"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Big"}}}});
    let imported = import(json!({
        "openapi": "3.0.3",
        "paths": {
            "/a": {"post": {"operationId": "a", "requestBody": body}},
            "/b": {"post": {"operationId": "b", "requestBody": body}}
        },
        "components": {"schemas": {"Big": {"type": "object", "properties": {"n": {"type": "integer"}}}}}
    }));
    assert!(Arc::ptr_eq(
        &tool(&imported, "a").input_schema,
        &tool(&imported, "b").input_schema
    ));
}

#[test]
fn form_multipart_and_any_bodies_become_inputs_with_their_media_type() {
    let object = json!({"type": "object", "properties": {"amount": {"type": "integer"}}});
    let imported = import(json!({
        "openapi": "3.0.3",
        "paths": {
            "/form": {"post": {"operationId": "form", "requestBody": {"required": true, "content": {
                "application/x-www-form-urlencoded": {"schema": object}}}}},
            "/multi": {"post": {"operationId": "multi", "requestBody": {"content": {
                "multipart/form-data; boundary=x": {"schema": object}}}}},
            "/any": {"post": {"operationId": "any", "requestBody": {"content": {
                "*/*": {"schema": {"type": "string"}}}}}},
            "/both": {"post": {"operationId": "both", "requestBody": {"content": {
                "multipart/form-data": {"schema": {"type": "string"}},
                "application/json": {"schema": object}}}}}
        }
    }));
    let body = |id: &str| tool(&imported, id).input_schema["properties"]["body"].clone();
    assert_eq!(
        body("form"),
        json!({"type": "object", "properties": {"amount": {"type": "integer"}},
               "contentMediaType": "application/x-www-form-urlencoded"})
    );
    assert_eq!(
        tool(&imported, "form").input_schema["required"],
        json!(["body"])
    );
    assert_eq!(
        body("multi")["contentMediaType"],
        json!("multipart/form-data")
    );
    assert_eq!(
        body("any"),
        json!({"type": "string", "contentMediaType": "*/*"})
    );
    assert_eq!(
        body("both"),
        object,
        "JSON is preferred and needs no media type"
    );
}

/// A `token`/`access_token` query parameter is a credential only where the operation requires
/// security (its own `security`, else the document's); `{}` in the list makes it optional.
#[test]
fn query_tokens_are_credentials_of_secured_operations_only() {
    let cases = [
        (None, None, false),
        (Some(json!([{"oauth": []}])), None, true),
        (None, Some(json!([{"oauth": ["read"]}])), true),
        (Some(json!([{"oauth": []}])), Some(json!([])), false),
        (Some(json!([{"oauth": []}, {}])), None, false),
        (None, Some(json!([{"oauth": []}, {}])), false),
        (Some(json!([])), Some(json!([{"bearer": []}])), true),
    ];
    for (root_security, op_security, dropped) in cases {
        let mut operation = json!({"operationId": "m", "parameters": [
            {"name": "token", "in": "query", "schema": {"type": "string"}},
            {"name": "Access_Token", "in": "query", "schema": {"type": "string"}},
            {"name": "cursor", "in": "query", "schema": {"type": "string"}}
        ]});
        if let Some(security) = &op_security {
            operation["security"] = security.clone();
        }
        let mut document = json!({"openapi": "3.0.3", "paths": {"/m": {"get": operation}}});
        if let Some(security) = &root_security {
            document["security"] = security.clone();
        }
        let imported = import(document);
        let properties = tool(&imported, "m").input_schema["properties"].clone();
        let mut names: Vec<&String> = properties.as_object().expect("properties").keys().collect();
        names.sort();
        let expected: &[&str] = if dropped {
            &["cursor"]
        } else {
            &["Access_Token", "cursor", "token"]
        };
        assert_eq!(
            names, expected,
            "root {root_security:?}, operation {op_security:?}"
        );
    }
}

#[test]
fn credentials_are_not_agent_inputs() {
    let imported = import(json!({
        "openapi": "3.0.3",
        "components": {"securitySchemes": {
            "key": {"type": "apiKey", "in": "query", "name": "api_key"},
            "session": {"type": "apiKey", "in": "header", "name": "X-Session"}
        }},
        "paths": {"/m": {"post": {"operationId": "m", "parameters": [
            {"name": "token", "in": "header", "required": true, "schema": {"type": "string"}},
            {"name": "Authorization", "in": "header", "schema": {"type": "string"}},
            {"name": "x-session", "in": "header", "schema": {"type": "string"}},
            {"name": "api_key", "in": "query", "schema": {"type": "string"}},
            {"name": "sid", "in": "cookie", "schema": {"type": "string"}},
            {"name": "channel", "in": "query", "required": true, "schema": {"type": "string"}}
        ]}}}
    }));
    assert_eq!(
        *tool(&imported, "m").input_schema,
        json!({"type": "object", "properties": {"channel": {"type": "string"}}, "required": ["channel"]})
    );
}

#[test]
fn trace_deprecated_and_same_named_parameters_are_kept() {
    let imported = import(json!({
        "openapi": "3.0.3",
        "paths": {"/items/{id}": {
            "parameters": [{"name": "id", "in": "query", "schema": {"type": "string"}}],
            "trace": {"operationId": "traceItem"},
            "get": {"operationId": "getItem", "deprecated": true, "parameters": [
                {"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}
            ]}
        }}
    }));
    assert_eq!(tool(&imported, "traceItem").method, "TRACE");
    let get = tool(&imported, "getItem");
    assert!(get.deprecated);
    assert!(!tool(&imported, "traceItem").deprecated);
    assert_eq!(
        *get.input_schema,
        json!({"type": "object", "properties": {
            "id": {"type": "integer"}, "query_id": {"type": "string"}}, "required": ["id"]})
    );
}

#[test]
fn agent_facing_schemas_have_no_nullable_extensions_or_examples() {
    let imported = import(json!({
        "openapi": "3.0.3",
        "paths": {"/p": {"get": {"operationId": "p", "x-codegen": true, "parameters": [
            {"name": "q", "in": "query", "example": "x", "schema": {"type": "string", "nullable": true, "example": "x", "x-internal": 1}}
        ]}}}
    }));
    assert_eq!(
        tool(&imported, "p").input_schema["properties"]["q"],
        json!({"type": ["string", "null"]})
    );
}

#[test]
fn a_reference_bomb_is_imported_in_defs_form_without_refusing_the_document() {
    let mut schemas = Map::new();
    schemas.insert("L0".to_owned(), json!({"type": "string"}));
    for level in 1..=8 {
        let properties: Map<String, Value> = (0..10)
            .map(|i| {
                (
                    format!("p{i}"),
                    json!({"$ref": format!("#/components/schemas/L{}", level - 1)}),
                )
            })
            .collect();
        schemas.insert(
            format!("L{level}"),
            json!({"type": "object", "properties": properties}),
        );
    }
    let mut paths = Map::new();
    for n in 0..300 {
        paths.insert(
            format!("/op{n}"),
            json!({"post": {"operationId": format!("op{n}"), "requestBody": {"content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/L8"}}}}}}),
        );
    }
    let started = std::time::Instant::now();
    let imported =
        import(json!({"openapi": "3.0.3", "paths": paths, "components": {"schemas": schemas}}));
    assert_eq!(imported.tools.len(), 300);
    assert!(imported.issues.is_empty(), "{:?}", imported.issues);
    let first = &tool(&imported, "op0").input_schema;
    assert_eq!(first["properties"]["body"]["$ref"], json!("#/$defs/L8"));
    assert!(
        imported
            .tools
            .iter()
            .all(|t| Arc::ptr_eq(&t.input_schema, first))
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn operations_past_the_import_budget_are_skipped_and_reported() {
    let body = json!({"content": {"application/json": {"schema": {"type": "object"}}}});
    let mut paths = Map::new();
    for n in 0..3 {
        paths.insert(
            format!("/op{n}"),
            json!({"post": {"operationId": format!("op{n}"), "requestBody": body}}),
        );
    }
    let document = json!({"openapi": "3.0.3", "paths": paths});
    let Value::Object(root) = &document else {
        unreachable!()
    };
    let mut importer = Importer {
        resolver: Resolver { root: &document },
        budget: ImportBudget::new(1_000, Instant::now() - Duration::from_secs(1)),
        credentials: operation::credentials(root),
        shared: HashMap::new(),
        kept_nodes: 0,
    };
    let op = Operation {
        path: "/op0",
        method: "post",
        operation: document["paths"]["/op0"]["post"]
            .as_object()
            .expect("object"),
        path_parameters: None,
    };
    assert!(importer.budget.spent());
    let Err(reason) = importer.operation_schemas(&op) else {
        panic!("over time")
    };
    assert!(reason.contains("time limit"), "{reason}");
    importer.kept_nodes = MAX_IMPORT_NODES;
    let Err(reason) = importer.share((json!({"a": 1}), 2)) else {
        panic!("over nodes")
    };
    assert!(reason.contains("distinct schemas"), "{reason}");
}

#[test]
fn a_path_that_does_not_begin_with_a_slash_is_skipped_with_its_reason() {
    let ok = json!({"responses": {"200": {"description": "ok"}}});
    let imported = import(json!({
        "openapi": "3.1.0",
        "paths": {
            "{tenant}": {"get": {"operationId": "tenant", "parameters": [
                {"name": "tenant", "in": "path", "required": true, "schema": {"type": "string"}}
            ], "responses": {}}},
            "pets": {"get": ok},
            "/pets": {"get": {"operationId": "pets", "responses": {}}}
        }
    }));
    let ids: Vec<&str> = imported
        .tools
        .iter()
        .map(|t| t.operation_id.as_str())
        .collect();
    assert_eq!(ids, ["pets"]);
    let mut skipped: Vec<(String, IssueOutcome)> = reasons(&imported)
        .into_iter()
        .map(|(at, outcome, reason)| {
            assert!(reason.contains("does not begin with '/'"), "{reason}");
            (at, outcome)
        })
        .collect();
    skipped.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        skipped,
        [
            ("pets".to_owned(), IssueOutcome::Skipped),
            ("{tenant}".to_owned(), IssueOutcome::Skipped)
        ]
    );
}
