//! Console sessions. Signing in trades an admin token for a random session id in a cookie
//! (`HttpOnly`, `SameSite=Strict`, `Path=/console`, `Secure` unless the gateway listens on
//! loopback); the token stays on the server, never in a URL or the page's storage.
//!
//! A session is only a handle on its token: every request verifies the token again (the
//! verifier's cache makes that a lookup) and applies the admin rule to it, exactly as for a
//! bearer token, so a revoked key, a changed admin rule or the token's `exp` end the session at
//! once. Writes must also come from the console's own origin and carry the session's anti-CSRF
//! token.
//!
//! Sessions live in this instance's memory, at most [`MAX_SESSIONS`]: behind a load balancer
//! the console needs sticky sessions (or signing in again on another instance).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use base64::Engine as _;

use crate::app::AdminDesk;
use crate::auth::AuthError;
use crate::transport::AppState;

/// The form field that carries the anti-CSRF token.
pub const CSRF_FIELD: &str = "csrf";
/// The cookie's name.
pub const COOKIE: &str = "toolgate_console";
/// Sessions kept at most; signing in past it ends the session closest to its end.
pub const MAX_SESSIONS: usize = 10_000;
/// The longest a session lasts, even with a token that never expires.
pub const MAX_LIFETIME_SECS: i64 = 8 * 3600;

/// One signed-in browser.
#[derive(Debug, Clone)]
pub struct Session {
    /// The admin token it was opened with, verified again on every request.
    token: Arc<str>,
    /// The anti-CSRF token every form of this session carries.
    pub csrf: Arc<str>,
    /// Unix seconds: the token's `exp`, or [`MAX_LIFETIME_SECS`] after sign-in if sooner.
    pub expires_at: i64,
}

/// The sessions of this instance.
pub struct ConsoleSessions {
    sessions: Mutex<HashMap<String, Session>>,
    /// Whether the cookie says `Secure` (the gateway does not listen on loopback).
    secure: bool,
}

impl ConsoleSessions {
    pub fn new(secure: bool) -> ConsoleSessions {
        ConsoleSessions {
            sessions: Mutex::new(HashMap::new()),
            secure,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new session for `token` (verified, an admin's), ending at `token_exp` at the latest.
    /// Returns its id.
    pub fn open(&self, token: &str, token_exp: Option<i64>, now: i64) -> String {
        let id = random_id();
        let expires_at = token_exp.map_or(now + MAX_LIFETIME_SECS, |exp| {
            exp.min(now + MAX_LIFETIME_SECS)
        });
        let session = Session {
            token: token.into(),
            csrf: random_id().into(),
            expires_at,
        };
        let mut sessions = self.lock();
        sessions.retain(|_, session| session.expires_at > now);
        if sessions.len() >= MAX_SESSIONS
            && let Some(soonest) = sessions
                .iter()
                .min_by_key(|(_, session)| session.expires_at)
                .map(|(id, _)| id.clone())
        {
            sessions.remove(&soonest);
        }
        sessions.insert(id.clone(), session);
        id
    }

    /// The live session `id` names.
    pub fn get(&self, id: &str, now: i64) -> Option<Session> {
        let mut sessions = self.lock();
        match sessions.get(id) {
            Some(session) if session.expires_at > now => Some(session.clone()),
            Some(_) => {
                sessions.remove(id);
                None
            }
            None => None,
        }
    }

    /// Ends session `id`; whether there was one.
    pub fn end(&self, id: &str) -> bool {
        self.lock().remove(id).is_some()
    }

    /// Whether cookies say `Secure` (the gateway does not listen on loopback).
    pub fn secure(&self) -> bool {
        self.secure
    }

    /// How many sessions are open (expired ones included until the next sign-in prunes them).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `Set-Cookie` value of session `id`, for `max_age` seconds.
    pub fn cookie(&self, id: &str, max_age: i64) -> HeaderValue {
        let secure = if self.secure { "; Secure" } else { "" };
        let value = format!(
            "{COOKIE}={id}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
            max_age.max(0)
        );
        HeaderValue::from_str(&value).expect("an id of base64url characters is a valid cookie")
    }

    /// The `Set-Cookie` value that removes the cookie.
    pub fn clearing_cookie(&self) -> HeaderValue {
        self.cookie("", 0)
    }
}

/// 256 random bits, base64url.
fn random_id() -> String {
    let mut bytes = [0u8; 32];
    // Without the OS's randomness no session can be safe: better no console than a guessable one.
    getrandom::fill(&mut bytes).expect("the operating system's random number generator works");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The session id of the request's cookie, if it has exactly one console cookie.
pub fn cookie_id(headers: &HeaderMap) -> Option<&str> {
    let mut found = None;
    for value in headers.get_all(header::COOKIE) {
        let Ok(text) = value.to_str() else { continue };
        for pair in text.split(';') {
            if let Some((name, value)) = pair.trim().split_once('=')
                && name == COOKIE
            {
                if found.is_some() {
                    // Two session cookies (one planted by a sibling domain?): trust neither.
                    return None;
                }
                found = Some(value);
            }
        }
    }
    found.filter(|id| !id.is_empty())
}

/// A signed-in administrator: the session's token verified now and passing the admin rule.
/// Anything else is sent to the sign-in page (and its cookie removed).
pub struct Signed {
    /// The admin's desk: holding one means the session's token passed the admin rule.
    pub desk: AdminDesk,
    pub id: String,
    pub session: Session,
}

impl Signed {
    /// The commands for one console write, charged to the admin's write budget as the same
    /// API write is; a spent budget is the 429 that write gets.
    pub fn write(&self) -> Result<&crate::service::Commands, crate::transport::errors::ApiError> {
        Ok(self.desk.write()?)
    }
}

/// Why a session does not admit its request, shown on the sign-in page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// No session cookie, or one this instance does not know.
    None,
    /// The session ran out (the token's `exp`).
    Expired,
    /// The token no longer verifies.
    Token(AuthError),
    /// The token no longer meets the admin rule.
    NotAdmin,
}

impl FromRequestParts<AppState> for Signed {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        match signed(&parts.headers, state).await {
            Ok(signed) => Ok(signed),
            Err((ended, id)) => {
                if let Some(id) = id {
                    state.console.sessions.end(&id);
                }
                Err(to_sign_in(state, ended))
            }
        }
    }
}

async fn signed(headers: &HeaderMap, state: &AppState) -> Result<Signed, (Ended, Option<String>)> {
    let id = cookie_id(headers).ok_or((Ended::None, None))?.to_owned();
    let Some(session) = state
        .console
        .sessions
        .get(&id, state.app.clock().unix_now())
    else {
        return Err((Ended::Expired, Some(id)));
    };
    let caller = match state.app.caller(&session.token).await {
        Ok(caller) => caller,
        Err(AuthError::Expired) => return Err((Ended::Expired, Some(id))),
        Err(error) => return Err((Ended::Token(error), Some(id))),
    };
    let Ok(desk) = state.app.admin(caller) else {
        return Err((Ended::NotAdmin, Some(id)));
    };
    Ok(Signed { desk, id, session })
}

/// To the sign-in page, saying why, with the cookie removed.
fn to_sign_in(state: &AppState, ended: Ended) -> Response {
    let reason = match ended {
        Ended::None => "",
        Ended::Expired => "?ended=expired",
        Ended::Token(_) => "?ended=token",
        Ended::NotAdmin => "?ended=not-admin",
    };
    let mut response = Redirect::to(&format!("/console/{reason}")).into_response();
    if ended != Ended::None {
        response
            .headers_mut()
            .insert(header::SET_COOKIE, state.console.sessions.clearing_cookie());
    }
    response
}

/// Whether a state-changing request comes from the console's own origin: its `Origin` names
/// the host it was sent to; or, where the browser withholds the origin (`Origin: null`, which
/// Chromium sends under the console's own `Referrer-Policy: no-referrer`, or no `Origin`), it
/// says `Sec-Fetch-Site: same-origin` (a header no page can set). Anything else, including
/// neither header, is refused.
pub fn same_origin(headers: &HeaderMap, authority: Option<&str>) -> bool {
    let host = headers
        .get(header::HOST)
        .and_then(|host| host.to_str().ok())
        .or(authority);
    let fetched_from_here = || {
        headers
            .get("sec-fetch-site")
            .is_some_and(|site| site.as_bytes() == b"same-origin")
    };
    match headers.get(header::ORIGIN).map(HeaderValue::to_str) {
        Some(Ok("null")) | None => fetched_from_here(),
        Some(Ok(origin)) => {
            let origin_host = origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"));
            matches!((origin_host, host), (Some(a), Some(b)) if a.eq_ignore_ascii_case(b))
        }
        Some(Err(_)) => false,
    }
}

/// Whether `given` is the session's anti-CSRF token, compared in constant time.
pub fn csrf_matches(session: &Session, given: &str) -> bool {
    let expected = session.csrf.as_bytes();
    let given = given.as_bytes();
    if expected.len() != given.len() {
        return false;
    }
    expected
        .iter()
        .zip(given)
        .fold(0u8, |diff, (a, b)| diff | (a ^ b))
        == 0
}

/// The refusal of a write that fails the origin or anti-CSRF check.
pub fn forbidden_write() -> Response {
    super::html::html_response(
        StatusCode::FORBIDDEN,
        super::html::error_page(
            "Refused",
            "This change did not come from the console's own page (origin or anti-CSRF check \
             failed). Reload the console and try again.",
        ),
    )
}

#[cfg(test)]
mod tests;
