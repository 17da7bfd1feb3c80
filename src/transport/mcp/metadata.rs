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

use crate::transport::AppState;
use crate::transport::errors::ApiError;

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
pub(super) async fn document(State(state): State<AppState>, headers: HeaderMap) -> Json<Value> {
    let base = base_url(&state, &headers);
    let mut document = json!({
        "resource": format!("{base}/mcp"),
        "bearer_methods_supported": ["header"],
        "resource_name": "toolgate",
    });
    if let Some(issuer) = state.app.issuer() {
        document["authorization_servers"] = json!([issuer]);
    }
    Json(document)
}

/// The 401 (or other refusal) for a request whose token was not accepted, with the challenge
/// naming the metadata document.
pub(super) fn challenge(state: &AppState, headers: &HeaderMap, error: ApiError) -> Response {
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
pub(super) fn check_origin(state: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin.to_str().unwrap_or_default().trim_end_matches('/');
    let settings = &state.mcp.settings;
    let allowed = match settings.public_url.as_deref() {
        Some(url) => origin_of(url).eq_ignore_ascii_case(origin),
        // The `Host` header proves nothing (a DNS-rebinding page sends its own host as both
        // `Host` and `Origin`): without a public URL, only pages served from this machine.
        None => is_loopback_origin(origin),
    } || settings
        .allowed_origins
        .iter()
        .any(|allowed| allowed.trim_end_matches('/').eq_ignore_ascii_case(origin));
    if allowed {
        Ok(())
    } else {
        Err(ApiError::Forbidden(format!(
            "requests from origin '{origin}' are not allowed at /mcp; add it to \
             TOOLGATE_MCP_ALLOWED_ORIGINS"
        )))
    }
}

/// `scheme://authority` of a URL (`https://gateway.example.com/prefix` →
/// `https://gateway.example.com`).
fn origin_of(url: &str) -> &str {
    let authority_start = url.find("://").map_or(0, |at| at + 3);
    match url[authority_start..].find('/') {
        Some(slash) => &url[..authority_start + slash],
        None => url,
    }
}

/// `http(s)://localhost`, `127.0.0.1` or `[::1]`, with or without a port.
fn is_loopback_origin(origin: &str) -> bool {
    let Some(authority) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !authority.ends_with(']') => (host, Some(port)),
        _ => (authority, None),
    };
    port.is_none_or(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
        && (host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "[::1]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins_and_the_public_urls_origin() {
        for origin in [
            "http://localhost",
            "http://localhost:6274",
            "https://127.0.0.1:8080",
            "http://[::1]",
            "http://[::1]:3000",
        ] {
            assert!(is_loopback_origin(origin), "{origin}");
        }
        for origin in [
            "http://evil.example.com",
            "http://localhost.evil.example.com",
            "http://127.0.0.1.nip.io",
            "http://localhost:",
            "http://localhost:80x",
            "file://localhost",
            "null",
        ] {
            assert!(!is_loopback_origin(origin), "{origin}");
        }
        assert_eq!(
            origin_of("https://gateway.example.com/tools"),
            "https://gateway.example.com"
        );
        assert_eq!(
            origin_of("https://gw.example.com:8443"),
            "https://gw.example.com:8443"
        );
    }
}
