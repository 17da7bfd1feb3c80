//! Single sign-on for the console: OpenID Connect authorization code with PKCE (RFC 7636,
//! `S256`) against the issuer the gateway already trusts (`TOOLGATE_JWT_ISSUER`), when
//! `TOOLGATE_CONSOLE_OIDC_CLIENT_ID` is set. The token the issuer returns (the access token,
//! else the ID token, whose `nonce` must be ours) is checked exactly like a bearer token and
//! against the admin rule, then opens a session as a pasted token would.
//!
//! Bounds: the discovery document and the token answer are read up to 1 MiB within 10 s.
//! A sign-in in progress keeps nothing on the server: its `state`, PKCE verifier, nonce and
//! expiry travel sealed (HMAC-SHA256 under a key of this process) in a cookie of the browser
//! that started it, for [`PENDING_SECS`], so that no number of anonymous starts can push out
//! another's sign-in. A `state` is good only in the browser that started it, and once: states
//! used are remembered until they expire (at most [`MAX_USED`]).
//!
//! The issuer sends the browser back to a redirect URI made from configuration only
//! (`TOOLGATE_PUBLIC_URL`, or the loopback address the gateway listens on): one made from a
//! request's `Host` would let whoever sends a victim to `/console/sso` with a forged host
//! receive the victim's code at a lax issuer.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use hmac::{Hmac, Mac};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use base64::Engine as _;
use maud::{DOCTYPE, html};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::html::{error_page, html_response};
use super::session;
use crate::app::AdminDesk;
use crate::transport::AppState;

/// Used states remembered at most (each until its sign-in would have expired).
pub const MAX_USED: usize = 10_000;
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
    /// Where the issuer sends the browser back (from configuration only).
    redirect_uri: String,
    http: reqwest::Client,
    endpoints: tokio::sync::OnceCell<Endpoints>,
    /// Seals the state cookie; made at start, so a restart ends the sign-ins in progress.
    seal: Hmac<Sha256>,
    /// States already used, with when they expire.
    used: Mutex<HashMap<String, i64>>,
}

#[derive(Debug, Clone, Deserialize)]
struct Endpoints {
    authorization_endpoint: String,
    token_endpoint: String,
}

/// A sign-in in progress, as its cookie carries it.
#[derive(Debug, serde::Serialize, Deserialize)]
struct Pending {
    state: String,
    verifier: String,
    nonce: String,
    expires_at: i64,
}

impl Sso {
    /// The client `client_id` of `issuer`, which sends browsers back under `base` (the public
    /// URL, or the loopback address the gateway listens on).
    pub fn new(
        client_id: String,
        client_secret: Option<String>,
        issuer: String,
        base: &str,
    ) -> Sso {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).expect("the operating system's random number generator works");
        Sso {
            client_id,
            client_secret,
            issuer: issuer.trim_end_matches('/').to_owned(),
            redirect_uri: format!("{}/console/sso/callback", base.trim_end_matches('/')),
            http,
            endpoints: tokio::sync::OnceCell::new(),
            seal: Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes a key of any length"),
            used: Mutex::new(HashMap::new()),
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

    /// `pending` as a cookie value: its JSON and the JSON's seal, each in base64url.
    fn sealed(&self, pending: &Pending) -> String {
        let json = serde_json::to_vec(pending).unwrap_or_default();
        let mut mac = self.seal.clone();
        mac.update(&json);
        let b64 = &base64::engine::general_purpose::URL_SAFE_NO_PAD;
        format!(
            "{}.{}",
            b64.encode(&json),
            b64.encode(mac.finalize().into_bytes())
        )
    }

    /// The sign-in a cookie value carries, if this process sealed it, it has not expired and
    /// its state is `state` and was not used before (it is used now).
    fn take(&self, cookie: &str, state: &str, now: i64) -> Option<Pending> {
        let b64 = &base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let (json, seal) = cookie.split_once('.')?;
        let (json, seal) = (b64.decode(json).ok()?, b64.decode(seal).ok()?);
        let mut mac = self.seal.clone();
        mac.update(&json);
        mac.verify_slice(&seal).ok()?;
        let pending: Pending = serde_json::from_slice(&json).ok()?;
        if pending.state != state || pending.expires_at <= now {
            return None;
        }
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        used.retain(|_, expires_at| *expires_at > now);
        if used.contains_key(state) {
            return None;
        }
        if used.len() >= MAX_USED
            && let Some(oldest) = used
                .iter()
                .min_by_key(|(_, expires_at)| **expires_at)
                .map(|(k, _)| k.clone())
        {
            used.remove(&oldest);
        }
        used.insert(state.to_owned(), pending.expires_at);
        Some(pending)
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

fn refused(status: StatusCode, message: &str) -> Response {
    html_response(status, error_page("Single sign-on failed", message))
}

/// `GET /console/sso`: to the issuer's authorization endpoint.
pub(super) async fn start(State(state): State<AppState>) -> Response {
    let Some(sso) = &state.console.sso else {
        return super::html::not_found().await;
    };
    let endpoints = match sso.endpoints().await {
        Ok(endpoints) => endpoints,
        Err(error) => return refused(StatusCode::BAD_GATEWAY, &error),
    };
    let (id, verifier, nonce) = (random(), random(), random());
    let query = serde_urlencoded::to_string([
        ("response_type", "code"),
        ("client_id", sso.client_id.as_str()),
        ("redirect_uri", sso.redirect_uri.as_str()),
        ("scope", "openid"),
        ("state", id.as_str()),
        ("nonce", nonce.as_str()),
        ("code_challenge", challenge(&verifier).as_str()),
        ("code_challenge_method", "S256"),
    ])
    .unwrap_or_default();
    let sealed = sso.sealed(&Pending {
        state: id,
        verifier,
        nonce,
        expires_at: state.app.clock().unix_now() + PENDING_SECS,
    });
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
        "{STATE_COOKIE}={sealed}; Path=/console/sso; HttpOnly; SameSite=Lax; Max-Age={PENDING_SECS}{}",
        if state.console.sessions.secure() {
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
    let Some(sso) = &state.console.sso else {
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
    let Some(cookie) = state_cookie(&headers) else {
        return refused(
            StatusCode::BAD_REQUEST,
            "This sign-in was not started in this browser; start again.",
        );
    };
    let Some(pending) = sso.take(cookie, &id, state.app.clock().unix_now()) else {
        return refused(
            StatusCode::BAD_REQUEST,
            "This sign-in was not started in this browser, expired or was used already; start again.",
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
    let now = state.app.clock().unix_now();
    let session_id = state
        .console
        .sessions
        .open(&token.0, verified.caller().expires_at(), now);
    let max_age = verified
        .caller()
        .expires_at()
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
        state.console.sessions.cookie(&session_id, max_age),
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
        ("redirect_uri", sso.redirect_uri.as_str()),
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
) -> Result<AdminDesk, Response> {
    let caller = state.app.caller(&token.0).await.map_err(|error| {
        refused(
            StatusCode::UNAUTHORIZED,
            &format!("The issuer's token was refused: {}.", error.description()),
        )
    })?;
    if token.1
        && caller.claims().get("nonce").and_then(|n| n.as_str()) != Some(pending.nonce.as_str())
    {
        return Err(refused(
            StatusCode::UNAUTHORIZED,
            "The ID token's nonce is not this sign-in's.",
        ));
    }
    state.app.admin(caller).map_err(|_| {
        refused(
            StatusCode::FORBIDDEN,
            "You signed in, but not as an administrator: not an administrator.",
        )
    })
}
