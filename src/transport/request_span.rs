//! The span of one HTTP request, and its access-log line.
//!
//! The span carries what correlates a request across logs and traces: the request id (the
//! `x-request-id` header, generated when absent and echoed back), the method, the matched route
//! template, the path, and the caller's subject as a hash (recorded by the `Agent` extractor).
//! Never the query string, a header value other than the request id, or a token.
//!
//! When traces are exported the span is also an OpenTelemetry server span named
//! `{method} {route}`, the child of the caller's W3C `traceparent` when it sends one, with the
//! response status; without export none of that is parsed, formatted or recorded.

use std::time::Duration;

use axum::extract::MatchedPath;
use axum::http::{Request, Response};
use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
use tower_http::trace::{DefaultOnRequest, MakeSpan, OnResponse, TraceLayer};
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::REQUEST_ID;
use crate::telemetry::otel;

/// The longest request id kept from a client; a longer one is replaced.
pub(super) const MAX_REQUEST_ID_LEN: usize = 128;

/// Keeps the client's `x-request-id` only when it is one short, plain token
/// (`[A-Za-z0-9._:-]`, 1 to [`MAX_REQUEST_ID_LEN`] bytes); otherwise removes it, so that a
/// fresh id is generated. The id is echoed, logged and stored in audit records: an
/// unbounded or arbitrary value would let a client bloat them, forge log lines or smuggle
/// markup into whatever displays them. Several ids on one request are removed too.
pub(super) fn keep_plain_request_id<B>(mut request: Request<B>) -> Request<B> {
    let headers = request.headers_mut();
    let mut values = headers.get_all(&REQUEST_ID).iter();
    let plain = match (values.next(), values.next()) {
        (Some(value), None) => is_plain_request_id(value.as_bytes()),
        (None, _) => return request,
        (Some(_), Some(_)) => false,
    };
    if !plain {
        headers.remove(&REQUEST_ID);
    }
    request
}

fn is_plain_request_id(id: &[u8]) -> bool {
    (1..=MAX_REQUEST_ID_LEN).contains(&id.len())
        && id
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b':'))
}

/// The tracing layer of the router: [`RequestSpan`] per request, [`Finished`] per response.
pub(super) type RequestTraceLayer =
    TraceLayer<SharedClassifier<ServerErrorsAsFailures>, RequestSpan, DefaultOnRequest, Finished>;

pub(super) fn layer() -> RequestTraceLayer {
    TraceLayer::new_for_http()
        .make_span_with(RequestSpan)
        .on_response(Finished)
}

/// Makes the `request` span.
#[derive(Debug, Clone, Copy)]
pub(super) struct RequestSpan;

impl<B> MakeSpan<B> for RequestSpan {
    fn make_span(&mut self, request: &Request<B>) -> Span {
        let request_id = request
            .headers()
            .get(&REQUEST_ID)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("");
        let route = request
            .extensions()
            .get::<MatchedPath>()
            .map(MatchedPath::as_str);
        let span = tracing::info_span!(
            "request",
            http.request.method = %request.method(),
            http.route = route.unwrap_or(""),
            url.path = %request.uri().path(),
            request_id,
            subject = Empty,
            http.response.status_code = Empty,
            otel.name = Empty,
            otel.kind = Empty,
            otel.status_code = Empty,
        );
        if otel::exporting_traces() {
            let name = match route {
                Some(route) => format!("{} {route}", request.method()),
                None => request.method().to_string(),
            };
            span.record("otel.name", name);
            span.record("otel.kind", "server");
            // An unusable parent (a span that already started) leaves the span a root.
            let _ = span.set_parent(otel::remote_parent(request.headers()));
        }
        span
    }
}

/// Logs one line per answered request (status and latency, in the request's span) and, when
/// traces are exported, records the status on the span.
#[derive(Debug, Clone, Copy)]
pub(super) struct Finished;

impl<B> OnResponse<B> for Finished {
    fn on_response(self, response: &Response<B>, latency: Duration, span: &Span) {
        let status = response.status().as_u16();
        if otel::exporting_traces() {
            span.record("http.response.status_code", status);
            if response.status().is_server_error() {
                span.record("otel.status_code", "error");
            }
        }
        tracing::info!(
            status,
            latency_us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX),
            "request answered"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_short_plain_request_ids_are_kept() {
        let cases: &[(&str, &[u8], bool)] = &[
            ("uuid", b"0b7c3a52-4f8e-4d1c-9a57-1b2c3d4e5f60", true),
            ("dots colons underscores", b"req.42:a_b", true),
            ("longest", &[b'a'; MAX_REQUEST_ID_LEN], true),
            ("too long", &[b'a'; MAX_REQUEST_ID_LEN + 1], false),
            ("empty", b"", false),
            ("space", b"two words", false),
            ("markup", b"<b>", false),
            ("quote", b"a\"b", false),
            ("non-ascii", "caf\u{e9}".as_bytes(), false),
            ("tab", b"a\tb", false),
        ];
        for (name, id, kept) in cases {
            assert_eq!(is_plain_request_id(id), *kept, "case: {name}");
        }
    }

    #[test]
    fn two_request_ids_are_both_removed() {
        let request = Request::builder()
            .header(&REQUEST_ID, "a")
            .header(&REQUEST_ID, "b")
            .body(())
            .expect("request");
        let request = keep_plain_request_id(request);
        assert!(request.headers().get(&REQUEST_ID).is_none());
    }
}
