//! Gateways serving from MongoDB (nx-27017 started by the test): the catalog written through
//! the admin API is what a second gateway on the same database loads; with MongoDB gone,
//! agents keep being served from the compiled snapshot while admin writes answer 503; when it
//! comes back, writes continue from the stored revision.

use crate::support;

use std::path::Path;
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::gateway::{Gateway, config, hs_settings};
use support::mongo::{MongoServer, database_name};
use support::process::Process;
use toolgate::config::Secret;
use toolgate::domain::model::Catalog;

/// A gateway whose catalog is in `database` on `server`.
async fn gateway_on(server: &MongoServer, database: &str) -> Gateway {
    let mut config = config(
        Path::new("unused-without-the-embedded-store"),
        hs_settings(),
    );
    config.mongodb_uri = Some(Secret::new(server.uri()));
    config.mongodb_database = database.to_owned();
    Gateway::start_with(config).await
}

fn demo_catalog() -> Catalog {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/demo-catalog.yaml");
    let mut catalog = toolgate::catalog_file::parse_catalog_file(&path).expect("the demo catalog");
    catalog.normalize();
    catalog
}

async fn admin_catalog(gateway: &Gateway) -> Value {
    gateway
        .admin_send(Method::GET, "/admin/catalog", None)
        .await
        .expect(StatusCode::OK)
        .json()
}

fn agent() -> Value {
    json!({"sub": "agent-7", "roles": ["agent"]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateways_on_mongodb_share_the_catalog_and_ride_out_the_server_going_away() {
    let data = tempfile::tempdir().expect("a data dir for the server");
    let mut server = MongoServer::start_local(Some(data.path())).await;
    let database = database_name("http_mongo");

    let first = gateway_on(&server, &database).await;
    let revision = first.put_catalog(&demo_catalog()).await;
    let tools = first.tool_ids(agent(), "").await;
    assert!(!tools.is_empty(), "the agent sees tools");

    // A second instance on the same database starts from what the first wrote.
    let second = gateway_on(&server, &database).await;
    assert_eq!(
        second.state().app.internals().catalog.snapshot().revision(),
        revision
    );
    assert_eq!(second.tool_ids(agent(), "").await, tools);
    assert_eq!(admin_catalog(&first).await, admin_catalog(&second).await);

    server.stop();
    // Agents are served from the compiled snapshot: no MongoDB needed.
    assert_eq!(first.tool_ids(agent(), "").await, tools);
    // An admin write needs the store: a prompt 503 problem, nothing changed.
    let disable = format!("/admin/tools/{}/disable", tools[0]);
    let started = Instant::now();
    let reply = first.admin_send(Method::POST, &disable, None).await;
    let problem = reply.problem(503);
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "503 after {:?}",
        started.elapsed()
    );
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|d| d.contains("MongoDB")),
        "{problem}"
    );
    assert!(
        !problem.to_string().contains(server.uri()),
        "never the URI: {problem}"
    );
    first
        .request(Method::GET, "/readyz", None, None)
        .await
        .problem(503);
    assert_eq!(
        first.state().app.internals().catalog.snapshot().revision(),
        revision
    );
    assert_eq!(first.tool_ids(agent(), "").await, tools);

    server.restart().await;
    first
        .request(Method::GET, "/readyz", None, None)
        .await
        .expect(StatusCode::OK);
    first
        .admin_send(Method::POST, &disable, None)
        .await
        .expect(StatusCode::OK);
    assert_eq!(
        first.state().app.internals().catalog.snapshot().revision(),
        revision + 1
    );
    assert!(!first.tool_ids(agent(), "").await.contains(&tools[0]));

    // The other instance catches up from the store (the change bus would tell it; here it is
    // asked directly) and continues the same revision sequence.
    assert!(
        second
            .state()
            .app
            .internals()
            .catalog
            .refresh()
            .await
            .expect("refresh")
    );
    assert!(!second.tool_ids(agent(), "").await.contains(&tools[0]));
    let enable = format!("/admin/tools/{}/enable", tools[0]);
    second
        .admin_send(Method::POST, &enable, None)
        .await
        .expect(StatusCode::OK);
    assert_eq!(
        second.state().app.internals().catalog.snapshot().revision(),
        revision + 2
    );
    let audit = second
        .admin_send(Method::GET, "/admin/audit", None)
        .await
        .expect(StatusCode::OK)
        .json();
    let mut revisions: Vec<u64> = audit["data"]
        .as_array()
        .expect("records")
        .iter()
        .filter_map(|r| r["revision"].as_u64())
        .collect();
    // The catalog replace of revision 1 wrote one record per entity it created.
    revisions.dedup();
    assert_eq!(revisions, [revision, revision + 1, revision + 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toolgate_serve_stores_the_catalog_in_mongodb_when_a_uri_is_set() {
    let server = MongoServer::start().await;
    let database = database_name("serve_binary");
    let data = tempfile::tempdir().expect("a data dir");
    let env = [
        ("TOOLGATE_MONGODB_URI", server.uri()),
        ("TOOLGATE_MONGODB_DATABASE", database.as_str()),
    ];
    let seed = ["--seed", "config/demo-catalog.yaml"];
    let first = Process::serve_with_env(data.path(), &seed, &env);
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let get_catalog = |base: String| {
        let client = client.clone();
        async move {
            let response = client
                .get(format!("{base}/admin/catalog"))
                .bearer_auth(Gateway::admin())
                .send()
                .await
                .expect("request");
            assert_eq!(response.status(), StatusCode::OK);
            let body = response.bytes().await.expect("body");
            serde_json::from_slice::<Value>(&body).expect("json")
        }
    };
    let seeded = get_catalog(first.base.clone()).await;
    assert!(!seeded["tools"].as_array().expect("tools").is_empty());
    drop(first);
    assert!(
        !data
            .path()
            .join(toolgate::store::embedded::FILE_NAME)
            .exists(),
        "the embedded store is not used"
    );

    // A new process on the same database finds the catalog (and does not seed again).
    let second = Process::serve_with_env(data.path(), &seed, &env);
    assert_eq!(get_catalog(second.base.clone()).await, seeded);
    let audit = client
        .get(format!("{}/admin/audit", second.base))
        .bearer_auth(Gateway::admin())
        .send()
        .await
        .expect("request")
        .bytes()
        .await
        .expect("body");
    let audit: Value = serde_json::from_slice(&audit).expect("json");
    assert_eq!(audit["count"], json!(1), "seeded once");
}
