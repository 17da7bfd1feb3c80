//! One request to an OAuth 2.0 token endpoint: the client-credentials grant (RFC 6749 §4.4) or
//! a token exchange (RFC 8693 §2.1), the client authenticated with HTTP Basic (RFC 6749
//! §2.3.1, which every server must support), the answer read within bounds.
//!
//! Not the `oauth2` crate: it has no RFC 8693 grant, reads answers without a size bound, and
//! brings its own HTTP client setup; the two form posts below are all that is needed.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;

use crate::domain::source_config::TokenClient;

/// A token endpoint's answer larger than this is not a token answer.
pub(super) const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// An issued token longer than this is refused rather than cached and sent on every call.
pub(super) const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// RFC 8693 §3: the type of the subject token toolgate presents, and of what it asks for.
pub const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
/// RFC 8693 §2.1: the grant type of a token exchange.
pub const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// What a grant asks for.
pub(super) enum Grant<'a> {
    ClientCredentials,
    /// The caller's verified token, as the subject of the exchange.
    Exchange {
        subject_token: &'a str,
    },
}

/// A token the endpoint issued.
pub(super) struct Issued {
    pub access_token: String,
    /// `expires_in`, when the endpoint said.
    pub lifetime: Option<Duration>,
}

/// Without the token.
impl std::fmt::Debug for Issued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issued")
            .field("lifetime", &self.lifetime)
            .finish_non_exhaustive()
    }
}

/// Why there is no token. Messages never quote the endpoint's URL or the client's secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum TokenFailure {
    /// The endpoint answered with an OAuth error (RFC 6749 §5.2): its `error` code.
    Refused { code: String, status: u16 },
    /// No answer within the call's time.
    Timeout,
    /// The endpoint could not be reached.
    Unreachable(String),
    /// Something came back that is not a usable token answer.
    Bad {
        message: String,
        status: Option<u16>,
    },
}

/// Form values in `Authorization: Basic`: RFC 6749 §2.3.1 has them form-encoded first.
const FORM: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'*');

fn basic(client: &TokenClient) -> String {
    let id = utf8_percent_encode(&client.client_id, FORM).to_string();
    let secret = utf8_percent_encode(&client.client_secret, FORM).to_string();
    format!("Basic {}", STANDARD.encode(format!("{id}:{secret}")))
}

/// The form of `grant` for `client`.
fn form<'a>(client: &'a TokenClient, grant: &Grant<'a>) -> Vec<(&'static str, &'a str)> {
    let mut form = Vec::with_capacity(6);
    match grant {
        Grant::ClientCredentials => form.push(("grant_type", "client_credentials")),
        Grant::Exchange { subject_token } => {
            form.push(("grant_type", TOKEN_EXCHANGE_GRANT));
            form.push(("subject_token", subject_token));
            form.push(("subject_token_type", ACCESS_TOKEN_TYPE));
            form.push(("requested_token_type", ACCESS_TOKEN_TYPE));
            if let Some(resource) = &client.resource {
                form.push(("resource", resource));
            }
        }
    }
    if let Some(audience) = &client.audience {
        form.push(("audience", audience));
    }
    if let Some(scope) = &client.scope {
        form.push(("scope", scope));
    }
    form
}

/// Asks `client.token_endpoint` for a token by `grant`, within `timeout`.
pub(super) async fn request(
    http: &reqwest::Client,
    client: &TokenClient,
    grant: Grant<'_>,
    timeout: Duration,
) -> Result<Issued, TokenFailure> {
    let send = http
        .post(&client.token_endpoint)
        .header(reqwest::header::AUTHORIZATION, basic(client))
        .header(reqwest::header::ACCEPT, "application/json")
        .form(&form(client, &grant))
        .timeout(timeout)
        .send();
    let response = match send.await {
        Ok(response) => response,
        Err(error) if error.is_timeout() => return Err(TokenFailure::Timeout),
        // Without the URL: the error's text would name it.
        Err(error) => {
            return Err(TokenFailure::Unreachable(error.without_url().to_string()));
        }
    };
    let status = response.status().as_u16();
    let body = read_bounded(response).await?;
    answer(status, &body)
}

async fn read_bounded(mut response: reqwest::Response) -> Result<Vec<u8>, TokenFailure> {
    let status = response.status().as_u16();
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                    return Err(TokenFailure::Bad {
                        message: format!("the answer is larger than {MAX_ANSWER_BYTES} bytes"),
                        status: Some(status),
                    });
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(error) if error.is_timeout() => return Err(TokenFailure::Timeout),
            Err(error) => {
                return Err(TokenFailure::Bad {
                    message: format!("the answer broke off: {}", error.without_url()),
                    status: Some(status),
                });
            }
        }
    }
}

#[derive(Deserialize)]
struct Success {
    access_token: String,
    token_type: String,
    #[serde(default)]
    expires_in: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ErrorAnswer {
    error: String,
}

/// The token in a `status` answer with `body`.
fn answer(status: u16, body: &[u8]) -> Result<Issued, TokenFailure> {
    if !(200..300).contains(&status) {
        return match serde_json::from_slice::<ErrorAnswer>(body) {
            Ok(answer) if is_error_code(&answer.error) => Err(TokenFailure::Refused {
                code: answer.error,
                status,
            }),
            _ => Err(TokenFailure::Bad {
                message: "the endpoint answered without an OAuth error".to_owned(),
                status: Some(status),
            }),
        };
    }
    let bad = |message: &str| TokenFailure::Bad {
        message: message.to_owned(),
        status: Some(status),
    };
    let success: Success = serde_json::from_slice(body)
        .map_err(|_| bad("the answer is not a token answer (access_token, token_type)"))?;
    // RFC 6750: only a bearer token can be sent as `Authorization: Bearer`; RFC 8693's `N_A`
    // says the issued token is not an access token at all.
    if !success.token_type.eq_ignore_ascii_case("bearer") {
        return Err(bad("the issued token is not a bearer token"));
    }
    let token = success.access_token;
    if token.is_empty() || token.len() > MAX_TOKEN_BYTES || !is_token68ish(&token) {
        return Err(bad(
            "the issued access_token is empty, too long or not sendable in a header",
        ));
    }
    let lifetime = match success.expires_in {
        None | Some(serde_json::Value::Null) => None,
        Some(value) => Some(Duration::from_secs(
            value
                .as_u64()
                .or_else(|| value.as_str().and_then(|text| text.parse().ok()))
                .ok_or_else(|| bad("expires_in is not a number of seconds"))?,
        )),
    };
    Ok(Issued {
        access_token: token,
        lifetime,
    })
}

/// RFC 6749 §5.2: `error` is printable ASCII without `"` and `\`. Anything else is not passed
/// on to the agent.
fn is_error_code(code: &str) -> bool {
    !code.is_empty()
        && code.len() <= 64
        && code
            .bytes()
            .all(|b| (0x20..=0x7e).contains(&b) && b != b'"' && b != b'\\')
}

/// Visible ASCII only: what fits `Authorization: Bearer` without breaking the header.
fn is_token68ish(token: &str) -> bool {
    token.bytes().all(|b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> TokenClient {
        TokenClient {
            token_endpoint: "http://idp/token".to_owned(),
            client_id: "gate way".to_owned(),
            client_secret: "s:e/c".to_owned(),
            scope: Some("read".to_owned()),
            audience: Some("api".to_owned()),
            resource: Some("https://api/".to_owned()),
        }
    }

    #[test]
    fn the_client_is_form_encoded_before_basic() {
        let header = basic(&client());
        let decoded = STANDARD
            .decode(header.strip_prefix("Basic ").expect("basic"))
            .expect("base64");
        assert_eq!(decoded, b"gate%20way:s%3Ae%2Fc");
    }

    #[test]
    fn each_grant_sends_its_fields() {
        let client = client();
        let exchange = form(
            &client,
            &Grant::Exchange {
                subject_token: "caller",
            },
        );
        assert!(exchange.contains(&("grant_type", TOKEN_EXCHANGE_GRANT)));
        assert!(exchange.contains(&("subject_token", "caller")));
        assert!(exchange.contains(&("resource", "https://api/")));
        let credentials = form(&client, &Grant::ClientCredentials);
        assert!(credentials.contains(&("grant_type", "client_credentials")));
        assert!(!credentials.iter().any(|(name, _)| *name == "resource"));
        assert!(!credentials.iter().any(|(name, _)| *name == "subject_token"));
    }

    #[test]
    fn answers_are_read_strictly() {
        let ok = answer(
            200,
            br#"{"access_token":"abc","token_type":"bearer","expires_in":"60"}"#,
        )
        .expect("a token");
        assert_eq!(ok.access_token, "abc");
        assert_eq!(ok.lifetime, Some(Duration::from_secs(60)));
        assert_eq!(
            answer(
                400,
                br#"{"error":"invalid_grant","error_description":"no"}"#
            )
            .unwrap_err(),
            TokenFailure::Refused {
                code: "invalid_grant".to_owned(),
                status: 400
            }
        );
        for (status, body) in [
            (200, &br#"{"access_token":"abc","token_type":"N_A"}"#[..]),
            (200, br#"{"access_token":"a b","token_type":"Bearer"}"#),
            (200, br#"{"access_token":"","token_type":"Bearer"}"#),
            (200, br#"{"token_type":"Bearer"}"#),
            (
                200,
                br#"{"access_token":"a","token_type":"Bearer","expires_in":-1}"#,
            ),
            (500, b"oops"),
            (400, br#"{"error":"bad\"code"}"#),
        ] {
            assert!(
                matches!(answer(status, body), Err(TokenFailure::Bad { .. })),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }
}
