//! Signing in and out. The sign-in form posts the admin token once; the browser keeps only the
//! session cookie.

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{DOCTYPE, Markup, html};
use serde::Deserialize;

use super::form::Write;
use super::html::html_response;
use super::session::{self, Signed};
use crate::transport::AppState;

/// `GET /console`: the console lives under `/console/`.
pub(super) async fn to_console() -> Redirect {
    Redirect::permanent("/console/")
}

#[derive(Debug, Deserialize)]
pub(super) struct Ended {
    #[serde(default)]
    ended: Option<String>,
}

/// `GET /console/`: the sign-in page, or the Tools page for a signed-in admin.
pub(super) async fn page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(ended): Query<Ended>,
) -> Response {
    if session::cookie_id(&headers)
        .and_then(|id| state.console.sessions.get(id, state.app.clock().unix_now()))
        .is_some()
    {
        return Redirect::to("/console/tools").into_response();
    }
    let message = match ended.ended.as_deref() {
        Some("expired") => Some("Your session ended: the token has expired. Sign in again."),
        Some("token") => Some("Your session ended: its token is no longer accepted."),
        Some("not-admin") => {
            Some("Your session ended: the token is not an administrator's any more.")
        }
        Some("signed-out") => Some("You are signed out."),
        _ => None,
    };
    html_response(
        StatusCode::OK,
        sign_in_page(message, false, state.console.sso.is_some()),
    )
}

fn sign_in_page(message: Option<&str>, is_error: bool, sso: bool) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "Sign in · toolgate console" }
                link rel="stylesheet" href="/console/assets/console.css";
            }
            body {
                main.sign-in {
                    h1 { "toolgate console" }
                    @if let Some(message) = message {
                        @if is_error {
                            p.error role="alert" { (message) }
                        } @else {
                            p.notice role="status" { (message) }
                        }
                    }
                    form method="post" action="/console/sign-in" {
                        label for="token" { "Admin token" }
                        input #token type="password" name="token" autocomplete="off" required autofocus;
                        p { button type="submit" { "Sign in" } }
                    }
                    @if sso {
                        // A link, not a form: the CSP's `form-action 'self'` would stop a form's
                        // redirect to the issuer. Shown and named as the button it is.
                        p { a.button href="/console/sso" role="button" { "Sign in with single sign-on" } }
                    }
                    p.muted {
                        "A JWT that meets the gateway's admin rule. It stays on the server for \
                         the session, which ends no later than the token's expiry."
                    }
                }
            }
        }
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct SignInForm {
    #[serde(default)]
    token: String,
}

/// `POST /console/sign-in`: opens a session for a verified admin token.
pub(super) async fn sign_in(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
    body: axum::body::Bytes,
) -> Response {
    // A sign-in posted by another site would sign the browser into the attacker's session.
    if !session::same_origin(&headers, uri.authority().map(|a| a.as_str())) {
        return session::forbidden_write();
    }
    let token = serde_urlencoded::from_bytes::<SignInForm>(&body)
        .map(|form| form.token.trim().to_owned())
        .unwrap_or_default();
    if token.is_empty() {
        return refused(StatusCode::UNAUTHORIZED, "Give an admin token.");
    }
    let caller = match state.app.caller(&token).await {
        Ok(caller) => caller,
        Err(error) => return refused(StatusCode::UNAUTHORIZED, &sentence(error.description())),
    };
    let Ok(desk) = state.app.admin(caller) else {
        return refused(
            StatusCode::FORBIDDEN,
            "This token is valid but not an administrator's: not an administrator.",
        );
    };
    let now = state.app.clock().unix_now();
    let id = state
        .console
        .sessions
        .open(&token, desk.caller().expires_at(), now);
    let max_age = desk
        .caller()
        .expires_at()
        .map_or(session::MAX_LIFETIME_SECS, |exp| exp - now)
        .min(session::MAX_LIFETIME_SECS);
    let mut response = Redirect::to("/console/tools").into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        state.console.sessions.cookie(&id, max_age),
    );
    response
}

/// "the token has expired" → "The token has expired."
fn sentence(description: &str) -> String {
    let mut chars = description.chars();
    match chars.next() {
        Some(first) => format!("{}{}.", first.to_uppercase(), chars.as_str()),
        None => String::new(),
    }
}

fn refused(status: StatusCode, message: &str) -> Response {
    html_response(status, sign_in_page(Some(message), true, false))
}

#[derive(Debug, Deserialize)]
pub(super) struct SignOut {}

/// `POST /console/sign-out`: ends the session on the server and removes the cookie.
pub(super) async fn sign_out(State(state): State<AppState>, write: Write<SignOut>) -> Response {
    let Signed { id, .. } = write.signed;
    state.console.sessions.end(&id);
    let mut response = Redirect::to("/console/?ended=signed-out").into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, state.console.sessions.clearing_cookie());
    response
}
