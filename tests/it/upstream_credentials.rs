//! Calls on the caller's behalf (docs/api.md, "Credentials for upstream calls"): a source's
//! `config.auth` makes the gateway ask a real token endpoint (started here, checking the
//! client's credentials and every field it receives) for a client-credentials token or a
//! token exchanged for the caller's, and send it upstream. The upstreams are an HTTP API
//! described by OpenAPI (started here: it refuses any call without an issued token and says
//! which token it got) and the official Python SDK's MCP server (which refuses calls without
//! an issued token and binds each session to one token).

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::HeaderMap;
use axum::routing::get;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::gateway::Gateway;
use support::mcp_rpc::{call, initialize};
use support::token_endpoint::{Behaviour, TokenEndpoint};
use support::upstream::{McpServer, serve};

/// The OpenAPI upstream: `GET /whoami` answers the Authorization it got; every request is
/// recorded, and one without an issued token is refused (401) as a real API would.
#[derive(Clone, Default)]
struct Api {
    seen: Arc<Mutex<Vec<String>>>,
}

impl Api {
    async fn start(&self) -> String {
        let seen = Arc::clone(&self.seen);
        let app = Router::new().route(
            "/whoami",
            get(move |headers: HeaderMap| {
                let seen = Arc::clone(&seen);
                async move {
                    let authorization = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_owned();
                    seen.lock().expect("lock").push(authorization.clone());
                    let issued = ["Bearer xchg-", "Bearer cc-", "Bearer static-"]
                        .iter()
                        .any(|prefix| authorization.starts_with(prefix));
                    if issued {
                        (
                            StatusCode::OK,
                            axum::Json(json!({"authorization": authorization})),
                        )
                    } else {
                        (
                            StatusCode::UNAUTHORIZED,
                            axum::Json(json!({"error": "no token"})),
                        )
                    }
                }
            }),
        );
        serve(app).await
    }

    fn count(&self) -> usize {
        self.seen.lock().expect("lock").len()
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().expect("lock").clone()
    }
}

fn spec(base: &str) -> Value {
    json!({
        "openapi": "3.1.0", "info": {"title": "api", "version": "1"},
        "servers": [{"url": base}],
        "paths": {"/whoami": {"get": {"operationId": "whoami",
                                      "responses": {"200": {"description": "who called"}}}}}
    })
}

/// A gateway granting every tool to readers, with an `openapi` source `api` and (when given)
/// an `mcp` source `docs`, each with the `auth` given.
async fn gateway(api: (&str, Value), mcp: Option<(&McpServer, Value)>) -> Gateway {
    gateway_on(api, mcp, std::sync::Arc::new(toolgate::clock::SystemClock)).await
}

/// [`gateway`] on `clock`.
async fn gateway_on(
    api: (&str, Value),
    mcp: Option<(&McpServer, Value)>,
    clock: std::sync::Arc<dyn toolgate::clock::Clock>,
) -> Gateway {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = support::gateway::config(dir.path(), support::gateway::hs_settings());
    // The figures make 1,000 calls in a few seconds.
    config.rate_limits.tool_calls = None;
    let gateway = Gateway::start_clocked(config, clock).await;
    std::mem::forget(dir); // the gateway's data lives for the test process
    gateway
        .put_catalog(json!({
            "groups": [{"id": "g-all", "name": "all", "selectors": [{}]}],
            "policies": [{"id": "p-read", "name": "readers", "allowed_group_ids": ["g-all"],
                          "claim_matchers": [{"json_path": "roles", "operator": "contains",
                                              "value": "reader"}]}]
        }))
        .await;
    let (base, auth) = api;
    let mut sources = vec![json!({"id": "api", "name": "api", "type": "openapi",
                                  "config": {"spec": spec(base), "auth": auth}})];
    if let Some((server, auth)) = mcp {
        // The configured header lists the server's tools (the gateway as itself); calls send
        // the issued token in its place.
        sources.push(json!({"id": "docs", "name": "docs", "type": "mcp",
                            "config": {"url": server.url, "auth": auth,
                                       "headers": {"Authorization": "Bearer import-1"}}}));
    }
    for source in sources {
        gateway
            .admin_send(Method::POST, "/admin/sources", Some(source))
            .await
            .expect(StatusCode::CREATED);
    }
    gateway
}

/// An agent: its token, and an MCP session opened with it.
struct Agent {
    sub: String,
    token: String,
    session: String,
}

impl Agent {
    async fn new(gateway: &Gateway, endpoint: &TokenEndpoint, sub: &str) -> Agent {
        let token = Gateway::reader(sub);
        endpoint.accept_subject(&token, sub);
        let (session, _) = initialize(gateway, &token, "2025-11-25").await;
        Agent {
            sub: sub.to_owned(),
            token,
            session,
        }
    }

    /// Calls `tool` without arguments: the result.
    async fn call(&self, gateway: &Gateway, tool: &str) -> Value {
        let answer = call(
            gateway,
            &self.token,
            &self.session,
            "tools/call",
            json!({"name": tool, "arguments": {}}),
        )
        .await;
        answer
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{}: no result: {answer}", self.sub))
    }

    /// The Authorization the upstream got for a call of `tool` (which must succeed).
    async fn bearer(&self, gateway: &Gateway, tool: &str) -> String {
        let result = self.call(gateway, tool).await;
        assert_eq!(result["isError"], false, "{}: {result}", self.sub);
        let text = result["content"][0]["text"]
            .as_str()
            .expect("text")
            .to_owned();
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(object)) => object["authorization"]
                .as_str()
                .expect("authorization")
                .to_owned(),
            _ => text,
        }
    }
}

fn error_text(result: &Value) -> String {
    assert_eq!(result["isError"], true, "{result}");
    result["content"][0]["text"]
        .as_str()
        .expect("text")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exchanged_tokens_reach_each_upstream_and_never_the_callers_own() {
    let endpoint = TokenEndpoint::start().await;
    endpoint.set(Behaviour {
        audience: Some("upstream-api"),
        ..Behaviour::default()
    });
    let mut auth = endpoint.auth("token_exchange");
    auth["audience"] = json!("upstream-api");
    let api = Api::default();
    let base = api.start().await;
    let server = McpServer::start(&["bearer"], &[("MCP_TOKEN_PREFIX", "xchg-,import-")]);
    let gateway = gateway((&base, auth.clone()), Some((&server, auth))).await;
    let alice = Agent::new(&gateway, &endpoint, "alice").await;
    let bob = Agent::new(&gateway, &endpoint, "bob").await;

    // Interleaved, on both sources: each caller always gets its own exchanged token.
    for round in 0..15 {
        for agent in [&alice, &bob] {
            for tool in ["api.whoami", "docs.bearer"] {
                let bearer = agent.bearer(&gateway, tool).await;
                assert!(
                    bearer.starts_with(&format!("Bearer xchg-{}-", agent.sub)),
                    "round {round}, {} on {tool} sent {bearer}",
                    agent.sub
                );
                assert!(
                    !bearer.contains(&agent.token),
                    "the caller's own token went upstream"
                );
            }
        }
    }
    // One exchange per (caller, source); the rest from the cache.
    assert_eq!(endpoint.issued("token_exchange"), 4);
    assert!(endpoint.rejected().is_empty(), "{:?}", endpoint.rejected());
    for form in endpoint.received() {
        let subject = form.get("subject_token").expect("a subject token");
        assert!(subject == &alice.token || subject == &bob.token);
        assert_eq!(
            form.get("audience").map(String::as_str),
            Some("upstream-api")
        );
        assert!(
            !form.contains_key("client_secret"),
            "the secret goes in Basic only"
        );
    }
    let gateway_tokens = [&alice.token, &bob.token];
    assert!(
        api.seen()
            .iter()
            .all(|seen| gateway_tokens.iter().all(|t| !seen.contains(*t))),
        "a caller's token reached the API"
    );

    let metrics = gateway.get("/metrics", &Gateway::admin()).await;
    let metrics = String::from_utf8_lossy(&metrics.body);
    for series in [
        r#"toolgate_upstream_token_requests_total{grant="token_exchange",outcome="issued",source="api"} 2"#,
        r#"toolgate_upstream_token_requests_total{grant="token_exchange",outcome="issued",source="docs"} 2"#,
        r#"toolgate_upstream_token_cache_hits_total{grant="token_exchange",source="api"} 28"#,
    ] {
        assert!(metrics.contains(series), "{series} in\n{metrics}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_credentials_token_is_the_gateways_own_for_every_caller() {
    let endpoint = TokenEndpoint::start().await;
    let api = Api::default();
    let base = api.start().await;
    let server = McpServer::start(&["bearer"], &[("MCP_TOKEN_PREFIX", "cc-,import-")]);
    let auth = endpoint.auth("client_credentials");
    let gateway = gateway((&base, auth.clone()), Some((&server, auth))).await;
    let alice = Agent::new(&gateway, &endpoint, "alice").await;
    let bob = Agent::new(&gateway, &endpoint, "bob").await;
    let mut bearers = std::collections::BTreeSet::new();
    for agent in [&alice, &bob, &alice, &bob] {
        bearers.insert(agent.bearer(&gateway, "api.whoami").await);
        bearers.insert(agent.bearer(&gateway, "docs.bearer").await);
    }
    // One token per source, shared by every caller (it is the gateway's).
    assert_eq!(endpoint.issued("client_credentials"), 2);
    assert_eq!(bearers.len(), 2, "{bearers:?}");
    assert!(
        bearers.iter().all(|b| b.starts_with("Bearer cc-")),
        "{bearers:?}"
    );
    assert!(endpoint.rejected().is_empty(), "{:?}", endpoint.rejected());
    for form in endpoint.received() {
        assert!(
            !form.contains_key("subject_token"),
            "no caller token in this grant"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_exchange_is_a_tool_error_and_nothing_goes_upstream() {
    let endpoint = TokenEndpoint::start().await;
    let api = Api::default();
    let base = api.start().await;
    let gateway = gateway((&base, endpoint.auth("token_exchange")), None).await;
    let alice = Agent::new(&gateway, &endpoint, "alice").await;

    endpoint.set(Behaviour {
        refuse: Some("invalid_grant"),
        ..Behaviour::default()
    });
    let text = error_text(&alice.call(&gateway, "api.whoami").await);
    assert!(text.contains("invalid_grant"), "{text}");
    assert!(text.contains("nothing was sent upstream"), "{text}");
    assert!(
        !text.contains(&endpoint.url),
        "the endpoint's URL is not shown: {text}"
    );
    assert_eq!(api.count(), 0, "nothing reached the upstream");

    // A token the endpoint does not know is refused there too; not cached, asked again.
    endpoint.set(Behaviour::default());
    let stranger = Gateway::reader("mallory");
    let (session, _) = initialize(&gateway, &stranger, "2025-11-25").await;
    let answer = call(
        &gateway,
        &stranger,
        &session,
        "tools/call",
        json!({"name": "api.whoami", "arguments": {}}),
    )
    .await;
    assert!(
        error_text(&answer["result"]).contains("invalid_grant"),
        "{answer}"
    );
    assert_eq!(api.count(), 0);

    // An endpoint that cannot be reached: the agent reads that, not where it is.
    let gone = gateway_with_unreachable_endpoint(&base).await;
    let carol = Agent::new(&gone, &endpoint, "carol").await;
    let text = error_text(&carol.call(&gone, "api.whoami").await);
    assert!(text.contains("cannot be reached"), "{text}");
    assert!(!text.contains("127.0.0.1:9"), "{text}");
    assert_eq!(api.count(), 0);

    // Once the endpoint issues, the call goes through.
    assert!(
        alice
            .bearer(&gateway, "api.whoami")
            .await
            .starts_with("Bearer xchg-alice-")
    );
    assert_eq!(api.count(), 1);
}

async fn gateway_with_unreachable_endpoint(base: &str) -> Gateway {
    let auth = json!({"type": "token_exchange", "token_endpoint": "http://127.0.0.1:9/token",
                      "client_id": "c", "client_secret": "s"});
    gateway((base, auth), None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_asked_again_shortly_before_they_or_the_callers_expire() {
    let endpoint = TokenEndpoint::start().await;
    let api = Api::default();
    let base = api.start().await;
    // On a clock the test moves instead of waiting for the tokens to age.
    let clock = std::sync::Arc::new(toolgate::clock::ManualClock::at(chrono::Utc::now()));
    let gateway = gateway_on(
        (&base, endpoint.auth("token_exchange")),
        None,
        clock.clone(),
    )
    .await;

    // Issued for 2 s: used for 1.8 s (a tenth of its life before it expires), then asked again.
    endpoint.set(Behaviour {
        expires_in: Some(2),
        ..Behaviour::default()
    });
    let alice = Agent::new(&gateway, &endpoint, "alice").await;
    let first = alice.bearer(&gateway, "api.whoami").await;
    assert_eq!(alice.bearer(&gateway, "api.whoami").await, first, "cached");
    clock.advance(Duration::from_millis(1700));
    assert_eq!(
        alice.bearer(&gateway, "api.whoami").await,
        first,
        "still cached"
    );
    clock.advance(Duration::from_millis(400));
    let second = alice.bearer(&gateway, "api.whoami").await;
    assert_ne!(second, first, "asked again once near expiry");
    assert_eq!(endpoint.issued("token_exchange"), 2);

    // Issued for an hour, but the caller's token ends in 2 s: not kept past it, even for a
    // new token of the same identity.
    endpoint.set(Behaviour::default());
    let exp = toolgate::clock::Clock::unix_now(clock.as_ref()) + 2;
    let short = Gateway::token(json!({"sub": "bob", "roles": ["reader"], "exp": exp}));
    endpoint.accept_subject(&short, "bob");
    let (session, _) = initialize(&gateway, &short, "2025-11-25").await;
    let bob = Agent {
        sub: "bob".to_owned(),
        token: short,
        session,
    };
    let before = bob.bearer(&gateway, "api.whoami").await;
    clock.advance(Duration::from_millis(2500));
    let renewed = Agent::new(&gateway, &endpoint, "bob").await;
    let after = renewed.bearer(&gateway, "api.whoami").await;
    assert_ne!(
        after, before,
        "the exchanged token was not kept past the caller's"
    );
    assert_eq!(endpoint.issued("token_exchange"), 4);
    // Without a limit of the caller's, the same identity's next token keeps the cache.
    let again = Agent::new(&gateway, &endpoint, "bob").await;
    assert_eq!(again.bearer(&gateway, "api.whoami").await, after);
    assert_eq!(endpoint.issued("token_exchange"), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_calls_makes_one_exchange() {
    let endpoint = TokenEndpoint::start().await;
    endpoint.set(Behaviour {
        delay: Duration::from_millis(300),
        ..Behaviour::default()
    });
    let api = Api::default();
    let base = api.start().await;
    let gateway = Arc::new(gateway((&base, endpoint.auth("token_exchange")), None).await);
    let alice = Arc::new(Agent::new(&gateway, &endpoint, "alice").await);
    let mut calls = Vec::new();
    for _ in 0..20 {
        let (gateway, alice) = (Arc::clone(&gateway), Arc::clone(&alice));
        calls.push(tokio::spawn(async move {
            alice.bearer(&gateway, "api.whoami").await
        }));
    }
    for call in calls {
        assert!(
            call.await
                .expect("joined")
                .starts_with("Bearer xchg-alice-1")
        );
    }
    assert_eq!(endpoint.issued("token_exchange"), 1);
}

#[tokio::test]
async fn the_client_secret_is_write_only_and_auth_is_validated_by_field() {
    let endpoint = TokenEndpoint::start().await;
    let api = Api::default();
    let base = api.start().await;
    let gateway = gateway((&base, endpoint.auth("client_credentials")), None).await;
    let source = gateway
        .get("/admin/sources/api", &Gateway::admin())
        .await
        .expect(StatusCode::OK)
        .json();
    assert_eq!(source["config"]["auth"]["client_secret"], "***");
    assert_eq!(
        source["config"]["auth"]["client_id"],
        support::token_endpoint::CLIENT_ID
    );
    // Written back as read: the secret is kept, and calls still authenticate.
    gateway
        .admin_send(Method::PUT, "/admin/sources/api", Some(source.clone()))
        .await
        .expect(StatusCode::OK);
    let alice = Agent::new(&gateway, &endpoint, "alice").await;
    assert!(
        alice
            .bearer(&gateway, "api.whoami")
            .await
            .starts_with("Bearer cc-")
    );

    let mut broken = source;
    broken["config"]["auth"] = json!({"type": "token_exchange", "token_endpoint": "file:///x",
                                      "client_id": "c"});
    let problem = gateway
        .admin_send(Method::PUT, "/admin/sources/api", Some(broken))
        .await
        .problem(422);
    let fields: Vec<&str> = problem["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .filter_map(|e| e["field"].as_str())
        .collect();
    assert!(fields.contains(&"config.auth.token_endpoint"), "{problem}");
    assert!(fields.contains(&"config.auth.client_secret"), "{problem}");
}

fn p50(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// The figures of the issue: 1,000 calls by 10 callers make 10 exchanges; and the added
/// latency of a call with a cached exchanged token over one with a static header, measured
/// interleaved in one run (`cargo test --test it upstream_credentials::figures -- --nocapture`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn figures_exchanges_for_a_thousand_calls_and_the_added_latency() {
    let endpoint = TokenEndpoint::start().await;
    let api = Api::default();
    let base = api.start().await;
    let gateway = Arc::new(gateway((&base, endpoint.auth("token_exchange")), None).await);
    gateway
        .admin_send(
            Method::POST,
            "/admin/sources",
            Some(json!({"id": "plain", "name": "plain", "type": "openapi",
                        "config": {"spec": spec(&base),
                                   "headers": {"Authorization": "Bearer static-1"}}})),
        )
        .await
        .expect(StatusCode::CREATED);
    let mut agents = Vec::new();
    for n in 0..10 {
        agents.push(Arc::new(
            Agent::new(&gateway, &endpoint, &format!("agent-{n}")).await,
        ));
    }
    let mut callers = Vec::new();
    for agent in &agents {
        let (gateway, agent) = (Arc::clone(&gateway), Arc::clone(agent));
        callers.push(tokio::spawn(async move {
            for _ in 0..100 {
                let bearer = agent.bearer(&gateway, "api.whoami").await;
                assert!(bearer.starts_with(&format!("Bearer xchg-{}-", agent.sub)));
            }
        }));
    }
    for caller in callers {
        caller.await.expect("joined");
    }
    let exchanges = endpoint.issued("token_exchange");
    println!("1000 calls by 10 callers: {exchanges} token exchanges");
    assert_eq!(exchanges, 10);

    let agent = &agents[0];
    let (mut exchanged, mut fixed) = (Vec::new(), Vec::new());
    for _ in 0..300 {
        for (tool, samples) in [("api.whoami", &mut exchanged), ("plain.whoami", &mut fixed)] {
            let started = Instant::now();
            agent.bearer(&gateway, tool).await;
            samples.push(started.elapsed());
        }
    }
    let (exchanged, fixed) = (p50(exchanged), p50(fixed));
    println!(
        "p50 of a call: static header {fixed:?}, cached exchanged token {exchanged:?} \
         (ratio {:.3})",
        exchanged.as_secs_f64() / fixed.as_secs_f64()
    );
    assert_eq!(
        endpoint.issued("token_exchange"),
        10,
        "every one of them cached"
    );
    assert!(
        exchanged < fixed * 2,
        "a cached token costs next to nothing"
    );
}
