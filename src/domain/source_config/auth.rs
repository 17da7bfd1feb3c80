//! `config.auth` of an importable source: how `tools/call` authenticates to its upstream
//! (docs/api.md, "Credentials for upstream calls"). The agent's own token is never what goes
//! upstream; at most, with `token_exchange`, it is what the gateway trades for a token of the
//! upstream's audience.
//!
//! | `type` | keys |
//! |---|---|
//! | `static` (default) | none: the configured `headers` only |
//! | `client_credentials` | `token_endpoint`, `client_id`, `client_secret`, `scope`?, `audience`? |
//! | `token_exchange` | `token_endpoint`, `client_id`, `client_secret`, `audience`?, `resource`?, `scope`? |
//!
//! With a token grant the issued token is the call's `Authorization`: it replaces a configured
//! `Authorization` header on calls. The configured headers still go with what the gateway
//! does as itself, such as reading the source's document or listing an MCP server's tools.

use serde_json::{Map, Value};

use super::{ConfigError, error, is_http_url, kind_of};

/// How a source's calls authenticate to its upstream.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum UpstreamAuth {
    /// The configured headers only.
    #[default]
    Static,
    /// An OAuth 2.0 client-credentials token for the gateway itself (RFC 6749 §4.4).
    ClientCredentials(TokenClient),
    /// An OAuth 2.0 token exchange (RFC 8693) per caller, the caller's token as subject.
    TokenExchange(TokenClient),
}

impl UpstreamAuth {
    /// The grant's name in metrics and logs.
    pub const fn grant(&self) -> &'static str {
        match self {
            UpstreamAuth::Static => "static",
            UpstreamAuth::ClientCredentials(_) => "client_credentials",
            UpstreamAuth::TokenExchange(_) => "token_exchange",
        }
    }
}

/// The gateway as an OAuth client of a token endpoint, and what it asks that endpoint for.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenClient {
    pub token_endpoint: String,
    pub client_id: String,
    /// A secret: write-only in the API, never logged (hence no derived `Debug`).
    pub client_secret: String,
    pub scope: Option<String>,
    pub audience: Option<String>,
    /// `token_exchange` only (RFC 8693 §2.1).
    pub resource: Option<String>,
}

impl std::fmt::Debug for TokenClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenClient")
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field("client_secret", &super::super::secrets::MASK)
            .field("scope", &self.scope)
            .field("audience", &self.audience)
            .field("resource", &self.resource)
            .finish()
    }
}

/// The keys of each grant, in the order errors list them.
const CLIENT_CREDENTIALS_KEYS: [&str; 6] = [
    "type",
    "token_endpoint",
    "client_id",
    "client_secret",
    "scope",
    "audience",
];
const TOKEN_EXCHANGE_KEYS: [&str; 7] = [
    "type",
    "token_endpoint",
    "client_id",
    "client_secret",
    "audience",
    "resource",
    "scope",
];

/// `config.auth` read, or every problem with it (fields relative to `config`).
pub fn upstream_auth(config: &Map<String, Value>) -> Result<UpstreamAuth, Vec<ConfigError>> {
    let auth = match config.get("auth") {
        None => return Ok(UpstreamAuth::Static),
        Some(Value::Object(auth)) => auth,
        Some(other) => {
            return Err(vec![error(
                "auth",
                format!(
                    "must be an object with a 'type' (static, client_credentials, \
                     token_exchange), found {}",
                    kind_of(other)
                ),
            )]);
        }
    };
    let mut errors = Vec::new();
    let read = match auth.get("type").and_then(Value::as_str) {
        None if !auth.contains_key("type") => {
            if auth.is_empty() {
                return Ok(UpstreamAuth::Static);
            }
            errors.push(error(
                "auth.type",
                "is required: static, client_credentials or token_exchange",
            ));
            None
        }
        Some("static") => {
            unknown(auth, &["type"], &mut errors);
            Some(UpstreamAuth::Static)
        }
        Some("client_credentials") => {
            unknown(auth, &CLIENT_CREDENTIALS_KEYS, &mut errors);
            client(auth, &mut errors).map(UpstreamAuth::ClientCredentials)
        }
        Some("token_exchange") => {
            unknown(auth, &TOKEN_EXCHANGE_KEYS, &mut errors);
            client(auth, &mut errors).map(UpstreamAuth::TokenExchange)
        }
        _ => {
            errors.push(error(
                "auth.type",
                format!(
                    "must be \"static\", \"client_credentials\" or \"token_exchange\", found {}",
                    auth.get("type")
                        .map_or("nothing".to_owned(), Value::to_string)
                ),
            ));
            None
        }
    };
    match read {
        Some(auth) if errors.is_empty() => Ok(auth),
        _ => Err(errors),
    }
}

/// The client and request fields shared by both grants.
fn client(auth: &Map<String, Value>, errors: &mut Vec<ConfigError>) -> Option<TokenClient> {
    let token_endpoint = match auth.get("token_endpoint") {
        Some(Value::String(url)) if is_http_url(url) => match endpoint_problem(url) {
            None => Some(url.clone()),
            Some(problem) => {
                errors.push(error("auth.token_endpoint", problem));
                None
            }
        },
        Some(other) => {
            errors.push(error(
                "auth.token_endpoint",
                format!(
                    "must be an http:// or https:// URL, found {}",
                    kind_of(other)
                ),
            ));
            None
        }
        None => {
            errors.push(error(
                "auth.token_endpoint",
                "is required: the OAuth token endpoint's URL",
            ));
            None
        }
    };
    let client_id = required_text(auth, "client_id", errors);
    let client_secret = required_text(auth, "client_secret", errors);
    let scope = optional_text(auth, "scope", errors);
    let audience = optional_text(auth, "audience", errors);
    let resource = optional_text(auth, "resource", errors);
    Some(TokenClient {
        token_endpoint: token_endpoint?,
        client_id: client_id?,
        client_secret: client_secret?,
        scope,
        audience,
        resource,
    })
}

/// What is wrong with an http(s) token endpoint URL: credentials in it (they belong in
/// `client_id`/`client_secret`, which are masked; a URL is not), or plain http to another
/// machine (the client secret, and for an exchange the caller's own token, would cross the
/// network in clear).
fn endpoint_problem(url: &str) -> Option<&'static str> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Some(
            "must not carry credentials (user:password@): give them as client_id and \
             client_secret",
        );
    }
    let host = match authority.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    let loopback = host.eq_ignore_ascii_case("localhost") || host == "::1" || is_loopback_v4(host);
    if scheme.eq_ignore_ascii_case("http") && !loopback {
        return Some(
            "must be https:// (the client secret, and for token_exchange the caller's token, \
             are sent to it); http:// only to this machine (localhost, 127.0.0.1, [::1])",
        );
    }
    None
}

/// `127.x.y.z`, four decimal octets.
fn is_loopback_v4(host: &str) -> bool {
    let octets: Vec<&str> = host.split('.').collect();
    octets.len() == 4
        && octets[0] == "127"
        && octets
            .iter()
            .all(|octet| !octet.is_empty() && octet.len() <= 3 && octet.parse::<u8>().is_ok())
}

/// Form values must be printable: a control character in one is a config mistake.
fn usable(text: &str) -> bool {
    !text.trim().is_empty() && !text.chars().any(char::is_control)
}

fn required_text(
    auth: &Map<String, Value>,
    key: &str,
    errors: &mut Vec<ConfigError>,
) -> Option<String> {
    if !auth.contains_key(key) {
        errors.push(error(format!("auth.{key}"), "is required"));
    }
    optional_text(auth, key, errors)
}

fn optional_text(
    auth: &Map<String, Value>,
    key: &str,
    errors: &mut Vec<ConfigError>,
) -> Option<String> {
    match auth.get(key) {
        None => None,
        Some(Value::String(text)) if usable(text) => Some(text.clone()),
        Some(other) => {
            // Never the value itself: it may be the secret.
            errors.push(error(
                format!("auth.{key}"),
                format!(
                    "must be non-empty text without control characters, found {}",
                    kind_of(other)
                ),
            ));
            None
        }
    }
}

fn unknown(auth: &Map<String, Value>, allowed: &[&str], errors: &mut Vec<ConfigError>) {
    for key in auth.keys() {
        if !allowed.contains(&key.as_str()) {
            errors.push(error(
                format!("auth.{key}"),
                format!(
                    "unknown key for this auth type; expected {}",
                    allowed.join(", ")
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(auth: Value, _headers: &[(&str, &str)]) -> Result<UpstreamAuth, Vec<String>> {
        let config = json!({ "auth": auth });
        upstream_auth(config.as_object().expect("object"))
            .map_err(|errors| errors.into_iter().map(|e| e.field).collect())
    }

    #[test]
    fn each_grant_reads_its_fields() {
        assert_eq!(
            read(json!({"type": "static"}), &[]),
            Ok(UpstreamAuth::Static)
        );
        assert_eq!(read(json!({}), &[]), Ok(UpstreamAuth::Static));
        let exchange = read(
            json!({"type": "token_exchange", "token_endpoint": "https://idp/token",
                   "client_id": "gw", "client_secret": "s", "audience": "api",
                   "resource": "https://api/"}),
            &[],
        );
        let Ok(UpstreamAuth::TokenExchange(client)) = exchange else {
            panic!("{exchange:?}")
        };
        assert_eq!(client.audience.as_deref(), Some("api"));
        assert_eq!(client.resource.as_deref(), Some("https://api/"));
        assert!(
            !format!("{client:?}").contains("\"s\""),
            "the secret is not in Debug"
        );
    }

    #[test]
    fn token_endpoints_are_https_or_this_machine_and_carry_no_credentials() {
        for good in [
            "https://idp.example.com/token",
            "http://127.0.0.1:8080/token",
            "http://localhost/token",
            "http://[::1]:9/t",
        ] {
            assert_eq!(endpoint_problem(good), None, "{good}");
        }
        for bad in [
            "http://idp.example.com/token",
            "http://10.0.0.1/token",
            "https://user:pass@idp.example.com/token",
            "http://localhost.evil.com/token",
            "http://127.0.0.1.evil.com/token",
            "http://127.0.0.256/token",
        ] {
            assert!(endpoint_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn every_mistake_is_named_by_its_field() {
        assert_eq!(
            read(
                json!({"type": "client_credentials", "token_endpoint": "ftp://x",
                        "client_secret": "", "resource": "r", "extra": 1}),
                &[]
            ),
            Err(vec![
                "auth.extra".to_owned(),
                "auth.resource".to_owned(),
                "auth.token_endpoint".to_owned(),
                "auth.client_id".to_owned(),
                "auth.client_secret".to_owned(),
            ])
        );
        assert_eq!(
            read(json!({"type": "oauth"}), &[]),
            Err(vec!["auth.type".to_owned()])
        );
        assert_eq!(read(json!("bearer"), &[]), Err(vec!["auth".to_owned()]));
        assert_eq!(
            read(json!({"type": "static", "client_id": "x"}), &[]),
            Err(vec!["auth.client_id".to_owned()])
        );
    }
}
