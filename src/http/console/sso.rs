//! Single sign-on for the console: OpenID Connect authorization code with PKCE (RFC 7636,
//! `S256`) against the issuer the gateway already trusts (`TOOLGATE_JWT_ISSUER`), when
//! `TOOLGATE_CONSOLE_OIDC_CLIENT_ID` is set. The token the issuer returns (the access token,
//! else the ID token, whose `nonce` must be ours) is checked exactly like a bearer token and
//! against the admin rule, then opens a session as a pasted token would.
//!
//! Bounds: the discovery document and the token answer are read up to 1 MiB within 10 s;
//! at most [`MAX_PENDING`] sign-ins are in flight, each for [`PENDING_SECS`]; a `state` is good
//! once, and only in the browser that started it (its cookie).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use base64::Engine as _;
use maud::{DOCTYPE, html};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::html::{error_page, html_response};
use super::session::{self, unix_now};
use crate::http::AppState;

/// Sign-ins in flight at most.
pub const MAX_PENDING: usize = 1000;
/// How long a sign-in may take at the issuer.
pub const PENDING_SECS: i64 = 600;
/// The cookie tying a callback to the browser that started the sign-in.
const STATE_COOKIE: &str = "toolgate_console_sso";
/// Largest discovery document or token answer read.
const MAX_BODY: usize = 1 << 20;

/// The console's OIDC client.
pub struct Sso {
    client_id: String,
    client_secret: Option<String>,
    issuer: String,
    http: reqwest::Client,
    endpoints: tokio::sync::OnceCell<Endpoints>,
    pending: Mutex<HashMap<String, Pending>>,
}

#[derive(Debug, Clone, Deserialize)]
struct Endpoints {
    authorization_endpoint: String,
    token_endpoint: String,
}

struct Pending {
    verifier: String,
    nonce: String,
    redirect_uri: String,
    expires_at: i64,
}

impl Sso {
    /// The client `client_id` of `issuer`.
    pub fn new(client_id: String, client_secret: Option<String>, issuer: String) -> Sso {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        Sso {
            client_id,
            client_secret,
            issuer: issuer.trim_end_matches('/').to_owned(),
            http,
            endpoints: tokio::sync::OnceCell::new(),
            pending: Mutex::new(HashMap::new()),
        }
    }

    async fn endpoints(&self) -> Result<&Endpoints, String> {
        self.endpoints
            .get_or_try_init(|| async {
                let url = format!("{}/.well-known/openid-configuration", self.issuer);
                let body = read(self.http.get(&url)).await?;
                serde_json::from_slice::<Endpoints>(&body).map_err(|error| {
                    format!("the issuer's discovery document {url} is not usable: {error}")
                })
            })
            .await
    }

    fn remember(&self, state: &str, pending: Pending) {
        let now = unix_now();
        let mut all = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        all.retain(|_, p| p.expires_at > now);
        if all.len() >= MAX_PENDING
            && let Some(oldest) = all
                .iter()
                .min_by_key(|(_, p)| p.expires_at)
                .map(|(k, _)| k.clone())
        {
            all.remove(&oldest);
        }
        all.insert(state.to_owned(), pending);
    }

    fn take(&self, state: &str) -> Option<Pending> {
        let mut all = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        all.remove(state).filter(|p| p.expires_at > unix_now())
    }
}

/// A GET or POST answered 2xx, its body up to [`MAX_BODY`].
async fn read(request: reqwest::RequestBuilder) -> Result<Vec<u8>, String> {
    let mut response = request
        .send()
        .await
        .map_err(|error| format!("the issuer could not be reached: {error}"))?;
    let status = response.status();
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| format!("the issuer's answer broke off: {error}"))?
    {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(format!(
                "the issuer's answer is larger than {MAX_BODY} bytes"
            ));
        }
        body.extend_from_slice(&chunk);
    }
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
        return Err(format!("the issuer answered {status}: {text}"));
    }
    Ok(body)
}

fn random() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random number generator works");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// Where the issuer sends the browser back: under the public URL when one is set, else this
/// request's host.
fn redirect_uri(state: &AppState, headers: &HeaderMap) -> String {
    if let Some(public) = &state.mcp.settings.public_url {
        return format!("{}/console/sso/callback", public.trim_end_matches('/'));
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let scheme = if state.console.secure() {
        "https"
    } else {
        "http"
    };
    format!("{scheme}://{host}/console/sso/callback")
}

fn refused(status: StatusCode, message: &str) -> Response {
    html_response(status, error_page("Single sign-on failed", message))
}

/// `GET /console/sso`: to the issuer's authorization endpoint.
pub(super) async fn start(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let Some(sso) = &state.sso else {
        return super::html::not_found().await;
    };
    let endpoints = match sso.endpoints().await {
        Ok(endpoints) => endpoints,
        Err(error) => return refused(StatusCode::BAD_GATEWAY, &error),
    };
    let (id, verifier, nonce) = (random(), random(), random());
    let redirect_uri = redirect_uri(&state, &headers);
    let query = serde_urlencoded::to_string([
        ("response_type", "code"),
        ("client_id", sso.client_id.as_str()),
        ("redirect_uri", redirect_uri.as_str()),
        ("scope", "openid"),
        ("state", id.as_str()),
        ("nonce", nonce.as_str()),
        ("code_challenge", challenge(&verifier).as_str()),
        ("code_challenge_method", "S256"),
    ])
    .unwrap_or_default();
    sso.remember(
        &id,
        Pending {
            verifier,
            nonce,
            redirect_uri,
            expires_at: unix_now() + PENDING_SECS,
        },
    );
    let separator = if endpoints.authorization_endpoint.contains('?') {
        '&'
    } else {
        '?'
    };
    let mut response = Redirect::to(&format!(
        "{}{separator}{query}",
        endpoints.authorization_endpoint
    ))
    .into_response();
    // Lax, not Strict: the callback is a navigation from the issuer's site.
    let cookie = format!(
        "{STATE_COOKIE}={id}; Path=/console/sso; HttpOnly; SameSite=Lax; Max-Age={PENDING_SECS}{}",
        if state.console.secure() {
            "; Secure"
        } else {
            ""
        }
    );
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

#[derive(Debug, Deserialize)]
pub(super) struct Callback {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Tokens {
    #[serde(default)]
    access_token: Option<String>,
    #[serde(default)]
    id_token: Option<String>,
}

/// The `state` cookie of the request.
fn state_cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == STATE_COOKIE)
        .map(|(_, value)| value)
}

/// `GET /console/sso/callback`: the code for a token, the token checked, a session opened.
pub(super) async fn callback(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(callback): Query<Callback>,
) -> Response {
    let Some(sso) = &state.sso else {
        return super::html::not_found().await;
    };
    if let Some(error) = callback.error {
        return refused(
            StatusCode::UNAUTHORIZED,
            &format!("The issuer refused: {error}."),
        );
    }
    let (Some(code), Some(id)) = (callback.code, callback.state) else {
        return refused(
            StatusCode::BAD_REQUEST,
            "The issuer sent no code or no state.",
        );
    };
    // The state must be the one this browser started, and unused.
    if state_cookie(&headers) != Some(id.as_str()) {
        return refused(
            StatusCode::BAD_REQUEST,
            "This sign-in was not started in this browser; start again.",
        );
    }
    let Some(pending) = sso.take(&id) else {
        return refused(
            StatusCode::BAD_REQUEST,
            "This sign-in expired or was used already; start again.",
        );
    };
    let token = match exchange(sso, &code, &pending).await {
        Ok(token) => token,
        Err(error) => return refused(StatusCode::BAD_GATEWAY, &error),
    };
    let verified = match verify(&state, &token, &pending).await {
        Ok(verified) => verified,
        Err(response) => return response,
    };
    let now = unix_now();
    let session_id = state.console.open(&token.0, verified.expires_at, now);
    let max_age = verified
        .expires_at
        .map_or(session::MAX_LIFETIME_SECS, |exp| exp - now)
        .min(session::MAX_LIFETIME_SECS);
    // A page that moves on by itself rather than a redirect: a redirect chain that began on the
    // issuer's site would not carry the new SameSite=Strict cookie to the next page.
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head { meta charset="utf-8"; meta http-equiv="refresh" content="0; url=/console/tools"; title { "Signed in · toolgate console" } }
            body { main { p { "Signed in. " a href="/console/tools" { "Continue to the console" } } } }
        }
    };
    let mut response = html_response(StatusCode::OK, page);
    let headers = response.headers_mut();
    headers.append(
        header::SET_COOKIE,
        state.console.cookie(&session_id, max_age),
    );
    if let Ok(value) =
        HeaderValue::from_str(&format!("{STATE_COOKIE}=; Path=/console/sso; Max-Age=0"))
    {
        headers.append(header::SET_COOKIE, value);
    }
    response
}

/// The token to sign in with, and whether it is an ID token (whose nonce is checked).
struct Chosen(String, bool);

async fn exchange(sso: &Sso, code: &str, pending: &Pending) -> Result<Chosen, String> {
    let endpoints = sso.endpoints().await?;
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", pending.redirect_uri.as_str()),
        ("client_id", sso.client_id.as_str()),
        ("code_verifier", pending.verifier.as_str()),
    ];
    if let Some(secret) = &sso.client_secret {
        form.push(("client_secret", secret.as_str()));
    }
    let body = read(sso.http.post(&endpoints.token_endpoint).form(&form)).await?;
    let tokens: Tokens = serde_json::from_slice(&body)
        .map_err(|error| format!("the issuer's token answer is not usable: {error}"))?;
    match (tokens.access_token, tokens.id_token) {
        (Some(access), _) if access.split('.').count() == 3 => Ok(Chosen(access, false)),
        (_, Some(id_token)) => Ok(Chosen(id_token, true)),
        _ => Err("the issuer returned neither a JWT access token nor an ID token".to_owned()),
    }
}

/// The token checked as a bearer token would be, then against the admin rule (and an ID
/// token's nonce).
async fn verify(
    state: &AppState,
    token: &Chosen,
    pending: &Pending,
) -> Result<std::sync::Arc<crate::auth::VerifiedToken>, Response> {
    let verified = state.app.verifier.verify(&token.0).await.map_err(|error| {
        refused(
            StatusCode::UNAUTHORIZED,
            &format!("The issuer's token was refused: {}.", error.description()),
        )
    })?;
    if token.1
        && verified.claims.get("nonce").and_then(|n| n.as_str()) != Some(pending.nonce.as_str())
    {
        return Err(refused(
            StatusCode::UNAUTHORIZED,
            "The ID token's nonce is not this sign-in's.",
        ));
    }
    if !state.app.admin_rule.is_admin(&verified.claims) {
        return Err(refused(
            StatusCode::FORBIDDEN,
            "You signed in, but not as an administrator: not an administrator.",
        ));
    }
    Ok(verified)
}
