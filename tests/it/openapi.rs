//! `GET /openapi.json` over real HTTP: the document describes every route the gateway serves,
//! and the gateway's real responses fit the schemas the document gives them.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::gateway::Gateway;
use toolgate::transport::routes::{self, Access, ROUTES};

/// The routes that need no token, from the one route table.
fn is_open(path: &str) -> bool {
    routes::of(path).is_some_and(|route| route.access == Access::Open)
}

const HTTP_METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

async fn fetch_document(gateway: &Gateway) -> Value {
    let reply = gateway
        .request(Method::GET, "/openapi.json", None, None)
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    reply.json()
}

fn documented_routes(document: &Value) -> BTreeMap<String, BTreeSet<String>> {
    document["paths"]
        .as_object()
        .expect("paths")
        .iter()
        .map(|(path, item)| {
            let methods = item
                .as_object()
                .expect("path item")
                .keys()
                .filter(|key| HTTP_METHODS.contains(&key.as_str()))
                .cloned()
                .collect();
            (path.clone(), methods)
        })
        .collect()
}

#[tokio::test]
async fn the_document_is_openapi_3_1_and_lists_every_route() {
    let gateway = Gateway::start().await;
    let document = fetch_document(&gateway).await;
    assert!(
        document["openapi"]
            .as_str()
            .is_some_and(|v| v.starts_with("3.1")),
        "{}",
        document["openapi"]
    );
    let expected: BTreeMap<String, BTreeSet<String>> = ROUTES
        .iter()
        .map(|route| {
            (
                route.path.to_owned(),
                route.methods.iter().map(|m| (*m).to_owned()).collect(),
            )
        })
        .collect();
    assert_eq!(documented_routes(&document), expected);
}

#[tokio::test]
async fn every_documented_operation_is_served() {
    let gateway = Gateway::start().await;
    let document = fetch_document(&gateway).await;
    let admin = Gateway::admin();
    for (path, methods) in documented_routes(&document) {
        let concrete = path.replace("{id}", "no-such-id");
        for method in methods {
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
            // `/mcp` streams only inside a session: probed like any other route below.
            let streams = path != "/mcp"
                && !document["paths"][&path][method.as_str().to_lowercase()]["responses"]["200"]
                    ["content"]["text/event-stream"]
                    .is_null();
            if streams {
                // A stream never ends on its own: its status and type are what is checked.
                let response = gateway
                    .client
                    .request(method.clone(), format!("{}{concrete}", gateway.base))
                    .bearer_auth(&admin)
                    .send()
                    .await
                    .expect("the gateway answers");
                assert_eq!(response.status(), StatusCode::OK, "{method} {path}");
                assert_eq!(
                    response.headers()["content-type"],
                    "text/event-stream",
                    "{method} {path}"
                );
                continue;
            }
            // No body: writes answer 400, reads 200 or 404 for the unknown id; never "no route"
            // (the fallback's 404) or 405.
            let reply = gateway
                .request(method.clone(), &concrete, Some(&admin), None)
                .await;
            assert_ne!(
                reply.status,
                StatusCode::METHOD_NOT_ALLOWED,
                "{method} {path}"
            );
            if reply.status == StatusCode::NOT_FOUND {
                let detail = reply.json()["detail"].as_str().unwrap_or("").to_owned();
                assert!(!detail.starts_with("no route"), "{method} {path}: {detail}");
            }
            let status = reply.status.as_u16().to_string();
            assert!(
                document["paths"][&path][method.as_str().to_lowercase()]["responses"]
                    .get(&status)
                    .is_some(),
                "{method} {path} answered {status}, which the document does not list"
            );
        }
    }
}

/// The route table is what the router serves: every method a path does not list is answered
/// 405, so a method served but left out of the table (and so of the document) fails here, as
/// a path left out of the table stops the gateway at start.
#[tokio::test]
async fn a_method_the_table_does_not_list_is_405() {
    let gateway = Gateway::start().await;
    let admin = Gateway::admin();
    for route in ROUTES {
        let concrete = route.path.replace("{id}", "no-such-id");
        for method in ["get", "put", "post", "delete", "patch"] {
            if route.methods.contains(&method) {
                continue;
            }
            let verb = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
            let reply = gateway.request(verb, &concrete, Some(&admin), None).await;
            assert_eq!(
                reply.status,
                StatusCode::METHOD_NOT_ALLOWED,
                "{method} {}: served but not in the route table",
                route.path
            );
        }
    }
}

#[tokio::test]
async fn bearer_security_everywhere_but_the_ops_routes() {
    let gateway = Gateway::start().await;
    let document = fetch_document(&gateway).await;
    let scheme = &document["components"]["securitySchemes"]["bearer"];
    assert_eq!(scheme["type"], json!("http"));
    assert_eq!(scheme["scheme"], json!("bearer"));
    assert_eq!(scheme["bearerFormat"], json!("JWT"));
    assert_eq!(document["security"], json!([{"bearer": []}]));
    for (path, methods) in documented_routes(&document) {
        for method in methods {
            let operation = &document["paths"][&path][&method];
            if is_open(&path) {
                assert_eq!(operation["security"], json!([]), "{method} {path}");
            } else {
                assert!(
                    operation.get("security").is_none(),
                    "{method} {path} overrides the bearer requirement"
                );
                let problem = &document["components"]["responses"]["Unauthorized"];
                assert_eq!(
                    operation["responses"]["401"]["$ref"],
                    json!("#/components/responses/Unauthorized"),
                    "{method} {path}"
                );
                assert!(problem["content"]["application/problem+json"].is_object());
            }
        }
    }
    let health = &document["paths"]["/healthz"]["get"];
    assert_eq!(health["security"], json!([]));
}

#[tokio::test]
async fn the_tool_schema_has_the_model_fields() {
    let gateway = Gateway::start().await;
    let document = fetch_document(&gateway).await;
    let tool = &document["components"]["schemas"]["Tool"];
    let properties: BTreeSet<&str> = tool["properties"]
        .as_object()
        .expect("properties")
        .keys()
        .map(String::as_str)
        .collect();
    for field in [
        "id",
        "source_id",
        "operation_id",
        "name",
        "input_schema",
        "enabled",
        "deprecated",
    ] {
        assert!(properties.contains(field), "Tool.{field}");
    }
    let required: BTreeSet<&str> = tool["required"]
        .as_array()
        .expect("required")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        required,
        BTreeSet::from(["source_id", "operation_id", "name"]),
        "fields with defaults are optional"
    );
    assert_eq!(
        document["components"]["schemas"]["Source"]["properties"]["type"]["enum"],
        json!(["manual", "openapi", "mcp", "tool-service"]),
        "serde's rename of source_type, with the allowed values"
    );
}

/// The component schema a JSON reference points at.
fn resolve<'d>(document: &'d Value, schema: &'d Value) -> &'d Value {
    match schema["$ref"].as_str() {
        Some(target) => {
            let name = target
                .strip_prefix("#/components/schemas/")
                .expect("a schema reference");
            &document["components"]["schemas"][name]
        }
        None => schema,
    }
}

/// Checks a real value against a schema, recursing through objects and arrays: every key is
/// declared, every required key is present.
fn assert_fits(document: &Value, schema: &Value, value: &Value, at: &str) {
    if let Err(problem) = fits(document, schema, value, at) {
        panic!("{problem}");
    }
}

/// Whether `value` fits `schema`: its type and enum, every property declared (recursively),
/// the required ones present, `allOf` all holding, `anyOf` one, `oneOf` exactly one.
fn fits(document: &Value, schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let schema = resolve(document, schema);
    if let Some(parts) = schema["allOf"].as_array() {
        // Every part holds: checked as one object with all their properties and requirements.
        let mut merged = json!({"type": "object", "properties": {}, "required": []});
        for part in parts {
            let part = resolve(document, part);
            fits_type(part, value, at)?;
            for (key, property) in part["properties"].as_object().into_iter().flatten() {
                merged["properties"][key] = property.clone();
            }
            for required in part["required"].as_array().into_iter().flatten() {
                merged["required"]
                    .as_array_mut()
                    .expect("an array")
                    .push(required.clone());
            }
        }
        return fits(document, &merged, value, at);
    }
    fits_type(schema, value, at)?;
    if let Some(branches) = schema["oneOf"].as_array() {
        let fitting = branches
            .iter()
            .filter(|branch| fits(document, branch, value, at).is_ok())
            .count();
        return match fitting {
            1 => Ok(()),
            0 => Err(format!("{at}: {value} fits none of the oneOf alternatives")),
            n => Err(format!(
                "{at}: {value} fits {n} oneOf alternatives, not exactly one"
            )),
        };
    }
    if let Some(branches) = schema["anyOf"].as_array() {
        return if branches
            .iter()
            .any(|branch| fits(document, branch, value, at).is_ok())
        {
            Ok(())
        } else {
            Err(format!("{at}: {value} fits none of the anyOf alternatives"))
        };
    }
    match value {
        Value::Object(fields) => {
            let Some(properties) = schema["properties"].as_object() else {
                return Ok(()); // a free-form object
            };
            for (key, field) in fields {
                let declared = properties
                    .get(key)
                    .ok_or_else(|| format!("{at}.{key} is not in the schema"))?;
                fits(document, declared, field, &format!("{at}.{key}"))?;
            }
            for required in schema["required"].as_array().into_iter().flatten() {
                let required = required.as_str().expect("name");
                if !fields.contains_key(required) {
                    return Err(format!("{at}.{required} is missing"));
                }
            }
            Ok(())
        }
        Value::Array(items) => items.iter().enumerate().try_for_each(|(i, item)| {
            fits(document, &schema["items"], item, &format!("{at}[{i}]"))
        }),
        _ => Ok(()),
    }
}

/// The JSON type names a value has (an integer is also a number).
fn json_types(value: &Value) -> &'static [&'static str] {
    match value {
        Value::Null => &["null"],
        Value::Bool(_) => &["boolean"],
        Value::Number(n) if n.is_i64() || n.is_u64() => &["integer", "number"],
        Value::Number(_) => &["number"],
        Value::String(_) => &["string"],
        Value::Array(_) => &["array"],
        Value::Object(_) => &["object"],
    }
}

/// Whether `value` has one of the types `schema` declares (any, when it declares none).
fn type_fits(schema: &Value, value: &Value) -> bool {
    let declared: Vec<&str> = match &schema["type"] {
        Value::String(one) => vec![one.as_str()],
        Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
        _ => return true,
    };
    json_types(value).iter().any(|t| declared.contains(t))
}

fn fits_type(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    if !type_fits(schema, value) {
        return Err(format!(
            "{at}: {value} is not of the documented type {}",
            schema["type"]
        ));
    }
    match (schema["enum"].as_array(), value) {
        (Some(choices), Value::String(_)) if !choices.contains(value) => {
            Err(format!("{at}: {value} is not one of {choices:?}"))
        }
        _ => Ok(()),
    }
}

/// The schema of a documented response body.
fn response_schema<'d>(document: &'d Value, path: &str, method: &str, status: u16) -> &'d Value {
    let response = &document["paths"][path][method]["responses"][status.to_string()];
    let response = match response["$ref"].as_str() {
        Some(target) => {
            let name = target
                .strip_prefix("#/components/responses/")
                .expect("a response reference");
            &document["components"]["responses"][name]
        }
        None => response,
    };
    let content = response["content"].as_object().expect("content");
    let (_, media) = content.iter().next().expect("a media type");
    &media["schema"]
}

/// Sends an admin request, asserts its status, and checks the body against the schema the
/// document gives `method template` for that status.
async fn check(
    gateway: &Gateway,
    document: &Value,
    template: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
    status: u16,
) {
    let reply = gateway.admin_send(method.clone(), path, body).await;
    assert_eq!(
        reply.status.as_u16(),
        status,
        "{method} {path}: {}",
        String::from_utf8_lossy(&reply.body)
    );
    let schema = response_schema(document, template, &method.as_str().to_lowercase(), status);
    assert_fits(document, schema, &reply.json(), &format!("{method} {path}"));
}

#[tokio::test]
async fn real_responses_fit_their_documented_schemas() {
    let gateway = Gateway::start().await;
    let document = fetch_document(&gateway).await;
    let catalog = json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual", "config": {"a": 1}}],
        "tools": [
            {"source_id": "billing", "operation_id": "list_invoices", "name": "list_invoices",
             "method": "GET", "path": "/invoices", "tags": ["read-only"], "version": "2",
             "output_schema": {"type": "object"}, "available_in_states": ["s"], "next_state": "t"},
            {"source_id": "billing", "operation_id": "refund", "name": "refund", "enabled": false}
        ],
        "labels": [{"id": "pii", "name": "pii", "color": "#f00"}],
        "groups": [{"id": "g-all", "name": "all", "selectors": [{"method_pattern": "GET"}],
                    "explicit_tool_ids": ["billing:refund"]}],
        "policies": [{"id": "p-all", "name": "staff", "claim_matchers": [
            {"json_path": "roles", "operator": "contains", "value": "staff"}],
            "allowed_group_ids": ["g-all"]}]
    });
    let checks: Vec<(&str, Method, &str, Option<Value>, u16)> = vec![
        (
            "/admin/catalog",
            Method::PUT,
            "/admin/catalog",
            Some(catalog),
            200,
        ),
        ("/admin/catalog", Method::GET, "/admin/catalog", None, 200),
        (
            "/agents/tools",
            Method::GET,
            "/agents/tools?include_disabled=true&explain=true",
            None,
            200,
        ),
        (
            "/admin/preview",
            Method::POST,
            "/admin/preview",
            Some(
                json!({"claims": {"roles": ["admin", "nobody"]}, "include_disabled": true,
                        "group": "g-all", "tools": ["*"]}),
            ),
            200,
        ),
        (
            "/admin/impact",
            Method::POST,
            "/admin/impact",
            Some(
                json!({"change": {"collection": "tools", "id": "billing:list_invoices",
                                   "op": "delete"},
                        "claims_sets": [{"roles": ["staff"]}]}),
            ),
            200,
        ),
        (
            "/admin/tools/{id}/disable",
            Method::POST,
            "/admin/tools/billing:list_invoices/disable",
            Some(json!({"reason": "maintenance"})),
            200,
        ),
        (
            "/admin/groups/{id}/tools",
            Method::GET,
            "/admin/groups/g-all/tools",
            None,
            200,
        ),
        (
            "/admin/labels",
            Method::POST,
            "/admin/labels",
            Some(json!({"name": "x"})),
            201,
        ),
        (
            "/admin/labels",
            Method::POST,
            "/admin/labels",
            Some(json!({"id": "pii", "name": "y"})),
            409,
        ),
        (
            "/admin/policies",
            Method::POST,
            "/admin/policies",
            Some(json!({"name": "p", "claim_matchers": [{"json_path": "a", "operator": "eq"}]})),
            422,
        ),
        (
            "/admin/sources",
            Method::POST,
            "/admin/sources",
            Some(
                json!({"id": "pets", "name": "pets", "type": "openapi", "config": {"spec":
                {"openapi": "3.0.3", "info": {"title": "t", "version": "1"},
                 "paths": {"/pets": {"get": {"operationId": "listPets"}},
                           "/x": {"get": {"operationId": "listPets"}}}}}}),
            ),
            201,
        ),
        (
            "/admin/sources/{id}/refresh",
            Method::POST,
            "/admin/sources/pets/refresh",
            None,
            200,
        ),
        (
            "/admin/sources/{id}",
            Method::GET,
            "/admin/sources/pets",
            None,
            200,
        ),
        (
            "/admin/audit",
            Method::GET,
            "/admin/audit?limit=2",
            None,
            200,
        ),
        ("/healthz", Method::GET, "/healthz", None, 200),
        ("/readyz", Method::GET, "/readyz", None, 200),
        (
            "/access/v1/evaluation",
            Method::POST,
            "/access/v1/evaluation",
            Some(
                json!({"subject": {"type": "agent", "id": "x", "properties": {"claims": {"roles": ["staff"]}}},
                        "action": {"name": "call"}, "resource": {"type": "tool", "id": "billing:list_invoices"},
                        "context": {"state": "s", "group": ["g-all"]}}),
            ),
            200,
        ),
        (
            "/access/v1/evaluation",
            Method::POST,
            "/access/v1/evaluation",
            Some(json!({"action": {"name": "call"}, "resource": {"type": "tool"}})),
            400,
        ),
        (
            "/access/v1/evaluations",
            Method::POST,
            "/access/v1/evaluations",
            Some(
                json!({"subject": {"type": "agent", "id": "x", "properties": {"claims": {"roles": ["staff"]}}},
                        "action": {"name": "call"},
                        "options": {"evaluations_semantic": "execute_all"},
                        "evaluations": [{"resource": {"type": "tool", "id": "billing:refund"}},
                                        {"resource": {"type": "tool", "id": "nope"}}]}),
            ),
            200,
        ),
        (
            "/access/v1/evaluations",
            Method::POST,
            "/access/v1/evaluations",
            Some(json!({"action": {"name": "call"}, "resource": {"type": "tool", "id": "nope"}})),
            200,
        ),
        (
            "/access/v1/search/resource",
            Method::POST,
            "/access/v1/search/resource",
            Some(
                json!({"subject": {"type": "agent", "id": "x", "properties": {"claims": {"roles": ["staff"]}}},
                        "action": {"name": "call"}, "resource": {"type": "tool"}, "page": {"limit": 1}}),
            ),
            200,
        ),
        (
            "/.well-known/authzen-configuration",
            Method::GET,
            "/.well-known/authzen-configuration",
            None,
            200,
        ),
        (
            "/.well-known/oauth-protected-resource",
            Method::GET,
            "/.well-known/oauth-protected-resource",
            None,
            200,
        ),
        (
            "/.well-known/oauth-protected-resource/mcp",
            Method::GET,
            "/.well-known/oauth-protected-resource/mcp",
            None,
            200,
        ),
    ];
    for (template, method, path, body, status) in checks {
        check(&gateway, &document, template, method, path, body, status).await;
    }
    for collection in ["sources", "tools", "labels", "groups", "policies"] {
        let template = format!("/admin/{collection}");
        let path = format!("{template}?limit=1");
        check(
            &gateway,
            &document,
            &template,
            Method::GET,
            &path,
            None,
            200,
        )
        .await;
    }

    let unauthorized = gateway
        .request(Method::GET, "/agents/tools", None, None)
        .await;
    assert_eq!(unauthorized.status, StatusCode::UNAUTHORIZED);
    let schema = response_schema(&document, "/agents/tools", "get", 401);
    assert_fits(&document, schema, &unauthorized.json(), "401");
}

/// The schema checker itself can fail: a value fitting no `oneOf` alternative, or two, is
/// refused, as is a required property left out or an undeclared one.
#[test]
fn the_schema_checker_refuses_what_does_not_fit() {
    let document = json!({});
    let one_of = json!({"oneOf": [
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
        {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]},
    ]});
    assert!(fits(&document, &one_of, &json!({"a": "x"}), "v").is_ok());
    assert!(
        fits(&document, &one_of, &json!({"a": 1}), "v").is_err(),
        "none"
    );
    let overlapping = json!({"oneOf": [{"type": "string"}, {"type": ["string", "null"]}]});
    assert!(
        fits(&document, &overlapping, &json!("x"), "v").is_err(),
        "two"
    );
    assert!(fits(&document, &overlapping, &Value::Null, "v").is_ok());
    let object =
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]});
    assert!(
        fits(&document, &object, &json!({}), "v").is_err(),
        "missing"
    );
    assert!(
        fits(&document, &object, &json!({"a": "x", "z": 1}), "v").is_err(),
        "undeclared"
    );
}

/// Every route is registered through the table's `route`: no `.route(` / `.nest(` call in the
/// HTTP code bypasses it. The exceptions: the `bench-routes` feature's file, and the admin
/// console (`transport/console/`), whose routes are HTML pages for people, not the JSON API the
/// document describes (they are listed in its `routes` and driven by tests/it/console*.rs).
#[test]
fn no_route_is_registered_around_the_table() {
    use crate::support::source_text::{code_only, rust_files};
    let http = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/transport");
    let mut files = Vec::new();
    rust_files(&http, &mut files);
    let mut bypasses = Vec::new();
    for file in files {
        let shown = file.display().to_string();
        if shown.ends_with("routes.rs")
            || shown.ends_with("bench.rs")
            || shown.contains("/transport/console/")
        {
            continue;
        }
        let code = code_only(&std::fs::read_to_string(&file).expect("readable"));
        for call in [".route(", ".nest(", ".route_service("] {
            if code.contains(call) {
                bypasses.push(format!("{shown}: {call}"));
            }
        }
    }
    assert!(
        bypasses.is_empty(),
        "register routes through transport::routes: {bypasses:#?}"
    );
}
