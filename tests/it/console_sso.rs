//! The console's single sign-on (docs/console.md, "Sign in"): authorization code with PKCE against a
//! real issuer started here, which checks what it receives (the client, the redirect URI, the
//! S256 challenge, then the code verifier) and signs its tokens with the key the gateway trusts.
//! Driven as a browser would, one redirect at a time.

use crate::support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect};
use axum::routing::{get, post};
use base64::Engine as _;
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, LOCATION, SET_COOKIE};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::gateway::{Gateway, SECRET, config, hs_settings};

const CLIENT: &str = "toolgate-console";

/// code → (challenge, redirect_uri, nonce)
type Codes = HashMap<String, (String, String, String)>;

#[derive(Clone)]
struct Issuer {
    base: Arc<Mutex<String>>,
    codes: Arc<Mutex<Codes>>,
    /// Who signs in next.
    claims: Arc<Mutex<Value>>,
    /// What the token endpoint was sent, for the test to read.
    seen: Arc<Mutex<Vec<HashMap<String, String>>>>,
}

async fn discovery(State(issuer): State<Issuer>) -> axum::Json<Value> {
    let base = issuer.base.lock().expect("the test issuer").clone();
    axum::Json(
        json!({"issuer": base, "authorization_endpoint": format!("{base}/authorize"),
                      "token_endpoint": format!("{base}/token")}),
    )
}

async fn authorize(
    State(issuer): State<Issuer>,
    Query(query): Query<HashMap<String, String>>,
) -> axum::response::Response {
    let get = |key: &str| query.get(key).cloned().unwrap_or_default();
    if get("response_type") != "code"
        || get("client_id") != CLIENT
        || get("code_challenge_method") != "S256"
        || get("code_challenge").len() != 43
        || get("scope") != "openid"
    {
        return (
            axum::http::StatusCode::BAD_REQUEST,
            format!("bad request: {query:?}"),
        )
            .into_response();
    }
    let code = format!(
        "code-{}",
        issuer.codes.lock().expect("the test issuer").len()
    );
    issuer.codes.lock().expect("the test issuer").insert(
        code.clone(),
        (get("code_challenge"), get("redirect_uri"), get("nonce")),
    );
    Redirect::to(&format!(
        "{}?code={code}&state={}",
        get("redirect_uri"),
        get("state")
    ))
    .into_response()
}

async fn token(State(issuer): State<Issuer>, body: String) -> axum::response::Response {
    let form: HashMap<String, String> = serde_urlencoded::from_str(&body).unwrap_or_default();
    issuer
        .seen
        .lock()
        .expect("the test issuer")
        .push(form.clone());
    let get = |key: &str| form.get(key).cloned().unwrap_or_default();
    let Some((challenge, redirect_uri, nonce)) = issuer
        .codes
        .lock()
        .expect("the test issuer")
        .remove(&get("code"))
    else {
        return (
            axum::http::StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_grant"})),
        )
            .into_response();
    };
    let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(get("code_verifier").as_bytes()));
    if get("grant_type") != "authorization_code"
        || get("client_id") != CLIENT
        || get("redirect_uri") != redirect_uri
        || computed != challenge
    {
        return (
            axum::http::StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_grant"})),
        )
            .into_response();
    }
    let base = issuer.base.lock().expect("the test issuer").clone();
    let mut claims = issuer.claims.lock().expect("the test issuer").clone();
    claims["iss"] = json!(base);
    claims["nonce"] = json!(nonce);
    let access = Gateway::token(claims);
    axum::Json(json!({"access_token": access, "token_type": "Bearer", "expires_in": 600}))
        .into_response()
}

async fn start_issuer() -> Issuer {
    let issuer = Issuer {
        base: Arc::default(),
        codes: Arc::default(),
        claims: Arc::new(Mutex::new(json!({"sub": "alice", "roles": ["admin"]}))),
        seen: Arc::default(),
    };
    let app = axum::Router::new()
        .route("/.well-known/openid-configuration", get(discovery))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .with_state(issuer.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("the test issuer");
    *issuer.base.lock().expect("the test issuer") =
        format!("http://{}", listener.local_addr().expect("the test issuer"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    issuer
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("the test issuer")
}

fn cookies(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or_default().to_owned())
        .collect()
}

async fn gateway_for(issuer: &Issuer) -> (Gateway, tempfile::TempDir) {
    let (settings, dir) = sso_config(issuer);
    (Gateway::start_with(settings).await, dir)
}

/// Settings with single sign-on at `issuer`, on a data dir of their own.
fn sso_config(issuer: &Issuer) -> (toolgate::config::Settings, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("the test issuer");
    let mut auth = hs_settings();
    auth.issuer = Some(issuer.base.lock().expect("the test issuer").clone());
    let mut settings = config(dir.path(), auth);
    settings.console_oidc_client_id = Some(CLIENT.to_owned());
    (settings, dir)
}

/// Start at the gateway, through the issuer, back to the callback: its answer, the callback
/// URL and the browser's state cookie.
async fn sign_in(
    gateway: &Gateway,
    tamper: impl Fn(String) -> String,
) -> (reqwest::Response, String, String) {
    let http = client();
    let start = http
        .get(format!("{}/console/sso", gateway.base))
        .send()
        .await
        .expect("the test issuer");
    assert_eq!(start.status(), StatusCode::SEE_OTHER);
    let state_cookie = cookies(start.headers()).join("; ");
    assert!(
        start.headers()[SET_COOKIE]
            .to_str()
            .expect("the test issuer")
            .contains("HttpOnly")
    );
    let at_issuer = start.headers()[LOCATION]
        .to_str()
        .expect("the test issuer")
        .to_owned();
    let back = http.get(&at_issuer).send().await.expect("the test issuer");
    assert_eq!(
        back.status(),
        StatusCode::SEE_OTHER,
        "{}",
        back.text().await.expect("the test issuer")
    );
    let callback = tamper(
        back.headers()[LOCATION]
            .to_str()
            .expect("the test issuer")
            .to_owned(),
    );
    let answer = http
        .get(&callback)
        .header("cookie", &state_cookie)
        .send()
        .await
        .expect("the test issuer");
    (answer, callback, state_cookie)
}

#[tokio::test]
async fn single_sign_on_with_pkce_opens_a_session_for_an_admin() {
    let issuer = start_issuer().await;
    let (gateway, _dir) = gateway_for(&issuer).await;
    let page = client()
        .get(format!("{}/console/", gateway.base))
        .send()
        .await
        .expect("the test issuer");
    assert!(
        page.text()
            .await
            .expect("the test issuer")
            .contains("Sign in with single sign-on")
    );

    let (answer, callback, _) = sign_in(&gateway, |url| url).await;
    assert!(callback.starts_with(&format!("{}/console/sso/callback?code=", gateway.base)));
    assert_eq!(answer.status(), StatusCode::OK);
    let session = cookies(answer.headers())
        .into_iter()
        .find(|c| c.starts_with("toolgate_console=") && c.len() > "toolgate_console=".len())
        .expect("a session cookie");
    let tools = client()
        .get(format!("{}/console/tools", gateway.base))
        .header("cookie", &session)
        .send()
        .await
        .expect("the test issuer");
    assert_eq!(tools.status(), StatusCode::OK);
    // The issuer got the verifier for its challenge, from the registered client, no secret.
    let seen = issuer.seen.lock().expect("the test issuer").clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0]["client_id"], CLIENT);
    assert!(!seen[0].contains_key("client_secret"));
    assert_eq!(seen[0]["code_verifier"].len(), 43);
}

#[tokio::test]
async fn a_replayed_forged_or_foreign_callback_opens_nothing() {
    let issuer = start_issuer().await;
    let (gateway, _dir) = gateway_for(&issuer).await;
    // Another state than the one this browser started.
    let (answer, callback, _) = sign_in(&gateway, |url| url.replace("state=", "state=x")).await;
    assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    assert!(
        cookies(answer.headers())
            .iter()
            .all(|c| !c.starts_with("toolgate_console="))
    );
    // The same callback without the browser's state cookie.
    let bare = client()
        .get(callback.replace("state=x", "state="))
        .send()
        .await
        .expect("the test issuer");
    assert_eq!(bare.status(), StatusCode::BAD_REQUEST);
    // A good callback, then the same one again.
    let (first, callback, state_cookie) = sign_in(&gateway, |url| url).await;
    assert_eq!(first.status(), StatusCode::OK);
    let http = client();
    let again = http
        .get(&callback)
        .header("cookie", &state_cookie)
        .send()
        .await
        .expect("the test issuer");
    assert_eq!(
        again.status(),
        StatusCode::BAD_REQUEST,
        "a state is good once"
    );
    assert_eq!(gateway.state().console.sessions.len(), 1);
}

#[tokio::test]
async fn a_signed_in_user_who_is_not_an_admin_gets_no_session() {
    let issuer = start_issuer().await;
    *issuer.claims.lock().expect("the test issuer") = json!({"sub": "bob", "roles": ["reader"]});
    let (gateway, _dir) = gateway_for(&issuer).await;
    let (answer, _, _) = sign_in(&gateway, |url| url).await;
    assert_eq!(answer.status(), StatusCode::FORBIDDEN);
    assert!(
        answer
            .text()
            .await
            .expect("the test issuer")
            .contains("not an administrator")
    );
    assert!(gateway.state().console.sessions.is_empty());
    let _ = SECRET;
}

#[tokio::test]
async fn without_an_issuer_single_sign_on_cannot_be_configured() {
    let dir = tempfile::tempdir().expect("the test issuer");
    let mut settings = config(dir.path(), hs_settings());
    settings.console_oidc_client_id = Some(CLIENT.to_owned());
    let app = toolgate::server::start(settings, std::future::pending()).await;
    let error = app.err().expect("refused at start").to_string();
    assert!(error.contains("TOOLGATE_JWT_ISSUER"), "{error}");
    let gateway = Gateway::start().await;
    let page = client()
        .get(format!("{}/console/", gateway.base))
        .send()
        .await
        .expect("the test issuer");
    assert!(
        !page
            .text()
            .await
            .expect("the test issuer")
            .contains("single sign-on"),
        "no button when not configured"
    );
}

/// The issuer sends the browser back where configuration says, never to a request's `Host`:
/// with a lax issuer, a victim sent to `/console/sso` with a forged host would have had their
/// code delivered to the attacker's.
#[tokio::test]
async fn the_redirect_uri_comes_from_configuration_never_from_the_host_header() {
    let issuer = start_issuer().await;
    let (gateway, _dir) = gateway_for(&issuer).await;
    let start = client()
        .get(format!("{}/console/sso", gateway.base))
        .header("host", "attacker.example")
        .send()
        .await
        .expect("the gateway");
    assert_eq!(start.status(), StatusCode::SEE_OTHER);
    let location = start.headers()[LOCATION]
        .to_str()
        .expect("a location")
        .to_owned();
    let query: HashMap<String, String> =
        serde_urlencoded::from_str(location.split_once('?').expect("a query").1).expect("a query");
    assert_eq!(
        query["redirect_uri"],
        format!("{}/console/sso/callback", gateway.base),
        "the loopback address the gateway listens on"
    );
    // With a public URL, that one; and its cookies are Secure when it is https.
    let (mut settings, _dir) = sso_config(&issuer);
    settings.mcp.public_url = Some("https://gateway.example".to_owned());
    let public = Gateway::start_with(settings).await;
    let start = client()
        .get(format!("{}/console/sso", public.base))
        .header("host", "attacker.example")
        .send()
        .await
        .expect("the gateway");
    let location = start.headers()[LOCATION]
        .to_str()
        .expect("a location")
        .to_owned();
    assert!(
        location.contains(&format!(
            "redirect_uri={}",
            serde_urlencoded::to_string([("", "https://gateway.example/console/sso/callback")])
                .expect("encoded")
                .trim_start_matches('=')
        )),
        "{location}"
    );
    assert!(
        start.headers()[SET_COOKIE]
            .to_str()
            .expect("a cookie")
            .contains("; Secure"),
        "an https public URL makes cookies Secure"
    );
    // Listening beyond loopback without a public URL: refused at start, saying why.
    let (mut settings, _dir) = sso_config(&issuer);
    settings.listen = "0.0.0.0:0".parse().expect("an address");
    let refused = toolgate::server::start(settings, std::future::pending()).await;
    let error = refused.err().expect("refused at start").to_string();
    assert!(error.contains("TOOLGATE_PUBLIC_URL"), "{error}");
}

/// A sign-in in progress lives in its browser's cookie, sealed: no number of anonymous starts
/// pushes it out (1,000 of them evicted it from the one process-wide map there was), and a
/// cookie the gateway did not seal, or sealed for another state, opens nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_starts_never_push_a_sign_in_out() {
    let issuer = start_issuer().await;
    let (gateway, _dir) = gateway_for(&issuer).await;
    let http = client();
    let start = http
        .get(format!("{}/console/sso", gateway.base))
        .send()
        .await
        .expect("the gateway");
    let state_cookie = cookies(start.headers()).join("; ");
    let at_issuer = start.headers()[LOCATION]
        .to_str()
        .expect("a location")
        .to_owned();
    for _ in 0..1_200 {
        let other = http
            .get(format!("{}/console/sso", gateway.base))
            .send()
            .await
            .expect("the gateway");
        assert_eq!(other.status(), StatusCode::SEE_OTHER);
    }
    let back = http.get(&at_issuer).send().await.expect("the issuer");
    let callback = back.headers()[LOCATION]
        .to_str()
        .expect("a location")
        .to_owned();
    // A forged cookie (the state's value with a seal of our own) is refused.
    let (name, value) = state_cookie.split_once('=').expect("a cookie");
    let (payload, _) = value.split_once('.').expect("a sealed value");
    let forged = http
        .get(&callback)
        .header("cookie", format!("{name}={payload}.AAAA"))
        .send()
        .await
        .expect("the gateway");
    assert_eq!(forged.status(), StatusCode::BAD_REQUEST);
    let answer = http
        .get(&callback)
        .header("cookie", &state_cookie)
        .send()
        .await
        .expect("the gateway");
    assert_eq!(
        answer.status(),
        StatusCode::OK,
        "{}",
        answer.text().await.unwrap_or_default()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_sign_on_works_in_chromium() {
    let issuer = start_issuer().await;
    let (gateway, _dir) = gateway_for(&issuer).await;
    let issuer_base = issuer.base.lock().expect("the test issuer").clone();
    support::browser::run(
        "sso.py",
        vec![
            ("CONSOLE_BASE", gateway.base.clone()),
            ("ISSUER", issuer_base),
        ],
    )
    .await;
    assert_eq!(
        gateway.state().console.sessions.len(),
        0,
        "signed out on the server"
    );
}
