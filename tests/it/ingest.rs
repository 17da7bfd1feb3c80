//! Catalog ingestion over real HTTP: OpenAPI documents (inline and by URL), a real MCP server
//! (the official Python SDK), tool-service descriptors, and refresh.

use crate::support;

use reqwest::Method;
use serde_json::{Value, json};
use support::gateway::Gateway;
use support::sse::SseClient;
use support::upstream::{McpServer, SpecServer, read_fixture};

/// What the importer sets on each tool of a source, by id.
async fn imported_tools(gateway: &Gateway, source_id: &str) -> Vec<Value> {
    let reply = gateway
        .get(
            &format!("/admin/tools?source_id={source_id}"),
            &Gateway::admin(),
        )
        .await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    reply.json()["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|tool| {
            let mut view = json!({});
            for key in [
                "id",
                "name",
                "description",
                "method",
                "path",
                "tags",
                "input_schema",
                "output_schema",
                "enabled",
                "deprecated",
            ] {
                if let Some(value) = tool.get(key) {
                    view[key] = value.clone();
                }
            }
            view
        })
        .collect()
}

async fn create_source(gateway: &Gateway, source: Value) -> support::gateway::Reply {
    gateway
        .admin_send(Method::POST, "/admin/sources", Some(source))
        .await
}

async fn refresh(gateway: &Gateway, id: &str) -> support::gateway::Reply {
    gateway
        .admin_send(Method::POST, &format!("/admin/sources/{id}/refresh"), None)
        .await
}

fn fixture_json(name: &str) -> Value {
    serde_json::from_str(&read_fixture(name)).expect("fixture JSON")
}

fn pet_schema() -> Value {
    json!({
        "type": "object",
        "required": ["name", "id"],
        "properties": {
            "name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "object", "properties": {"label": {"type": "string"}}}},
            "id": {"type": "integer", "format": "int64"}
        }
    })
}

#[tokio::test]
async fn petstore_operations_become_tools_with_resolved_schemas() {
    let gateway = Gateway::start().await;
    let reply = create_source(
        &gateway,
        json!({"id": "pets", "name": "Petstore", "type": "openapi",
               "config": {"spec": fixture_json("openapi/petstore-3.0.json")}}),
    )
    .await;
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    // The answer says what the import did, beside the source's own fields.
    assert_eq!(
        reply.json()["import"],
        json!({"source_id": "pets", "imported": 4, "created": 4, "updated": 0, "deprecated": 0,
               "restored": 0, "unchanged": 0, "skipped": 0, "cut": 0, "pending": 0, "quarantined": 0})
    );
    let pet_id = json!({"type": "integer", "format": "int64", "description": "The pet's id"});
    let new_pet = json!({
        "type": "object", "required": ["name"],
        "properties": {
            "name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "object", "properties": {"label": {"type": "string"}}}}
        }
    });
    assert_eq!(
        imported_tools(&gateway, "pets").await,
        vec![
            json!({"id": "pets:createPet", "name": "createPet", "description": "Create a pet in the store",
                   "method": "POST", "path": "/pets", "tags": ["pets", "write"],
                   "input_schema": {"type": "object", "properties": {"body": new_pet}, "required": ["body"]},
                   "output_schema": pet_schema(), "enabled": true}),
            json!({"id": "pets:deletePet", "name": "deletePet", "description": "DELETE /pets/{petId}",
                   "method": "DELETE", "path": "/pets/{petId}", "tags": ["pets", "write"],
                   "input_schema": {"type": "object", "properties": {"petId": pet_id}, "required": ["petId"]},
                   "enabled": true}),
            json!({"id": "pets:listPets", "name": "listPets", "description": "List all pets",
                   "method": "GET", "path": "/pets", "tags": ["pets"],
                   "input_schema": {"type": "object", "properties": {
                       "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "How many items to return"},
                       "X-Request-Id": {"type": "string"}}},
                   "output_schema": {"type": "array", "items": pet_schema()}, "enabled": true}),
            json!({"id": "pets:showPetById", "name": "showPetById", "description": "Info for a specific pet",
                   "method": "GET", "path": "/pets/{petId}", "tags": ["pets"],
                   "input_schema": {"type": "object", "properties": {"petId": pet_id}, "required": ["petId"]},
                   "output_schema": pet_schema(), "enabled": true}),
        ]
    );
    // Creation and import are one revision with the create and the refresh audit records.
    let audit = gateway.get("/admin/audit", &Gateway::admin()).await.json();
    let records: Vec<(Value, Value, Value)> = audit["data"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| {
            (
                r["revision"].clone(),
                r["action"].clone(),
                r["after"].clone(),
            )
        })
        .collect();
    assert_eq!(records.len(), 2, "{records:?}");
    assert!(records.iter().all(|(revision, _, _)| *revision == json!(1)));
    let refresh_record = records
        .iter()
        .find(|(_, action, _)| action == "refresh")
        .expect("a refresh record");
    assert_eq!(refresh_record.2["created"], json!(4));
}

#[tokio::test]
async fn yaml_text_and_generated_ids_and_openapi_3_1_cycles() {
    let gateway = Gateway::start().await;
    let reply = create_source(
        &gateway,
        json!({"id": "inv", "name": "Inventory", "type": "openapi",
               "config": {"spec": read_fixture("openapi/inventory-3.0.yaml")}}),
    )
    .await;
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(
        imported_tools(&gateway, "inv").await,
        vec![
            json!({"id": "inv:getItem", "name": "getItem", "description": "Read one stock item",
                    "method": "GET", "path": "/items/{sku}", "tags": ["inventory"],
                    "input_schema": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]},
                    "output_schema": {"type": "object", "properties": {"sku": {"type": "string"}, "quantity": {"type": "integer"}}},
                    "enabled": true})
        ]
    );

    let reply = create_source(
        &gateway,
        json!({"id": "anon", "name": "Anonymous", "type": "openapi",
               "config": {"spec": read_fixture("openapi/no-operation-ids-3.0.yaml")}}),
    )
    .await;
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(
        imported_tools(&gateway, "anon").await,
        vec![
            json!({"id": "anon:get_reports_year_summary", "name": "get_reports_year_summary",
                   "description": "Yearly summary", "method": "GET", "path": "/reports/{year}/summary", "tags": [],
                   "input_schema": {"type": "object", "properties": {
                       "year": {"type": "integer"}, "format": {"type": "string", "enum": ["pdf", "csv"]}},
                       "required": ["year", "format"]},
                   "enabled": true}),
            json!({"id": "anon:head_root", "name": "head_root", "description": "HEAD /", "method": "HEAD",
                   "path": "/", "tags": [], "input_schema": {"type": "object", "properties": {}}, "enabled": true}),
            json!({"id": "anon:patch_reports_year_summary", "name": "patch_reports_year_summary",
                   "description": "PATCH /reports/{year}/summary", "method": "PATCH", "path": "/reports/{year}/summary",
                   "tags": [], "input_schema": {"type": "object", "properties": {"body": {"type": "object"}}},
                   "enabled": true}),
        ]
    );

    let spec = SpecServer::start(&read_fixture("openapi/tree-3.1.json")).await;
    let reply = create_source(
        &gateway,
        json!({"id": "trees", "name": "Trees", "type": "openapi",
               "config": {"url": spec.url, "pinning": "warn"}}),
    )
    .await;
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let node = json!({"type": "object", "properties": {
        "value": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}});
    let mut body = node.clone();
    body["description"] = json!("The new root");
    assert_eq!(
        imported_tools(&gateway, "trees").await,
        vec![
            json!({"id": "trees:replaceTree", "name": "replaceTree", "description": "Replace the tree",
                    "method": "PUT", "path": "/trees", "tags": [],
                    "input_schema": {"type": "object", "properties": {"body": body}, "$defs": {"Node": node}},
                    "output_schema": {"type": ["object", "null"], "properties": {"count": {"type": "integer"}}},
                    "enabled": true})
        ]
    );
}

#[tokio::test]
async fn swagger_2_and_bad_configs_are_rejected_and_change_nothing() {
    let gateway = Gateway::start().await;
    let reply = create_source(
        &gateway,
        json!({"id": "old", "name": "Old", "type": "openapi",
               "config": {"spec": fixture_json("openapi/swagger-2.0.json")}}),
    )
    .await;
    let problem = reply.problem(422);
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("Swagger 2.0 documents are not supported"),
        "{problem}"
    );
    // The key is named once, as the field: not "config: config.spec: …".
    assert_eq!(problem["errors"][0]["field"], "config.spec", "{problem}");
    let message = problem["errors"][0]["message"].as_str().unwrap();
    assert!(message.starts_with("Swagger 2.0"), "{problem}");
    assert_eq!(
        problem["detail"]
            .as_str()
            .unwrap()
            .matches("config")
            .count(),
        1,
        "{problem}"
    );
    // Fetched but not importable is the admin's to fix, as inline: 422, not 502.
    let spec = SpecServer::start(&read_fixture("openapi/swagger-2.0.json")).await;
    let problem = create_source(
        &gateway,
        json!({"id": "old", "name": "Old", "type": "openapi",
               "config": {"url": spec.url, "pinning": "warn"}}),
    )
    .await
    .problem(422);
    assert!(
        problem["detail"].as_str().unwrap().contains("Swagger"),
        "{problem}"
    );
    // Nothing listening: 502, and it says so (not the same words as a timeout).
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let url = format!("http://{}/spec", closed.local_addr().expect("address"));
    drop(closed);
    let problem = create_source(
        &gateway,
        json!({"id": "gone", "name": "Gone", "type": "openapi", "config": {"url": url}}),
    )
    .await
    .problem(502);
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("could not connect"),
        "{problem}"
    );
    let problem = create_source(
        &gateway,
        json!({"id": "m", "name": "M", "type": "mcp", "config": {"url": "ftp://x", "token": "t"}}),
    )
    .await
    .problem(422);
    let fields: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["config.token", "config.url"]);
    let catalog = gateway.get("/admin/catalog", &Gateway::admin()).await;
    assert_eq!(catalog.header("x-catalog-revision"), Some("0"));
}

#[tokio::test]
async fn refresh_diffs_by_content_and_keeps_admin_fields() {
    let gateway = Gateway::start().await;
    let petstore = read_fixture("openapi/petstore-3.0.json");
    let spec = SpecServer::start(&petstore).await;
    let reply = create_source(
        &gateway,
        json!({"id": "pets", "name": "Petstore", "type": "openapi",
               "config": {"url": spec.url, "pinning": "warn"}}),
    )
    .await;
    assert_eq!(reply.status, 201);
    gateway
        .admin_send(
            Method::POST,
            "/admin/labels",
            Some(json!({"id": "vip", "name": "vip"})),
        )
        .await;
    let reply = gateway
        .admin_send(
            Method::PATCH,
            "/admin/tools/pets:listPets",
            Some(json!({"name": "pets_list", "enabled": false, "label_ids": ["vip"]})),
        )
        .await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );

    // Nothing changed upstream: no revision, no audit record.
    let before = gateway.get("/admin/catalog", &Gateway::admin()).await;
    let reply = refresh(&gateway, "pets").await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.json(),
        json!({"source_id": "pets", "imported": 4, "created": 0, "updated": 0, "deprecated": 0,
               "restored": 0, "unchanged": 4, "skipped": 0, "cut": 0, "revision": 3, "pending": 0, "quarantined": 0})
    );
    assert_eq!(before.header("x-catalog-revision"), Some("3"));

    // Upstream: listPets and createPet change, deletePet vanishes, a new operation appears.
    let mut document: Value = serde_json::from_str(&petstore).unwrap();
    document["paths"]["/pets"]["get"]["summary"] = json!("List the pets");
    document["paths"]["/pets"]["post"]["description"] = json!("Add a pet");
    document["paths"]["/pets/{petId}"]
        .as_object_mut()
        .unwrap()
        .remove("delete");
    document["paths"]["/pets/{petId}"]["put"] = json!({"operationId": "updatePet",
        "responses": {"200": {"description": "ok"}}});
    spec.set(Some(&document.to_string()));
    let reply = refresh(&gateway, "pets").await;
    assert_eq!(
        reply.json(),
        json!({"source_id": "pets", "imported": 4, "created": 1, "updated": 2, "deprecated": 1,
               "restored": 0, "unchanged": 1, "skipped": 0, "cut": 0, "revision": 4, "pending": 0, "quarantined": 0})
    );
    let tools = imported_tools(&gateway, "pets").await;
    let by_id = |id: &str| tools.iter().find(|t| t["id"] == id).unwrap().clone();
    let list = by_id("pets:listPets");
    assert_eq!(list["name"], "pets_list", "the admin's name survives");
    assert_eq!(
        list["description"], "List the pets",
        "upstream change taken"
    );
    assert_eq!(list["enabled"], false);
    let full = gateway
        .get("/admin/tools/pets:listPets", &Gateway::admin())
        .await
        .json();
    assert_eq!(full["label_ids"], json!(["vip"]));
    assert_eq!(by_id("pets:createPet")["description"], "Add a pet");
    assert_eq!(by_id("pets:deletePet")["deprecated"], true);
    assert_eq!(by_id("pets:updatePet")["enabled"], true);

    // It comes back: restored.
    spec.set(Some(&petstore));
    let reply = refresh(&gateway, "pets").await.json();
    assert_eq!(
        (reply["restored"].clone(), reply["deprecated"].clone()),
        (json!(1), json!(1))
    );

    // One refresh, one audit record.
    let audit = gateway
        .get("/admin/audit?entity=sources&id=pets", &Gateway::admin())
        .await
        .json();
    let refreshes: Vec<&Value> = audit["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["action"] == "refresh")
        .collect();
    assert_eq!(refreshes.len(), 3, "create, the change, the restore");
    assert!(
        refreshes
            .iter()
            .all(|r| r["entity"] == "sources" && r["id"] == "pets")
    );

    // A failed fetch changes nothing and says why.
    let revision = reply["revision"].clone();
    spec.set(None);
    let problem = refresh(&gateway, "pets").await.problem(502);
    assert!(
        problem["detail"].as_str().unwrap().contains("500"),
        "{problem}"
    );
    let catalog = gateway.get("/admin/catalog", &Gateway::admin()).await;
    assert_eq!(
        catalog
            .header("x-catalog-revision")
            .map(|r| json!(r.parse::<u64>().unwrap())),
        Some(revision)
    );
    refresh(&gateway, "nope").await.problem(404);
    // A manual source: 422, and the reason names only what is imported.
    create_source(
        &gateway,
        json!({"id": "hand", "name": "hand", "type": "manual"}),
    )
    .await
    .expect(reqwest::StatusCode::CREATED);
    let problem = refresh(&gateway, "hand").await.problem(422);
    assert_eq!(
        problem["detail"],
        json!(
            "config: a 'manual' source has nothing to import: its tools are written by hand (openapi and mcp sources are imported)"
        )
    );
}

fn tool_service_catalog(tool_config: Value) -> Value {
    json!({
        "sources": [{"id": "custom-rag", "name": "custom-rag", "type": "tool-service",
                     "config": {"id": "custom-rag",
                                "request-queue": "non-persistent://tg/request/custom-rag",
                                "response-queue": "non-persistent://tg/response/custom-rag",
                                "config-params": [{"name": "collection", "required": true},
                                                  {"name": "style", "required": false}]}}],
        "tools": [{"source_id": "custom-rag", "operation_id": "query-customers", "name": "query-customers",
                   "description": "Query the customer knowledge base",
                   "service_config": tool_config,
                   "arguments": [{"name": "question", "type": "string",
                                  "description": "The question to ask about customers"}]}],
        "groups": [{"id": "g", "name": "all", "selectors": [{}]}],
        "policies": [{"id": "p", "name": "p", "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "agent"}],
                      "allowed_group_ids": ["g"]}]
    })
}

#[tokio::test]
async fn tool_service_config_is_checked_and_never_reaches_agents() {
    let gateway = Gateway::start().await;
    let problem = gateway
        .admin_send(
            Method::PUT,
            "/admin/catalog",
            Some(tool_service_catalog(json!({"style": "pun"}))),
        )
        .await
        .problem(422);
    assert_eq!(
        problem["errors"],
        json!([{"field": "tools[0].service_config",
                "message": "tool 'custom-rag:query-customers' lacks required config parameters of service 'custom-rag' (absent or empty): collection"}])
    );
    // An empty text does not satisfy a required parameter either.
    let problem = gateway
        .admin_send(
            Method::PUT,
            "/admin/catalog",
            Some(tool_service_catalog(json!({"collection": " "}))),
        )
        .await
        .problem(422);
    assert_eq!(problem["errors"][0]["field"], "tools[0].service_config");
    let problem = gateway
        .admin_send(
            Method::PUT,
            "/admin/catalog",
            Some(tool_service_catalog(
                json!({"collection": "customers", "colour": "red"}),
            )),
        )
        .await
        .problem(422);
    assert_eq!(
        problem["errors"][0]["field"],
        "tools[0].service_config.colour"
    );

    let reply = gateway
        .admin_send(
            Method::PUT,
            "/admin/catalog",
            Some(tool_service_catalog(
                json!({"collection": "secret-customers-collection"}),
            )),
        )
        .await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let tool = gateway
        .get("/admin/tools/custom-rag:query-customers", &Gateway::admin())
        .await
        .json();
    assert_eq!(
        tool["input_schema"],
        json!({"type": "object",
               "properties": {"question": {"type": "string", "description": "The question to ask about customers"}},
               "required": ["question"]})
    );
    assert_eq!(
        tool["service_config"],
        json!({"collection": "secret-customers-collection"})
    );

    // A second tool through the tool endpoint: same rules, the derived schema in the answer.
    let problem = gateway
        .admin_send(
            Method::POST,
            "/admin/tools",
            Some(
                json!({"source_id": "custom-rag", "operation_id": "q2", "name": "q2",
                        "arguments": [{"name": "q", "type": "text", "description": ""}]}),
            ),
        )
        .await
        .problem(422);
    let fields: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        [
            "service_config",
            "arguments[0].type",
            "arguments[0].description"
        ]
    );
    let reply = gateway
        .admin_send(
            Method::POST,
            "/admin/tools",
            Some(json!({"source_id": "custom-rag", "operation_id": "q2", "name": "q2",
                        "service_config": {"collection": "products"},
                        "arguments": [{"name": "n", "type": "integer", "description": "How many"}]})),
        )
        .await;
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(reply.json()["input_schema"]["required"], json!(["n"]));

    let agent = Gateway::token(json!({"sub": "a", "roles": ["agent"]}));
    let manifest = gateway.get("/agents/tools", &agent).await;
    let text = String::from_utf8_lossy(&manifest.body);
    assert!(text.contains("custom-rag:query-customers"), "{text}");
    for secret in [
        "secret-customers-collection",
        "products",
        "service_config",
        "arguments",
        "imported",
    ] {
        assert!(
            !text.contains(secret),
            "'{secret}' leaked into the manifest: {text}"
        );
    }
    // Nothing to fetch for a tool-service source.
    let reply = refresh(&gateway, "custom-rag").await.json();
    assert_eq!(
        (reply["imported"].clone(), reply["unchanged"].clone()),
        (json!(2), json!(2))
    );
}

#[tokio::test]
async fn mcp_server_tools_are_imported_refreshed_and_reach_agents() {
    let server = McpServer::start(&["search_docs", "delete_doc", "summarize"], &[]);
    let gateway = Gateway::start().await;
    let reply = gateway
        .admin_send(
            Method::PUT,
            "/admin/catalog",
            Some(json!({
                "groups": [{"id": "reads", "name": "reads", "selectors": [{"required_tags": ["read-only"]}]},
                           {"id": "docs", "name": "docs", "selectors": [{"source_pattern": "Docs*"}]}],
                "policies": [
                    {"id": "p-read", "name": "readers", "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "reader"}], "allowed_group_ids": ["reads"]},
                    {"id": "p-all", "name": "staff", "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "staff"}], "allowed_group_ids": ["docs"]}]
            })),
        )
        .await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let reply = create_source(
        &gateway,
        json!({"id": "docs", "name": "Docs MCP", "type": "mcp",
               "config": {"url": server.url, "pinning": "warn"}}),
    )
    .await;
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let tools = imported_tools(&gateway, "docs").await;
    let ids: Vec<&str> = tools.iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        ["docs:delete_doc", "docs:search_docs", "docs:summarize"],
        "all pages read"
    );
    let search = &tools[1];
    assert_eq!(search["method"], "MCP");
    assert_eq!(search["path"], "mcp://Docs MCP/search_docs");
    assert_eq!(search["description"], "Search the documentation.");
    // No destructiveHint: assumed destructive, as MCP says (docs/semantics.md section 9), even
    // beside readOnlyHint; openWorldHint is false.
    assert_eq!(search["tags"], json!(["read-only", "destructive"]));
    assert_eq!(search["input_schema"]["required"], json!(["query"]));
    assert_eq!(
        search["input_schema"]["properties"]["limit"]["default"],
        json!(10)
    );
    // No openWorldHint: assumed open-world.
    assert_eq!(
        tools[0]["tags"],
        json!(["destructive", "idempotent", "open-world"])
    );
    assert_eq!(tools[2]["tags"], json!(["destructive", "open-world"]));
    assert_eq!(
        tools[2]["output_schema"]["properties"]["words"]["type"],
        json!("integer"),
        "outputSchema kept"
    );

    // Group selectors pick the imported tools up.
    assert_eq!(
        gateway
            .tool_ids(json!({"sub": "r", "roles": ["reader"]}), "")
            .await,
        ["docs:search_docs"]
    );
    assert_eq!(
        gateway
            .tool_ids(json!({"sub": "s", "roles": ["staff"]}), "")
            .await
            .len(),
        3
    );

    // Tools come and go upstream.
    server.offer(&["search_docs", "translate"]);
    let reply = refresh(&gateway, "docs").await.json();
    assert_eq!(
        (
            reply["created"].clone(),
            reply["deprecated"].clone(),
            reply["unchanged"].clone()
        ),
        (json!(1), json!(2), json!(1))
    );
    assert_eq!(
        gateway
            .tool_ids(json!({"sub": "s", "roles": ["staff"]}), "")
            .await,
        ["docs:search_docs", "docs:translate"]
    );
    let translate = gateway
        .get("/admin/tools/docs:translate", &Gateway::admin())
        .await
        .json();
    assert_eq!(translate["description"], "Translate");
    server.offer(&["search_docs", "translate", "summarize"]);
    let reply = refresh(&gateway, "docs").await.json();
    assert_eq!(reply["restored"], json!(1));
}

#[tokio::test]
async fn imported_tools_appear_on_live_streams_through_group_selectors() {
    const WAIT: std::time::Duration = std::time::Duration::from_secs(10);
    let server = McpServer::start(&["search_docs", "delete_doc"], &[]);
    let gateway = Gateway::start().await;
    gateway
        .admin_send(
            Method::PUT,
            "/admin/catalog",
            Some(json!({
                "groups": [{"id": "reads", "name": "reads", "selectors": [{"source_pattern": "Docs*", "required_tags": ["read-only"]}]},
                           {"id": "docs", "name": "docs", "selectors": [{"source_pattern": "Docs*"}]}],
                "policies": [
                    {"id": "p-read", "name": "readers", "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "reader"}], "allowed_group_ids": ["reads"]},
                    {"id": "p-all", "name": "staff", "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "staff"}], "allowed_group_ids": ["docs"]}]
            })),
        )
        .await
        .expect(reqwest::StatusCode::OK);
    let path = "/agents/tools/stream";
    let reader_token = Gateway::token(json!({"sub": "r", "roles": ["reader"]}));
    let mut reader = SseClient::connect(&gateway, path, &reader_token).await;
    let staff_token = Gateway::token(json!({"sub": "s", "roles": ["staff"]}));
    let mut staff = SseClient::connect(&gateway, path, &staff_token).await;
    for stream in [&mut reader, &mut staff] {
        let first = stream.event(WAIT).await;
        assert_eq!(
            (first.event.as_str(), first.json()["count"].clone()),
            ("tools", json!(0))
        );
    }

    // Creating the source imports its tools; the selectors pick them up; each stream hears
    // of exactly its own new tools.
    create_source(
        &gateway,
        json!({"id": "docs", "name": "Docs MCP", "type": "mcp",
               "config": {"url": server.url, "pinning": "warn"}}),
    )
    .await
    .expect(reqwest::StatusCode::CREATED);
    let event = reader.event(WAIT).await;
    assert_eq!(event.event, "tools_changed");
    assert_eq!(event.ids("added"), ["docs:search_docs"]);
    assert_eq!(
        event.json()["added"][0]["tags"],
        json!(["read-only", "destructive"])
    );
    let event = staff.event(WAIT).await;
    assert_eq!(event.ids("added"), ["docs:delete_doc", "docs:search_docs"]);

    // Upstream, search_docs vanishes and translate appears: a refresh deprecates one (hidden
    // from agents) and imports the other.
    server.offer(&["delete_doc", "translate"]);
    refresh(&gateway, "docs")
        .await
        .expect(reqwest::StatusCode::OK);
    let event = reader.event(WAIT).await;
    assert_eq!(event.ids("removed"), ["docs:search_docs"]);
    assert_eq!(event.json()["count"], json!(0));
    let event = staff.event(WAIT).await;
    assert_eq!(event.ids("added"), ["docs:translate"]);
    assert_eq!(event.ids("removed"), ["docs:search_docs"]);
    assert_eq!(event.json()["count"], json!(2));
}

#[tokio::test]
async fn mcp_json_responses_and_static_headers() {
    let server = McpServer::start(
        &["search_docs"],
        &[("MCP_JSON_RESPONSE", "1"), ("MCP_TOKEN", "s3cret")],
    );
    let gateway = Gateway::start().await;
    let problem = create_source(
        &gateway,
        json!({"id": "m", "name": "m", "type": "mcp", "config": {"url": server.url}}),
    )
    .await
    .problem(502);
    assert!(
        problem["detail"].as_str().unwrap().contains("401"),
        "{problem}"
    );
    let reply = create_source(
        &gateway,
        json!({"id": "m", "name": "m", "type": "mcp",
               "config": {"url": server.url, "headers": {"Authorization": "Bearer s3cret"}}}),
    )
    .await;
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let ids: Vec<Value> = imported_tools(&gateway, "m")
        .await
        .iter()
        .map(|t| t["id"].clone())
        .collect();
    assert_eq!(ids, [json!("m:search_docs")]);
}

#[tokio::test]
async fn sources_with_an_interval_are_refreshed_periodically() {
    let server = McpServer::start(&["search_docs"], &[]);
    // On a clock the test moves: the refresh is due when the gateway's clock says so, not after
    // ten seconds of waiting.
    let dir = tempfile::tempdir().expect("temp dir");
    let clock = std::sync::Arc::new(toolgate::clock::ManualClock::at(chrono::Utc::now()));
    let settings = support::gateway::config(dir.path(), support::gateway::hs_settings());
    let gateway = Gateway::start_clocked(settings, clock.clone()).await;
    let reply = create_source(
        &gateway,
        json!({"id": "p", "name": "p", "type": "mcp",
               "config": {"url": server.url, "refresh_interval_secs": 10, "pinning": "warn"}}),
    )
    .await;
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    server.offer(&["search_docs", "translate"]);
    // The refresh task sees the source at its next tick (every second), then the interval
    // passes by the clock.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(imported_tools(&gateway, "p").await.len(), 1, "not due yet");
    clock.advance(std::time::Duration::from_secs(10));
    // Well before ten real seconds: only the moved clock can have made it due.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let ids: Vec<Value> = imported_tools(&gateway, "p")
            .await
            .iter()
            .map(|t| t["id"].clone())
            .collect();
        if ids.len() == 2 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no periodic refresh: {ids:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let audit = gateway
        .get("/admin/audit?entity=sources&id=p", &Gateway::admin())
        .await
        .json();
    assert!(
        audit["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["action"] == "refresh" && r["actor"] == "toolgate")
    );
    // The periodic refresh is visible on the source.
    let source = gateway
        .get("/admin/sources/p", &Gateway::admin())
        .await
        .json();
    assert!(source["refresh"]["last_success"].is_string(), "{source}");
    assert_eq!(source["refresh"].get("last_error"), None, "{source}");
}

#[tokio::test]
async fn a_failing_refresh_is_visible_on_the_source_and_a_read_writes_back() {
    let spec = SpecServer::start(&read_fixture("openapi/petstore-3.0.json")).await;
    let gateway = Gateway::start().await;
    create_source(
        &gateway,
        json!({"id": "pets", "name": "Petstore", "type": "openapi",
               "config": {"url": spec.url, "pinning": "warn"}}),
    )
    .await
    .expect(reqwest::StatusCode::CREATED);
    let source = gateway
        .get("/admin/sources/pets", &Gateway::admin())
        .await
        .json();
    assert_eq!(source.get("refresh"), None, "creation is not a refresh");
    refresh(&gateway, "pets")
        .await
        .expect(reqwest::StatusCode::OK);
    spec.set(None);
    refresh(&gateway, "pets").await.problem(502);
    let source = gateway
        .get("/admin/sources/pets", &Gateway::admin())
        .await
        .json();
    let status = &source["refresh"];
    assert!(
        status["last_error"].as_str().unwrap_or("").contains("500"),
        "{source}"
    );
    assert!(status["last_success"].is_string(), "{source}");
    assert_ne!(status["last_success"], status["last_attempt"]);
    // What a read shows is the server's: writing it back is fine.
    gateway
        .admin_send(Method::PUT, "/admin/sources/pets", Some(source))
        .await
        .expect(reqwest::StatusCode::OK);
}

#[tokio::test]
async fn patching_the_spec_replaces_it_revalidates_and_reimports_in_one_revision() {
    let gateway = Gateway::start().await;
    let petstore = fixture_json("openapi/petstore-3.0.json");
    create_source(
        &gateway,
        json!({"id": "pets", "name": "Petstore", "type": "openapi", "config": {"spec": petstore}}),
    )
    .await
    .expect(reqwest::StatusCode::CREATED);
    let only_list = json!({"openapi": "3.0.3", "info": {"title": "t", "version": "1"},
        "paths": {"/pets": {"get": {"operationId": "listPets", "summary": "List all pets"}}}});
    let patch = |spec: Value| {
        gateway.admin_send(
            Method::PATCH,
            "/admin/sources/pets",
            Some(json!({"config": {"spec": spec}})),
        )
    };
    for refused in [
        json!({"swagger": "2.0", "paths": {}}),
        json!("openapi: [unclosed"),
    ] {
        let reply = patch(refused.clone()).await;
        assert_eq!(
            reply.status,
            422,
            "{refused}: {}",
            String::from_utf8_lossy(&reply.body)
        );
    }
    let reply = patch(only_list.clone()).await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let revision = json!(
        reply
            .header("x-catalog-revision")
            .and_then(|r| r.parse::<u64>().ok())
    );
    assert_eq!(revision, json!(2));
    // Replaced, not merged: the stored document is exactly the new one.
    let source = gateway
        .get("/admin/sources/pets", &Gateway::admin())
        .await
        .json();
    assert_eq!(source["config"]["spec"], only_list);
    let deprecated: Vec<(Value, Value)> = imported_tools(&gateway, "pets")
        .await
        .iter()
        .map(|t| {
            (
                t["id"].clone(),
                t.get("deprecated").cloned().unwrap_or(json!(false)),
            )
        })
        .collect();
    assert_eq!(
        deprecated,
        [
            (json!("pets:createPet"), json!(true)),
            (json!("pets:deletePet"), json!(true)),
            (json!("pets:listPets"), json!(false)),
            (json!("pets:showPetById"), json!(true)),
        ]
    );
    let audit = gateway.get("/admin/audit", &Gateway::admin()).await.json();
    let last: Vec<(Value, Value)> = audit["data"]
        .as_array()
        .expect("records")
        .iter()
        .filter(|r| r["action"] == "update" || r["action"] == "refresh")
        .filter(|r| r["revision"] != json!(1))
        .map(|r| (r["action"].clone(), r["revision"].clone()))
        .collect();
    assert_eq!(
        last.iter().map(|(_, r)| r.clone()).collect::<Vec<_>>(),
        vec![revision.clone(), revision],
        "{last:?}"
    );
}

#[tokio::test]
async fn unsafe_operation_ids_get_safe_names_and_their_ids_work_in_admin_urls() {
    let gateway = Gateway::start().await;
    let spec = json!({"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {
        "/repos": {"get": {"operationId": "repos/get"}},
        "/acl": {"get": {"operationId": "calendar.acl.get"}}}});
    create_source(
        &gateway,
        json!({"id": "gh", "name": "gh", "type": "openapi", "config": {"spec": spec}}),
    )
    .await
    .expect(reqwest::StatusCode::CREATED);
    let reply = gateway
        .get("/admin/tools/gh:repos%2Fget", &Gateway::admin())
        .await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let tool = reply.json();
    assert_eq!(
        (&tool["id"], &tool["operation_id"], &tool["name"]),
        (
            &json!("gh:repos/get"),
            &json!("repos/get"),
            &json!("repos_get")
        )
    );
    let names: Vec<Value> = imported_tools(&gateway, "gh")
        .await
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert_eq!(names, [json!("calendar_acl_get"), json!("repos_get")]);
    let reply = gateway
        .admin_send(
            Method::POST,
            "/admin/tools/gh:repos%2Fget/disable",
            Some(json!({})),
        )
        .await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
}

#[tokio::test]
async fn an_inline_spec_over_the_body_limit_is_told_to_use_a_url() {
    let gateway = Gateway::start().await;
    let spec = json!({"openapi": "3.0.3", "info": {"title": "t", "version": "1",
                      "description": "x".repeat(2 * 1024 * 1024)}, "paths": {}});
    let problem = create_source(
        &gateway,
        json!({"id": "big", "name": "big", "type": "openapi", "config": {"spec": spec}}),
    )
    .await
    .problem(413);
    assert!(
        problem["detail"]
            .as_str()
            .unwrap_or("")
            .contains("config.url"),
        "{problem}"
    );
}

#[tokio::test]
async fn the_seed_tier_2_tool_descriptor_is_accepted_as_written() {
    let gateway = Gateway::start().await;
    let mut catalog = tool_service_catalog(json!({}));
    catalog["tools"] = json!([]);
    gateway
        .admin_send(Method::PUT, "/admin/catalog", Some(catalog))
        .await
        .expect(reqwest::StatusCode::OK);
    // Seed 001, tier 2, as written there.
    let descriptor = json!({
        "type": "tool-service",
        "name": "query-customers",
        "description": "Query the customer knowledge base",
        "service": "custom-rag",
        "collection": "customers",
        "arguments": [{"name": "question", "type": "string",
                       "description": "The question to ask about customers"}]
    });
    let reply = gateway
        .admin_send(Method::POST, "/admin/tools", Some(descriptor.clone()))
        .await;
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let tool = reply.json();
    assert_eq!(
        (&tool["id"], &tool["source_id"], &tool["service_config"]),
        (
            &json!("custom-rag:query-customers"),
            &json!("custom-rag"),
            &json!({"collection": "customers"})
        )
    );
    assert_eq!(tool["input_schema"]["required"], json!(["question"]));
    // An explicit input_schema beside arguments would be replaced: refused, not ignored.
    let mut both = descriptor.clone();
    both["name"] = json!("query-orders");
    both["input_schema"] = json!({"type": "object", "properties": {"q": {"type": "string"}}});
    let problem = gateway
        .admin_send(Method::POST, "/admin/tools", Some(both))
        .await
        .problem(422);
    assert_eq!(
        problem["errors"][0]["field"],
        json!("input_schema"),
        "{problem}"
    );
    // A config value the service does not declare is named with its field path.
    let mut unknown = descriptor;
    unknown["name"] = json!("query-products");
    unknown["colour"] = json!("red");
    let problem = gateway
        .admin_send(Method::POST, "/admin/tools", Some(unknown))
        .await
        .problem(422);
    assert_eq!(
        problem["errors"][0]["field"],
        json!("service_config.colour"),
        "{problem}"
    );
}
