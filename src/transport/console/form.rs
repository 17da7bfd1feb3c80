//! A console write: a signed-in admin, from the console's own origin, with the session's
//! anti-CSRF token, and its form fields.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use super::html::{error_page, html_response};
use super::session::{self, CSRF_FIELD, Signed};
use crate::transport::AppState;
use crate::transport::extract::RawBody;

/// A write's admin and form. The checks run in this order: session (else to sign-in), origin
/// and anti-CSRF token (else 403), the admin-write budget (else 429), form (else 400).
pub(super) struct Write<T> {
    pub(super) signed: Signed,
    pub(super) form: T,
}

impl<T: DeserializeOwned> FromRequest<AppState> for Write<T> {
    type Rejection = Response;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Response> {
        let (mut parts, body) = request.into_parts();
        let signed = Signed::from_request_parts(&mut parts, state).await?;
        if !session::same_origin(&parts.headers, parts.uri.authority().map(|a| a.as_str())) {
            return Err(session::forbidden_write());
        }
        let request = Request::from_parts(parts, body);
        let RawBody(bytes) = RawBody::from_request(request, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let csrf = serde_urlencoded::from_bytes::<Vec<(String, String)>>(&bytes)
            .ok()
            .and_then(|pairs| {
                pairs
                    .into_iter()
                    .find(|(key, _)| key == CSRF_FIELD)
                    .map(|(_, value)| value)
            });
        if !csrf.is_some_and(|csrf| session::csrf_matches(&signed.session, &csrf)) {
            return Err(session::forbidden_write());
        }
        let form = serde_urlencoded::from_bytes::<T>(&bytes).map_err(|error| {
            html_response(
                StatusCode::BAD_REQUEST,
                error_page("Bad form", &format!("The form could not be read: {error}")),
            )
        })?;
        Ok(Write { signed, form })
    }
}
