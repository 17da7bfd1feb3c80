//! The admin console over plain HTTP (docs/console.md, "Serving and security"): the headers of every
//! answer, sign-in and its refusals, the session cookie, the origin and anti-CSRF checks of
//! every write, a session ending with its token, and a write that loses a race. What a browser
//! does with the pages is `console_browser.rs`.

use crate::support;

use reqwest::StatusCode;
use reqwest::header::{LOCATION, SET_COOKIE};
use serde_json::json;
use support::console_http::{Browser, Page, session_cookie};
use support::gateway::Gateway;

fn catalog() -> serde_json::Value {
    json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual"}],
        "tools": [
            {"source_id": "billing", "operation_id": "list_invoices", "name": "list_invoices",
             "description": "Lists the invoices of a customer", "method": "GET"},
            {"source_id": "billing", "operation_id": "refund", "name": "refund",
             "description": "Refunds a payment", "method": "POST"}
        ],
        "groups": [{"id": "g-read", "name": "reads", "selectors": [{"method_pattern": "GET"}]},
                   {"id": "g-all", "name": "all", "selectors": [{}]}],
        "policies": [{"id": "p-read", "name": "readers", "allowed_group_ids": ["g-read"],
                      "claim_matchers": [{"json_path": "roles", "operator": "contains",
                                          "value": "reader"}]}]
    })
}

fn assert_secured(page: &Page, what: &str) {
    let header = |name: &str| {
        page.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("{what}: no {name}"))
            .to_owned()
    };
    let csp = header("content-security-policy");
    assert!(csp.contains("default-src 'self'"), "{what}: {csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{what}: {csp}");
    assert!(
        !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
        "{what}: {csp}"
    );
    assert_eq!(header("x-content-type-options"), "nosniff", "{what}");
    assert_eq!(header("referrer-policy"), "no-referrer", "{what}");
}

#[tokio::test]
async fn every_console_answer_carries_the_security_headers() {
    let gateway = Gateway::start().await;
    let mut browser = Browser::new(&gateway);
    for path in [
        "/console/",
        "/console/assets/console.css",
        "/console/assets/console.js",
        "/console/nowhere",
        "/console/a/b/c/d",
        "/console/tools",
    ] {
        let page = browser.get(path).await;
        assert_secured(&page, path);
    }
    let wrong_method = browser.post("/console/tools", None, &[]).await;
    assert_eq!(wrong_method.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_secured(&wrong_method, "a 405 under /console/");
    let refused = browser
        .post(
            "/console/sign-in",
            Some("http://evil.example"),
            &[("token", "x")],
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert_secured(&refused, "a refused sign-in");
    browser.sign_in(&Gateway::admin()).await;
    let tools = browser.get("/console/tools").await;
    assert_eq!(tools.status, StatusCode::OK);
    assert_secured(&tools, "the Tools page");
    assert!(
        !tools.text.contains(" style=\""),
        "no inline style (the CSP forbids it)"
    );
    assert!(!tools.text.contains("<script>"), "no inline script");
}

#[tokio::test]
async fn sign_in_refuses_what_is_not_a_valid_admin_token_and_says_why() {
    let gateway = Gateway::start().await;
    let mut browser = Browser::new(&gateway);
    let now = support::unix_now();
    let cases = [
        (
            Gateway::reader("agent-1"),
            StatusCode::FORBIDDEN,
            "not an administrator",
        ),
        (
            Gateway::token(json!({"sub": "admin-1", "roles": ["admin"], "exp": now - 3600})),
            StatusCode::UNAUTHORIZED,
            "expired",
        ),
        (
            format!("{}x", Gateway::admin()),
            StatusCode::UNAUTHORIZED,
            "signature",
        ),
        (
            "not a token".to_owned(),
            StatusCode::UNAUTHORIZED,
            "well-formed",
        ),
        (
            String::new(),
            StatusCode::UNAUTHORIZED,
            "Give an admin token",
        ),
    ];
    for (token, status, says) in cases {
        let page = browser.sign_in(&token).await;
        assert_eq!(page.status, status, "{says}");
        assert!(page.text.contains(says), "{says}: {}", page.text);
        assert!(
            session_cookie(&page.headers).is_none(),
            "{says}: no session"
        );
    }
    assert!(gateway.state().console.sessions.is_empty());
    // Unsigned in, every page leads to the sign-in page.
    let page = browser.get("/console/tools").await;
    assert_eq!(page.status, StatusCode::SEE_OTHER);
    assert_eq!(page.headers[LOCATION], "/console/");
}

#[tokio::test]
async fn a_session_cookie_is_http_only_strict_scoped_and_ends_with_the_token() {
    // On a clock the test moves: the session ends with the token without waiting for it.
    let dir = tempfile::tempdir().expect("a data dir");
    let clock = std::sync::Arc::new(toolgate::clock::ManualClock::at(chrono::Utc::now()));
    let settings = support::gateway::config(dir.path(), support::gateway::hs_settings());
    let gateway = Gateway::start_clocked(settings, clock.clone()).await;
    let mut browser = Browser::new(&gateway);
    let now = toolgate::clock::Clock::unix_now(clock.as_ref());
    let token = Gateway::token(json!({"sub": "admin-1", "roles": ["admin"], "exp": now + 2}));
    let page = browser.sign_in(&token).await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.text);
    assert_eq!(page.headers[LOCATION], "/console/tools");
    let cookie = page.headers[SET_COOKIE].to_str().unwrap();
    for part in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(cookie.contains(part), "{cookie}");
    }
    assert!(!cookie.contains("Secure"), "served on loopback: {cookie}");
    let max_age: i64 = cookie
        .split("Max-Age=")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .and_then(|n| n.parse().ok())
        .expect("Max-Age");
    assert!(max_age <= 2, "no later than exp: {cookie}");
    assert!(!page.text.contains(&token) && !cookie.contains(&token));
    assert_eq!(browser.get("/console/tools").await.status, StatusCode::OK);
    clock.advance(std::time::Duration::from_secs(1));
    assert_eq!(browser.get("/console/tools").await.status, StatusCode::OK);
    clock.advance(std::time::Duration::from_secs(2));
    let ended = browser.get("/console/tools").await;
    assert_eq!(ended.status, StatusCode::SEE_OTHER);
    assert_eq!(ended.headers[LOCATION], "/console/?ended=expired");
}

#[tokio::test]
async fn writes_need_the_consoles_origin_and_the_sessions_anti_csrf_token() {
    let gateway = Gateway::start().await;
    gateway.put_catalog(catalog()).await;
    let mut browser = Browser::new(&gateway);
    browser.sign_in(&Gateway::admin()).await;
    let confirm = browser.get("/console/tools/billing%3Arefund/disable").await;
    assert_eq!(confirm.status, StatusCode::OK, "{}", confirm.text);
    let csrf = browser
        .csrf
        .clone()
        .expect("the page carries the anti-CSRF token");
    let revision = gateway
        .state()
        .app
        .internals()
        .catalog
        .snapshot()
        .revision()
        .to_string();
    let path = "/console/tools/billing%3Arefund/disable";
    let own = browser.origin();
    let form = |csrf: &str| {
        vec![
            ("csrf", csrf.to_owned()),
            ("revision", revision.clone()),
            ("reason", "incident 42".to_owned()),
        ]
    };
    let refused: [(Option<&str>, String, &str); 4] = [
        (
            Some("http://evil.example"),
            csrf.clone(),
            "a foreign origin",
        ),
        (None, csrf.clone(), "no origin"),
        (Some(&own), String::new(), "no anti-CSRF token"),
        (Some(&own), format!("{csrf}x"), "a wrong anti-CSRF token"),
    ];
    for (origin, token, what) in refused {
        let fields = form(&token);
        let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let page = browser.post(path, origin, &pairs).await;
        assert_eq!(page.status, StatusCode::FORBIDDEN, "{what}");
        assert!(
            gateway
                .state()
                .app
                .internals()
                .catalog
                .snapshot()
                .catalog()
                .tools[1]
                .enabled,
            "{what}: nothing written"
        );
    }
    let fields = form(&csrf);
    let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let page = browser.post(path, Some(&own), &pairs).await;
    assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.text);
    let tool = admin_get(&gateway, "/admin/tools/billing:refund").await;
    assert_eq!(tool["enabled"], false);
    assert_eq!(tool["disabled_reason"], "incident 42");
    let audit = admin_get(&gateway, "/admin/audit?entity=tools&id=billing:refund").await;
    let last = audit["data"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["actor"], "admin-1", "audited as the admin's sub");
    assert_eq!(last["action"], "disable");
}

#[tokio::test]
async fn a_write_that_lost_a_race_is_refused_and_shown_so() {
    let gateway = Gateway::start().await;
    gateway.put_catalog(catalog()).await;
    let mut browser = Browser::new(&gateway);
    browser.sign_in(&Gateway::admin()).await;
    browser.get("/console/tools/billing%3Arefund/disable").await;
    let csrf = browser.csrf.clone().unwrap();
    let seen = gateway
        .state()
        .app
        .internals()
        .catalog
        .snapshot()
        .revision()
        .to_string();
    // Someone else changes the catalog meanwhile.
    gateway
        .admin_send(
            reqwest::Method::POST,
            "/admin/tools/billing:list_invoices/disable",
            None,
        )
        .await
        .expect(StatusCode::OK);
    let page = browser
        .post(
            "/console/tools/billing%3Arefund/disable",
            Some(&browser.origin()),
            &[("csrf", &csrf), ("revision", &seen), ("reason", "r")],
        )
        .await;
    assert_eq!(page.status, StatusCode::PRECONDITION_FAILED);
    assert!(
        page.text.contains("changed by someone else"),
        "{}",
        page.text
    );
    assert!(page.text.contains("Reload"));
    assert!(
        gateway
            .state()
            .app
            .internals()
            .catalog
            .snapshot()
            .catalog()
            .tools[1]
            .enabled
    );
}

#[tokio::test]
async fn sign_out_ends_the_session_on_the_server() {
    let gateway = Gateway::start().await;
    let mut browser = Browser::new(&gateway);
    browser.sign_in(&Gateway::admin()).await;
    browser.get("/console/tools").await;
    let csrf = browser.csrf.clone().unwrap();
    let cookie = browser.cookie.clone().unwrap();
    let page = browser
        .post(
            "/console/sign-out",
            Some(&browser.origin()),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(page.status, StatusCode::SEE_OTHER);
    assert!(
        page.headers[SET_COOKIE]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
    assert!(gateway.state().console.sessions.is_empty());
    // The old cookie replayed opens nothing.
    browser.cookie = Some(cookie);
    assert_eq!(
        browser.get("/console/tools").await.status,
        StatusCode::SEE_OTHER
    );
}

#[tokio::test]
async fn the_tools_page_and_the_admin_api_search_alike() {
    let gateway = Gateway::start().await;
    gateway.put_catalog(catalog()).await;
    let mut browser = Browser::new(&gateway);
    browser.sign_in(&Gateway::admin()).await;
    let page = browser.get("/console/tools?q=REFUND").await;
    assert!(page.text.contains("billing:refund"));
    assert!(!page.text.contains("billing:list_invoices"));
    let found = admin_get(&gateway, "/admin/tools?q=REFUND").await;
    assert_eq!(strings(&found["data"], "id"), ["billing:refund"]);
    let by_description = admin_get(&gateway, "/admin/tools?q=customer").await;
    assert_eq!(
        strings(&by_description["data"], "id"),
        ["billing:list_invoices"]
    );
    let groups = admin_get(&gateway, "/admin/tools/billing:list_invoices/groups").await;
    assert_eq!(strings(&groups["data"], "group_id"), ["g-all", "g-read"]);
    assert_eq!(groups["data"][1]["via"], json!(["selectors[0]"]));
    gateway
        .admin_send(reqwest::Method::GET, "/admin/tools/nope/groups", None)
        .await
        .expect(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_claim_sets_served_recently_are_listed_as_projections_never_tokens() {
    let gateway = Gateway::start().await;
    gateway.put_catalog(catalog()).await;
    let reader =
        Gateway::token(json!({"sub": "agent-7", "email": "a@example.com", "roles": ["reader"]}));
    gateway
        .get("/agents/tools", &reader)
        .await
        .expect(StatusCode::OK);
    let listed = admin_get(&gateway, "/admin/claim-sets").await;
    assert_eq!(listed["count"], 1);
    assert_eq!(
        listed["data"][0]["claims"],
        json!({"roles": ["reader"]}),
        "what policies read"
    );
    assert!(listed["data"][0]["last_seen"].is_string());
    let text = listed.to_string();
    assert!(
        !text.contains("agent-7") && !text.contains("a@example.com") && !text.contains(&reader)
    );
    let mut browser = Browser::new(&gateway);
    browser.sign_in(&Gateway::admin()).await;
    let page = browser
        .get("/console/view-as?claims=%7B%22roles%22%3A%5B%22reader%22%5D%7D&why=billing%3Arefund")
        .await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.text
            .contains("no policy these claims match allows its groups (g-all)"),
        "{}",
        page.text
    );
    let bad = browser.get("/console/view-as?claims=%5B1%5D").await;
    assert!(bad.text.contains("must be a JSON object"), "{}", bad.text);
}

#[tokio::test]
async fn the_live_view_groups_streams_by_manifest_and_counts_what_a_change_reached() {
    let gateway = Gateway::start().await;
    gateway.put_catalog(catalog()).await;
    let token = |sub: &str| Gateway::token(json!({"sub": sub, "roles": ["reader"]}));
    let mut streams = Vec::new();
    for sub in ["agent-1", "agent-1", "agent-2"] {
        let mut stream =
            support::sse::SseClient::connect(&gateway, "/agents/tools/stream", &token(sub)).await;
        stream.event(std::time::Duration::from_secs(5)).await;
        streams.push(stream);
    }
    let live = admin_get(&gateway, "/admin/live").await;
    assert_eq!(live["sse"], 3);
    assert_eq!(live["manifests"].as_array().unwrap().len(), 1, "{live}");
    let manifest = &live["manifests"][0];
    assert_eq!(manifest["claims"], json!({"roles": ["reader"]}));
    assert_eq!(
        (
            manifest["sse"].clone(),
            manifest["identities"].clone(),
            manifest["tools"].clone()
        ),
        (json!(3), json!(2), json!(1))
    );
    assert!(
        !live.to_string().contains("agent-1"),
        "never a subject or token"
    );
    // A change to their manifest reaches the three streams; one elsewhere reaches none.
    gateway
        .admin_send(
            reqwest::Method::POST,
            "/admin/tools/billing:list_invoices/disable",
            None,
        )
        .await
        .expect(StatusCode::OK);
    for stream in &mut streams {
        stream.event(std::time::Duration::from_secs(5)).await;
    }
    gateway
        .admin_send(
            reqwest::Method::POST,
            "/admin/tools/billing:refund/disable",
            None,
        )
        .await
        .expect(StatusCode::OK);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let live = loop {
        let live = admin_get(&gateway, "/admin/live").await;
        if live["notifications"].as_array().unwrap().len() == 2
            || std::time::Instant::now() > deadline
        {
            break live;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let notified = live["notifications"].as_array().unwrap();
    assert_eq!(notified.len(), 2, "{live}");
    assert_eq!(
        (
            notified[0]["manifests"].clone(),
            notified[0]["streams"].clone()
        ),
        (json!(0), json!(0)),
        "newest first: the refund change reached nobody"
    );
    assert_eq!(
        (
            notified[1]["manifests"].clone(),
            notified[1]["streams"].clone()
        ),
        (json!(1), json!(3))
    );
    let mut browser = Browser::new(&gateway);
    browser.sign_in(&Gateway::admin()).await;
    let page = browser.get("/console/live/fragment").await;
    assert!(page.text.contains("3 SSE streams"), "{}", page.text);
    assert_secured(&page, "the Live fragment");
}

#[tokio::test]
async fn console_writes_spend_the_same_admin_write_budget_as_the_api() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = support::gateway::config(dir.path(), support::gateway::hs_settings());
    config.rate_limits.admin_writes = toolgate::service::limits::Budget::new(1, 3);
    let gateway = Gateway::start_with(config).await;
    gateway.put_catalog(catalog()).await; // one
    let mut browser = Browser::new(&gateway);
    browser.sign_in(&Gateway::admin()).await;
    let path = "/console/tools/billing%3Arefund/disable";
    // The impact shown before Apply: two, as `POST /admin/impact` would be.
    browser.get(path).await;
    let (csrf, revision) = (
        browser.csrf.clone().unwrap(),
        gateway
            .state()
            .app
            .internals()
            .catalog
            .snapshot()
            .revision()
            .to_string(),
    );
    let form = [
        ("csrf", csrf.as_str()),
        ("revision", revision.as_str()),
        ("reason", "r"),
    ];
    let first = browser.post(path, Some(&browser.origin()), &form).await;
    assert_eq!(first.status, StatusCode::SEE_OTHER, "three: {}", first.text);
    let over = browser.post(path, Some(&browser.origin()), &form).await;
    assert_eq!(over.status, StatusCode::TOO_MANY_REQUESTS, "{}", over.text);
}

async fn admin_get(gateway: &Gateway, path: &str) -> serde_json::Value {
    gateway
        .admin_send(reqwest::Method::GET, path, None)
        .await
        .expect(StatusCode::OK)
        .json()
}

/// `key` of each object of the array `items`.
fn strings(items: &serde_json::Value, key: &str) -> Vec<String> {
    items
        .as_array()
        .expect("an array")
        .iter()
        .map(|item| item[key].as_str().expect("a string").to_owned())
        .collect()
}

/// Every string the console prints from the catalog or a caller is shown with its invisible
/// characters spelled out: U+202E reordered `m:bidi\u{202E}txt.exe` into `m:bidiexe.txt`.
/// The JSON editors write them as escapes, which read back as the same characters.
#[tokio::test]
async fn invisible_characters_are_spelled_out_on_every_page() {
    let gateway = Gateway::start().await;
    gateway
        .put_catalog(json!({
            "sources": [{"id": "m", "name": "m\u{200B}irror", "type": "manual"}],
            "tools": [{"source_id": "m", "operation_id": "bidi\u{202E}txt.exe",
                       "name": "bidi\u{202E}txt", "title": "T\u{2066}itle",
                       "description": "Reads\u{FE00} files", "method": "GET",
                       "enabled": false, "disabled_reason": "held\u{061C} for review"}],
            "groups": [{"id": "g", "name": "g\u{00AD}roup", "selectors": [{}]}],
            "policies": [{"id": "p", "name": "p\u{2028}olicy", "allowed_group_ids": ["g"],
                          "claim_matchers": [{"json_path": "roles", "operator": "contains",
                                              "value": "r\u{200D}eader"}]}]
        }))
        .await;
    let mut browser = Browser::new(&gateway);
    browser.sign_in(&Gateway::admin()).await;
    let invisible = [
        '\u{200B}', '\u{202E}', '\u{2066}', '\u{FE00}', '\u{061C}', '\u{00AD}', '\u{2028}',
    ];
    for path in [
        "/console/tools",
        "/console/tools/m:bidi%E2%80%AEtxt.exe",
        "/console/sources/m",
        "/console/groups/g",
        "/console/policies/p",
    ] {
        let page = browser.get(path).await;
        assert_eq!(page.status, StatusCode::OK, "{path}");
        assert!(
            !page.text.chars().any(|c| invisible.contains(&c)),
            "{path} prints an invisible character"
        );
    }
    let tools = browser.get("/console/tools").await.text;
    assert!(tools.contains("m:bidiU+202Etxt.exe"), "{tools}");
    let tool = browser
        .get("/console/tools/m:bidi%E2%80%AEtxt.exe")
        .await
        .text;
    for shown in ["TU+2066itle", "ReadsU+FE00 files", "heldU+061C for review"] {
        assert!(tool.contains(shown), "{shown}");
    }
    // An editor's JSON holds the characters as escapes: sent back, the entity is unchanged.
    let policy = browser.get("/console/policies/p").await.text;
    assert!(policy.contains(r"p\u2028olicy"), "{policy}");
}
