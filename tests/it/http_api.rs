//! The gateway over real HTTP with real signed tokens: agent reads, admin writes, errors.

use crate::support;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::conformance;
use support::gateway::{Gateway, SECRET};

fn demo_catalog() -> Value {
    json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual"}],
        "tools": [
            {"source_id": "billing", "operation_id": "list_invoices", "name": "list_invoices", "method": "GET", "path": "/invoices", "tags": ["read-only"]},
            {"source_id": "billing", "operation_id": "refund", "name": "refund", "method": "POST", "path": "/refunds"}
        ],
        "groups": [{"id": "g-read", "name": "reads", "selectors": [{"method_pattern": "GET"}]},
                   {"id": "g-all", "name": "all", "selectors": [{}]}],
        "policies": [
            {"id": "p-read", "name": "readers", "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "reader"}], "allowed_group_ids": ["g-read"]},
            {"id": "p-all", "name": "staff", "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "staff"}], "allowed_group_ids": ["g-all"]}
        ]
    })
}

async fn gateway_with_demo() -> Gateway {
    let gateway = Gateway::start().await;
    let reply = gateway
        .admin_send(Method::PUT, "/admin/catalog", Some(demo_catalog()))
        .await;
    assert_eq!(
        reply.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    gateway
}

#[tokio::test]
async fn conformance_cases_hold_over_http() {
    let suites = conformance::load_all();
    assert!(!suites.is_empty(), "no conformance suites found");
    let checks: usize = suites.iter().map(|suite| suite.checks.len()).sum();
    assert!(checks > 0, "the conformance suites hold no checks");
    for suite in suites {
        let gateway = Gateway::start().await;
        gateway.put_catalog(&suite.catalog).await;
        for check in &suite.checks {
            let got: Vec<String> = if check.as_admin_preview {
                let mut body = json!({"claims": check.claims});
                for (key, value) in check.query_pairs() {
                    body[key.as_str()] = if key == "include_disabled" {
                        json!(value == "true")
                    } else {
                        json!(value)
                    };
                }
                let reply = gateway
                    .admin_send(Method::POST, "/admin/preview", Some(body))
                    .await;
                assert_eq!(
                    reply.status,
                    StatusCode::OK,
                    "{}",
                    String::from_utf8_lossy(&reply.body)
                );
                let body = reply.json();
                assert!(
                    body["explanation"]["policies"].is_array(),
                    "preview explains itself"
                );
                ids(&body)
            } else {
                let query: Vec<String> = check
                    .query_pairs()
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                let query = if query.is_empty() {
                    String::new()
                } else {
                    format!("?{}", query.join("&"))
                };
                gateway
                    .tool_ids(Value::Object(check.claims.clone()), &query)
                    .await
            };
            assert_eq!(
                got, check.expect_tool_ids,
                "{} / {}",
                suite.name, check.name
            );
        }
    }
}

fn ids(body: &Value) -> Vec<String> {
    body["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|e| e["tool_id"].as_str().expect("id").to_owned())
        .collect()
}

#[tokio::test]
async fn cleartext_http2_with_prior_knowledge_is_served() {
    let gateway = gateway_with_demo().await;
    let client = reqwest::Client::builder()
        .no_proxy()
        .http2_prior_knowledge()
        .build()
        .expect("client");
    let response = client
        .get(format!("{}/agents/tools", gateway.base))
        .bearer_auth(Gateway::token(json!({"sub": "a", "roles": ["reader"]})))
        .send()
        .await
        .expect("an HTTP/2 request is answered");
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
    assert_eq!(response.status(), StatusCode::OK);
    let body: serde_json::Value =
        serde_json::from_slice(&response.bytes().await.expect("body")).expect("json");
    assert_eq!(body["count"], json!(1));
}

#[tokio::test]
async fn manifest_body_headers_etag_and_304() {
    let gateway = gateway_with_demo().await;
    let token = Gateway::token(json!({"sub": "a", "roles": ["reader"]}));
    let reply = gateway.get("/agents/tools", &token).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(reply.header("cache-control"), Some("private, no-cache"));
    let body = reply.json();
    let etag = reply.header("etag").expect("etag").to_owned();
    assert_eq!(body["etag"], json!(etag));
    assert_eq!(body["count"], json!(1));
    assert_eq!(body["warnings"], json!([]));
    assert!(body["revision"].as_u64().is_some_and(|r| r >= 1));
    let entry = &body["data"][0];
    for field in [
        "tool_id",
        "name",
        "description",
        "input_schema",
        "source_id",
        "source_path",
        "method",
        "tags",
        "groups",
    ] {
        assert!(entry.get(field).is_some(), "entry has {field}: {entry}");
    }
    assert_eq!(entry["groups"], json!(["g-read"]));

    // Same claims with another exp/iat: the same bytes.
    let again = gateway
        .get(
            "/agents/tools",
            &Gateway::token(json!({"sub": "a", "roles": ["reader"], "exp": 4102444800u64})),
        )
        .await;
    assert!(again.body == reply.body, "byte-identical body");

    let not_modified = gateway
        .client
        .get(format!("{}/agents/tools", gateway.base))
        .bearer_auth(&token)
        .header("if-none-match", &etag)
        .send()
        .await
        .expect("request");
    assert_eq!(not_modified.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(not_modified.headers()["etag"], etag.as_str());
    assert!(not_modified.bytes().await.expect("body").is_empty());

    let alias = gateway.get("/api/agents/tools", &token).await;
    assert!(
        alias.body == reply.body,
        "the reference system's path is an alias"
    );
}

#[tokio::test]
async fn a_client_that_accepts_zstd_or_gzip_gets_the_compressed_manifest_made_once() {
    let gateway = Gateway::start().await;
    let mut catalog = demo_catalog();
    for i in 0..20 {
        catalog["tools"].as_array_mut().expect("tools").push(json!({
            "source_id": "billing", "operation_id": format!("report_{i}"),
            "name": format!("report_{i}"), "method": "GET", "path": format!("/reports/{i}"),
            "description": "Summarises the invoices of one month for the finance team"}));
    }
    let reply = gateway
        .admin_send(Method::PUT, "/admin/catalog", Some(catalog))
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    let token = Gateway::token(json!({"sub": "a", "roles": ["staff", "reader"]}));
    let plain = gateway.get("/agents/tools", &token).await;
    assert!(
        plain.body.len() >= 1024,
        "a manifest large enough to be compressed: {} bytes",
        plain.body.len()
    );
    assert_eq!(plain.header("content-encoding"), None);
    assert_eq!(plain.header("vary"), Some("accept-encoding"));
    let etag = plain.header("etag").expect("etag").to_owned();
    let coded = |coding: &str| format!("{}-{coding}\"", etag.trim_end_matches('"'));
    let get = |accept: &'static str, if_none_match: Option<String>| {
        let mut request = gateway
            .client
            .get(format!("{}/agents/tools", gateway.base))
            .bearer_auth(&token)
            .header("accept-encoding", accept);
        if let Some(tag) = if_none_match {
            request = request.header("if-none-match", tag);
        }
        request.send()
    };
    for (accept, coding) in [
        ("gzip", "gzip"),
        ("br;q=1, gzip;q=0.5", "gzip"),
        ("*", "zstd"),
        ("gzip, deflate, br, zstd", "zstd"),
        ("zstd;q=0.5, gzip", "gzip"),
        ("zstd", "zstd"),
    ] {
        let compressed = get(accept, None).await.expect("request");
        assert_eq!(compressed.status(), StatusCode::OK);
        assert_eq!(compressed.headers()["content-encoding"], coding, "{accept}");
        assert_eq!(
            compressed.headers()["etag"],
            coded(coding).as_str(),
            "a coding has its own tag"
        );
        assert_eq!(compressed.headers()["vary"], "accept-encoding");
        let bytes = compressed.bytes().await.expect("body");
        assert!(bytes.len() < plain.body.len());
        let decoded = if coding == "gzip" {
            let mut decoded = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut decoded)
                .expect("valid gzip");
            decoded
        } else {
            zstd::stream::decode_all(&bytes[..]).expect("valid zstd")
        };
        assert!(decoded == plain.body, "the same manifest, byte for byte");
    }
    let refused = get("gzip;q=0, zstd;q=0, identity", None)
        .await
        .expect("request");
    assert_eq!(refused.headers().get("content-encoding"), None);
    // Every tag names the same content: 304 whichever coding the client holds.
    for (accept, tag) in [
        ("gzip", etag.clone()),
        ("identity", coded("gzip")),
        ("gzip", coded("zstd")),
        ("zstd", coded("gzip")),
    ] {
        let not_modified = get(accept, Some(tag)).await.expect("request");
        assert_eq!(not_modified.status(), StatusCode::NOT_MODIFIED, "{accept}");
    }
}

#[tokio::test]
async fn a_small_manifest_is_never_coded_under_the_plain_bodys_tag() {
    let gateway = gateway_with_demo().await;
    let token = Gateway::token(json!({"sub": "a", "roles": ["staff", "reader"]}));
    let plain = gateway.get("/agents/tools", &token).await;
    assert!(plain.body.len() < 1024, "{} bytes", plain.body.len());
    let etag = plain.header("etag").expect("etag").to_owned();
    for path in ["/agents/tools", "/admin/sources/billing"] {
        let bearer = if path.starts_with("/admin") {
            Gateway::admin()
        } else {
            token.clone()
        };
        let reply = gateway
            .client
            .get(format!("{}{path}", gateway.base))
            .bearer_auth(bearer)
            .header("accept-encoding", "gzip")
            .send()
            .await
            .expect("request");
        assert_eq!(reply.status(), StatusCode::OK, "{path}");
        let tag = reply
            .headers()
            .get("etag")
            .map(|v| v.to_str().expect("text").to_owned());
        let coding = reply.headers().get("content-encoding");
        assert!(
            coding.is_none() || tag.as_deref() != Some(etag.as_str()),
            "{path}: {coding:?} under the plain tag {tag:?}"
        );
        assert_eq!(coding, None, "{path}: a tagged answer is sent as it is");
    }
}

#[tokio::test]
async fn an_admin_change_is_visible_to_the_next_read() {
    let gateway = gateway_with_demo().await;
    let claims = json!({"sub": "a", "roles": ["staff"]});
    assert_eq!(
        gateway.tool_ids(claims.clone(), "").await,
        ["billing:list_invoices", "billing:refund"]
    );
    let reply = gateway
        .admin_send(
            Method::POST,
            "/admin/tools/billing:refund/disable",
            Some(json!({"reason": "incident 42"})),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["enabled"], json!(false));
    assert_eq!(reply.json()["disabled_reason"], json!("incident 42"));
    let revision: u64 = reply
        .header("x-catalog-revision")
        .expect("revision")
        .parse()
        .expect("number");
    assert_eq!(
        gateway.tool_ids(claims.clone(), "").await,
        ["billing:list_invoices"]
    );

    // Idempotent: a second disable changes nothing, not even the revision.
    let again = gateway
        .admin_send(Method::POST, "/admin/tools/billing:refund/disable", None)
        .await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(
        again.header("x-catalog-revision"),
        Some(revision.to_string().as_str())
    );

    let enabled = gateway
        .admin_send(Method::POST, "/admin/tools/billing:refund/enable", None)
        .await;
    assert_eq!(enabled.status, StatusCode::OK);
    assert_eq!(
        gateway.tool_ids(claims, "").await,
        ["billing:list_invoices", "billing:refund"]
    );
}

#[tokio::test]
async fn authentication_failures_are_401_with_a_challenge() {
    let gateway = gateway_with_demo().await;
    let missing = gateway
        .request(Method::GET, "/agents/tools", None, None)
        .await;
    missing.problem(401);
    assert_eq!(missing.header("www-authenticate"), Some("Bearer"));

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let wrong_secret = toolgate::auth::mint_hs256(
        "another-secret-another-secret-xx",
        json!({"sub": "a"}).as_object().expect("object"),
    )
    .expect("mint");
    let header = base64url(r#"{"alg":"none","typ":"JWT"}"#);
    let payload = base64url(r#"{"sub":"a","roles":["admin"]}"#);
    let cases = [
        ("garbled", "not-a-jwt".to_owned()),
        ("wrong signature", wrong_secret),
        (
            "expired",
            Gateway::token(json!({"sub": "a", "exp": now - 3600})),
        ),
        (
            "not yet valid",
            Gateway::token(json!({"sub": "a", "nbf": now + 3600})),
        ),
        ("alg none", format!("{header}.{payload}.")),
    ];
    for (name, token) in cases {
        let reply = gateway.get("/agents/tools", &token).await;
        reply.problem(401);
        let challenge = reply.header("www-authenticate").expect("challenge");
        assert!(
            challenge.starts_with("Bearer error=\"invalid_token\", error_description=\""),
            "{name}: {challenge}"
        );
    }
    assert!(SECRET.len() >= 32);
}

fn base64url(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text)
}

#[tokio::test]
async fn non_admins_get_403_on_admin_routes_and_options() {
    let gateway = gateway_with_demo().await;
    let agent = Gateway::token(json!({"sub": "a", "roles": ["staff"]}));
    for path in [
        "/admin/tools",
        "/admin/catalog",
        "/admin/audit",
        "/agents/tools?include_disabled=true",
        "/agents/tools?explain=true",
    ] {
        gateway.get(path, &agent).await.problem(403);
    }
    let realm_admin = Gateway::token(json!({"sub": "b", "realm_access": {"roles": ["admin"]}}));
    assert_eq!(
        gateway.get("/admin/tools", &realm_admin).await.status,
        StatusCode::OK
    );
    let explained = gateway
        .get("/agents/tools?explain=true", &realm_admin)
        .await;
    assert!(explained.json()["explanation"]["policies"].is_array());
}

#[tokio::test]
async fn bad_bodies_and_queries_get_precise_problems() {
    let gateway = gateway_with_demo().await;
    let admin = Gateway::admin();
    let malformed = gateway
        .client
        .post(format!("{}/admin/policies", gateway.base))
        .bearer_auth(&admin)
        .body("{not json")
        .send()
        .await
        .expect("request");
    assert_eq!(malformed.status(), StatusCode::BAD_REQUEST);

    let wrong_type = gateway
        .admin_send(Method::POST, "/admin/policies", Some(json!({"name": "p", "priority": "high", "claim_matchers": [], "allowed_group_ids": []})))
        .await
        .problem(422);
    assert_eq!(wrong_type["errors"][0]["field"], json!("priority"));

    let unknown_op = gateway
        .admin_send(Method::POST, "/admin/policies", Some(json!({
            "id": "p-x", "name": "x", "claim_matchers": [{"json_path": "roles", "operator": "eq", "value": "a"}],
            "allowed_group_ids": ["g-read"]})))
        .await
        .problem(422);
    assert_eq!(
        unknown_op["errors"][0]["field"],
        json!("claim_matchers[0].operator")
    );
    assert!(
        unknown_op["detail"]
            .as_str()
            .expect("detail")
            .starts_with("claim_matchers[0].operator: unknown operator 'eq'")
    );

    let unknown_group = gateway
        .admin_send(Method::POST, "/admin/policies", Some(json!({
            "name": "x", "claim_matchers": [{"json_path": "sub", "operator": "exists"}], "allowed_group_ids": ["nope"]})))
        .await
        .problem(422);
    assert_eq!(
        unknown_group["errors"][0]["field"],
        json!("allowed_group_ids[0]")
    );

    let duplicate_name = gateway
        .admin_send(
            Method::POST,
            "/admin/groups",
            Some(json!({"id": "g-2", "name": "reads"})),
        )
        .await
        .problem(409);
    assert_eq!(duplicate_name["errors"][0]["field"], json!("name"));
    gateway
        .admin_send(
            Method::POST,
            "/admin/groups",
            Some(json!({"id": "g-read", "name": "other"})),
        )
        .await
        .problem(409);

    gateway
        .admin_send(Method::GET, "/admin/tools/nope:nope", None)
        .await
        .problem(404);
    gateway
        .admin_send(Method::DELETE, "/admin/groups/nope", None)
        .await
        .problem(404);
    gateway
        .get("/agents/tools?groups=x", &admin)
        .await
        .problem(400);
    gateway
        .get("/admin/tools?colour=red", &admin)
        .await
        .problem(400);

    let big = "x".repeat(1024 * 1024 + 10);
    gateway
        .admin_send(
            Method::POST,
            "/admin/tools/billing:refund/disable",
            Some(json!({"reason": big})),
        )
        .await
        .problem(413);
    gateway
        .admin_send(
            Method::POST,
            "/admin/tools/billing:refund/disable",
            Some(json!({"why": "typo"})),
        )
        .await
        .problem(422);
    gateway
        .admin_send(
            Method::POST,
            "/admin/labels",
            Some(json!({"name": "big", "description": big})),
        )
        .await
        .problem(413);
}

#[tokio::test]
async fn a_rejected_catalog_changes_nothing() {
    let gateway = gateway_with_demo().await;
    let before = gateway
        .admin_send(Method::GET, "/admin/catalog", None)
        .await;
    let revision = before
        .header("x-catalog-revision")
        .expect("revision")
        .to_owned();
    let mut invalid = demo_catalog();
    invalid["groups"][0]["selectors"][0]["name_pattern"] = json!("regex:(");
    invalid["policies"][1]["claim_matchers"][0]["operator"] = json!("eq");
    let problem = gateway
        .admin_send(Method::PUT, "/admin/catalog", Some(invalid))
        .await
        .problem(422);
    let fields: Vec<&str> = problem["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["field"].as_str().expect("field"))
        .collect();
    assert_eq!(
        fields,
        [
            "groups[0].selectors[0].name_pattern",
            "policies[1].claim_matchers[0].operator"
        ]
    );
    let after = gateway
        .admin_send(Method::GET, "/admin/catalog", None)
        .await;
    assert_eq!(after.header("x-catalog-revision"), Some(revision.as_str()));
    assert_eq!(after.json(), before.json());
}

#[tokio::test]
async fn entity_crud_with_stamps_location_pagination_and_audit() {
    let gateway = gateway_with_demo().await;
    let created = gateway
        .admin_send(
            Method::POST,
            "/admin/labels",
            Some(json!({"name": "pii", "color": "#f00"})),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let label = created.json();
    let id = label["id"].as_str().expect("generated id").to_owned();
    assert_eq!(
        created.header("location"),
        Some(format!("/admin/labels/{id}").as_str())
    );
    assert_eq!(label["created_by"], json!("admin-1"));
    assert!(label["created_at"].is_string());

    let patched = gateway
        .admin_send(
            Method::PATCH,
            &format!("/admin/labels/{id}"),
            Some(json!({"description": "personal data"})),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK);
    assert_eq!(patched.json()["description"], json!("personal data"));
    assert_eq!(patched.json()["color"], json!("#f00"), "PATCH merges");
    assert_eq!(patched.json()["created_at"], label["created_at"]);

    let replaced = gateway
        .admin_send(
            Method::PUT,
            &format!("/admin/labels/{id}"),
            Some(json!({"name": "pii"})),
        )
        .await;
    assert_eq!(replaced.status, StatusCode::OK);
    assert!(replaced.json().get("color").is_none(), "PUT replaces");
    gateway
        .admin_send(
            Method::PUT,
            &format!("/admin/labels/{id}"),
            Some(json!({"id": "other", "name": "pii"})),
        )
        .await
        .problem(422);

    for n in 0..5 {
        let reply = gateway
            .admin_send(
                Method::POST,
                "/admin/labels",
                Some(json!({"id": format!("l-{n}"), "name": format!("l{n}")})),
            )
            .await;
        assert_eq!(reply.status, StatusCode::CREATED);
    }
    let first = gateway
        .admin_send(Method::GET, "/admin/labels?limit=4", None)
        .await
        .json();
    assert_eq!(first["count"], json!(4));
    let cursor = first["next_cursor"]
        .as_str()
        .expect("another page")
        .to_owned();
    let second = gateway
        .admin_send(
            Method::GET,
            &format!("/admin/labels?limit=4&cursor={cursor}"),
            None,
        )
        .await
        .json();
    assert_eq!(second["count"], json!(2));
    assert_eq!(second["next_cursor"], Value::Null);

    let filtered = gateway
        .admin_send(Method::GET, "/admin/tools?method=GET", None)
        .await
        .json();
    assert_eq!(filtered["data"].as_array().expect("data").len(), 1);
    assert_eq!(filtered["data"][0]["id"], json!("billing:list_invoices"));

    let deleted = gateway
        .admin_send(Method::DELETE, &format!("/admin/labels/{id}"), None)
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    gateway
        .admin_send(Method::GET, &format!("/admin/labels/{id}"), None)
        .await
        .problem(404);

    let audit = gateway
        .admin_send(
            Method::GET,
            &format!("/admin/audit?entity=labels&id={id}"),
            None,
        )
        .await
        .json();
    let actions: Vec<&str> = audit["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|r| r["action"].as_str().expect("action"))
        .collect();
    assert_eq!(actions, ["create", "update", "update", "delete"]);
    let record = &audit["data"][0];
    assert_eq!(record["actor"], json!("admin-1"));
    assert!(record["request_id"].is_string());
    assert!(record["revision"].as_u64().is_some());
    assert_eq!(audit["data"][3]["before"]["name"], json!("pii"));
}

#[tokio::test]
async fn deleting_a_source_takes_its_tools_and_references_in_one_revision() {
    let gateway = gateway_with_demo().await;
    let patched = gateway
        .admin_send(
            Method::PATCH,
            "/admin/groups/g-all",
            Some(json!({"explicit_tool_ids": ["billing:refund"]})),
        )
        .await
        .expect(StatusCode::OK);
    assert_eq!(
        patched.json()["explicit_tool_ids"],
        json!(["billing:refund"])
    );
    let revision = |reply: &support::gateway::Reply| -> u64 {
        reply
            .header("etag")
            .and_then(|etag| etag.trim_matches('"').strip_prefix('r')?.parse().ok())
            .expect("an admin answer carries the revision")
    };
    let before = revision(&patched);
    let reply = gateway
        .admin_send(Method::DELETE, "/admin/sources/billing", None)
        .await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    let read = gateway
        .admin_send(Method::GET, "/admin/catalog", None)
        .await
        .expect(StatusCode::OK);
    assert_eq!(
        revision(&read),
        before + 1,
        "one revision for the whole cascade"
    );
    let catalog = read.json();
    assert_eq!(catalog["tools"], json!([]));
    let group = |id: &str| {
        catalog["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .find(|group| group["id"] == json!(id))
            .cloned()
            .expect("the group is still there")
    };
    assert_eq!(group("g-all")["explicit_tool_ids"], json!([]));
    // A group still named by a policy cannot be deleted: that could lift a deny.
    let problem = gateway
        .admin_send(Method::DELETE, "/admin/groups/g-read", None)
        .await
        .problem(409);
    assert_eq!(
        problem["errors"][0]["field"],
        json!("policies[1].allowed_group_ids[0]")
    );
    assert!(
        problem["errors"][0]["message"]
            .as_str()
            .expect("message")
            .contains("p-read")
    );
}

#[tokio::test]
async fn group_members_and_preview_explain_themselves() {
    let gateway = gateway_with_demo().await;
    let members = gateway
        .admin_send(Method::GET, "/admin/groups/g-read/tools", None)
        .await
        .json();
    assert_eq!(
        members["data"],
        json!([{"tool_id": "billing:list_invoices", "name": "list_invoices", "via": ["selectors[0]"]}])
    );
    gateway
        .admin_send(Method::GET, "/admin/groups/nope/tools", None)
        .await
        .problem(404);

    let preview = gateway
        .admin_send(
            Method::POST,
            "/admin/preview",
            Some(json!({"claims": {"sub": "x", "roles": ["reader"]}, "include_disabled": true})),
        )
        .await;
    assert_eq!(preview.status, StatusCode::OK);
    let body = preview.json();
    assert_eq!(ids(&body), ["billing:list_invoices"]);
    assert_eq!(body["data"][0]["enabled"], json!(true));
    let policies = body["explanation"]["policies"]
        .as_array()
        .expect("policies");
    let staff = policies
        .iter()
        .find(|p| p["policy_id"] == "p-all")
        .expect("listed");
    assert_eq!(staff["matched"], json!(false));
    assert_eq!(staff["failed_matcher"]["json_path"], json!("roles"));
    gateway
        .admin_send(
            Method::POST,
            "/admin/preview",
            Some(json!({"include_disabled": true})),
        )
        .await
        .problem(422);
}

#[tokio::test]
async fn health_and_readiness_need_no_token() {
    let gateway = Gateway::start().await;
    let health = gateway.request(Method::GET, "/healthz", None, None).await;
    assert_eq!(health.status, StatusCode::OK);
    let ready = gateway.request(Method::GET, "/readyz", None, None).await;
    assert_eq!(ready.status, StatusCode::OK);
    assert_eq!(ready.json()["checks"]["store"], json!("ok"));
    let request_id = ready.header("x-request-id").expect("request id");
    assert!(!request_id.is_empty());
    gateway
        .request(Method::GET, "/nope", None, None)
        .await
        .problem(404);
}

#[tokio::test]
async fn everything_written_survives_a_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = support::gateway::config(dir.path(), support::gateway::hs_settings());
    let mut first = Gateway::start_with(config.clone()).await;
    let reply = first
        .admin_send(Method::PUT, "/admin/catalog", Some(demo_catalog()))
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    first
        .admin_send(Method::POST, "/admin/tools/billing:refund/disable", None)
        .await;
    let catalog = first.admin_send(Method::GET, "/admin/catalog", None).await;
    let audit = first
        .admin_send(Method::GET, "/admin/audit", None)
        .await
        .json();
    first.stop().await;
    drop(first);

    let second = Gateway::start_with(config).await;
    let again = second.admin_send(Method::GET, "/admin/catalog", None).await;
    assert_eq!(again.json(), catalog.json());
    assert_eq!(
        again.header("x-catalog-revision"),
        catalog.header("x-catalog-revision")
    );
    assert_eq!(
        second
            .admin_send(Method::GET, "/admin/audit", None)
            .await
            .json(),
        audit
    );
    assert_eq!(
        second
            .tool_ids(json!({"sub": "a", "roles": ["staff"]}), "")
            .await,
        ["billing:list_invoices"]
    );
}

#[tokio::test]
async fn a_request_that_outlives_the_timeout_gets_a_problem() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = support::gateway::config(dir.path(), support::gateway::hs_settings());
    config.request_timeout = std::time::Duration::from_millis(100);
    let gateway = Gateway::start_with(config).await;
    let address = gateway.base.trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    let head = format!(
        "PUT /admin/catalog HTTP/1.1\r\nhost: test\r\nauthorization: Bearer {}\r\n\
         content-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n",
        Gateway::admin()
    );
    stream
        .write_all(head.as_bytes())
        .await
        .expect("send the head");
    // The body never comes in time.
    let mut response = String::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(5),
        stream.read_to_string(&mut response),
    )
    .await
    .expect("answered before the client gives up")
    .expect("read");
    assert!(response.starts_with("HTTP/1.1 503"), "{response}");
    assert!(
        response
            .to_ascii_lowercase()
            .contains("content-type: application/problem+json"),
        "{response}"
    );
    assert!(response.contains("took longer than 0.1 s"), "{response}");
}

#[tokio::test]
async fn every_class_of_invalid_catalog_is_rejected_with_its_field() {
    let gateway = gateway_with_demo().await;
    let revision_before = gateway
        .admin_send(Method::GET, "/admin/catalog", None)
        .await
        .header("x-catalog-revision")
        .map(str::to_owned);
    type Break = fn(&mut Value);
    let cases: Vec<(&str, Break, u16, &str)> = vec![
        (
            "unknown operator",
            |c| c["policies"][0]["claim_matchers"][0]["operator"] = json!("eq"),
            422,
            "policies[0].claim_matchers[0].operator",
        ),
        (
            "invalid claim regex",
            |c| {
                c["policies"][0]["claim_matchers"][0] =
                    json!({"json_path": "sub", "operator": "matches", "value": "("});
            },
            422,
            "policies[0].claim_matchers[0].value",
        ),
        (
            "invalid selector regex",
            |c| c["groups"][0]["selectors"][0]["name_pattern"] = json!("regex:(("),
            422,
            "groups[0].selectors[0].name_pattern",
        ),
        (
            "invalid glob",
            |c| c["groups"][0]["selectors"][0]["path_pattern"] = json!("/a/[b"),
            422,
            "groups[0].selectors[0].path_pattern",
        ),
        (
            "policy without matchers",
            |c| c["policies"][0]["claim_matchers"] = json!([]),
            422,
            "policies[0].claim_matchers",
        ),
        (
            "policy without groups",
            |c| c["policies"][0]["allowed_group_ids"] = json!([]),
            422,
            "policies[0].allowed_group_ids",
        ),
        (
            "unknown group",
            |c| c["policies"][0]["denied_group_ids"] = json!(["nope"]),
            422,
            "policies[0].denied_group_ids[0]",
        ),
        (
            "unknown tool",
            |c| c["groups"][0]["explicit_tool_ids"] = json!(["nope:nope"]),
            422,
            "groups[0].explicit_tool_ids[0]",
        ),
        (
            "unknown label",
            |c| c["tools"][0]["label_ids"] = json!(["nope"]),
            422,
            "tools[0].label_ids[0]",
        ),
        (
            "unknown source",
            |c| c["tools"][1]["source_id"] = json!("nope"),
            422,
            "tools[1].source_id",
        ),
        (
            "unknown source type",
            |c| c["sources"][0]["type"] = json!("grpc"),
            422,
            "sources[0].type",
        ),
        (
            "duplicate id",
            |c| {
                let twin = c["policies"][0].clone();
                c["policies"].as_array_mut().expect("array").push(twin);
            },
            409,
            "policies[2].id",
        ),
        (
            "duplicate group name",
            |c| c["groups"][1]["name"] = json!("reads"),
            409,
            "groups[1].name",
        ),
        (
            "over-long name",
            |c| c["groups"][0]["name"] = json!("n".repeat(256)),
            422,
            "groups[0].name",
        ),
        (
            "over-long description",
            |c| c["tools"][0]["description"] = json!("d".repeat(4097)),
            422,
            "tools[0].description",
        ),
        (
            "control character in a name",
            |c| c["sources"][0]["name"] = json!("billing\u{7}"),
            422,
            "sources[0].name",
        ),
        (
            "wrong JSON type",
            |c| c["policies"][0]["priority"] = json!("high"),
            422,
            "policies[0].priority",
        ),
        (
            "unknown field",
            |c| c["groups"][0]["selector"] = json!([]),
            422,
            "groups[0].selector",
        ),
    ];
    for (name, break_it, status, field) in cases {
        let mut catalog = demo_catalog();
        break_it(&mut catalog);
        let problem = gateway
            .admin_send(Method::PUT, "/admin/catalog", Some(catalog))
            .await
            .problem(status);
        let fields: Vec<&str> = problem["errors"]
            .as_array()
            .expect("errors")
            .iter()
            .map(|e| e["field"].as_str().expect("field"))
            .collect();
        assert_eq!(fields, [field], "{name}: {problem}");
    }
    let revision_after = gateway
        .admin_send(Method::GET, "/admin/catalog", None)
        .await
        .header("x-catalog-revision")
        .map(str::to_owned);
    assert_eq!(
        revision_after, revision_before,
        "no rejected write moved the revision"
    );
}
