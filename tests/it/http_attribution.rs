//! Server-set fields over HTTP: `created_at`, `updated_at`, `created_by` and `updated_by` come
//! from the server's clock and the admin token's `sub`, never from a request body, on every
//! write path (`PUT /admin/catalog` included); and a catalog replace records each entity it
//! created, changed or removed in the audit log (docs/api.md, "Server-set fields").

use crate::support;

use chrono::{DateTime, Utc};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::gateway::Gateway;

const FORGED_AT: &str = "2001-02-03T04:05:06Z";

fn admin(sub: &str) -> String {
    Gateway::token(json!({"sub": sub, "roles": ["admin"]}))
}

/// `entity` with every server-set field forged.
fn forged(mut entity: Value) -> Value {
    for (key, value) in [
        ("created_at", json!(FORGED_AT)),
        ("updated_at", json!(FORGED_AT)),
        ("created_by", json!("mallory")),
        ("updated_by", json!("mallory")),
    ] {
        entity[key] = value;
    }
    entity
}

fn time(entity: &Value, key: &str) -> DateTime<Utc> {
    entity[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} missing in {entity}"))
        .parse()
        .expect("RFC 3339")
}

/// Asserts that `entity` was stamped by `sub` at or after `since`, on creation and update.
fn stamped_by(entity: &Value, created_by: &str, updated_by: &str, since: DateTime<Utc>) {
    assert_eq!(entity["created_by"], json!(created_by), "{entity}");
    assert_eq!(entity["updated_by"], json!(updated_by), "{entity}");
    assert!(time(entity, "created_at") >= since, "{entity}");
    assert!(time(entity, "updated_at") >= since, "{entity}");
}

async fn catalog_entity(gateway: &Gateway, collection: &str, id: &str) -> Value {
    let catalog = gateway
        .admin_send(Method::GET, "/admin/catalog", None)
        .await
        .expect(StatusCode::OK)
        .json();
    catalog[collection]
        .as_array()
        .expect("collection")
        .iter()
        .find(|e| e["id"] == json!(id))
        .cloned()
        .unwrap_or_else(|| panic!("{collection}/{id} missing"))
}

fn base_catalog() -> Value {
    json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual"}],
        "tools": [{"source_id": "billing", "operation_id": "refund", "name": "refund", "method": "POST"}],
        "labels": [{"id": "same", "name": "same"}, {"id": "edited", "name": "edited"}, {"id": "gone", "name": "gone"}],
        "groups": [{"id": "g-all", "name": "all", "selectors": [{}]}],
        "policies": []
    })
}

#[tokio::test]
async fn a_catalog_replace_never_takes_server_set_fields_from_the_body() {
    let gateway = Gateway::start().await;
    let start = Utc::now();
    gateway
        .request(
            Method::PUT,
            "/admin/catalog",
            Some(&admin("admin-1")),
            Some(base_catalog()),
        )
        .await
        .expect(StatusCode::OK);
    let same_before = catalog_entity(&gateway, "labels", "same").await;
    let edited_before = catalog_entity(&gateway, "labels", "edited").await;
    stamped_by(&same_before, "admin-1", "admin-1", start);

    // Admin 2 sends the document back with every stamp forged: one label as it was, one
    // changed, one new, one removed, and a tool changed.
    let mut document = base_catalog();
    document["labels"] = json!([
        forged(json!({"id": "same", "name": "same"})),
        forged(json!({"id": "edited", "name": "edited", "description": "now described"})),
        forged(json!({"id": "fresh", "name": "fresh"})),
    ]);
    document["tools"][0] = forged(
        json!({"source_id": "billing", "operation_id": "refund", "name": "refund", "method": "POST", "description": "refunds"}),
    );
    document["sources"][0] = forged(document["sources"][0].clone());
    let second = Utc::now();
    gateway
        .request(
            Method::PUT,
            "/admin/catalog",
            Some(&admin("admin-2")),
            Some(document),
        )
        .await
        .expect(StatusCode::OK);

    // Unchanged: the stored stamps, exactly.
    assert_eq!(
        catalog_entity(&gateway, "labels", "same").await,
        same_before
    );
    assert_eq!(
        catalog_entity(&gateway, "sources", "billing").await["created_by"],
        json!("admin-1")
    );
    assert_eq!(
        catalog_entity(&gateway, "sources", "billing").await["updated_by"],
        json!("admin-1")
    );
    // Changed: created as stored, updated now by admin 2.
    let edited = catalog_entity(&gateway, "labels", "edited").await;
    assert_eq!(edited["created_by"], json!("admin-1"));
    assert_eq!(edited["created_at"], edited_before["created_at"]);
    assert_eq!(edited["updated_by"], json!("admin-2"));
    assert!(time(&edited, "updated_at") >= second);
    let tool = catalog_entity(&gateway, "tools", "billing:refund").await;
    assert_eq!(tool["created_by"], json!("admin-1"));
    assert_eq!(tool["updated_by"], json!("admin-2"));
    // New: created and updated now by admin 2.
    stamped_by(
        &catalog_entity(&gateway, "labels", "fresh").await,
        "admin-2",
        "admin-2",
        second,
    );
}

#[tokio::test]
async fn entity_writes_never_take_server_set_fields_from_the_body() {
    let gateway = Gateway::start().await;
    gateway
        .request(
            Method::PUT,
            "/admin/catalog",
            Some(&admin("admin-1")),
            Some(base_catalog()),
        )
        .await
        .expect(StatusCode::OK);
    let entities = [
        (
            "sources",
            json!({"id": "x", "name": "x", "type": "manual"}),
            json!({"description": "d"}),
        ),
        (
            "tools",
            json!({"id": "x", "source_id": "billing", "operation_id": "x", "name": "x"}),
            json!({"description": "d"}),
        ),
        (
            "labels",
            json!({"id": "x", "name": "x"}),
            json!({"description": "d"}),
        ),
        (
            "groups",
            json!({"id": "x", "name": "x"}),
            json!({"description": "d"}),
        ),
        (
            "policies",
            json!({"id": "x", "name": "x", "allowed_group_ids": ["g-all"],
                   "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "r"}]}),
            json!({"description": "d"}),
        ),
    ];
    for (collection, entity, change) in entities {
        let path = format!("/admin/{collection}/x");
        let start = Utc::now();
        let created = gateway
            .request(
                Method::POST,
                &format!("/admin/{collection}"),
                Some(&admin("admin-1")),
                Some(forged(entity.clone())),
            )
            .await
            .expect(StatusCode::CREATED)
            .json();
        stamped_by(&created, "admin-1", "admin-1", start);

        let second = Utc::now();
        let mut replacement = forged(entity.clone());
        replacement["description"] = json!("replaced");
        let replaced = gateway
            .request(
                Method::PUT,
                &path,
                Some(&admin("admin-2")),
                Some(replacement),
            )
            .await
            .expect(StatusCode::OK)
            .json();
        assert_eq!(
            replaced["created_at"], created["created_at"],
            "{collection}"
        );
        assert_eq!(replaced["created_by"], json!("admin-1"), "{collection}");
        assert_eq!(replaced["updated_by"], json!("admin-2"), "{collection}");
        assert!(time(&replaced, "updated_at") >= second, "{collection}");

        let third = Utc::now();
        let patched = gateway
            .request(
                Method::PATCH,
                &path,
                Some(&admin("admin-3")),
                Some(forged(change)),
            )
            .await
            .expect(StatusCode::OK)
            .json();
        assert_eq!(patched["created_at"], created["created_at"], "{collection}");
        assert_eq!(patched["created_by"], json!("admin-1"), "{collection}");
        assert_eq!(patched["updated_by"], json!("admin-3"), "{collection}");
        assert!(time(&patched, "updated_at") >= third, "{collection}");
        // What the store holds is what the answer said.
        assert_eq!(
            catalog_entity(&gateway, collection, "x").await,
            patched,
            "{collection}"
        );
    }
}

/// `(action, entity, id)` of the audit records matching `query`, with the records.
async fn audit(gateway: &Gateway, query: &str) -> Vec<Value> {
    gateway
        .admin_send(Method::GET, &format!("/admin/audit{query}"), None)
        .await
        .expect(StatusCode::OK)
        .json()["data"]
        .as_array()
        .expect("data")
        .clone()
}

#[tokio::test]
async fn a_catalog_replace_records_each_entity_it_changed_in_the_audit_log() {
    let gateway = Gateway::start().await;
    gateway
        .request(
            Method::PUT,
            "/admin/catalog",
            Some(&admin("admin-1")),
            Some(base_catalog()),
        )
        .await
        .expect(StatusCode::OK);
    let mut document = base_catalog();
    document["labels"] = json!([
        {"id": "same", "name": "same"},
        {"id": "edited", "name": "edited", "description": "now described"},
        {"id": "fresh", "name": "fresh"},
    ]);
    let reply = gateway
        .request(
            Method::PUT,
            "/admin/catalog",
            Some(&admin("admin-2")),
            Some(document),
        )
        .await
        .expect(StatusCode::OK);
    let revision = reply.json()["revision"].as_u64().expect("revision");

    // An entity's history shows the catalog replaces that touched it.
    let edited = audit(&gateway, "?entity=labels&id=edited").await;
    let actions: Vec<&str> = edited
        .iter()
        .map(|r| r["action"].as_str().expect("action"))
        .collect();
    assert_eq!(actions, ["create", "update"], "{edited:?}");
    let update = &edited[1];
    assert_eq!(update["actor"], json!("admin-2"));
    assert_eq!(update["revision"], json!(revision));
    assert_eq!(update["before"]["description"], Value::Null);
    assert_eq!(update["after"]["description"], json!("now described"));
    assert_eq!(update["after"]["updated_by"], json!("admin-2"));

    let fresh = audit(&gateway, "?entity=labels&id=fresh").await;
    assert_eq!(fresh.len(), 1, "{fresh:?}");
    assert_eq!(fresh[0]["action"], json!("create"));
    assert_eq!(fresh[0]["after"]["name"], json!("fresh"));
    assert!(fresh[0].get("before").is_none());

    let gone = audit(&gateway, "?entity=labels&id=gone").await;
    assert_eq!(gone.len(), 2, "{gone:?}");
    assert_eq!(gone[1]["action"], json!("delete"));
    assert_eq!(gone[1]["before"]["name"], json!("gone"));
    assert!(gone[1].get("after").is_none());
    assert_eq!(gone[1]["revision"], json!(revision));

    // Nothing for what did not change; one summary record for the replace itself.
    let same = audit(&gateway, "?entity=labels&id=same").await;
    assert_eq!(same.len(), 1, "only its creation: {same:?}");
    let at_revision: Vec<(String, String, String)> = audit(&gateway, "?limit=1000")
        .await
        .iter()
        .filter(|r| r["revision"] == json!(revision))
        .map(|r| {
            let text = |k: &str| r[k].as_str().expect(k).to_owned();
            (text("action"), text("entity"), text("id"))
        })
        .collect();
    let expected = [
        ("replace", "catalog", "catalog"),
        ("update", "labels", "edited"),
        ("create", "labels", "fresh"),
        ("delete", "labels", "gone"),
    ]
    .map(|(a, b, c)| (a.to_owned(), b.to_owned(), c.to_owned()));
    assert_eq!(at_revision, expected);
}
