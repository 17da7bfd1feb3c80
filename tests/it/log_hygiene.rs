//! No token, claim value or email ever reaches the logs: the real binary, at the most verbose
//! level in both formats, handles good and failing requests (bad signature, expired, malformed,
//! 403, a rate-limited subject, an admin write) whose tokens carry distinctive values, and its
//! whole stderr is searched for them.

use crate::support;

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Map, Value, json};
use support::gateway::SECRET;
use support::logged::LoggedProcess;
use toolgate::auth::mint_hs256;

const EMAIL: &str = "jane.doe+logcanary@example.org";
const ADMIN_EMAIL: &str = "root.canary@example.net";
/// The `sub` of the agent that delegates (its own rate-limit bucket).
const DELEGATOR: &str = "delegator-Kq3Canary";
/// Claim values that must never be logged (besides the emails).
const CLAIM_VALUES: [&str; 5] = [
    "sub-Zq8wCanary",
    "tenant-Xy91Canary",
    "proj-Vb77Canary",
    "Jane Canary Secretperson",
    "role-canary-reader",
];

fn claims(exp: i64) -> Map<String, Value> {
    json!({
        "sub": CLAIM_VALUES[0],
        "email": EMAIL,
        "tenant": CLAIM_VALUES[1],
        "project": CLAIM_VALUES[2],
        "name": CLAIM_VALUES[3],
        "roles": ["reader", CLAIM_VALUES[4]],
        "iat": support::unix_now(),
        "exp": exp,
    })
    .as_object()
    .expect("object")
    .clone()
}

fn catalog() -> Value {
    json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual"}],
        "tools": [{"source_id": "billing", "operation_id": "list_invoices", "name": "list_invoices", "method": "GET"}],
        "groups": [{"id": "g-all", "name": "all", "selectors": [{}]}],
        "policies": [{"id": "p-read", "name": "readers", "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "reader"}], "allowed_group_ids": ["g-all"]}]
    })
}

/// Every request the test sends, and the tokens (whole) they carried.
async fn traffic(base: &str) -> Vec<String> {
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let good = mint_hs256(SECRET, &claims(support::unix_now() + 600)).expect("mint");
    let expired = mint_hs256(SECRET, &claims(support::unix_now() - 3600)).expect("mint");
    let forged = mint_hs256(
        "another-secret-of-32-bytes-length!",
        &claims(support::unix_now() + 600),
    )
    .expect("mint");
    let mut admin_claims = claims(support::unix_now() + 600);
    admin_claims.insert("sub".into(), json!(ADMIN_EMAIL));
    admin_claims.insert("roles".into(), json!(["admin"]));
    let admin = mint_hs256(SECRET, &admin_claims).expect("mint");
    let malformed = format!("{}.{}", good.split('.').next().expect("header"), EMAIL);

    let send = |method: Method, path: &str, token: &str, body: Option<Value>| {
        let mut request = client
            .request(method, format!("{base}{path}"))
            .bearer_auth(token);
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        request.send()
    };
    let status = |reply: reqwest::Result<reqwest::Response>| reply.expect("answered").status();

    let echoing_query = format!("/agents/tools?{}=1", CLAIM_VALUES[1]);
    let label = json!({"name": "pii", "description": EMAIL});
    #[rustfmt::skip]
    let requests: [(Method, &str, &str, Option<Value>, StatusCode); 9] = [
        (Method::PUT, "/admin/catalog", &admin, Some(catalog()), StatusCode::OK),
        (Method::GET, "/agents/tools", &good, None, StatusCode::OK),
        (Method::GET, "/agents/tools", &forged, None, StatusCode::UNAUTHORIZED),
        (Method::GET, "/agents/tools", &expired, None, StatusCode::UNAUTHORIZED),
        (Method::GET, "/agents/tools", &malformed, None, StatusCode::UNAUTHORIZED),
        (Method::GET, "/agents/tools?include_disabled=true", &good, None, StatusCode::FORBIDDEN),
        (Method::DELETE, "/admin/tools/billing:list_invoices", &good, None, StatusCode::FORBIDDEN),
        // A query that echoes a claim value back in its problem detail is not a log line either.
        (Method::GET, &echoing_query, &good, None, StatusCode::BAD_REQUEST),
        (Method::POST, "/admin/labels", &admin, Some(label), StatusCode::CREATED),
    ];
    for (method, path, token, body, expected) in requests {
        let what = format!("{method} {path}");
        assert_eq!(
            status(send(method, path, token, body).await),
            expected,
            "{what}"
        );
    }
    // A stream: opened, first event read, closed.
    let mut stream = send(Method::GET, "/agents/tools/stream", &good, None)
        .await
        .expect("stream");
    assert_eq!(stream.status(), StatusCode::OK);
    tokio::time::timeout(Duration::from_secs(5), stream.chunk())
        .await
        .expect("first event")
        .expect("chunk");
    drop(stream);
    // Past the burst of agent reads: 429s for this subject.
    let mut limited = 0;
    for _ in 0..4 {
        if status(send(Method::GET, "/agents/tools", &good, None).await)
            == StatusCode::TOO_MANY_REQUESTS
        {
            limited += 1;
        }
    }
    assert!(limited > 0, "the subject was rate limited");
    let (delegator, child) = delegation(&client, base).await;
    vec![good, expired, forged, admin, malformed, delegator, child]
}

/// A token exchange issued and one refused, and a call with the delegated token: neither the
/// subject token nor the issued one may be logged.
async fn delegation(client: &reqwest::Client, base: &str) -> (String, String) {
    let mut delegator_claims = claims(support::unix_now() + 600);
    delegator_claims.insert("sub".into(), json!(DELEGATOR));
    let delegator = mint_hs256(SECRET, &delegator_claims).expect("mint");
    let exchange = |scope: &'static str| {
        let form = serde_urlencoded::to_string([
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            ),
            ("subject_token", delegator.as_str()),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:access_token",
            ),
            ("scope", scope),
        ])
        .expect("a form");
        client
            .post(format!("{base}/oauth/token"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
    };
    let issued = exchange("tool:billing:list_invoices")
        .await
        .expect("answered");
    assert_eq!(issued.status(), StatusCode::OK);
    let body: Value = serde_json::from_slice(&issued.bytes().await.expect("body")).expect("JSON");
    let child = body["access_token"].as_str().expect("a token").to_owned();
    let refused = exchange("tool:nothing").await.expect("answered");
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let read = client
        .get(format!("{base}/agents/tools"))
        .bearer_auth(&child)
        .send()
        .await
        .expect("answered");
    assert_eq!(read.status(), StatusCode::OK);
    (delegator, child)
}

fn assert_clean(log: &str, tokens: &[String]) {
    // The log is not vacuous: requests were logged, with their request ids and hashed subjects.
    assert!(
        log.matches("request answered").count() >= 10,
        "too little was logged to prove anything:\n{log}"
    );
    assert!(log.contains("request_id") && log.contains("subject"));
    assert!(log.contains("delegated token issued") && log.contains("token exchange refused"));
    for status in ["401", "403", "429"] {
        assert!(log.contains(status), "no {status} logged");
    }
    let mut canaries: Vec<String> = CLAIM_VALUES.iter().map(|v| (*v).to_owned()).collect();
    canaries.extend([
        EMAIL.to_owned(),
        ADMIN_EMAIL.to_owned(),
        DELEGATOR.to_owned(),
        "logcanary".to_owned(),
    ]);
    for token in tokens {
        canaries.push(token.clone());
        // Any of the three parts alone would give the claims (payload) or a reusable signature.
        canaries.extend(
            token
                .split('.')
                .filter(|part| part.len() > 8)
                .map(str::to_owned),
        );
    }
    for canary in canaries {
        assert!(
            !log.contains(&canary),
            "the log contains {canary:?}:\n{}",
            log.lines()
                .filter(|line| line.contains(&canary))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_claims_and_emails_never_reach_the_logs() {
    for format in ["json", "text"] {
        let mut gateway = tokio::task::spawn_blocking(move || {
            LoggedProcess::serve(&[
                ("TOOLGATE_LOG_LEVEL", "trace"),
                ("TOOLGATE_LOG_FORMAT", format),
                ("TOOLGATE_RATE_LIMIT_AGENT_READS_PER_SEC", "1"),
                ("TOOLGATE_RATE_LIMIT_AGENT_READS_BURST", "3"),
            ])
        })
        .await
        .expect("started");
        let tokens = traffic(&gateway.base).await;
        let gateway = tokio::task::spawn_blocking(move || {
            gateway.terminate();
            gateway
        })
        .await
        .expect("terminated");
        assert_clean(&gateway.log(), &tokens);
    }
}
