//! Importing real public OpenAPI documents (trimmed; origins in
//! `tests/fixtures/openapi/README.md`) through the admin API, as a user would.

mod support;

use reqwest::Method;
use serde_json::{Value, json};
use support::gateway::Gateway;
use support::upstream::read_fixture;

/// Creates an `openapi` source from an inline document and returns the tools it made, by
/// operation id.
async fn import(gateway: &Gateway, id: &str, spec: Value) -> Vec<Value> {
    let reply = gateway
        .admin_send(
            Method::POST,
            "/admin/sources",
            Some(json!({"id": id, "name": id, "type": "openapi", "config": {"spec": spec}})),
        )
        .await;
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let reply = gateway
        .get(
            &format!("/admin/tools?source_id={id}&limit=1000"),
            &Gateway::admin(),
        )
        .await;
    assert_eq!(reply.status, 200);
    reply.json()["data"].as_array().cloned().unwrap_or_default()
}

fn by_operation<'t>(tools: &'t [Value], operation_id: &str) -> &'t Value {
    tools
        .iter()
        .find(|t| t["operation_id"] == operation_id)
        .unwrap_or_else(|| panic!("no tool {operation_id}"))
}

/// Every key anywhere in `value` (property names included).
fn keys(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                out.push(key.clone());
                keys(child, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| keys(item, out)),
        _ => {}
    }
}

#[tokio::test]
async fn twilio_form_bodies_become_inputs_and_schemas_are_agent_facing() {
    let gateway = Gateway::start().await;
    let spec: Value =
        serde_json::from_str(&read_fixture("openapi/twilio-messages-3.0.json")).expect("JSON");
    let tools = import(&gateway, "twilio", spec).await;
    assert_eq!(tools.len(), 4);
    let create = by_operation(&tools, "CreateMessage");
    let input = &create["input_schema"];
    assert_eq!(input["required"], json!(["AccountSid"]));
    let body = &input["properties"]["body"];
    assert_eq!(
        body["contentMediaType"],
        json!("application/x-www-form-urlencoded")
    );
    assert_eq!(body["required"], json!(["To"]));
    for field in ["To", "From", "Body", "MediaUrl", "StatusCallback"] {
        assert!(body["properties"][field].is_object(), "{field} in {body}");
    }
    // Twilio's output schemas: nullable → JSON Schema; x-twilio and examples gone.
    let output = &create["output_schema"];
    assert_eq!(
        output["properties"]["body"]["type"],
        json!(["string", "null"])
    );
    for tool in &tools {
        let mut all = Vec::new();
        keys(&tool["input_schema"], &mut all);
        keys(&tool["output_schema"], &mut all);
        assert!(
            !all.iter().any(|k| k.starts_with("x-")
                || k == "nullable"
                || k == "example"
                || k == "examples"),
            "{}: {all:?}",
            tool["id"]
        );
    }
}

#[tokio::test]
async fn openai_yaml_with_big_integers_multipart_deprecated_and_recursion() {
    let gateway = Gateway::start().await;
    // As text: the YAML itself is what is parsed (minimum: -9223372036854776000).
    let spec = Value::String(read_fixture("openapi/openai-trimmed-3.1.yaml"));
    let tools = import(&gateway, "openai", spec).await;
    let ids: Vec<&str> = tools
        .iter()
        .filter_map(|t| t["operation_id"].as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "createChatCompletion",
            "createTranscription",
            "deleteAssistant",
            "getAssistant",
            "searchVectorStore"
        ]
    );
    let transcription = by_operation(&tools, "createTranscription");
    let body = &transcription["input_schema"]["properties"]["body"];
    assert_eq!(body["contentMediaType"], json!("multipart/form-data"));
    assert!(body["properties"]["file"].is_object(), "{body}");
    assert!(body["properties"]["model"].is_object(), "{body}");

    let chat = by_operation(&tools, "createChatCompletion");
    let chat_text = chat["input_schema"].to_string();
    assert!(
        chat_text.contains("\"minimum\":-9.223372036854776e+18"),
        "the seed's minimum, as a float"
    );
    // CompoundFilter's `$recursiveRef: "#"` refers to CompoundFilter, not to the tool's root.
    let search = &by_operation(&tools, "searchVectorStore")["input_schema"];
    let compound = &search["$defs"]["CompoundFilter"];
    assert_eq!(
        compound["properties"]["filters"]["items"]["oneOf"][1],
        json!({"$ref": "#/$defs/CompoundFilter"}),
        "{search}"
    );

    // Deprecated upstream: imported, as deprecated (hidden from agents).
    for id in ["getAssistant", "deleteAssistant"] {
        assert_eq!(by_operation(&tools, id)["deprecated"], json!(true), "{id}");
    }
    assert_eq!(chat.get("deprecated"), None);
}

/// One bad operation (a duplicate operationId, here beside the real Twilio operations) is
/// skipped with its reason in the refresh answer, the audit record and the metrics; the rest
/// of the document is imported.
#[tokio::test]
async fn a_bad_operation_is_skipped_and_reported_everywhere() {
    let gateway = Gateway::start().await;
    let mut spec: Value =
        serde_json::from_str(&read_fixture("openapi/twilio-messages-3.0.json")).expect("JSON");
    spec["paths"]["/copy"] = json!({"get": {"operationId": "FetchMessage"}});
    spec["paths"]["/remote"] = json!({"post": {"operationId": "Remote", "requestBody": {
        "content": {"application/json": {"schema": {"$ref": "https://example.com/s.json"}}}}}});
    let tools = import(&gateway, "twilio", spec).await;
    assert_eq!(tools.len(), 4);
    let audit = gateway.get("/admin/audit", &Gateway::admin()).await.json();
    let refresh = audit["data"]
        .as_array()
        .and_then(|records| records.iter().find(|r| r["action"] == "refresh"))
        .cloned()
        .expect("a refresh record");
    assert_eq!(
        (&refresh["after"]["skipped"], &refresh["after"]["cut"]),
        (&json!(2), &json!(0))
    );
    assert_eq!(
        refresh["after"]["issues"][0],
        json!({"operation": "GET /copy", "operation_id": "FetchMessage", "outcome": "skipped",
               "reason": "operationId 'FetchMessage' is already used by GET /2010-04-01/Accounts/{AccountSid}/Messages/{Sid}.json"})
    );
    let reply = gateway
        .admin_send(Method::POST, "/admin/sources/twilio/refresh", None)
        .await;
    assert_eq!(reply.status, 200);
    let summary = reply.json();
    assert_eq!(
        (&summary["skipped"], &summary["unchanged"]),
        (&json!(2), &json!(4))
    );
    assert_eq!(summary["issues"][1]["operation"], json!("POST /remote"));
    let metrics = gateway
        .client
        .get(format!("{}/metrics", gateway.base))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    assert!(
        metrics.lines().any(|line| line
            .starts_with("toolgate_import_operations_total{outcome=\"skipped\"")
            && line.ends_with(" 4")),
        "{metrics}"
    );
}
