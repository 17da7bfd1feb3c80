//! Request extractors that turn HTTP into domain inputs, failing with problem JSON:
//! [`Caller`] (a verified bearer token), [`AdminDesk`] (one that passes the admin rule),
//! [`JsonBody`] (a JSON body with field-path errors) and [`QueryPairs`].

use std::convert::Infallible;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::HeaderValue;
use axum::http::header::{AUTHORIZATION, IF_NONE_MATCH};
use axum::http::request::Parts;
use serde::Deserialize as _;
use serde::de::DeserializeOwned;

use super::AppState;
use super::errors::ApiError;
use crate::app::AdminDesk;
use crate::app::Coding;
use crate::auth::bearer_token;
use crate::domain::validate::{ErrorKind, FieldError};
use crate::service::Caller;

/// The caller, from exactly one `Authorization: Bearer` header verified by the verifier.
impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let mut values = parts.headers.get_all(AUTHORIZATION).iter();
        let header = values.next();
        if values.next().is_some() {
            // Two credentials: taking either one would let a proxy and the gateway disagree on
            // who is calling. Fail closed.
            return Err(ApiError::Malformed(
                "the request has more than one Authorization header; send exactly one".to_owned(),
            ));
        }
        let header = header
            .map(|value| {
                value
                    .to_str()
                    .map_err(|_| crate::auth::AuthError::Malformed)
            })
            .transpose()?;
        let token = bearer_token(header)?;
        let span = tracing::debug_span!(
            "verify_token",
            otel.name = "verify token",
            outcome = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        let verified = crate::telemetry::in_span(&span, state.app.caller(token)).await;
        match &verified {
            Ok(_) => span.record("outcome", "ok"),
            // A fixed description per kind of failure: nothing from the token itself.
            Err(error) => span
                .record("outcome", error.description())
                .record("otel.status_code", "error"),
        };
        let caller = verified?;
        let request = tracing::Span::current();
        if !request.is_disabled()
            && let Some(sub) = caller.claims().get("sub").and_then(|sub| sub.as_str())
        {
            request.record("subject", subject_hash(sub).as_str());
        }
        Ok(caller)
    }
}

/// What logs say about who called: a short hash of `sub`, enough to correlate one agent's
/// requests, never the identifier itself (it may be an email or a person's name).
pub fn subject_hash(sub: &str) -> String {
    let hash = blake3::hash(sub.as_bytes());
    hash.to_hex()[..16].to_owned()
}

/// An admin's desk ([`App::admin`](crate::app::App::admin)): an authenticated caller that
/// passes the admin rule; others get 403. What it costs is the desk's to say.
impl FromRequestParts<AppState> for AdminDesk {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let caller = Caller::from_request_parts(parts, state).await?;
        Ok(state.app.admin(caller)?)
    }
}

/// A JSON body. Not JSON at all → 400; JSON of the wrong shape → 422 naming the field; larger
/// than the body limit → 413.
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        // An inline OpenAPI document is what most often outgrows the limit: say what to do.
        // Nested routers see their own part of the path: the original URI says which route.
        let path = match request.extensions().get::<axum::extract::OriginalUri>() {
            Some(original) => original.path(),
            None => request.uri().path(),
        };
        let source = path.starts_with("/admin/sources");
        let bytes =
            read_body(request, state.http.body_limit)
                .await
                .map_err(|error| match error {
                    ApiError::PayloadTooLarge(limit, None) if source => ApiError::PayloadTooLarge(
                        limit,
                        Some(
                            "give a large OpenAPI document by URL (config.url), which is fetched \
                         with a larger limit, rather than inline (config.spec)",
                        ),
                    ),
                    other => other,
                })?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// A JSON body of any shape (the caller reads the shape itself, with its own field paths):
/// read in one pass, where [`JsonBody`] makes two (syntax first, then the shape with paths,
/// which a JSON value cannot fail). The decision endpoints read every batch this way.
pub struct JsonValue(pub serde_json::Value);

impl FromRequest<AppState> for JsonValue {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let bytes = read_body(request, state.http.body_limit).await?;
        parse_json_value(&bytes).map(JsonValue)
    }
}

/// `bytes` as one JSON value, with [`parse_json`]'s 400s for an empty body, bad syntax and
/// trailing data.
pub fn parse_json_value(bytes: &Bytes) -> Result<serde_json::Value, ApiError> {
    one_value(bytes, |deserializer| {
        serde_json::Value::deserialize(deserializer)
    })
}

/// The one JSON value `read` takes from `bytes`; 400 for an empty body, bad syntax, or anything
/// but whitespace after the value.
fn one_value<'b, T>(
    bytes: &'b [u8],
    read: impl FnOnce(
        &mut serde_json::Deserializer<serde_json::de::SliceRead<'b>>,
    ) -> Result<T, serde_json::Error>,
) -> Result<T, ApiError> {
    if bytes.is_empty() {
        return Err(ApiError::Malformed(
            "the request body is empty; a JSON document is expected".into(),
        ));
    }
    let deserializer = &mut serde_json::Deserializer::from_slice(bytes);
    let value = read(deserializer).map_err(|error| {
        ApiError::Malformed(format!("the request body is not valid JSON: {error}"))
    })?;
    deserializer.end().map_err(|error| {
        ApiError::Malformed(format!(
            "the request body is not valid JSON: trailing data after the JSON value at line {} \
             column {}",
            error.line(),
            error.column()
        ))
    })?;
    Ok(value)
}

/// The body as bytes, at most the body limit (413 beyond it): for endpoints that read their
/// own format (MCP's JSON-RPC).
pub struct RawBody(pub Bytes);

impl FromRequest<AppState> for RawBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        read_body(request, state.http.body_limit).await.map(RawBody)
    }
}

/// An optional JSON body: empty (or only whitespace) is `None`; otherwise as [`JsonBody`].
pub struct OptionalJsonBody<T>(pub Option<T>);

impl<T: DeserializeOwned> FromRequest<AppState> for OptionalJsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, ApiError> {
        let bytes = read_body(request, state.http.body_limit).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJsonBody(None));
        }
        parse_json(&bytes).map(|value| OptionalJsonBody(Some(value)))
    }
}

/// The whole body, at most `limit` bytes. Only a body over the limit is 413: one that cannot be
/// read (bad chunked encoding, shorter than its `Content-Length`, the connection cut) is the
/// client's malformed request, 400, with the reason the HTTP layer gives.
async fn read_body(request: Request, limit: usize) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(request.into_body(), limit)
        .await
        .map_err(|error| {
            let error = error.into_inner();
            if error.is::<http_body_util::LengthLimitError>() {
                return ApiError::PayloadTooLarge(limit, None);
            }
            ApiError::Malformed(format!(
                "could not read the request body: {}",
                error_chain(error.as_ref())
            ))
        })
}

/// An error and its causes, outermost first: hyper's own message ("error reading a body from
/// connection") says little without the cause ("invalid chunk size line").
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        // Wrappers (axum's error) repeat their inner error's message.
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Parses JSON, classifying errors as malformed (400) or invalid (422, with the field path).
///
/// The syntax of the whole body is checked first, so that malformed JSON is 400 whatever its
/// content would have been: the body is one JSON value, and anything but whitespace after it
/// is malformed (a client that sent two documents learns that neither was taken, rather than
/// having the first one applied).
pub fn parse_json<T: DeserializeOwned>(bytes: &Bytes) -> Result<T, ApiError> {
    one_value(bytes, |syntax| serde::de::IgnoredAny::deserialize(syntax))?;
    let deserializer = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        match inner.classify() {
            serde_json::error::Category::Data => {
                let field = if path == "." { String::new() } else { path };
                ApiError::Invalid(vec![FieldError {
                    field,
                    message: strip_position(&inner.to_string()),
                    kind: ErrorKind::Invalid,
                }])
            }
            _ => ApiError::Malformed(format!("the request body is not valid JSON: {inner}")),
        }
    })
}

/// serde_json appends " at line 1 column 42" to data errors; the field path says more.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(index) => message[..index].to_owned(),
        None => message.to_owned(),
    }
}

/// The query string as ordered pairs; a malformed query is a 400.
pub struct QueryPairs(pub Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for QueryPairs {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        if let Some(query) = parts.uri.query() {
            require_utf8_query(query)?;
        }
        Query::<Vec<(String, String)>>::from_request_parts(parts, state)
            .await
            .map(|Query(pairs)| QueryPairs(pairs))
            .map_err(|rejection| {
                ApiError::Malformed(format!("malformed query string: {rejection}"))
            })
    }
}

/// Refuses a query string whose names or values are not UTF-8 once percent-decoded (`%FF`):
/// the form decoder would replace the bytes with U+FFFD, and a filter the client did not write
/// would be applied silently.
fn require_utf8_query(query: &str) -> Result<(), ApiError> {
    for (index, pair) in query.split('&').enumerate() {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let Ok(name) = decoded(name) else {
            return Err(ApiError::Malformed(format!(
                "malformed query string: the name of query parameter {} is not valid UTF-8 \
                 after percent-decoding",
                index + 1
            )));
        };
        if decoded(value).is_err() {
            return Err(ApiError::Malformed(format!(
                "malformed query string: the value of query parameter `{name}` is not valid \
                 UTF-8 after percent-decoding"
            )));
        }
    }
    Ok(())
}

fn decoded(text: &str) -> Result<std::borrow::Cow<'_, str>, std::str::Utf8Error> {
    percent_encoding::percent_decode_str(text).decode_utf8()
}

/// The `If-None-Match` header values, if any: what a conditional read needs, taken without
/// copying the rest of the headers (as the `HeaderMap` extractor would, on every request).
pub struct IfNoneMatch(pub Vec<HeaderValue>);

impl<S: Send + Sync> FromRequestParts<S> for IfNoneMatch {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Infallible> {
        Ok(IfNoneMatch(
            parts
                .headers
                .get_all(IF_NONE_MATCH)
                .iter()
                .cloned()
                .collect(),
        ))
    }
}

/// The content codings of a manifest that the request's `Accept-Encoding` accepts (RFC 9110
/// section 12.5.3), most wanted first: a coding named with a q-value above 0, or left unnamed
/// under a `*` above 0 (`x-gzip` is gzip). Equal q-values prefer zstd, the smaller form.
/// Held in place (no allocation on the request path): accepted codings first, `None` after.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AcceptEncoding([Option<Coding>; Coding::ALL.len()]);

impl AcceptEncoding {
    /// The accepted codings, most wanted first.
    pub fn codings(self) -> impl Iterator<Item = Coding> {
        self.0.into_iter().flatten()
    }
}

impl<S: Send + Sync> FromRequestParts<S> for AcceptEncoding {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Infallible> {
        Ok(accepted_codings(&parts.headers))
    }
}

fn accepted_codings(headers: &axum::http::HeaderMap) -> AcceptEncoding {
    let mut named: [Option<f32>; Coding::ALL.len()] = [None; Coding::ALL.len()];
    let mut any = None;
    for item in headers
        .get_all(axum::http::header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
    {
        let mut pieces = item.split(';');
        let token = pieces.next().unwrap_or_default().trim();
        let weight = pieces
            .filter_map(|piece| piece.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        if token == "*" {
            any = Some(weight);
            continue;
        }
        let token = if token.eq_ignore_ascii_case("x-gzip") {
            "gzip"
        } else {
            token
        };
        if let Some(i) = Coding::ALL
            .iter()
            .position(|coding| coding.as_str().eq_ignore_ascii_case(token))
        {
            named[i] = Some(named[i].map_or(weight, |known| known.max(weight)));
        }
    }
    // A refused or unnamed coding weighs 0 and is dropped below.
    let mut ranked = Coding::ALL.map(|coding| {
        let weight = named[coding as usize].or(any).unwrap_or(0.0);
        (weight, coding)
    });
    // Stable: equal weights keep Coding::ALL's order.
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
    AcceptEncoding(ranked.map(|(weight, coding)| (weight > 0.0).then_some(coding)))
}

#[cfg(test)]
mod accept_encoding_tests {
    use super::*;

    #[test]
    fn codings_are_accepted_by_name_or_by_star_unless_refused_most_wanted_first() {
        use Coding::{Gzip, Zstd};
        let cases: [(Vec<&'static str>, Vec<Coding>); 15] = [
            (vec!["gzip"], vec![Gzip]),
            (vec!["br, gzip;q=0.5"], vec![Gzip]),
            (vec!["deflate", "X-GZIP"], vec![Gzip]),
            (vec!["gzip;q=0"], vec![]),
            (vec!["gzip; q=0.0, *"], vec![Zstd]),
            (vec!["*"], vec![Zstd, Gzip]),
            (vec!["*;q=0"], vec![]),
            (vec!["identity"], vec![]),
            (vec!["br", "zstd"], vec![Zstd]),
            (vec!["gzip, deflate, br, zstd"], vec![Zstd, Gzip]),
            (vec!["zstd;q=0.5, gzip"], vec![Gzip, Zstd]),
            (vec!["gzip;q=0.8", "*;q=0.9"], vec![Zstd, Gzip]),
            (vec!["ZSTD;q=0"], vec![]),
            (vec!["gzip;q=0, gzip"], vec![Gzip]),
            (vec![], vec![]),
        ];
        for (values, expected) in cases {
            let mut headers = axum::http::HeaderMap::new();
            for value in &values {
                headers.append(
                    axum::http::header::ACCEPT_ENCODING,
                    HeaderValue::from_static(value),
                );
            }
            let accepted: Vec<Coding> = accepted_codings(&headers).codings().collect();
            assert_eq!(accepted, expected, "{values:?}");
        }
    }
}
