//! `POST /oauth/token` (RFC 8693 token exchange: delegated tokens) and
//! `GET /.well-known/jwks.json` (the keys they are signed with). The rules are the delegation
//! service's ([`crate::service::delegation`]); this maps the form in and RFC 6749 §5.1/§5.2
//! JSON out.

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;

use super::AppState;
use super::extract::subject_hash;
use crate::service::delegation::{ACCESS_TOKEN_TYPE, ExchangeError, ExchangeRequest, check_types};

/// A token request larger than this is not one (a token and a scope of 64 items fit easily).
const MAX_FORM_BYTES: usize = 64 * 1024;

/// A token request has six parameters; one with more than this many is not one.
const MAX_FORM_FIELDS: usize = 16;

pub(super) fn routes() -> Router<AppState> {
    super::routes::router([
        ("/oauth/token", post(token)),
        ("/.well-known/jwks.json", get(jwks)),
    ])
}

/// An RFC 6749 §5.2 error answer.
fn oauth_error(status: StatusCode, code: &str, description: &str) -> Response {
    let body = json!({"error": code, "error_description": description});
    let mut response = (status, axum::Json(body)).into_response();
    no_store(&mut response);
    response
}

fn no_store(response: &mut Response) {
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
}

fn invalid_request(description: &str) -> Response {
    oauth_error(StatusCode::BAD_REQUEST, "invalid_request", description)
}

/// The form's fields, each at most once (RFC 6749 §3.2); what is wrong with the request.
fn form_fields(headers: &HeaderMap, body: &[u8]) -> Result<Vec<(String, String)>, String> {
    let form_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|value| {
            value
                .trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        });
    if !form_type {
        return Err("the body must be application/x-www-form-urlencoded".to_owned());
    }
    // Counted before parsing: a body of thousands of empty pairs is refused at once.
    if body.split(|&b| b == b'&').count() > MAX_FORM_FIELDS {
        return Err(format!(
            "the form has more than {MAX_FORM_FIELDS} parameters"
        ));
    }
    let fields: Vec<(String, String)> =
        serde_urlencoded::from_bytes(body).map_err(|_| "the body is not a form".to_owned())?;
    let mut names = std::collections::HashSet::with_capacity(fields.len());
    for (name, _) in &fields {
        if !names.insert(name.as_str()) {
            return Err(format!(
                "the parameter '{}' is given more than once",
                name.chars().take(40).collect::<String>()
            ));
        }
    }
    Ok(fields)
}

async fn token(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let app = &state.app;
    // Read here, within this endpoint's own bound, so that a larger body is an OAuth error too.
    let Ok(body) = axum::body::to_bytes(body, MAX_FORM_BYTES).await else {
        let too_large = format!("the body is larger than {MAX_FORM_BYTES} bytes");
        return refused(&state, "invalid_request", invalid_request(&too_large));
    };
    let fields = match form_fields(&headers, &body) {
        Ok(fields) => fields,
        Err(wrong) => return refused(&state, "invalid_request", invalid_request(&wrong)),
    };
    let field = |name: &str| {
        fields
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
    };
    let request = ExchangeRequest {
        grant_type: field("grant_type"),
        subject_token_type: field("subject_token_type"),
        requested_token_type: field("requested_token_type"),
        scope: field("scope"),
        expires_in: field("expires_in"),
    };
    // The grant type first: another grant is `unsupported_grant_type` whatever else is sent.
    if let Err(error) = check_types(&request) {
        let response = oauth_error(StatusCode::BAD_REQUEST, error.code(), &error.to_string());
        return refused(&state, error.code(), response);
    }
    let Some(subject_token) = field("subject_token") else {
        let response = invalid_request("subject_token is required: the token to delegate from");
        return refused(&state, "invalid_request", response);
    };
    let subject = match app.caller(&subject_token).await {
        Ok(subject) => subject,
        Err(error) => {
            let description = format!("subject_token: {}", error.description());
            let response = oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", &description);
            return refused(&state, "invalid_grant", response);
        }
    };
    let exchanged = match app.exchange(&subject, &request) {
        Ok(exchanged) => exchanged,
        Err(limited) => {
            let mut response = oauth_error(
                StatusCode::TOO_MANY_REQUESTS,
                "temporarily_unavailable",
                &limited.to_string(),
            );
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(limited.retry_after_secs),
            );
            return refused(&state, "temporarily_unavailable", response);
        }
    };
    match exchanged {
        Ok(issued) => {
            tracing::info!(
                subject = %subject_hash(subject.sub()),
                depth = issued.depth,
                scope = %issued.scope,
                expires_in = issued.expires_in,
                "delegated token issued"
            );
            app.metrics().delegation("issued");
            let body = json!({
                "access_token": issued.access_token,
                "issued_token_type": ACCESS_TOKEN_TYPE,
                "token_type": "Bearer",
                "expires_in": issued.expires_in,
                "scope": issued.scope,
            });
            let mut response = (StatusCode::OK, axum::Json(body)).into_response();
            no_store(&mut response);
            response
        }
        Err(error) => {
            let status = match error {
                ExchangeError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
                _ => StatusCode::BAD_REQUEST,
            };
            let response = oauth_error(status, error.code(), &error.to_string());
            refused(&state, error.code(), response)
        }
    }
}

/// Counts and logs a refused exchange (by its code: never the token, never the form).
fn refused(state: &AppState, code: &'static str, response: Response) -> Response {
    tracing::info!(code, "token exchange refused");
    state.app.metrics().delegation(code);
    response
}

/// The public keys of toolgate's delegated tokens (RFC 7517).
async fn jwks(State(state): State<AppState>) -> Response {
    let keys = state.app.delegation_keys();
    let mut response = axum::Json(json!({ "keys": keys })).into_response();
    // Short: a new key is published 30 s before it signs.
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=10"),
    );
    response
}
