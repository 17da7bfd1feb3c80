//! How an MCP client finds out where to get a token, and which pages may call the endpoint.
//!
//! - `GET /.well-known/oauth-protected-resource` (and `…/mcp`, the path-suffixed form): the
//!   RFC 9728 document naming `<base>/mcp` as the resource and the configured token issuer as
//!   its authorization server.
//! - A 401 from `/mcp` says where that document is:
//!   `WWW-Authenticate: Bearer resource_metadata="<base>/.well-known/oauth-protected-resource"`,
//!   plus `error="invalid_token"` when a token was sent and refused.
//! - A request carrying an `Origin` that is neither the gateway's own nor configured is refused
//!   (403): the transport's protection against DNS rebinding. Non-browser clients send none.
//!
//! The base URL is the configured public URL, else the request's own `Host` over `http`.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::http::AppState;
use crate::http::errors::ApiError;

/// The path of the metadata document.
const DOCUMENT: &str = "/.well-known/oauth-protected-resource";

/// The base URL the client reached: the configured public URL, or `http://<Host>`.
fn base_url(state: &AppState, headers: &HeaderMap) -> String {
    if let Some(url) = &state.mcp.settings.public_url {
        return url.trim_end_matches('/').to_owned();
    }
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .filter(|host| is_host(host))
        .unwrap_or("localhost");
    format!("http://{host}")
}

/// A `Host` value that is only a host and port (no path, no quote, nothing to inject).
fn is_host(host: &str) -> bool {
    !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'))
}

/// The RFC 9728 document.
pub async fn document(State(state): State<AppState>, headers: HeaderMap) -> Json<Value> {
    let base = base_url(&state, &headers);
    let mut document = json!({
        "resource": format!("{base}/mcp"),
        "bearer_methods_supported": ["header"],
        "resource_name": "toolgate",
    });
    if let Some(issuer) = &state.mcp.issuer {
        document["authorization_servers"] = json!([issuer]);
    }
    Json(document)
}

/// The 401 (or other refusal) for a request whose token was not accepted, with the challenge
/// naming the metadata document.
pub fn challenge(state: &AppState, headers: &HeaderMap, error: ApiError) -> Response {
    let mut response = match &error {
        ApiError::Unauthorized(_) => error.into_response(),
        _ => return error.into_response(),
    };
    let metadata = format!("{}{DOCUMENT}", base_url(state, headers));
    let refused = response
        .headers()
        .get(header::WWW_AUTHENTICATE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::to_owned);
    let value = match refused {
        Some(params) => format!("Bearer resource_metadata=\"{metadata}\", {params}"),
        None => format!("Bearer resource_metadata=\"{metadata}\""),
    };
    if let Ok(value) = HeaderValue::from_str(&value) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// Refuses a browser request from a foreign origin.
pub fn check_origin(state: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin.to_str().unwrap_or_default().trim_end_matches('/');
    let own = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|host| {
            origin
                .split_once("://")
                .is_some_and(|(_, authority)| authority.eq_ignore_ascii_case(host))
        });
    let configured = state
        .mcp
        .settings
        .public_url
        .as_deref()
        .is_some_and(|url| url.trim_end_matches('/').eq_ignore_ascii_case(origin))
        || state
            .mcp
            .settings
            .allowed_origins
            .iter()
            .any(|allowed| allowed.trim_end_matches('/').eq_ignore_ascii_case(origin));
    if own || configured {
        Ok(())
    } else {
        Err(ApiError::Forbidden(format!(
            "requests from origin '{origin}' are not allowed at /mcp; add it to \
             TOOLGATE_MCP_ALLOWED_ORIGINS"
        )))
    }
}
