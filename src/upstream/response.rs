//! An upstream's HTTP answer → the MCP `CallToolResult` an agent gets.
//!
//! - A 2xx JSON answer is one text block holding the JSON text, plus `structuredContent` (the
//!   JSON itself) when the tool has an object output schema and the answer is an object, as
//!   MCP asks of tools that declare one. Other text is one text block; an image or audio
//!   answer is an image or audio block (base64), other bytes an embedded resource.
//! - Any other status is `isError: true` with `upstream answered 404 Not Found: …` and the
//!   start of the body ([`ERROR_TEXT_BYTES`]).
//! - An answer is read up to the call's limit and no further: a larger one is refused
//!   ([`CallOutcome::TooLarge`]), unread.
//!
//! Failures to get an answer are told apart: a timeout, a refused connection or an unknown
//! host. Their causes quote the request's URL, so they are [`CallResult::hidden`]: the agent
//! reads the kind of failure, the log the cause.

use base64::Engine as _;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_LENGTH, CONTENT_TYPE};
use serde_json::{Value, json};

use super::{CallOutcome, CallResult};

/// How much of an error answer's body is quoted in the result.
pub(super) const ERROR_TEXT_BYTES: usize = 4096;

/// Redirects are followed (up to 5) only within the origin first asked: the source's
/// configured headers are its credentials and must not go to another host.
pub(super) fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first().unwrap_or(attempt.url());
        if attempt.previous().len() > 5 {
            attempt.error("more than 5 redirects")
        } else if attempt.url().origin() == first.origin() {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

/// Where a request went, without path and query (which hold the call's arguments).
pub(super) fn origin(url: &reqwest::Url) -> String {
    url.origin().ascii_serialization()
}

/// The result for a request that got no answer.
pub(super) fn send_failure(
    error: &reqwest::Error,
    at: &str,
    timeout: std::time::Duration,
) -> CallResult {
    let why = crate::ingest::why(error, timeout);
    if error.is_timeout() {
        CallResult::hidden(
            CallOutcome::Timeout,
            format!("the upstream at {at} gave no answer in time: {why}"),
            None,
        )
    } else if error.is_connect() {
        CallResult::hidden(
            CallOutcome::Unreachable,
            format!("the upstream at {at} cannot be reached: {why}"),
            None,
        )
    } else if error.is_builder() {
        CallResult::hidden(
            CallOutcome::NotExecutable,
            format!("no request can be made to {at}: {why}"),
            None,
        )
    } else {
        CallResult::hidden(
            CallOutcome::Unreachable,
            format!("the request to {at} failed: {why}"),
            None,
        )
    }
}

/// Reads an answer's body, up to `max_bytes`; the result to give when that fails.
pub(super) async fn read_capped(
    mut response: reqwest::Response,
    max_bytes: usize,
    at: &str,
    timeout: std::time::Duration,
) -> Result<Vec<u8>, CallResult> {
    let status = response.status().as_u16();
    let too_large = || {
        CallResult::hidden(
            CallOutcome::TooLarge,
            format!(
                "the upstream at {at} answered with more than {max_bytes} bytes, more than a call may return"
            ),
            Some(status),
        )
    };
    let announced = response
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|length| length > max_bytes as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > max_bytes {
                    return Err(too_large());
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(error) => {
                let outcome = if error.is_timeout() {
                    CallOutcome::Timeout
                } else {
                    CallOutcome::BadUpstream
                };
                return Err(CallResult::hidden(
                    outcome,
                    format!(
                        "the upstream at {at} broke off its answer: {}",
                        crate::ingest::why(&error, timeout)
                    ),
                    Some(status),
                ));
            }
        }
    }
}

/// The content type of an answer, lowercase, without parameters.
pub(super) fn content_type(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
}

/// The result an HTTP answer makes (see the module documentation).
pub(super) fn http_result(
    status: StatusCode,
    content_type: Option<&str>,
    body: &[u8],
    output_schema: Option<&Value>,
) -> CallResult {
    let code = status.as_u16();
    if !status.is_success() {
        let mut text = format!("upstream answered {status}");
        if !body.is_empty() {
            let cut = &body[..body.len().min(ERROR_TEXT_BYTES)];
            text.push_str(": ");
            text.push_str(&String::from_utf8_lossy(cut));
            if cut.len() < body.len() {
                text.push_str(" …");
            }
        }
        return CallResult::failure(CallOutcome::ToolError, text, Some(code));
    }
    if body.is_empty() {
        return success(
            json!([{"type": "text", "text": format!("upstream answered {status}")}]),
            None,
            code,
        );
    }
    let media = content_type.unwrap_or("");
    if media.ends_with("/json") || media.ends_with("+json") {
        let Ok(document) = serde_json::from_slice::<Value>(body) else {
            return CallResult::failure(
                CallOutcome::BadUpstream,
                format!("upstream answered {status} with {media} that is not valid JSON"),
                Some(code),
            );
        };
        let text = String::from_utf8_lossy(body).into_owned();
        let structured =
            (is_object_schema(output_schema) && document.is_object()).then_some(document);
        return success(json!([{"type": "text", "text": text}]), structured, code);
    }
    let encoded = || base64::engine::general_purpose::STANDARD.encode(body);
    if media.starts_with("image/") {
        return success(
            json!([{"type": "image", "data": encoded(), "mimeType": media}]),
            None,
            code,
        );
    }
    if media.starts_with("audio/") {
        return success(
            json!([{"type": "audio", "data": encoded(), "mimeType": media}]),
            None,
            code,
        );
    }
    match std::str::from_utf8(body) {
        Ok(text) => success(json!([{"type": "text", "text": text}]), None, code),
        Err(_) => success(
            json!([{"type": "resource", "resource": {
                "uri": "toolgate:upstream-answer",
                "mimeType": if media.is_empty() { "application/octet-stream" } else { media },
                "blob": encoded()
            }}]),
            None,
            code,
        ),
    }
}

fn success(content: Value, structured: Option<Value>, status: u16) -> CallResult {
    let mut result = json!({"content": content, "isError": false});
    if let Some(structured) = structured {
        result["structuredContent"] = structured;
    }
    CallResult {
        result,
        outcome: CallOutcome::Ok,
        upstream_status: Some(status),
        cause: None,
    }
}

/// Whether a tool's output schema describes an object (what `structuredContent` must be).
fn is_object_schema(schema: Option<&Value>) -> bool {
    schema.is_some_and(|schema| match schema.get("type") {
        Some(Value::String(kind)) => kind == "object",
        Some(_) => false,
        None => schema.get("properties").is_some_and(Value::is_object),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(status: u16, media: Option<&str>, body: &[u8], schema: Option<Value>) -> CallResult {
        http_result(
            StatusCode::from_u16(status).expect("a status"),
            media,
            body,
            schema.as_ref(),
        )
    }

    #[test]
    fn json_answers_are_text_and_structured_when_the_tool_says_object() {
        let object = Some(json!({"type": "object", "properties": {"id": {"type": "integer"}}}));
        let answer = result(
            200,
            Some("application/json"),
            br#"{"id": 1}"#,
            object.clone(),
        );
        assert_eq!(answer.outcome, CallOutcome::Ok);
        assert_eq!(answer.upstream_status, Some(200));
        assert_eq!(
            answer.result,
            json!({"content": [{"type": "text", "text": "{\"id\": 1}"}], "isError": false,
                   "structuredContent": {"id": 1}})
        );
        let no_schema = result(200, Some("application/problem+json"), br#"{"id": 1}"#, None);
        assert!(no_schema.result.get("structuredContent").is_none());
        let array_answer = result(200, Some("application/json"), b"[1]", object);
        assert!(array_answer.result.get("structuredContent").is_none());
        let array_schema = result(
            200,
            Some("application/json"),
            br#"{"a": 1}"#,
            Some(json!({"type": "array"})),
        );
        assert!(array_schema.result.get("structuredContent").is_none());
    }

    #[test]
    fn error_statuses_are_tool_errors_quoting_the_start_of_the_body() {
        let answer = result(404, Some("text/plain"), b"no such pet", None);
        assert_eq!(answer.outcome, CallOutcome::ToolError);
        assert_eq!(answer.upstream_status, Some(404));
        assert_eq!(
            answer.result,
            json!({"content": [{"type": "text", "text": "upstream answered 404 Not Found: no such pet"}], "isError": true})
        );
        let long = vec![b'x'; ERROR_TEXT_BYTES * 2];
        let text = result(500, None, &long, None).result["content"][0]["text"]
            .as_str()
            .expect("text")
            .to_owned();
        assert!(
            text.len() < ERROR_TEXT_BYTES + 100 && text.ends_with('…'),
            "{}",
            text.len()
        );
        let empty = result(503, None, b"", None);
        assert_eq!(
            empty.result["content"][0]["text"],
            "upstream answered 503 Service Unavailable"
        );
    }

    #[test]
    fn other_answers_become_text_media_or_resources() {
        let text = result(200, Some("text/plain"), "héllo".as_bytes(), None);
        assert_eq!(
            text.result["content"],
            json!([{"type": "text", "text": "héllo"}])
        );
        let no_type = result(200, None, b"plain", None);
        assert_eq!(no_type.result["content"][0]["text"], "plain");
        let image = result(200, Some("image/png"), &[0x89, b'P', b'N', b'G'], None);
        assert_eq!(
            image.result["content"][0],
            json!({"type": "image", "data": "iVBORw==", "mimeType": "image/png"})
        );
        let binary = result(200, Some("application/octet-stream"), &[0xff, 0xfe], None);
        assert_eq!(binary.result["content"][0]["resource"]["blob"], "//4=");
        let empty = result(204, None, b"", None);
        assert_eq!(
            empty.result["content"][0]["text"],
            "upstream answered 204 No Content"
        );
        assert_eq!(empty.outcome, CallOutcome::Ok);
        let broken = result(200, Some("application/json"), b"{", None);
        assert_eq!(broken.outcome, CallOutcome::BadUpstream);
        assert_eq!(broken.result["isError"], true);
    }
}
