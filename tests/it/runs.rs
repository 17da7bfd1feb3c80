//! Runs through the real server (docs/runs.md): `POST /runs` mints a run token; the run's
//! state gates and moves on successful forwarded calls only, per MCP revision as the contract
//! says; its pinned grant keeps later grants out and lets losses in at once; budgets are spent
//! exactly once and children are carved from their parents; runs end for their whole tree;
//! forged, edited, ended and foreign run tokens are refused; runs survive a restart. A recording
//! upstream counts what reaches it: nothing refused ever does.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode as AxumStatus;
use axum::routing::post;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::gateway::{Gateway, config, hs_settings};
use support::mcp_rpc::{call, envelope, initialize, modern, post as mcp_post, request};

/// Every call the upstream received, by operation.
#[derive(Clone, Default)]
pub(crate) struct Recorded {
    calls: Arc<std::sync::Mutex<Vec<String>>>,
    pub(crate) total: Arc<AtomicUsize>,
}

impl Recorded {
    pub(crate) fn names(&self) -> Vec<String> {
        self.calls.lock().expect("lock").clone()
    }
}

/// An upstream that records each call and answers 200, or 500 for operations named `fail*`.
pub(crate) async fn recording_upstream() -> (String, Recorded) {
    async fn op(State(recorded): State<Recorded>, Path(name): Path<String>) -> AxumStatus {
        recorded.calls.lock().expect("lock").push(name.clone());
        recorded.total.fetch_add(1, Ordering::SeqCst);
        if name.starts_with("fail") {
            AxumStatus::INTERNAL_SERVER_ERROR
        } else {
            AxumStatus::OK
        }
    }
    let recorded = Recorded::default();
    let app = Router::new()
        .route("/op/{name}", post(op))
        .with_state(recorded.clone());
    (support::upstream::serve(app).await, recorded)
}

const OPERATIONS: [&str; 6] = ["start", "edit", "publish", "fail", "free", "spawn_agents"];

/// A tool's states: (operation, available_in_states, next_state).
type ToolStates = (
    &'static str,
    Option<&'static [&'static str]>,
    Option<&'static str>,
);

/// The tools' states.
const STATES: [ToolStates; 5] = [
    ("start", Some(&["undefined"]), Some("draft")),
    ("edit", Some(&["draft"]), Some("review")),
    ("publish", Some(&["review"]), Some("done")),
    ("fail", Some(&["draft"]), Some("broken")),
    ("spawn_agents", None, None),
];

/// A gateway with an OpenAPI source `api` on a recording upstream, its operations' states set
/// as [`STATES`] says, granted to agents; sub-agents lose `spawn_agents` by `toolgate.depth`.
pub(crate) async fn gateway_in(dir: &std::path::Path) -> (Gateway, Recorded) {
    let gateway = Gateway::start_with(settings(dir)).await;
    let (url, recorded) = recording_upstream().await;
    setup(&gateway, &url).await;
    (gateway, recorded)
}

/// Settings on `dir` with a fixed public URL: the issuer of run tokens, the same after a
/// restart on another port.
pub(crate) fn settings(dir: &std::path::Path) -> toolgate::config::Settings {
    let mut settings = config(dir, hs_settings());
    settings.mcp.public_url = Some("https://gateway.example.com".to_owned());
    settings
}

pub(crate) async fn setup(gateway: &Gateway, url: &str) {
    let mut paths = serde_json::Map::new();
    for name in OPERATIONS {
        paths.insert(
            format!("/op/{name}"),
            json!({"post": {"operationId": name,
                            "responses": {"200": {"description": "ok"}}}}),
        );
    }
    let spec = json!({"openapi": "3.1.0", "info": {"title": "api", "version": "1"},
                      "servers": [{"url": url}], "paths": paths});
    gateway
        .put_catalog(json!({
            "groups": [
                {"id": "g-all", "name": "all", "selectors": [{"source_pattern": "api"}]},
                {"id": "g-coord", "name": "coordination",
                 "selectors": [{"name_pattern": "spawn_agents"}]}
            ],
            "policies": [
                {"id": "p-agents", "name": "agents", "allowed_group_ids": ["g-all"],
                 "claim_matchers": [{"json_path": "roles", "operator": "contains",
                                     "value": "agent"}]},
                {"id": "p-depth", "name": "sub-agents do not spawn", "priority": 100,
                 "denied_group_ids": ["g-coord"],
                 "claim_matchers": [{"json_path": "toolgate.depth", "operator": "gte",
                                     "value": 1}]}
            ]
        }))
        .await;
    gateway
        .admin_send(
            Method::POST,
            "/admin/sources",
            Some(json!({"id": "api", "name": "api", "type": "openapi",
                        "config": {"spec": spec}})),
        )
        .await
        .expect(StatusCode::CREATED);
    for (name, available, next) in STATES {
        gateway
            .admin_send(
                Method::PATCH,
                &format!("/admin/tools/api:{name}"),
                Some(json!({"available_in_states": available, "next_state": next})),
            )
            .await
            .expect(StatusCode::OK);
    }
}

pub(crate) fn agent(sub: &str) -> String {
    Gateway::token(json!({"sub": sub, "roles": ["agent"]}))
}

/// `POST /runs` with `body` by `token`: the status and the answer.
pub(crate) async fn start(gateway: &Gateway, token: &str, body: Value) -> (StatusCode, Value) {
    let reply = gateway
        .request(Method::POST, "/runs", Some(token), Some(body))
        .await;
    let status = reply.status;
    (
        status,
        serde_json::from_slice(&reply.body).unwrap_or(Value::Null),
    )
}

/// A run started by `token` with `body`: (run id, run token).
pub(crate) async fn run(gateway: &Gateway, token: &str, body: Value) -> (String, String) {
    let (status, answer) = start(gateway, token, body).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    (
        answer["run_id"].as_str().expect("an id").to_owned(),
        answer["access_token"].as_str().expect("a token").to_owned(),
    )
}

pub(crate) async fn manifest(gateway: &Gateway, token: &str) -> Vec<String> {
    let reply = gateway
        .get("/agents/tools", token)
        .await
        .expect(StatusCode::OK);
    reply.json()["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|entry| entry["tool_id"].as_str().expect("id").to_owned())
        .collect()
}

/// `tools/call` of `name` in a 2025-11-25 session.
pub(crate) async fn call_in(gateway: &Gateway, token: &str, session: &str, name: &str) -> Value {
    call(
        gateway,
        token,
        session,
        "tools/call",
        json!({"name": name, "arguments": {}}),
    )
    .await
}

/// A 2026-07-28 request: the JSON answer and the raw body.
async fn modern_request(
    gateway: &Gateway,
    token: &str,
    method: &'static str,
    params: Value,
) -> (Value, Vec<u8>) {
    let name = params["name"].as_str().map(str::to_owned);
    let reply = mcp_post(
        gateway,
        Some(token),
        &modern(method, name.as_deref()),
        request(1, method, envelope(params)),
    )
    .await
    .expect(StatusCode::OK);
    (reply.json(), reply.body.clone())
}

pub(crate) async fn status(gateway: &Gateway, token: &str, id: &str) -> Value {
    gateway
        .get(&format!("/runs/{id}"), token)
        .await
        .expect(StatusCode::OK)
        .json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_moves_on_successful_calls_only_and_each_surface_shows_it_as_its_revision_says() {
    let dir = tempfile::tempdir().expect("dir");
    let (gateway, recorded) = gateway_in(dir.path()).await;
    let agent = agent("writer");
    let (id, token) = run(&gateway, &agent, json!({})).await;
    assert!(id.starts_with("run_") && id.len() >= 26, "{id}");

    // REST shows the tools of the run's state ("undefined"), whatever `state=` asks.
    let undefined = ["api:free", "api:spawn_agents", "api:start"];
    assert_eq!(manifest(&gateway, &token).await, undefined);
    let asked = gateway
        .get("/agents/tools?state=review", &token)
        .await
        .expect(StatusCode::OK)
        .json();
    assert_eq!(asked["data"].as_array().expect("data").len(), 3);

    // 2026-07-28 lists every state's tools, and the list does not change with a call.
    let (listed, before) = modern_request(&gateway, &token, "tools/list", json!({})).await;
    assert_eq!(
        listed["result"]["tools"].as_array().expect("tools").len(),
        6
    );

    // A call in the wrong state: a tool error naming the state, what it needs, what leads
    // there; nothing sent.
    let (refused, _) = modern_request(
        &gateway,
        &token,
        "tools/call",
        json!({"name": "api.edit", "arguments": {}}),
    )
    .await;
    let result = &refused["result"];
    assert_eq!(result["isError"], true, "{refused}");
    let text = result["content"][0]["text"].as_str().expect("text");
    for part in [
        "'undefined'",
        "[draft]",
        "call one of [api:start] first",
        "run_state",
    ] {
        assert!(text.contains(part), "{part} in {text}");
    }
    assert_eq!(
        result["_meta"]["io.toolgate/refusal"]["reason"],
        "run_state"
    );
    assert!(
        recorded.names().is_empty(),
        "nothing refused reaches the upstream"
    );

    // A 2025-11-25 session lists the current state's tools; a success moves the run.
    let (session, _) = initialize(&gateway, &token, "2025-11-25").await;
    let started = call_in(&gateway, &token, &session, "api.start").await;
    assert_eq!(started["result"]["isError"], false, "{started}");
    assert_eq!(
        started["result"]["_meta"]["io.toolgate/run"],
        json!({"id": id, "state": "draft"})
    );
    assert_eq!(
        manifest(&gateway, &token).await,
        ["api:edit", "api:fail", "api:free", "api:spawn_agents"]
    );
    let listed = call(&gateway, &token, &session, "tools/list", json!({})).await;
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        ["api.edit", "api.fail", "api.free", "api.spawn_agents"]
    );
    let (_, after) = modern_request(&gateway, &token, "tools/list", json!({})).await;
    assert_eq!(
        before, after,
        "2026-07-28 lists are byte-identical across calls"
    );

    // A failed call is forwarded (and counted) but moves nothing.
    let failed = call_in(&gateway, &token, &session, "api.fail").await;
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    assert_eq!(
        failed["result"]["_meta"]["io.toolgate/run"]["state"],
        "draft"
    );
    // A tool without next_state moves nothing either.
    call_in(&gateway, &token, &session, "api.free").await;
    let edited = call_in(&gateway, &token, &session, "api.edit").await;
    assert_eq!(
        edited["result"]["_meta"]["io.toolgate/run"]["state"],
        "review"
    );
    assert_eq!(recorded.names(), ["start", "fail", "free", "edit"]);

    let described = status(&gateway, &token, &id).await;
    assert_eq!(described["state"], "review");
    assert_eq!(described["active"], true);
    let calls = described["calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 4);
    assert_eq!(calls[0]["tool_id"], "api:edit");
    assert_eq!(calls[0]["transition"], "review");
    assert_eq!(calls[1]["outcome"], "success");
    assert_eq!(calls[2]["outcome"], "error");
    assert!(calls[2].get("transition").is_none());

    // The caller's own token acts in no run: no state narrows what it sees.
    assert_eq!(manifest(&gateway, &agent).await.len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budgets_are_spent_exactly_once_and_children_are_carved_from_their_parents() {
    let dir = tempfile::tempdir().expect("dir");
    let (gateway, recorded) = gateway_in(dir.path()).await;
    let agent = agent("spender");
    let (root, root_token) = run(
        &gateway,
        &agent,
        json!({"budget": {"calls": 20, "per_tool": {"api:fr*": 12}}}),
    )
    .await;
    // A child asks for more than is left: 422 naming the counter.
    let (status_code, body) = start(&gateway, &root_token, json!({"budget": {"calls": 21}})).await;
    assert_eq!(status_code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["errors"][0]["field"], "budget.calls", "{body}");

    let (child, child_token) = run(&gateway, &root_token, json!({"budget": {"calls": 8}})).await;
    let described = status(&gateway, &root_token, &root).await;
    assert_eq!(described["budget"]["calls"], 12, "8 carved out of 20");
    assert_eq!(described["children"], json!([child]));
    let child_status = status(&gateway, &root_token, &child).await;
    assert_eq!(child_status["depth"], 1);
    assert_eq!(child_status["parent_run_id"], root.as_str());

    // 64 concurrent calls race the child's 8 units: exactly 8 are forwarded.
    let (session, _) = initialize(&gateway, &child_token, "2025-11-25").await;
    let calls = (0..64).map(|_| call_in(&gateway, &child_token, &session, "api.free"));
    let results = futures_util::future::join_all(calls).await;
    let forwarded = results
        .iter()
        .filter(|r| r["result"]["_meta"].get("io.toolgate/run").is_some())
        .count();
    let refused: Vec<&Value> = results
        .iter()
        .filter(|r| r["result"]["_meta"].get("io.toolgate/refusal").is_some())
        .collect();
    assert_eq!(forwarded, 8);
    assert_eq!(refused.len(), 56);
    assert_eq!(
        refused[0]["result"]["_meta"]["io.toolgate/refusal"],
        json!({"reason": "run_budget", "counter": "calls", "limit": 8})
    );
    assert_eq!(recorded.total.load(Ordering::SeqCst), 8);
    // The child spent the root's per_tool counter too (it holds none of its own).
    let described = status(&gateway, &root_token, &root).await;
    assert_eq!(described["budget"]["per_tool"]["api:fr*"], 4);

    // Ending the child gives nothing back (it spent all); a second child's unused units
    // come back when it ends.
    let (second, _) = run(&gateway, &root_token, json!({"budget": {"calls": 5}})).await;
    assert_eq!(
        status(&gateway, &root_token, &root).await["budget"]["calls"],
        7
    );
    gateway
        .request(
            Method::DELETE,
            &format!("/runs/{second}"),
            Some(&root_token),
            None,
        )
        .await
        .expect(StatusCode::OK);
    assert_eq!(
        status(&gateway, &root_token, &root).await["budget"]["calls"],
        12
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_edited_ended_and_foreign_run_tokens_are_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let (gateway, recorded) = gateway_in(dir.path()).await;
    let owner = agent("owner");
    let (id, token) = run(&gateway, &owner, json!({})).await;

    // An edited run token (another state in its payload): refused.
    let parts: Vec<&str> = token.split('.').collect();
    let mut payload: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).expect("b64")).expect("json");
    payload["toolgate_run"]["depth"] = json!(5);
    let edited = format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&payload).expect("json")),
        parts[2]
    );
    gateway
        .get("/agents/tools", &edited)
        .await
        .expect(StatusCode::UNAUTHORIZED);
    // A token of the configured issuer that carries a run claim, or the gateway's own
    // computed claim, is forged.
    for forged in [
        json!({"sub": "owner", "roles": ["agent"],
               "toolgate_run": {"id": id, "root": id, "depth": 0}}),
        json!({"sub": "owner", "roles": ["agent"], "toolgate": {"depth": 0}}),
    ] {
        let reply = gateway
            .get("/agents/tools", &Gateway::token(forged))
            .await
            .expect(StatusCode::UNAUTHORIZED);
        assert!(
            reply
                .header("www-authenticate")
                .is_some_and(|h| h.contains("toolgate's own")),
            "{:?}",
            reply.header("www-authenticate")
        );
    }

    // The run id alone grants nothing: another identity, or the owner's own plain token,
    // sees no such run.
    for stranger in [agent("stranger"), owner.clone()] {
        gateway
            .get(&format!("/runs/{id}"), &stranger)
            .await
            .expect(StatusCode::NOT_FOUND);
        gateway
            .request(
                Method::DELETE,
                &format!("/runs/{id}"),
                Some(&stranger),
                None,
            )
            .await
            .expect(StatusCode::NOT_FOUND);
    }
    let (_, stranger_run) = run(&gateway, &agent("stranger"), json!({})).await;
    gateway
        .get(&format!("/runs/{id}"), &stranger_run)
        .await
        .expect(StatusCode::NOT_FOUND);
    // The run's own token cannot report calls (it would move its own state).
    gateway
        .request(
            Method::POST,
            &format!("/runs/{id}/calls"),
            Some(&token),
            Some(json!({"tool_id": "api:start", "outcome": "success"})),
        )
        .await
        .expect(StatusCode::FORBIDDEN);
    // An admin may.
    let reported = gateway
        .admin_send(
            Method::POST,
            &format!("/runs/{id}/calls"),
            Some(json!({"tool_id": "api:start", "outcome": "success"})),
        )
        .await
        .expect(StatusCode::OK)
        .json();
    assert_eq!(reported["state"], "draft");
    // Only as a call of the run could: not a tool of another state.
    let refused = gateway
        .admin_send(
            Method::POST,
            &format!("/runs/{id}/calls"),
            Some(json!({"tool_id": "api:publish", "outcome": "success"})),
        )
        .await
        .expect(StatusCode::UNPROCESSABLE_ENTITY)
        .json();
    assert!(
        refused["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("run_state")),
        "{refused}"
    );

    // Ended: refused everywhere, with the reason.
    let (child, child_token) = run(&gateway, &token, json!({})).await;
    let ended = gateway
        .request(Method::DELETE, &format!("/runs/{id}"), Some(&token), None)
        .await
        .expect(StatusCode::OK)
        .json();
    let mut ids: Vec<&str> = ended["ended"]
        .as_array()
        .expect("ids")
        .iter()
        .map(|v| v.as_str().expect("id"))
        .collect();
    ids.sort_unstable();
    let mut both = [id.as_str(), child.as_str()];
    both.sort_unstable();
    assert_eq!(ids, both);
    for ended_token in [&token, &child_token] {
        let reply = gateway
            .get("/agents/tools", ended_token)
            .await
            .expect(StatusCode::UNAUTHORIZED);
        assert!(
            reply
                .header("www-authenticate")
                .is_some_and(|h| h.contains("run ended")),
            "{:?}",
            reply.header("www-authenticate")
        );
        let reply = mcp_post(
            &gateway,
            Some(ended_token),
            &modern("tools/call", Some("api.free")),
            request(
                1,
                "tools/call",
                envelope(json!({"name": "api.free", "arguments": {}})),
            ),
        )
        .await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    }
    // An admin still reads it, ended.
    let described = gateway
        .get(&format!("/runs/{id}"), &Gateway::admin())
        .await
        .expect(StatusCode::OK)
        .json();
    assert_eq!(described["active"], false);
    let listed = gateway
        .get("/admin/runs?sub=owner", &Gateway::admin())
        .await
        .expect(StatusCode::OK)
        .json();
    assert_eq!(listed["runs"].as_array().expect("runs").len(), 2);
    let active = gateway
        .get("/admin/runs?active=true", &Gateway::admin())
        .await
        .expect(StatusCode::OK)
        .json();
    assert_eq!(
        active["runs"].as_array().expect("runs").len(),
        1,
        "the stranger's"
    );
    gateway
        .get("/admin/runs", &agent("owner"))
        .await
        .expect(StatusCode::FORBIDDEN);
    assert!(recorded.names().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_keeps_what_it_started_with_and_loses_what_is_taken_at_once() {
    let dir = tempfile::tempdir().expect("dir");
    let (gateway, recorded) = gateway_in(dir.path()).await;
    let agent = agent("pinned");
    let (id, token) = run(
        &gateway,
        &agent,
        json!({"scope": ["tool:api:free", "tool:api:start", "tool:api:edit"],
               "state": "draft"}),
    )
    .await;
    assert_eq!(manifest(&gateway, &token).await, ["api:edit", "api:free"]);
    // A tool the token could call but the run's scope left out: run_pinned.
    let (session, _) = initialize(&gateway, &token, "2025-11-25").await;
    let refused = call_in(&gateway, &token, &session, "api.fail").await;
    assert_eq!(
        refused["result"]["_meta"]["io.toolgate/refusal"]["reason"], "run_pinned",
        "{refused}"
    );
    // A tool added mid-run is not the run's; one taken from the token leaves at once.
    gateway
        .admin_send(
            Method::POST,
            "/admin/tools",
            Some(
                json!({"source_id": "api", "operation_id": "late", "name": "late",
                        "method": "POST", "path": "/op/late"}),
            ),
        )
        .await
        .expect(StatusCode::CREATED);
    gateway
        .admin_send(Method::POST, "/admin/tools/api:free/disable", None)
        .await
        .expect(StatusCode::OK);
    assert_eq!(manifest(&gateway, &token).await, ["api:edit"]);
    assert!(
        manifest(&gateway, &agent)
            .await
            .contains(&"api:late".to_owned())
    );
    let refused = call_in(&gateway, &token, &session, "api.late").await;
    assert_eq!(
        refused["result"]["_meta"]["io.toolgate/refusal"]["reason"],
        "run_pinned"
    );
    // A new run sees it.
    let (_, fresh) = run(&gateway, &agent, json!({})).await;
    assert!(
        manifest(&gateway, &fresh)
            .await
            .contains(&"api:late".to_owned())
    );
    // A scope that names nothing the caller sees: 422.
    let (code, body) = start(&gateway, &agent, json!({"scope": ["tool:api:nothing"]})).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["errors"][0]["field"], "scope");
    assert_eq!(status(&gateway, &token, &id).await["state"], "draft");
    assert!(recorded.names().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn depth_is_computed_so_sub_agents_lose_spawn_agents_out_of_the_box() {
    let dir = tempfile::tempdir().expect("dir");
    let (gateway, _) = gateway_in(dir.path()).await;
    let agent = agent("orchestrator");
    let (_, root) = run(&gateway, &agent, json!({})).await;
    assert!(
        manifest(&gateway, &root)
            .await
            .contains(&"api:spawn_agents".to_owned())
    );
    let (status_code, child) = start(&gateway, &root, json!({})).await;
    assert_eq!(status_code, StatusCode::CREATED);
    assert_eq!(child["depth"], 1);
    let child = child["access_token"].as_str().expect("token").to_owned();
    let seen = manifest(&gateway, &child).await;
    assert!(!seen.contains(&"api:spawn_agents".to_owned()), "{seen:?}");
    assert!(seen.contains(&"api:start".to_owned()));
    // A delegated token (POST /oauth/token) is at depth 1 too.
    let form = serde_urlencoded::to_string([
        (
            "grant_type",
            "urn:ietf:params:oauth:grant-type:token-exchange",
        ),
        ("subject_token", agent.as_str()),
        (
            "subject_token_type",
            "urn:ietf:params:oauth:token-type:access_token",
        ),
        ("scope", "group:g-all group:g-coord"),
    ])
    .expect("form");
    let issued: Value = gateway
        .client
        .post(format!("{}/oauth/token", gateway.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .expect("sent")
        .bytes()
        .await
        .map(|body| serde_json::from_slice(&body).expect("json"))
        .expect("a body");
    let delegated = issued["access_token"].as_str().expect("token");
    assert!(
        !manifest(&gateway, delegated)
            .await
            .contains(&"api:spawn_agents".to_owned())
    );
    // A run token is not exchanged: the delegated token would act in no run.
    let form = serde_urlencoded::to_string([
        (
            "grant_type",
            "urn:ietf:params:oauth:grant-type:token-exchange",
        ),
        ("subject_token", root.as_str()),
        (
            "subject_token_type",
            "urn:ietf:params:oauth:token-type:access_token",
        ),
        ("scope", "group:g-all"),
    ])
    .expect("form");
    let refused = gateway
        .client
        .post(format!("{}/oauth/token", gateway.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .expect("sent");
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let refused: Value =
        serde_json::from_slice(&refused.bytes().await.expect("a body")).expect("json");
    assert_eq!(refused["error"], "invalid_request", "{refused}");
    // Depth 2 is the default maximum: a grandchild run is allowed, its child is not.
    let (_, grandchild) = run(&gateway, &child, json!({})).await;
    let (code, body) = start(&gateway, &grandchild, json!({})).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["errors"][0]["field"], "depth");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_survive_a_restart_of_the_embedded_gateway() {
    let dir = tempfile::tempdir().expect("dir");
    let (mut gateway, _) = gateway_in(dir.path()).await;
    let agent = agent("durable");
    let (id, token) = run(&gateway, &agent, json!({"budget": {"calls": 3}})).await;
    let (session, _) = initialize(&gateway, &token, "2025-11-25").await;
    call_in(&gateway, &token, &session, "api.start").await;
    let (ended_id, ended) = run(&gateway, &agent, json!({})).await;
    gateway
        .request(
            Method::DELETE,
            &format!("/runs/{ended_id}"),
            Some(&ended),
            None,
        )
        .await
        .expect(StatusCode::OK);
    gateway.stop().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let gateway = Gateway::start_with(settings(dir.path())).await;
    let described = status(&gateway, &token, &id).await;
    assert_eq!(described["state"], "draft");
    assert_eq!(described["budget"]["calls"], 2);
    gateway
        .get("/agents/tools", &ended)
        .await
        .expect(StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_start_requests_name_their_field() {
    let dir = tempfile::tempdir().expect("dir");
    let (gateway, _) = gateway_in(dir.path()).await;
    let agent = agent("careless");
    for (body, field) in [
        (json!({"state": 7}), "state"),
        (json!({"state": "*"}), "state"),
        (json!({"scope": "tool:api:free"}), "scope"),
        (json!({"scope": ["admin:x"]}), "scope[0]"),
        (json!({"budget": {"calls": -1}}), "budget.calls"),
        (
            json!({"budget": {"per_label": {"x": "1"}}}),
            "budget.per_label.x",
        ),
        (json!({"expires_in": 0}), "expires_in"),
        (json!({"colour": "red"}), "colour"),
    ] {
        let (code, answer) = start(&gateway, &agent, body.clone()).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {answer}");
        assert_eq!(answer["errors"][0]["field"], field, "{body}: {answer}");
    }
    // What the body names is quoted within bounds, never echoed whole.
    let long = "x".repeat(10_000);
    for body in [
        json!({ long.clone(): 1 }),
        json!({"budget": {"per_tool": { long.clone(): "1" }}}),
    ] {
        let (code, answer) = start(&gateway, &agent, body).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
        let field = answer["errors"][0]["field"].as_str().expect("a field");
        assert!(field.len() < 120, "{} bytes", field.len());
    }
    let reported = gateway
        .admin_send(
            Method::POST,
            "/runs/run_AAAAAAAAAAAAAAAAAAAAAA/calls",
            Some(json!({"tool_id": long, "outcome": "success"})),
        )
        .await
        .expect(StatusCode::UNPROCESSABLE_ENTITY);
    assert!(reported.body.len() < 1000, "{} bytes", reported.body.len());
    // An empty body starts a run.
    let reply = gateway
        .client
        .post(format!("{}/runs", gateway.base))
        .bearer_auth(&agent)
        .send()
        .await
        .expect("sent");
    assert_eq!(reply.status(), StatusCode::CREATED);
    let started: Value =
        serde_json::from_slice(&reply.bytes().await.expect("a body")).expect("json");
    assert_eq!(started["state"], "undefined");
    assert_eq!(started["token_type"], "Bearer");
    assert!(
        started["expires_in"].as_u64().expect("secs") <= 600,
        "never past the token"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transition_tells_that_runs_streams_and_no_one_else() {
    use support::sse::SseClient;
    let wait = Duration::from_secs(5);
    let dir = tempfile::tempdir().expect("dir");
    let (gateway, _) = gateway_in(dir.path()).await;
    let agent = agent("streamer");
    let (_, token) = run(&gateway, &agent, json!({})).await;
    let (_, other_run) = run(&gateway, &agent, json!({})).await;
    let mut stream = SseClient::connect(&gateway, "/agents/tools/stream", &token).await;
    let first = stream.event(wait).await;
    assert_eq!(first.event, "tools");
    assert_eq!(
        first.ids("data"),
        ["api:free", "api:spawn_agents", "api:start"]
    );
    let mut other = SseClient::connect(&gateway, "/agents/tools/stream", &other_run).await;
    assert_eq!(other.event(wait).await.event, "tools");
    let mut plain = SseClient::connect(&gateway, "/agents/tools/stream", &agent).await;
    assert_eq!(plain.event(wait).await.event, "tools");

    let (session, _) = initialize(&gateway, &token, "2025-11-25").await;
    call_in(&gateway, &token, &session, "api.start").await;
    let changed = stream.event(wait).await;
    assert_eq!(changed.event, "tools_changed");
    assert_eq!(changed.ids("added"), ["api:edit", "api:fail"]);
    assert_eq!(changed.ids("removed"), ["api:start"]);
    other.no_event(Duration::from_millis(300)).await;
    plain.no_event(Duration::from_millis(50)).await;
    // A call that moves nothing tells nothing; the next transition is told again.
    call_in(&gateway, &token, &session, "api.free").await;
    stream.no_event(Duration::from_millis(300)).await;
    call_in(&gateway, &token, &session, "api.edit").await;
    let changed = stream.event(wait).await;
    assert_eq!(changed.ids("added"), ["api:publish"]);
}

/// An AuthZEN evaluation of calling `tool` by `token`.
pub(crate) async fn decision(gateway: &Gateway, token: &str, tool: &str, context: Value) -> bool {
    let body = json!({"action": {"name": "call"}, "resource": {"type": "tool", "id": tool},
                      "context": context});
    gateway
        .request(
            Method::POST,
            "/access/v1/evaluation",
            Some(token),
            Some(body),
        )
        .await
        .expect(StatusCode::OK)
        .json()["decision"]
        .as_bool()
        .expect("a decision")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authzen_decides_a_run_tokens_calls_with_its_run() {
    let dir = tempfile::tempdir().expect("dir");
    let (gateway, _) = gateway_in(dir.path()).await;
    let agent = agent("executor");
    let (_, token) = run(
        &gateway,
        &agent,
        json!({"scope": ["tool:api:start", "tool:api:edit", "tool:api:free"]}),
    )
    .await;
    assert!(decision(&gateway, &token, "api:start", json!({})).await);
    assert!(
        !decision(&gateway, &token, "api:edit", json!({})).await,
        "not in this state"
    );
    // The run's state, not the one the request asserts.
    assert!(!decision(&gateway, &token, "api:edit", json!({"state": "draft"})).await);
    assert!(
        !decision(&gateway, &token, "api:fail", json!({})).await,
        "not pinned"
    );
    assert!(
        decision(&gateway, &agent, "api:fail", json!({})).await,
        "the token itself may"
    );
    let search = gateway
        .request(
            Method::POST,
            "/access/v1/search/resource",
            Some(&token),
            Some(json!({"action": {"name": "call"}, "resource": {"type": "tool"}})),
        )
        .await
        .expect(StatusCode::OK)
        .json();
    let found: Vec<&str> = search["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["id"].as_str().expect("id"))
        .collect();
    assert_eq!(found, ["api:free", "api:start"]);
    let (session, _) = initialize(&gateway, &token, "2025-11-25").await;
    call_in(&gateway, &token, &session, "api.start").await;
    assert!(
        decision(&gateway, &token, "api:edit", json!({})).await,
        "now in draft"
    );
    assert!(!decision(&gateway, &token, "api:start", json!({})).await);
    // A spent budget: nothing it counts is permitted any more.
    let (_, budgeted) = run(
        &gateway,
        &agent,
        json!({"budget": {"calls": 5, "per_tool": {"api:fr*": 1}}}),
    )
    .await;
    assert!(decision(&gateway, &budgeted, "api:free", json!({})).await);
    let (session, _) = initialize(&gateway, &budgeted, "2025-11-25").await;
    call_in(&gateway, &budgeted, &session, "api.free").await;
    assert!(
        !decision(&gateway, &budgeted, "api:free", json!({})).await,
        "run_budget"
    );
    assert!(
        decision(&gateway, &budgeted, "api:start", json!({})).await,
        "another counter"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_runs_and_views_as_a_run_naming_the_run_rules() {
    use support::console_http::Browser;
    let dir = tempfile::tempdir().expect("dir");
    let (gateway, _) = gateway_in(dir.path()).await;
    let (id, _) = run(
        &gateway,
        &agent("viewed"),
        json!({"scope": ["tool:api:start", "tool:api:edit", "tool:api:free"],
               "budget": {"calls": 4}}),
    )
    .await;
    let mut browser = Browser::new(&gateway);
    browser.sign_in(&Gateway::admin()).await;
    let runs = browser.get("/console/runs").await;
    assert_eq!(runs.status, StatusCode::OK);
    assert!(
        runs.text.contains(&id) && runs.text.contains("calls: 4"),
        "{}",
        runs.text
    );
    let view = browser
        .get(&format!("/console/view-as?run={id}&why=api:edit"))
        .await;
    assert_eq!(view.status, StatusCode::OK);
    assert!(
        view.text.contains("2 tools these claims get"),
        "{}",
        view.text
    );
    assert!(view.text.contains("(run_state)"), "{}", view.text);
    let pinned = browser
        .get(&format!("/console/view-as?run={id}&why=api:publish"))
        .await;
    assert!(pinned.text.contains("(run_pinned)"), "{}", pinned.text);
}
