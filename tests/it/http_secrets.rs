//! Source secrets over HTTP: the values under a source's `config.headers`, and any config key
//! named like `token`, `secret`, `password` or `api_key` at any depth, are write-only. Every
//! read path shows them as `"***"`; writing `"***"` back keeps the stored value, which the
//! importers keep using (docs/api.md, "Secrets").

use crate::support;

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::get;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::gateway::{Gateway, Reply};
use support::upstream::read_fixture;

/// Every secret value the tests write; none may appear in any answer.
const SECRETS: [&str; 7] = [
    "upstream-s3cr3t",
    "acme-tenant",
    "p4ssw0rd",
    "k3y-value",
    "t0ken-value",
    "shh-value",
    "client-s3cret",
];

/// Serves an OpenAPI document at `/spec` and remembers the `Authorization` header of each fetch.
struct Upstream {
    url: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Upstream {
    async fn start() -> Upstream {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new()
            .route(
                "/spec",
                get(
                    |State(seen): State<Arc<Mutex<Vec<String>>>>, headers: HeaderMap| async move {
                        let authorization = headers
                            .get("authorization")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("")
                            .to_owned();
                        seen.lock().expect("lock").push(authorization);
                        read_fixture("openapi/petstore-3.0.json")
                    },
                ),
            )
            .with_state(Arc::clone(&seen));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Upstream {
            url: format!("http://{addr}/spec"),
            seen,
        }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().expect("lock").clone()
    }
}

fn api_source(url: &str) -> Value {
    json!({"id": "api", "name": "api", "type": "openapi",
           "config": {"url": url, "headers": {"Authorization": "Bearer upstream-s3cr3t", "X-Tenant": "acme-tenant"}}})
}

fn api_masked(url: &str) -> Value {
    json!({"url": url, "headers": {"Authorization": "***", "X-Tenant": "***"}})
}

fn notes_source() -> Value {
    json!({"id": "notes", "name": "notes", "type": "manual",
           "config": {"plain": "visible", "Password": "p4ssw0rd",
                      "nested": {"API_KEY": "k3y-value", "list": [{"Token": "t0ken-value"}], "count": 3},
                      "secret": "shh-value", "client_secret": "client-s3cret"}})
}

fn notes_masked() -> Value {
    json!({"plain": "visible", "Password": "***",
           "nested": {"API_KEY": "***", "list": [{"Token": "***"}], "count": 3},
           "secret": "***", "client_secret": "***"})
}

/// Asserts that no secret appears anywhere in the answer.
fn leaks_nothing(what: &str, reply: &Reply) {
    let body = String::from_utf8_lossy(&reply.body);
    for secret in SECRETS {
        assert!(!body.contains(secret), "{what} shows '{secret}': {body}");
    }
}

/// The configs the gateway really holds (what the importers use).
fn stored_config(gateway: &Gateway, id: &str) -> Value {
    let snapshot = gateway.state().app.internals().catalog.snapshot();
    let source = snapshot
        .catalog()
        .sources
        .iter()
        .find(|s| s.id == id)
        .cloned()
        .unwrap_or_else(|| panic!("source {id} missing"));
    Value::Object(source.config)
}

async fn gateway_with_sources(upstream: &Upstream) -> Gateway {
    let gateway = Gateway::start().await;
    for source in [api_source(&upstream.url), notes_source()] {
        let reply = gateway
            .admin_send(Method::POST, "/admin/sources", Some(source))
            .await
            .expect(StatusCode::CREATED);
        leaks_nothing("POST /admin/sources", &reply);
    }
    gateway
}

fn source_in<'v>(sources: &'v Value, id: &str) -> &'v Value {
    sources
        .as_array()
        .expect("sources")
        .iter()
        .find(|s| s["id"] == json!(id))
        .unwrap_or_else(|| panic!("{id} missing in {sources}"))
}

#[tokio::test]
async fn source_secrets_never_come_back_on_any_read_path() {
    let upstream = Upstream::start().await;
    let gateway = Gateway::start().await;
    let created = gateway
        .admin_send(
            Method::POST,
            "/admin/sources",
            Some(api_source(&upstream.url)),
        )
        .await
        .expect(StatusCode::CREATED);
    leaks_nothing("POST /admin/sources", &created);
    assert_eq!(created.json()["config"], api_masked(&upstream.url));
    let created = gateway
        .admin_send(Method::POST, "/admin/sources", Some(notes_source()))
        .await
        .expect(StatusCode::CREATED);
    assert_eq!(created.json()["config"], notes_masked());

    let list = gateway
        .admin_send(Method::GET, "/admin/sources", None)
        .await
        .expect(StatusCode::OK);
    leaks_nothing("GET /admin/sources", &list);
    let list = list.json();
    assert_eq!(
        source_in(&list["data"], "api")["config"],
        api_masked(&upstream.url)
    );
    assert_eq!(source_in(&list["data"], "notes")["config"], notes_masked());
    for (id, masked) in [
        ("api", api_masked(&upstream.url)),
        ("notes", notes_masked()),
    ] {
        let one = gateway
            .admin_send(Method::GET, &format!("/admin/sources/{id}"), None)
            .await
            .expect(StatusCode::OK);
        leaks_nothing("GET /admin/sources/{id}", &one);
        assert_eq!(one.json()["config"], masked);
    }

    let replaced = gateway
        .admin_send(
            Method::PUT,
            "/admin/sources/notes",
            Some(
                json!({"name": "notes", "type": "manual", "description": "d",
                        "config": notes_source()["config"]}),
            ),
        )
        .await
        .expect(StatusCode::OK);
    leaks_nothing("PUT /admin/sources/notes", &replaced);
    assert_eq!(replaced.json()["config"], notes_masked());
    let patched = gateway
        .admin_send(
            Method::PATCH,
            "/admin/sources/api",
            Some(json!({"description": "patched"})),
        )
        .await
        .expect(StatusCode::OK);
    leaks_nothing("PATCH /admin/sources/api", &patched);
    assert_eq!(patched.json()["config"], api_masked(&upstream.url));

    let catalog = gateway
        .admin_send(Method::GET, "/admin/catalog", None)
        .await
        .expect(StatusCode::OK);
    leaks_nothing("GET /admin/catalog", &catalog);
    assert_eq!(
        source_in(&catalog.json()["sources"], "notes")["config"],
        notes_masked()
    );

    let refreshed = gateway
        .admin_send(Method::POST, "/admin/sources/api/refresh", None)
        .await
        .expect(StatusCode::OK);
    leaks_nothing("POST /admin/sources/api/refresh", &refreshed);
    let preview = gateway
        .admin_send(
            Method::POST,
            "/admin/preview",
            Some(json!({"claims": {"roles": ["admin"]}, "include_disabled": true})),
        )
        .await
        .expect(StatusCode::OK);
    leaks_nothing("POST /admin/preview", &preview);

    let audit = gateway
        .admin_send(Method::GET, "/admin/audit?entity=sources&limit=1000", None)
        .await
        .expect(StatusCode::OK);
    leaks_nothing("GET /admin/audit", &audit);
    let records = audit.json()["data"].as_array().expect("data").clone();
    let with_config: Vec<&Value> = records
        .iter()
        .flat_map(|r| [&r["before"], &r["after"]])
        .filter(|side| side.get("config").is_some())
        .collect();
    // create api, create notes, update notes (before and after), update api (before and after).
    assert_eq!(with_config.len(), 6, "{records:?}");
    for side in with_config {
        let masked = if side["id"] == json!("api") {
            api_masked(&upstream.url)
        } else {
            notes_masked()
        };
        assert_eq!(side["config"], masked);
    }

    // The real values are still there, for the importer.
    assert_eq!(stored_config(&gateway, "notes"), notes_source()["config"]);
    assert_eq!(
        upstream.seen(),
        ["Bearer upstream-s3cr3t", "Bearer upstream-s3cr3t"]
    );
}

#[tokio::test]
async fn writing_the_mask_back_keeps_the_stored_secret() {
    let upstream = Upstream::start().await;
    let gateway = gateway_with_sources(&upstream).await;

    // GET → PUT of one source, with an edit.
    let mut api = gateway
        .admin_send(Method::GET, "/admin/sources/api", None)
        .await
        .expect(StatusCode::OK)
        .json();
    api["description"] = json!("edited");
    gateway
        .admin_send(Method::PUT, "/admin/sources/api", Some(api))
        .await
        .expect(StatusCode::OK);
    assert_eq!(
        stored_config(&gateway, "api"),
        api_source(&upstream.url)["config"]
    );

    // PATCH one header: the other keeps its value; the mask keeps the patched one's.
    gateway
        .admin_send(
            Method::PATCH,
            "/admin/sources/api",
            Some(
                json!({"config": {"headers": {"X-Tenant": "beta-tenant", "Authorization": "***"}}}),
            ),
        )
        .await
        .expect(StatusCode::OK);
    assert_eq!(
        stored_config(&gateway, "api")["headers"],
        json!({"Authorization": "Bearer upstream-s3cr3t", "X-Tenant": "beta-tenant"})
    );

    // A changed secret is taken; the mask elsewhere in the same body keeps the rest.
    let mut notes = gateway
        .admin_send(Method::GET, "/admin/sources/notes", None)
        .await
        .expect(StatusCode::OK)
        .json();
    notes["config"]["secret"] = json!("new-secret-value");
    gateway
        .admin_send(Method::PUT, "/admin/sources/notes", Some(notes))
        .await
        .expect(StatusCode::OK);
    let mut expected = notes_source()["config"].clone();
    expected["secret"] = json!("new-secret-value");
    assert_eq!(stored_config(&gateway, "notes"), expected);

    // GET → PUT of the whole catalog changes nothing at all (not even the revision).
    let catalog = gateway
        .admin_send(Method::GET, "/admin/catalog", None)
        .await
        .expect(StatusCode::OK);
    let revision = catalog.header("x-catalog-revision").map(str::to_owned);
    let replaced = gateway
        .admin_send(Method::PUT, "/admin/catalog", Some(catalog.json()))
        .await
        .expect(StatusCode::OK);
    assert_eq!(
        replaced.header("x-catalog-revision").map(str::to_owned),
        revision
    );
    assert_eq!(stored_config(&gateway, "notes"), expected);

    // The importer still sends the real header.
    gateway
        .admin_send(Method::POST, "/admin/sources/api/refresh", None)
        .await
        .expect(StatusCode::OK);
    assert_eq!(
        upstream.seen(),
        ["Bearer upstream-s3cr3t", "Bearer upstream-s3cr3t"]
    );
}

#[tokio::test]
async fn a_mask_without_a_stored_value_is_a_422_naming_the_field() {
    let upstream = Upstream::start().await;
    let gateway = gateway_with_sources(&upstream).await;
    let revision = gateway
        .admin_send(Method::GET, "/admin/catalog", None)
        .await
        .header("x-catalog-revision")
        .map(str::to_owned);

    let mut new_api = api_source(&upstream.url);
    new_api["id"] = json!("api-2");
    new_api["name"] = json!("api-2");
    new_api["config"]["headers"]["Authorization"] = json!("***");
    let mut with_new_key = notes_source();
    with_new_key["config"]["nested"]["password"] = json!("***");
    let mut catalog = gateway
        .admin_send(Method::GET, "/admin/catalog", None)
        .await
        .expect(StatusCode::OK)
        .json();
    catalog["sources"]
        .as_array_mut()
        .expect("sources")
        .push(new_api.clone());
    let cases = [
        (
            Method::POST,
            "/admin/sources",
            new_api,
            "config.headers.Authorization",
        ),
        (
            Method::PUT,
            "/admin/sources/notes",
            with_new_key,
            "config.nested.password",
        ),
        (
            Method::PATCH,
            "/admin/sources/api",
            json!({"config": {"headers": {"X-Other": "***"}}}),
            "config.headers.X-Other",
        ),
        (
            Method::PUT,
            "/admin/catalog",
            catalog,
            "sources[2].config.headers.Authorization",
        ),
    ];
    for (method, path, body, field) in cases {
        let reply = gateway.admin_send(method.clone(), path, Some(body)).await;
        let problem = reply.problem(422);
        let fields: Vec<&str> = problem["errors"]
            .as_array()
            .expect("errors")
            .iter()
            .map(|e| e["field"].as_str().expect("field"))
            .collect();
        assert_eq!(fields, [field], "{method} {path}: {problem}");
    }
    let after = gateway
        .admin_send(Method::GET, "/admin/catalog", None)
        .await
        .header("x-catalog-revision")
        .map(str::to_owned);
    assert_eq!(after, revision);
    // The refused create did not fetch with a mask for a header.
    assert_eq!(upstream.seen(), ["Bearer upstream-s3cr3t"]);
}

/// A write that moves where a source's secrets go must give them again: `"***"` there is a 422
/// naming the field and the new place, and nothing stored reaches it, not even while the
/// refused write is validated (before, the stored header went to the new host with the very
/// write that was then refused).
#[tokio::test]
async fn a_stored_secret_never_follows_a_source_to_a_new_destination() {
    let upstream = Upstream::start().await;
    let elsewhere = Upstream::start().await;
    let gateway = gateway_with_sources(&upstream).await;
    let before = upstream.seen().len();

    for method in [Method::PUT, Method::PATCH] {
        let body = match method {
            Method::PUT => {
                let mut api = gateway
                    .admin_send(Method::GET, "/admin/sources/api", None)
                    .await
                    .expect(StatusCode::OK)
                    .json();
                api["config"]["url"] = json!(elsewhere.url);
                api
            }
            _ => json!({"config": {"url": elsewhere.url}}),
        };
        let refused = gateway
            .admin_send(method.clone(), "/admin/sources/api", Some(body))
            .await
            .expect(StatusCode::UNPROCESSABLE_ENTITY);
        let text = refused.json().to_string();
        assert!(
            text.contains("config.headers.Authorization") && text.contains("config.url"),
            "{method}: {text}"
        );
        leaks_nothing("a refused move", &refused);
    }
    assert!(elsewhere.seen().is_empty(), "{:?}", elsewhere.seen());
    assert_eq!(upstream.seen().len(), before, "nothing was fetched");
    assert_eq!(
        stored_config(&gateway, "api"),
        api_source(&upstream.url)["config"]
    );

    // Given again, the secrets go where the source now is.
    gateway
        .admin_send(
            Method::PATCH,
            "/admin/sources/api",
            Some(json!({"config": {"url": elsewhere.url,
                "headers": {"Authorization": "Bearer upstream-s3cr3t", "X-Tenant": "acme-tenant"}}})),
        )
        .await
        .expect(StatusCode::OK);
    assert_eq!(elsewhere.seen(), ["Bearer upstream-s3cr3t"]);
}

/// The client secret of a source's token endpoint is kept only while the endpoint stays: moving
/// it with `"***"` is a 422, and the new endpoint receives nothing.
#[tokio::test]
async fn a_client_secret_never_follows_a_new_token_endpoint() {
    let endpoint = support::token_endpoint::TokenEndpoint::start().await;
    let other = support::token_endpoint::TokenEndpoint::start().await;
    let upstream = Upstream::start().await;
    let gateway = Gateway::start().await;
    let mut source = api_source(&upstream.url);
    source["config"]["auth"] = endpoint.auth("client_credentials");
    gateway
        .admin_send(Method::POST, "/admin/sources", Some(source))
        .await
        .expect(StatusCode::CREATED);
    let moved = other.auth("client_credentials")["token_endpoint"].clone();
    let refused = gateway
        .admin_send(
            Method::PATCH,
            "/admin/sources/api",
            Some(json!({"config": {"auth": {"token_endpoint": moved, "client_secret": "***"}}})),
        )
        .await
        .expect(StatusCode::UNPROCESSABLE_ENTITY);
    let text = refused.json().to_string();
    assert!(
        text.contains("config.auth.client_secret") && text.contains("token_endpoint"),
        "{text}"
    );
    assert!(other.received().is_empty());
    // The URL may move on its own: the client secret goes to the token endpoint, which stayed.
    let elsewhere = Upstream::start().await;
    gateway
        .admin_send(
            Method::PATCH,
            "/admin/sources/api",
            Some(json!({"config": {"url": elsewhere.url,
                "headers": {"Authorization": "Bearer upstream-s3cr3t", "X-Tenant": "acme-tenant"}}})),
        )
        .await
        .expect(StatusCode::OK);
    assert_eq!(
        stored_config(&gateway, "api")["auth"]["client_secret"],
        json!(support::token_endpoint::CLIENT_SECRET)
    );
}
