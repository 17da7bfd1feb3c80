//! An OAuth 2.0 token endpoint for the upstream-credential tests: the client-credentials grant
//! (RFC 6749 §4.4) and token exchange (RFC 8693), checking what it receives as a real
//! authorization server would: the client's Basic credentials, the grant's fields, and that
//! the subject token is one this endpoint was told is valid (and whose subject it is).
//!
//! Issued tokens name what they were issued for: `cc-<n>` for the gateway itself,
//! `xchg-<sub>-<n>` for a caller, so an upstream that receives one can tell whose it is.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

pub const CLIENT_ID: &str = "toolgate";
pub const CLIENT_SECRET: &str = "s3cret/with:odd chars";

/// How the endpoint answers, changeable while it runs.
#[derive(Debug, Clone)]
pub struct Behaviour {
    /// `expires_in` of issued tokens (`None`: left out).
    pub expires_in: Option<u64>,
    /// Refuse every grant with this OAuth error code.
    pub refuse: Option<&'static str>,
    /// Wait this long before answering.
    pub delay: Duration,
    /// The `audience` an exchange must ask for, when set.
    pub audience: Option<&'static str>,
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            expires_in: Some(3600),
            refuse: None,
            delay: Duration::ZERO,
            audience: None,
        }
    }
}

#[derive(Default)]
struct Inner {
    behaviour: Mutex<Behaviour>,
    /// Subject tokens this endpoint accepts, and whose they are.
    subjects: Mutex<HashMap<String, String>>,
    /// Every form received (field → value), in order.
    received: Mutex<Vec<HashMap<String, String>>>,
    /// Tokens issued, by grant.
    issued: Mutex<HashMap<&'static str, usize>>,
    /// Requests refused because of what they carried (not by `Behaviour::refuse`).
    rejected: Mutex<Vec<String>>,
}

/// A running endpoint.
#[derive(Clone)]
pub struct TokenEndpoint {
    pub url: String,
    inner: Arc<Inner>,
}

impl TokenEndpoint {
    pub async fn start() -> TokenEndpoint {
        let inner = Arc::new(Inner::default());
        let app = Router::new()
            .route("/token", post(token))
            .with_state(Arc::clone(&inner));
        let base = super::upstream::serve(app).await;
        TokenEndpoint {
            url: format!("{base}/token"),
            inner,
        }
    }

    /// Accepts `token` as the subject token of `sub` from now on.
    pub fn accept_subject(&self, token: &str, sub: &str) {
        self.inner
            .subjects
            .lock()
            .expect("lock")
            .insert(token.to_owned(), sub.to_owned());
    }

    pub fn set(&self, behaviour: Behaviour) {
        *self.inner.behaviour.lock().expect("lock") = behaviour;
    }

    /// Tokens issued by `grant` (`client_credentials`, `token_exchange`) so far.
    pub fn issued(&self, grant: &str) -> usize {
        self.inner
            .issued
            .lock()
            .expect("lock")
            .get(grant)
            .copied()
            .unwrap_or(0)
    }

    /// Every request received.
    pub fn received(&self) -> Vec<HashMap<String, String>> {
        self.inner.received.lock().expect("lock").clone()
    }

    /// Why requests were refused for what they carried: empty when every request was proper.
    pub fn rejected(&self) -> Vec<String> {
        self.inner.rejected.lock().expect("lock").clone()
    }

    /// The `config.auth` of a source using this endpoint with `grant`.
    pub fn auth(&self, grant: &str) -> Value {
        json!({"type": grant, "token_endpoint": self.url, "client_id": CLIENT_ID,
               "client_secret": CLIENT_SECRET})
    }
}

fn oauth_error(status: StatusCode, code: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": code, "error_description": "refused by the test endpoint"})),
    )
        .into_response()
}

/// RFC 6749 §2.3.1: Basic with the form-encoded id and secret.
fn client_ok(headers: &HeaderMap) -> bool {
    let Some(basic) = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
    else {
        return false;
    };
    let Ok(decoded) = STANDARD.decode(basic) else {
        return false;
    };
    let text = String::from_utf8_lossy(&decoded).to_string();
    let Some((id, secret)) = text.split_once(':') else {
        return false;
    };
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(&s.replace('+', " "))
            .decode_utf8_lossy()
            .to_string()
    };
    decode(id) == CLIENT_ID && decode(secret) == CLIENT_SECRET
}

async fn token(State(inner): State<Arc<Inner>>, headers: HeaderMap, body: String) -> Response {
    let form: HashMap<String, String> = body
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| {
            let decode = |s: &str| {
                percent_encoding::percent_decode_str(&s.replace('+', " "))
                    .decode_utf8_lossy()
                    .to_string()
            };
            (decode(k), decode(v))
        })
        .collect();
    inner.received.lock().expect("lock").push(form.clone());
    let behaviour = inner.behaviour.lock().expect("lock").clone();
    tokio::time::sleep(behaviour.delay).await;
    let reject = |why: String| {
        inner.rejected.lock().expect("lock").push(why);
    };
    if !client_ok(&headers) {
        reject("client authentication".to_owned());
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client");
    }
    if headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_none_or(|v| !v.starts_with("application/x-www-form-urlencoded"))
    {
        reject("content type".to_owned());
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request");
    }
    if let Some(code) = behaviour.refuse {
        return oauth_error(StatusCode::BAD_REQUEST, code);
    }
    let field = |name: &str| form.get(name).map(String::as_str);
    let (grant, subject) = match field("grant_type") {
        Some("client_credentials") => {
            if form.contains_key("subject_token") {
                reject("a subject token in a client-credentials grant".to_owned());
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_request");
            }
            ("client_credentials", None)
        }
        Some("urn:ietf:params:oauth:grant-type:token-exchange") => {
            if field("subject_token_type") != Some("urn:ietf:params:oauth:token-type:access_token")
            {
                reject("subject_token_type".to_owned());
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_request");
            }
            if let Some(audience) = behaviour.audience
                && field("audience") != Some(audience)
            {
                reject(format!("audience {:?}", field("audience")));
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_target");
            }
            let subjects = inner.subjects.lock().expect("lock");
            let Some(sub) = field("subject_token").and_then(|t| subjects.get(t)) else {
                reject("an unknown subject token".to_owned());
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
            };
            ("token_exchange", Some(sub.clone()))
        }
        other => {
            reject(format!("grant_type {other:?}"));
            return oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type");
        }
    };
    let n = {
        let mut issued = inner.issued.lock().expect("lock");
        let count = issued.entry(grant).or_default();
        *count += 1;
        *count
    };
    let access_token = match subject {
        Some(sub) => format!("xchg-{sub}-{n}"),
        None => format!("cc-{n}"),
    };
    let mut answer = json!({"access_token": access_token, "token_type": "Bearer",
                            "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"});
    if let Some(expires_in) = behaviour.expires_in {
        answer["expires_in"] = json!(expires_in);
    }
    axum::Json(answer).into_response()
}
