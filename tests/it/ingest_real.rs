//! Importing real public OpenAPI documents (trimmed; origins in
//! `tests/fixtures/openapi/README.md`) through the admin API, as a user would.

use crate::support;

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
    // The source says so too, until the next refresh.
    let source = gateway
        .admin_send(Method::GET, "/admin/sources/twilio", None)
        .await
        .json();
    assert_eq!(source["refresh"]["issue_count"], json!(2));
    assert_eq!(source["refresh"]["issues"], summary["issues"]);
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

/// Slack's Web API (OpenAPI 3 by APIs.guru) sends its OAuth token as a `token` header on writes
/// and a `token` query parameter on reads: neither is an agent input, and the form body is.
#[tokio::test]
async fn slack_tokens_are_credentials_not_inputs() {
    let gateway = Gateway::start().await;
    let spec = Value::String(read_fixture("openapi/slack-admin-apps-3.0.yaml"));
    let tools = import(&gateway, "slack", spec).await;
    let approve = by_operation(&tools, "admin_apps_approve");
    assert_eq!(
        approve["input_schema"]["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["body".to_owned()]),
        "{}",
        approve["input_schema"]
    );
    let body = &approve["input_schema"]["properties"]["body"];
    assert_eq!(
        body["contentMediaType"],
        json!("application/x-www-form-urlencoded")
    );
    for field in ["app_id", "request_id", "team_id"] {
        assert!(body["properties"][field].is_object(), "{field} in {body}");
    }
    let list = by_operation(&tools, "admin_apps_approved_list");
    let mut names: Vec<&str> = list["input_schema"]["properties"]
        .as_object()
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    names.sort_unstable();
    assert_eq!(names, ["cursor", "enterprise_id", "limit", "team_id"]);
    assert_eq!(
        list["input_schema"].get("required"),
        None,
        "token was the only required one"
    );
    for tool in &tools {
        let mut all = Vec::new();
        keys(&tool["input_schema"], &mut all);
        assert!(!all.iter().any(|k| k == "token"), "{}", tool["id"]);
    }
}

/// GitHub's operation ids (`meta/get-zen`, a 72-character one) stay the tools' `operation_id`
/// and ids, and every tool gets a name LLM function calling accepts, the same on every import;
/// the summary becomes the title, and an id with `/` works in admin URLs.
#[tokio::test]
async fn github_operation_ids_get_safe_stable_names_and_titles() {
    let gateway = Gateway::start().await;
    let spec: Value =
        serde_json::from_str(&read_fixture("openapi/github-names-3.0.json")).expect("JSON");
    let tools = import(&gateway, "github", spec.clone()).await;
    let named: Vec<(&str, &str, &str)> = tools
        .iter()
        .map(|t| {
            (
                t["operation_id"].as_str().unwrap_or_default(),
                t["name"].as_str().unwrap_or_default(),
                t["title"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        named,
        [
            ("emojis/get", "emojis_get", "Get emojis"),
            ("meta/get-zen", "meta_get-zen", "Get the Zen of GitHub"),
            (
                "oauth-authorizations/get-or-create-authorization-for-app-and-fingerprint",
                "oauth-authorizations_get-or-create-authorization-for-ap_ecec4689",
                "Get-or-create an authorization for a specific app and fingerprint"
            ),
            (
                "orgs/remove-public-membership-for-authenticated-user",
                "orgs_remove-public-membership-for-authenticated-user",
                "Remove public organization membership for the authenticated user"
            ),
            (
                "repos/remove-collaborator",
                "repos_remove-collaborator",
                "Remove a repository collaborator"
            ),
        ]
    );
    let safe = regex::Regex::new("^[a-zA-Z0-9_-]{1,64}$").expect("regex");
    for (_, name, _) in &named {
        assert!(safe.is_match(name), "{name}");
    }
    // The id keeps the `/`: it works percent-encoded in an admin URL.
    let reply = gateway
        .get("/admin/tools/github:meta%2Fget-zen", &Gateway::admin())
        .await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(reply.json()["id"], json!("github:meta/get-zen"));
    // A second import of the same document names everything the same.
    let again = import(&gateway, "github2", spec).await;
    let names_again: Vec<&str> = again.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names_again,
        named.iter().map(|(_, name, _)| *name).collect::<Vec<_>>()
    );
}

/// Editing a real document in place: the PATCHed `config.spec` replaces the stored one (no
/// deep merge keeps a removed path alive) and is re-imported in the same revision.
#[tokio::test]
async fn patching_twilios_spec_reimports_it_in_the_same_revision() {
    let gateway = Gateway::start().await;
    let spec: Value =
        serde_json::from_str(&read_fixture("openapi/twilio-messages-3.0.json")).expect("JSON");
    import(&gateway, "twilio", spec.clone()).await;
    let mut smaller = spec;
    smaller["paths"]
        .as_object_mut()
        .expect("paths")
        .remove("/2010-04-01/Accounts/{AccountSid}/Messages/{Sid}.json")
        .expect("the path is in the fixture");
    let reply = gateway
        .admin_send(
            Method::PATCH,
            "/admin/sources/twilio",
            Some(json!({"config": {"spec": smaller}})),
        )
        .await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let revision = reply
        .header("x-catalog-revision")
        .and_then(|r| r.parse::<u64>().ok())
        .expect("a revision");
    let stored = gateway
        .get("/admin/sources/twilio", &Gateway::admin())
        .await
        .json();
    // (Keys of the document that read like secrets, such as Twilio's `accountSid_authToken`
    // scheme, are masked on reads; the paths are not.)
    let stored_paths: Vec<&String> = stored["config"]["spec"]["paths"]
        .as_object()
        .map(|paths| paths.keys().collect())
        .unwrap_or_default();
    assert_eq!(
        stored_paths,
        ["/2010-04-01/Accounts/{AccountSid}/Messages.json"],
        "replaced, not merged"
    );
    let tools = gateway
        .get("/admin/tools?source_id=twilio&limit=100", &Gateway::admin())
        .await
        .json();
    let states: Vec<(&str, bool)> = tools["data"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| {
            (
                t["operation_id"].as_str().unwrap_or_default(),
                t["deprecated"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("CreateMessage", false),
            ("DeleteMessage", true),
            ("FetchMessage", true),
            ("ListMessage", false),
        ]
    );
    assert_eq!(
        revision, 2,
        "the create was revision 1; the edit and its import are one"
    );
}
