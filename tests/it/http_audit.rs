//! The audit trail over HTTP: every kind of admin write leaves one record with who (the
//! token's `sub`), when, what (action, entity, id, before and after), the revision it made and
//! the request id the response carried; `GET /admin/audit` filters by entity, id, actor and
//! time range and pages with a cursor, a page of the largest size included.

use crate::support;

use chrono::{DateTime, Utc};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::gateway::{Gateway, Reply, config, hs_settings};
use toolgate::store::embedded::EmbeddedStore;
use toolgate::store::{AuditQuery, AuditRecord, CatalogStore, Commit, Subject};

fn catalog() -> Value {
    json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual"}],
        "tools": [{"source_id": "billing", "operation_id": "refund", "name": "refund", "method": "POST"}],
        "groups": [{"id": "g-all", "name": "all", "selectors": [{}]}],
        "policies": [{"id": "p-read", "name": "readers", "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "reader"}], "allowed_group_ids": ["g-all"]}]
    })
}

fn second_admin() -> String {
    Gateway::token(json!({"sub": "admin-2", "roles": ["admin"]}))
}

/// Every record matching `query` (e.g. `?entity=labels`), following cursors `limit` at a time.
async fn all_records(gateway: &Gateway, query: &str, limit: usize) -> Vec<Value> {
    let separator = if query.is_empty() { "?" } else { "&" };
    let mut records = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut path = format!("/admin/audit{query}{separator}limit={limit}");
        if let Some(cursor) = &cursor {
            path.push_str(&format!("&cursor={cursor}"));
        }
        let page = gateway
            .admin_send(Method::GET, &path, None)
            .await
            .expect(StatusCode::OK)
            .json();
        let data = page["data"].as_array().expect("data").clone();
        assert_eq!(page["count"], json!(data.len()));
        assert!(data.len() <= limit);
        records.extend(data);
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return records,
        }
    }
}

fn request_id(reply: &Reply) -> String {
    reply
        .header("x-request-id")
        .expect("x-request-id")
        .to_owned()
}

fn summary(record: &Value) -> (String, String, String, String) {
    let text = |key: &str| record[key].as_str().expect(key).to_owned();
    (text("actor"), text("action"), text("entity"), text("id"))
}

#[tokio::test]
async fn every_admin_write_is_recorded_with_who_what_when_and_the_request_id() {
    let gateway = Gateway::start().await;
    let admin = Gateway::admin();
    let mut writes: Vec<(Reply, &str)> = Vec::new();
    let write = async |method: Method, path: &str, token: &str, body: Option<Value>| {
        let reply = gateway.request(method, path, Some(token), body).await;
        assert!(reply.status.is_success(), "{path}: {}", reply.status);
        reply
    };
    writes.push((
        write(Method::PUT, "/admin/catalog", &admin, Some(catalog())).await,
        "replace",
    ));
    writes.push((
        write(
            Method::POST,
            "/admin/labels",
            &admin,
            Some(json!({"id": "pii", "name": "pii"})),
        )
        .await,
        "create",
    ));
    writes.push((
        write(
            Method::PATCH,
            "/admin/labels/pii",
            &admin,
            Some(json!({"description": "personal"})),
        )
        .await,
        "update",
    ));
    writes.push((
        write(
            Method::POST,
            "/admin/tools/billing:refund/disable",
            &admin,
            Some(json!({"reason": "review"})),
        )
        .await,
        "disable",
    ));
    writes.push((
        write(
            Method::POST,
            "/admin/tools/billing:refund/enable",
            &second_admin(),
            None,
        )
        .await,
        "enable",
    ));
    writes.push((
        write(Method::DELETE, "/admin/labels/pii", &second_admin(), None).await,
        "delete",
    ));
    // Refused writes leave no record.
    gateway
        .request(
            Method::POST,
            "/admin/labels",
            Some(&admin),
            Some(json!({"id": "x"})),
        )
        .await
        .problem(422);
    gateway
        .request(
            Method::POST,
            "/admin/labels",
            Some(&Gateway::token(json!({"sub": "eve", "roles": ["reader"]}))),
            Some(json!({"name": "sneaky"})),
        )
        .await
        .problem(403);

    let everything = all_records(&gateway, "", 100).await;
    // The catalog replace also recorded each entity it created (at its revision, 1).
    let created: Vec<(String, String, String, String)> = everything
        .iter()
        .filter(|r| r["revision"] == json!(1) && r["entity"] != json!("catalog"))
        .map(summary)
        .collect();
    let expected = [
        ("admin-1", "create", "sources", "billing"),
        ("admin-1", "create", "tools", "billing:refund"),
        ("admin-1", "create", "groups", "g-all"),
        ("admin-1", "create", "policies", "p-read"),
    ]
    .map(|(a, b, c, d)| (a.into(), b.into(), c.into(), d.into()));
    assert_eq!(created, expected);
    let records: Vec<Value> = everything
        .iter()
        .filter(|r| r["revision"] != json!(1) || r["entity"] == json!("catalog"))
        .cloned()
        .collect();
    let actual: Vec<(String, String, String, String)> = records.iter().map(summary).collect();
    let expected = [
        ("admin-1", "replace", "catalog", "catalog"),
        ("admin-1", "create", "labels", "pii"),
        ("admin-1", "update", "labels", "pii"),
        ("admin-1", "disable", "tools", "billing:refund"),
        ("admin-2", "enable", "tools", "billing:refund"),
        ("admin-2", "delete", "labels", "pii"),
    ]
    .map(|(a, b, c, d)| (a.into(), b.into(), c.into(), d.into()));
    assert_eq!(actual, expected);

    let mut previous_revision = 0;
    let mut previous_at: Option<DateTime<Utc>> = None;
    for ((reply, action), record) in writes.iter().zip(&records) {
        assert_eq!(record["action"], json!(action));
        // The request id of the response that made the change.
        assert_eq!(record["request_id"], json!(request_id(reply)), "{action}");
        // One revision per write, the one the response announced.
        let revision = record["revision"].as_u64().expect("revision");
        assert_eq!(revision, previous_revision + 1);
        assert_eq!(
            reply.header("x-catalog-revision"),
            Some(revision.to_string().as_str()),
            "{action}"
        );
        previous_revision = revision;
        let at: DateTime<Utc> = record["at"]
            .as_str()
            .expect("at")
            .parse()
            .expect("RFC 3339");
        assert!(previous_at.is_none_or(|before| before <= at));
        previous_at = Some(at);
        // Before and after, as each action has them.
        let (before, after) = match *action {
            "create" => (false, true),
            "delete" => (true, false),
            _ => (true, true),
        };
        assert_eq!(record.get("before").is_some(), before, "{action}: {record}");
        assert_eq!(record.get("after").is_some(), after, "{action}: {record}");
    }
    assert_eq!(records[2]["before"]["description"], Value::Null);
    assert_eq!(records[2]["after"]["description"], json!("personal"));
    assert_eq!(records[3]["after"]["enabled"], json!(false));
    assert_eq!(records[5]["before"]["name"], json!("pii"));

    // Filters: entity, id, actor, and the time range (since inclusive, until exclusive).
    let of = |query: &str| {
        let gateway = &gateway;
        let query = query.to_owned();
        async move {
            all_records(gateway, &query, 2)
                .await
                .iter()
                .map(|r| r["action"].as_str().expect("action").to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(of("?entity=labels").await, ["create", "update", "delete"]);
    assert_eq!(
        of("?entity=tools&id=billing:refund").await,
        ["create", "disable", "enable"]
    );
    assert_eq!(of("?actor=admin-2").await, ["enable", "delete"]);
    assert_eq!(of("?actor=admin-2&entity=labels").await, ["delete"]);
    assert!(of("?actor=nobody").await.is_empty());
    let at = |i: usize| records[i]["at"].as_str().expect("at").replace('+', "%2B");
    assert_eq!(
        of(&format!("?since={}", at(3))).await,
        ["disable", "enable", "delete"]
    );
    assert_eq!(
        of(&format!("?until={}", at(1))).await,
        ["replace", "create", "create", "create", "create"]
    );
    assert_eq!(
        of(&format!("?since={}&until={}", at(1), at(3))).await,
        ["create", "update"]
    );

    // Paging at every size gives the same records, in order.
    for limit in [1, 4, 6, 1000] {
        assert_eq!(
            all_records(&gateway, "", limit).await,
            everything,
            "limit {limit}"
        );
    }

    // Malformed filters are 400s that say what is expected.
    for bad in [
        "?entity=widgets",
        "?since=yesterday",
        "?limit=0",
        "?limit=1001",
        "?cursor=abc",
        "?who=admin-1",
    ] {
        gateway
            .admin_send(Method::GET, &format!("/admin/audit{bad}"), None)
            .await
            .problem(400);
    }
}

#[tokio::test]
async fn a_full_page_of_the_largest_size_has_a_next_cursor() {
    let dir = tempfile::tempdir().expect("temp dir");
    // A log longer than the largest page, written straight to the store before serving.
    {
        let store = EmbeddedStore::open(dir.path()).expect("store");
        let at: DateTime<Utc> = "2026-01-01T00:00:00Z".parse().expect("time");
        let audit = (0..=AuditQuery::MAX_LIMIT)
            .map(|i| AuditRecord {
                seq: 0,
                revision: 0,
                at,
                actor: "importer".into(),
                action: "create".into(),
                entity: Subject::Labels,
                id: format!("l-{i}"),
                before: None,
                after: Some(json!({"name": format!("l{i}")})),
                request_id: None,
            })
            .collect();
        store
            .commit(Commit {
                expected_revision: 0,
                changes: Vec::new(),
                audit,
            })
            .await
            .expect("commit");
    }
    let gateway = Gateway::start_with(config(dir.path(), hs_settings())).await;
    let first = gateway
        .admin_send(Method::GET, "/admin/audit?limit=1000", None)
        .await
        .expect(StatusCode::OK)
        .json();
    assert_eq!(first["count"], json!(1000));
    let cursor = first["next_cursor"]
        .as_str()
        .expect("a record follows the page");
    let second = gateway
        .admin_send(
            Method::GET,
            &format!("/admin/audit?limit=1000&cursor={cursor}"),
            None,
        )
        .await
        .json();
    assert_eq!(second["count"], json!(1));
    assert_eq!(second["data"][0]["id"], json!("l-1000"));
    assert_eq!(second["next_cursor"], Value::Null);
    // A page that ends exactly at the last record has no next page.
    let exact = gateway
        .admin_send(
            Method::GET,
            "/admin/audit?limit=1000&actor=importer&entity=labels",
            None,
        )
        .await
        .json();
    assert!(exact["next_cursor"].is_string());
    let rest = gateway
        .admin_send(
            Method::GET,
            &format!(
                "/admin/audit?limit=1&actor=importer&cursor={}",
                exact["next_cursor"].as_str().expect("cursor")
            ),
            None,
        )
        .await
        .json();
    assert_eq!(rest["count"], json!(1));
    assert_eq!(rest["next_cursor"], Value::Null);
}

#[tokio::test]
async fn newest_first_pages_back_through_the_log_with_its_cursor() {
    let gateway = Gateway::start().await;
    for i in 0..5 {
        gateway
            .admin_send(
                Method::POST,
                "/admin/labels",
                Some(json!({"id": format!("l-{i}"), "name": format!("label {i}")})),
            )
            .await
            .expect(StatusCode::CREATED);
    }
    let oldest: Vec<String> = all_records(&gateway, "?entity=labels", 2)
        .await
        .iter()
        .map(|r| r["id"].as_str().expect("id").to_owned())
        .collect();
    let mut newest: Vec<String> = all_records(&gateway, "?entity=labels&order=newest", 2)
        .await
        .iter()
        .map(|r| r["id"].as_str().expect("id").to_owned())
        .collect();
    assert_eq!(oldest, ["l-0", "l-1", "l-2", "l-3", "l-4"]);
    newest.reverse();
    assert_eq!(newest, oldest, "the same records, the other way round");
    let refused = gateway
        .admin_send(Method::GET, "/admin/audit?order=sideways", None)
        .await
        .expect(StatusCode::BAD_REQUEST);
    assert!(
        refused.problem(400)["detail"]
            .as_str()
            .unwrap()
            .contains("oldest or newest")
    );
}

/// Writes are stamped by the gateway's clock, the audit record and the entity's server-set
/// times alike: on a clock that stands still at a whole second, both say that second, and a
/// write after the clock is moved says the moved time.
#[tokio::test]
async fn writes_are_stamped_by_the_gateways_clock() {
    let dir = tempfile::tempdir().expect("temp dir");
    let day = DateTime::<Utc>::from_timestamp(Utc::now().timestamp(), 0).expect("a time");
    let clock = std::sync::Arc::new(toolgate::clock::ManualClock::at(day));
    let gateway = Gateway::start_clocked(config(dir.path(), hs_settings()), clock.clone()).await;
    gateway
        .admin_send(
            Method::POST,
            "/admin/labels",
            Some(json!({"id": "l-pii", "name": "pii"})),
        )
        .await
        .expect(StatusCode::CREATED);
    clock.advance(std::time::Duration::from_secs(90));
    let updated = gateway
        .admin_send(
            Method::PATCH,
            "/admin/labels/l-pii",
            Some(json!({"description": "personal data"})),
        )
        .await
        .expect(StatusCode::OK)
        .json();
    let at = |value: &Value| -> DateTime<Utc> {
        value.as_str().expect("a time").parse().expect("RFC 3339")
    };
    assert_eq!(at(&updated["created_at"]), day);
    assert_eq!(
        at(&updated["updated_at"]),
        day + chrono::Duration::seconds(90)
    );
    let records = all_records(&gateway, "?entity=labels", 10).await;
    let times: Vec<DateTime<Utc>> = records.iter().map(|record| at(&record["at"])).collect();
    assert_eq!(times, [day, day + chrono::Duration::seconds(90)]);
}
