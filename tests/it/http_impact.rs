//! `POST /admin/impact` over HTTP (docs/api.md, "Impact of a change"): a proposed change is
//! validated and compiled beside the live catalog, nothing is written, and the answer says per
//! claim set (given, and served recently) which tools would be gained and lost.

use crate::support;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::gateway::{Gateway, Reply};
use support::scrape::Scrape;

fn catalog() -> Value {
    json!({
        "sources": [{"id": "s", "name": "s", "type": "manual"}],
        "tools": [
            {"source_id": "s", "operation_id": "read", "name": "read", "method": "GET"},
            {"source_id": "s", "operation_id": "write", "name": "write", "method": "POST"},
            {"source_id": "s", "operation_id": "drop", "name": "drop", "method": "DELETE"}],
        "groups": [
            {"id": "g-all", "name": "all", "selectors": [{}]},
            {"id": "g-writes", "name": "writes", "selectors": [{"method_pattern": "POST"}]},
            {"id": "g-drops", "name": "drops", "selectors": [{"method_pattern": "DELETE"}]}],
        "policies": [
            {"id": "p-staff", "name": "staff", "priority": 10, "allowed_group_ids": ["g-all"],
             "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "staff"}]},
            {"id": "p-deep", "name": "deep", "priority": 100, "denied_group_ids": ["g-drops"],
             "claim_matchers": [{"json_path": "depth", "operator": "gt", "value": 0}]}]
    })
}

async fn gateway() -> Gateway {
    let gateway = Gateway::start().await;
    gateway.put_catalog(catalog()).await;
    gateway
}

async fn impact(gateway: &Gateway, body: Value, if_match: Option<&str>) -> Reply {
    let mut request = gateway
        .client
        .post(format!("{}/admin/impact", gateway.base))
        .bearer_auth(Gateway::admin())
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).expect("json"));
    if let Some(if_match) = if_match {
        request = request.header("if-match", if_match);
    }
    let response = request.send().await.expect("request reaches the gateway");
    Reply {
        status: response.status(),
        headers: response.headers().clone(),
        body: response.bytes().await.expect("body").to_vec(),
    }
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .expect("a list")
        .iter()
        .map(|v| v.as_str().expect("a string"))
        .collect()
}

/// Makes the gateway serve these identities, so that it remembers them.
async fn serve(gateway: &Gateway, identities: &[Value]) {
    for claims in identities {
        gateway.tool_ids(claims.clone(), "").await;
    }
}

fn deny_writes_when_deep() -> Value {
    json!({"change": {"collection": "policies", "id": "p-deep", "op": "patch",
                      "body": {"denied_group_ids": ["g-drops", "g-writes"]}}})
}

#[tokio::test]
async fn a_new_deny_takes_exactly_its_tools_from_exactly_the_claim_sets_it_matches() {
    let gateway = gateway().await;
    let deep = json!({"sub": "a", "roles": ["staff"], "depth": 2, "email": "a@example.com"});
    let top = json!({"sub": "b", "roles": ["staff"], "depth": 0});
    let guest = json!({"sub": "c", "roles": ["guest"], "depth": 5});
    serve(&gateway, &[deep.clone(), top.clone(), guest.clone()]).await;
    let revision = gateway
        .admin_send(Method::GET, "/admin/catalog", None)
        .await
        .expect(StatusCode::OK)
        .header("x-catalog-revision")
        .map(str::to_owned);

    let mut body = deny_writes_when_deep();
    body["claims_sets"] = json!([top, {"roles": ["staff"], "depth": 1}, {}]);
    let report = impact(&gateway, body, None)
        .await
        .expect(StatusCode::OK)
        .json();

    let given = report["claims_sets"].as_array().expect("claims_sets");
    assert_eq!(
        given.len(),
        3,
        "every claim set given is answered, in order"
    );
    assert_eq!(given[0]["claims"]["sub"], "b");
    assert!(strings(&given[0]["lost"]).is_empty());
    assert_eq!(strings(&given[1]["lost"]), ["s:write"]);
    assert!(strings(&given[1]["gained"]).is_empty());
    assert!(strings(&given[2]["lost"]).is_empty());

    let seen = report["seen"].as_array().expect("seen");
    assert_eq!(
        seen.len(),
        1,
        "only the served identity that changes: {seen:?}"
    );
    assert_eq!(strings(&seen[0]["lost"]), ["s:write"]);
    assert_eq!(
        seen[0]["claims"],
        json!({"roles": ["staff"], "depth": 2}),
        "remembered as what policies read: no sub, no email, no token"
    );
    assert!(seen[0]["last_seen"].as_str().is_some());
    assert_eq!(
        report["totals"],
        json!({"s:write": {"gained": 0, "lost": 2}})
    );
    assert_eq!(report["warnings"], json!([]));

    // Nothing was written.
    let after = gateway
        .admin_send(Method::GET, "/admin/catalog", None)
        .await
        .expect(StatusCode::OK);
    assert_eq!(
        after.header("x-catalog-revision").map(str::to_owned),
        revision
    );
    assert_eq!(gateway.tool_ids(deep, "").await, ["s:read", "s:write"]);
}

#[tokio::test]
async fn a_claim_set_is_echoed_as_given_and_one_that_is_not_an_object_is_named() {
    let gateway = gateway().await;
    let change = json!({"collection": "policies", "id": "p-deep", "op": "patch",
                        "body": {"denied_group_ids": ["g-drops"]}});
    let given = json!({"roles": ["staff"], "nested": {"a": [1, 2.5, null]}, "sub": "x"});
    let report = impact(
        &gateway,
        json!({"change": change, "claims_sets": [given]}),
        None,
    )
    .await
    .expect(StatusCode::OK)
    .json();
    assert_eq!(report["claims_sets"][0]["claims"], given);
    for (bad, at) in [
        (json!([{}, ["roles"]]), "claims_sets[1]"),
        (json!(["staff"]), "claims_sets[0]"),
        (json!([{}, {}, null]), "claims_sets[2]"),
    ] {
        let problem = impact(
            &gateway,
            json!({"change": change, "claims_sets": bad}),
            None,
        )
        .await
        .problem(422);
        assert_eq!(problem["errors"][0]["field"], at, "{problem}");
    }
}

#[tokio::test]
async fn a_change_that_changes_nothing_has_no_differences() {
    let gateway = gateway().await;
    serve(
        &gateway,
        &[json!({"sub": "a", "roles": ["staff"], "depth": 2})],
    )
    .await;
    let body = json!({
        "change": {"collection": "policies", "id": "p-deep", "op": "patch",
                   "body": {"denied_group_ids": ["g-drops"]}},
        "claims_sets": [{"roles": ["staff"]}]
    });
    let report = impact(&gateway, body, None)
        .await
        .expect(StatusCode::OK)
        .json();
    assert_eq!(report["claims_sets"][0]["gained"], json!([]));
    assert_eq!(report["claims_sets"][0]["lost"], json!([]));
    assert_eq!(report["seen"], json!([]));
    assert_eq!(report["totals"], json!({}));
}

#[tokio::test]
async fn a_whole_catalog_a_put_that_creates_and_a_delete_are_previewed() {
    let gateway = gateway().await;
    let staff = json!({"roles": ["staff"], "depth": 0});

    let mut document = catalog();
    document["tools"].as_array_mut().expect("tools").remove(0);
    let body = json!({"catalog": document, "claims_sets": [staff]});
    let report = impact(&gateway, body, None)
        .await
        .expect(StatusCode::OK)
        .json();
    assert_eq!(strings(&report["claims_sets"][0]["lost"]), ["s:read"]);

    let body = json!({
        "change": {"collection": "policies", "id": "p-guest", "op": "put",
                   "body": {"name": "guests", "allowed_group_ids": ["g-writes"],
                            "claim_matchers": [{"json_path": "roles", "operator": "contains",
                                                "value": "guest"}]}},
        "claims_sets": [{"roles": ["guest"]}]
    });
    let report = impact(&gateway, body, None)
        .await
        .expect(StatusCode::OK)
        .json();
    assert_eq!(strings(&report["claims_sets"][0]["gained"]), ["s:write"]);

    let body = json!({
        "change": {"collection": "tools", "id": "s:drop", "op": "delete"},
        "claims_sets": [staff]
    });
    let report = impact(&gateway, body, None)
        .await
        .expect(StatusCode::OK)
        .json();
    assert_eq!(strings(&report["claims_sets"][0]["lost"]), ["s:drop"]);
}

#[tokio::test]
async fn a_change_is_refused_as_its_write_would_be_and_if_match_holds() {
    let gateway = gateway().await;
    let stale = impact(&gateway, deny_writes_when_deep(), Some("\"r0\"")).await;
    stale.problem(412);
    let current = gateway
        .admin_send(Method::GET, "/admin/catalog", None)
        .await
        .expect(StatusCode::OK);
    let etag = current.header("etag").expect("an ETag").to_owned();
    impact(&gateway, deny_writes_when_deep(), Some(&etag))
        .await
        .expect(StatusCode::OK);

    let in_use = json!({"change": {"collection": "groups", "id": "g-drops", "op": "delete"}});
    impact(&gateway, in_use, None).await.problem(409);

    let bad = json!({"change": {"collection": "policies", "id": "p-deep", "op": "patch",
                                "body": {"claim_matchers": [{"json_path": "depth",
                                          "operator": "eq", "value": 1}]}}});
    let problem = impact(&gateway, bad, None).await.problem(422);
    assert!(
        problem["detail"]
            .as_str()
            .expect("detail")
            .contains("operator"),
        "{problem}"
    );
    let unknown = json!({"change": {"collection": "policies", "id": "nope", "op": "patch",
                                    "body": {"active": false}}});
    impact(&gateway, unknown, None).await.problem(404);
    let shape = json!({"change": {"collection": "widgets", "id": "x", "op": "delete"}});
    let problem = impact(&gateway, shape, None).await.problem(422);
    assert_eq!(problem["errors"][0]["field"], "change.collection");

    let scrape = Scrape::of(&gateway).await;
    assert_eq!(
        scrape.value("toolgate_impact_runs_total", &[("outcome", "ok")]),
        1.0
    );
    assert_eq!(
        scrape.value("toolgate_impact_runs_total", &[("outcome", "refused")]),
        4.0,
        "412, 409, 422 and 404 (the shape error never reached the service)"
    );
    assert_eq!(
        scrape.value("toolgate_impact_duration_seconds_count", &[]),
        5.0
    );
}

#[tokio::test]
async fn only_admins_preview_impact() {
    let gateway = gateway().await;
    let agent = Gateway::token(json!({"sub": "agent", "roles": ["staff"]}));
    let reply = gateway
        .request(
            Method::POST,
            "/admin/impact",
            Some(&agent),
            Some(deny_writes_when_deep()),
        )
        .await;
    reply.problem(403);
}

#[tokio::test]
async fn claims_no_policy_read_before_are_named_in_a_warning() {
    let gateway = gateway().await;
    serve(
        &gateway,
        &[json!({"sub": "a", "roles": ["staff"], "team": "red"})],
    )
    .await;
    let body = json!({"change": {"collection": "policies", "id": "p-red", "op": "put",
        "body": {"name": "red", "priority": 200, "denied_group_ids": ["g-all"],
                 "claim_matchers": [{"json_path": "team", "operator": "equals", "value": "red"}]}},
        "claims_sets": [{"roles": ["staff"], "team": "red"}]});
    let report = impact(&gateway, body, None)
        .await
        .expect(StatusCode::OK)
        .json();
    assert_eq!(
        strings(&report["claims_sets"][0]["lost"]),
        ["s:drop", "s:read", "s:write"],
        "given claim sets are evaluated whole"
    );
    assert_eq!(
        report["seen"],
        json!([]),
        "the remembered set holds no team"
    );
    let warning = report["warnings"][0].as_str().expect("a warning");
    assert!(warning.contains("'team'"), "{warning}");
}

/// `toolgate impact` against `gateway` with the test catalog whose writes are denied to deep
/// callers, written to a file in `dir`, and `args` besides.
async fn impact_command(
    gateway: &Gateway,
    dir: &std::path::Path,
    args: &[&str],
) -> std::process::Output {
    let file = dir.join("next.json");
    let mut next = catalog();
    next["policies"][1]["denied_group_ids"] = json!(["g-drops", "g-writes"]);
    std::fs::write(&file, serde_json::to_vec(&next).expect("json")).expect("written");
    tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .arg("impact")
        .arg("--catalog")
        .arg(&file)
        .args(["--url", &gateway.base])
        .args(args)
        .env("TOOLGATE_TOKEN", Gateway::admin())
        .output()
        .await
        .expect("the binary runs")
}

#[tokio::test]
async fn the_command_line_previews_a_catalog_file_against_a_running_gateway() {
    let gateway = gateway().await;
    serve(
        &gateway,
        &[json!({"sub": "a", "roles": ["staff"], "depth": 2})],
    )
    .await;
    let dir = tempfile::tempdir().expect("temp dir");
    let output = impact_command(
        &gateway,
        dir.path(),
        &["--claims", r#"{"roles": ["staff"], "depth": 0}"#],
    )
    .await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("0 of 1 given claim sets and 1 recently served ones change"),
        "{stdout}"
    );
    assert!(
        stdout.contains("\"depth\":2") && stdout.contains("\"roles\":[\"staff\"]"),
        "the remembered claim set is named: {stdout}"
    );
    assert!(stdout.contains("    -s:write"), "{stdout}");
    assert!(stdout.contains("s:write: +0 -1"), "{stdout}");

    let stale = impact_command(&gateway, dir.path(), &["--if-match", "0"]).await;
    assert!(!stale.status.success());
    let stdout = String::from_utf8_lossy(&stale.stdout);
    assert!(stdout.contains("412"), "{stdout}");
}

#[tokio::test]
async fn a_given_claim_set_that_was_also_served_is_answered_and_counted_once() {
    let gateway = gateway().await;
    serve(
        &gateway,
        &[json!({"sub": "a", "roles": ["staff"], "depth": 2})],
    )
    .await;
    let mut body = deny_writes_when_deep();
    body["claims_sets"] = json!([{"sub": "a", "roles": ["staff"], "depth": 2}]);
    let report = impact(&gateway, body, None)
        .await
        .expect(StatusCode::OK)
        .json();
    assert_eq!(strings(&report["claims_sets"][0]["lost"]), ["s:write"]);
    assert_eq!(report["seen"], json!([]), "answered once, as given");
    assert_eq!(
        report["totals"],
        json!({"s:write": {"gained": 0, "lost": 1}})
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let output = impact_command(
        &gateway,
        dir.path(),
        &["--claims", r#"{"roles": ["staff"], "depth": 2}"#],
    )
    .await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains("1 of 1 given claim sets and 0 recently served ones change"),
        "{stdout}"
    );
    assert_eq!(stdout.matches("    -s:write").count(), 1, "{stdout}");
    assert!(stdout.contains("s:write: +0 -1"), "{stdout}");
}

#[tokio::test]
async fn the_answer_lists_at_most_its_room_of_tool_ids_and_says_what_it_cut() {
    let gateway = Gateway::start().await;
    let tools: Vec<Value> = (0..500)
        .map(|i| {
            json!({"source_id": "s", "operation_id": format!("op{i:03}"),
                        "name": format!("op{i:03}"), "method": "GET"})
        })
        .collect();
    let catalog = json!({
        "sources": [{"id": "s", "name": "s", "type": "manual"}], "tools": tools,
        "groups": [{"id": "g-all", "name": "all", "selectors": [{}]}],
        "policies": [{"id": "p-staff", "name": "staff", "allowed_group_ids": ["g-all"],
            "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "staff"}]}]
    });
    gateway.put_catalog(catalog).await;
    let claims_sets: Vec<Value> = (0..250)
        .map(|i| json!({"roles": ["staff"], "n": i}))
        .collect();
    let body = json!({"change": {"collection": "policies", "id": "p-staff", "op": "delete"},
                      "claims_sets": claims_sets});
    let report = impact(&gateway, body, None)
        .await
        .expect(StatusCode::OK)
        .json();
    let given = report["claims_sets"].as_array().expect("claims_sets");
    assert_eq!(given.len(), 250, "every claim set is answered");
    // 200 claim sets losing 500 tools each fill the 100,000 ids; the rest are cut.
    for (i, set) in given.iter().enumerate() {
        let lost = set["lost"].as_array().expect("lost").len();
        if i < 200 {
            assert_eq!((lost, set.get("truncated")), (500, None), "claim set {i}");
        } else {
            assert_eq!(
                (lost, &set["truncated"]),
                (0, &json!(true)),
                "claim set {i}"
            );
        }
    }
    assert_eq!(
        report["totals"]["s:op042"],
        json!({"gained": 0, "lost": 250}),
        "totals count every claim set in full"
    );
    let warning = report["warnings"][0].as_str().expect("a warning");
    assert!(
        warning.contains("at most 100000 tool ids") && warning.contains("50 claim sets"),
        "{warning}"
    );
}

#[tokio::test]
async fn at_most_two_previews_run_at_once_and_one_more_is_told_when_to_retry() {
    let gateway = std::sync::Arc::new(gateway().await);
    // A source whose document takes 5 s to come: its preview holds a run until then.
    let slow = support::upstream::echo_server().await;
    let held = |id: &str| {
        json!({"change": {"collection": "sources", "id": id, "op": "put",
               "body": {"name": id, "type": "openapi", "config": {"url": format!("{slow}/slow")}}}})
    };
    let running: Vec<_> = ["slow-1", "slow-2"]
        .into_iter()
        .map(|id| {
            let (gateway, body) = (std::sync::Arc::clone(&gateway), held(id));
            tokio::spawn(async move { impact(&gateway, body, None).await.status })
        })
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let busy = impact(&gateway, deny_writes_when_deep(), None).await;
    let problem = busy.problem(429);
    assert_eq!(busy.header("retry-after"), Some("1"));
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|d| d.contains("2 impact previews are running")),
        "{problem}"
    );
    for run in running {
        let status = run.await.expect("the preview ends");
        assert_ne!(status, StatusCode::TOO_MANY_REQUESTS);
    }
    impact(&gateway, deny_writes_when_deep(), None)
        .await
        .expect(StatusCode::OK);
}
