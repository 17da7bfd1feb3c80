//! A MongoDB store restored to an earlier revision under a running gateway (as `mongorestore
//! --drop` does it): the gateway serves the restored catalog, tells its open streams, and when
//! writes bring the revision number back to one it served before the restore, nothing it kept
//! from before (manifests, decisions, evaluations) answers for the new catalog at that number.

use std::path::Path;
use std::time::{Duration, Instant};

use mongodb::bson::{Document, doc};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::gateway::{Gateway, config, hs_settings};
use crate::support::mongo::{MongoServer, database_name};
use crate::support::sse::SseClient;

const WAIT: Duration = Duration::from_secs(10);

/// Holders of `role` get `groups` (`g-read`: GET tools, `g-all`: every tool).
fn catalog(role: &str, groups: Value) -> Value {
    json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual"}],
        "tools": [
            {"source_id": "billing", "operation_id": "list", "name": "list", "method": "GET"},
            {"source_id": "billing", "operation_id": "refund", "name": "refund", "method": "POST"}
        ],
        "groups": [{"id": "g-read", "name": "reads", "selectors": [{"method_pattern": "GET"}]},
                   {"id": "g-all", "name": "all", "selectors": [{}]}],
        "policies": [{"id": "p-read", "name": "readers", "claim_matchers": [
            {"json_path": "roles", "operator": "contains", "value": role}],
            "allowed_group_ids": groups}]
    })
}

/// Every document of every collection of `database`.
async fn dump(database: &mongodb::Database) -> Vec<(String, Vec<Document>)> {
    let mut dumped = Vec::new();
    for name in database.list_collection_names().await.expect("collections") {
        let mut cursor = database
            .collection::<Document>(&name)
            .find(doc! {})
            .await
            .expect("find");
        let mut documents = Vec::new();
        while cursor.advance().await.expect("next") {
            documents.push(cursor.deserialize_current().expect("a document"));
        }
        dumped.push((name, documents));
    }
    dumped
}

/// Puts `dumped` back, every collection emptied first (`mongorestore --drop`).
async fn restore(database: &mongodb::Database, dumped: &[(String, Vec<Document>)]) {
    for name in database.list_collection_names().await.expect("collections") {
        database
            .collection::<Document>(&name)
            .delete_many(doc! {})
            .await
            .expect("emptied");
    }
    for (name, documents) in dumped {
        if !documents.is_empty() {
            database
                .collection::<Document>(name)
                .insert_many(documents.clone())
                .await
                .expect("restored");
        }
    }
}

async fn eventually_tools(gateway: &Gateway, token: &str, expected: &[&str]) {
    let deadline = Instant::now() + WAIT;
    loop {
        let ids: Vec<String> = gateway.get("/agents/tools", token).await.json()["data"]
            .as_array()
            .expect("data")
            .iter()
            .map(|tool| tool["tool_id"].as_str().expect("id").to_owned())
            .collect();
        if ids == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "served {ids:?}, expected {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn may_call(gateway: &Gateway, token: &str, tool: &str) -> bool {
    let ask = json!({"action": {"name": "call"}, "resource": {"type": "tool", "id": tool}});
    let reply = gateway
        .request(
            Method::POST,
            "/access/v1/evaluation",
            Some(token),
            Some(ask),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    reply.json()["decision"] == true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_to_an_earlier_revision_leaves_nothing_of_the_later_one() {
    let server = MongoServer::start().await;
    let name = database_name("restore");
    let mut settings = config(Path::new("unused"), hs_settings());
    settings.mongodb_uri = Some(toolgate::config::Secret::new(server.uri().to_owned()));
    settings.mongodb_database = name.clone();
    settings.revision_poll = Duration::from_millis(100);
    let gateway = Gateway::start_with(settings).await;
    let database = mongodb::Client::with_uri_str(server.uri())
        .await
        .expect("client")
        .database(&name);
    let reader = Gateway::reader("agent-1");

    // r1: readers read. The backup is taken here.
    let backed_up = gateway
        .put_catalog(catalog("reader", json!(["g-read"])))
        .await;
    let backup = dump(&database).await;
    // r2: readers get nothing; every cache keeps that at r2, and a stream sees it.
    let later = gateway
        .put_catalog(catalog("nobody", json!(["g-read"])))
        .await;
    assert_eq!(later, backed_up + 1);
    eventually_tools(&gateway, &reader, &[]).await;
    assert!(!may_call(&gateway, &reader, "billing:list").await);
    let mut stream = SseClient::connect(&gateway, "/agents/tools/stream", &reader).await;
    assert_eq!(stream.event(WAIT).await.ids("data"), Vec::<String>::new());

    // The store goes back to r1: the gateway serves it, and the stream is told.
    restore(&database, &backup).await;
    eventually_tools(&gateway, &reader, &["billing:list"]).await;
    let told = stream.event(WAIT).await;
    assert_eq!(told.event, "tools_changed", "{told:?}");
    assert_eq!(told.ids("added"), ["billing:list"]);

    // A new r2, other than the first: served as it is, never the first r2's answers.
    let again = gateway
        .put_catalog(catalog("reader", json!(["g-all"])))
        .await;
    assert_eq!(again, later, "the revision number comes again");
    // Written through this gateway: its very next answers are the new r2's.
    let served = gateway.get("/agents/tools", &reader).await.json();
    assert_eq!(served["revision"], json!(again));
    assert_eq!(served["count"], json!(2), "{served}");
    assert!(may_call(&gateway, &reader, "billing:refund").await);
    let told = stream.event(WAIT).await;
    assert_eq!(told.ids("added"), ["billing:refund"], "{told:?}");
}
