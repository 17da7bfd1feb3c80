//! A client session with a remote MCP server over Streamable HTTP: the one MCP client of the
//! house, used by the importer (`tools/list`, [`super`]) and by the call adapter
//! (`tools/call`, `crate::upstream`).
//!
//! [`McpSession::initialize`] does the handshake (JSON-RPC `initialize`, then the
//! `notifications/initialized` notification) and keeps what the server hands out: the session
//! id (`Mcp-Session-Id`) and the protocol version it chose (`MCP-Protocol-Version`), both sent
//! back on every later request. Every request is a POST that the server may answer with
//! `application/json` or with a `text/event-stream` carrying the response.
//!
//! After the handshake a session is read-only: [`McpSession::call`] takes `&self` (JSON-RPC ids
//! come from an atomic counter), so one session serves concurrent calls. Errors keep apart what
//! a caller treats differently ([`McpError`]): no answer at all, an HTTP error status (404 means
//! the server forgot the session), an answer too large, an answer that is not a JSON-RPC
//! response, and a JSON-RPC error.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

use crate::ingest::why;

/// The protocol version offered in `initialize`; the server may answer with another one it
/// supports, which is then sent as `MCP-Protocol-Version`.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// Why a request to an MCP server did not give a result. Each message is complete, naming the
/// server and the JSON-RPC method.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum McpError {
    /// A configured header is not a valid HTTP header (the source's config is at fault).
    #[error("{0}")]
    Config(String),
    /// The request got no HTTP answer (refused, unresolvable, timed out).
    #[error("{message}")]
    Send { message: String, timed_out: bool },
    /// The server answered with an HTTP error status; 404 means the session is gone.
    #[error("{message}")]
    Status { status: u16, message: String },
    /// The answer broke off while it was read.
    #[error("{message}")]
    Read { message: String, timed_out: bool },
    /// The answer was larger than the session's limit.
    #[error("{0}")]
    TooLarge(String),
    /// The answer is not the JSON-RPC response asked for.
    #[error("{0}")]
    Invalid(String),
    /// The server answered with a JSON-RPC error.
    #[error("{message}")]
    Rpc { status: u16, message: String },
}

/// A JSON-RPC result and the HTTP status it came with.
#[derive(Debug, Clone, PartialEq)]
pub struct McpReply {
    pub status: u16,
    pub result: Value,
}

/// One session with one MCP server.
pub struct McpSession {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    next_id: AtomicU64,
    timeout: Duration,
    max_bytes: usize,
}

impl McpSession {
    /// A session with the server at `url`, not yet initialized. `headers` are the source's
    /// configured headers (sent on every request); `timeout` bounds each request and
    /// `max_bytes` each answer.
    pub fn new(
        client: reqwest::Client,
        url: &str,
        headers: &[(String, String)],
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<McpSession, McpError> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                McpError::Config(format!("config.headers: '{name}' is not a header name"))
            })?;
            let value = HeaderValue::from_str(value).map_err(|_| {
                McpError::Config(format!("config.headers.{name}: not a header value"))
            })?;
            map.insert(name, value);
        }
        map.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Ok(McpSession {
            client,
            url: url.to_owned(),
            headers: map,
            next_id: AtomicU64::new(1),
            timeout,
            max_bytes,
        })
    }

    /// The server's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The handshake: `initialize`, then `notifications/initialized`. Returns the server's
    /// `initialize` result.
    pub async fn initialize(&mut self) -> Result<Value, McpError> {
        let init = self
            .call(
                "initialize",
                json!({
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "toolgate", "version": env!("CARGO_PKG_VERSION")}
                }),
            )
            .await?;
        if let Some(session) = init.session_id {
            self.headers.insert("mcp-session-id", session);
        }
        if let Some(version) = init
            .reply
            .result
            .get("protocolVersion")
            .and_then(Value::as_str)
            && let Ok(value) = HeaderValue::from_str(version)
        {
            self.headers.insert("mcp-protocol-version", value);
        }
        self.notify("notifications/initialized").await?;
        Ok(init.reply.result)
    }

    /// Sends a JSON-RPC request and returns its `result`.
    pub async fn request(&self, method: &str, params: Value) -> Result<McpReply, McpError> {
        self.call(method, params).await.map(|answer| answer.reply)
    }

    async fn call(&self, method: &str, params: Value) -> Result<Answer, McpError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let response = self.post(&body, method).await?;
        let status = response.status().as_u16();
        let session_id = response.headers().get("mcp-session-id").cloned();
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let message = if is_sse {
            self.read_sse(response, id, method).await?
        } else {
            let body = self.read_body(response, method).await?;
            let message = serde_json::from_slice::<Value>(&body).map_err(|error| {
                McpError::Invalid(format!(
                    "the MCP server answered {method} with invalid JSON: {error}"
                ))
            })?;
            if !is_response_to(&message, id) {
                return Err(McpError::Invalid(format!(
                    "the MCP server answered {method} with a message that is not its response"
                )));
            }
            message
        };
        if let Some(error) = message.get("error") {
            return Err(McpError::Rpc {
                status,
                message: format!(
                    "the MCP server answered {method} with error {}: {}",
                    error.get("code").unwrap_or(&Value::Null),
                    error.get("message").and_then(Value::as_str).unwrap_or("")
                ),
            });
        }
        let result = message.get("result").cloned().ok_or_else(|| {
            McpError::Invalid(format!("the MCP server's answer to {method} has no result"))
        })?;
        Ok(Answer {
            reply: McpReply { status, result },
            session_id,
        })
    }

    async fn notify(&self, method: &str) -> Result<(), McpError> {
        let body = json!({"jsonrpc": "2.0", "method": method});
        self.post(&body, method).await.map(drop)
    }

    async fn post(&self, body: &Value, method: &str) -> Result<reqwest::Response, McpError> {
        let response = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .timeout(self.timeout)
            .body(body.to_string())
            .send()
            .await
            .map_err(|error| McpError::Send {
                message: format!(
                    "the MCP server at {} cannot be reached ({method}): {}",
                    self.url,
                    why(&error, self.timeout)
                ),
                timed_out: error.is_timeout(),
            })?;
        let status = response.status();
        if !status.is_success() {
            let detail = self
                .read_body(response, method)
                .await
                .map(|b| {
                    String::from_utf8_lossy(&b)
                        .chars()
                        .take(300)
                        .collect::<String>()
                })
                .unwrap_or_default();
            return Err(McpError::Status {
                status: status.as_u16(),
                message: format!(
                    "the MCP server at {} answered {method} with {status}{}",
                    self.url,
                    if detail.is_empty() {
                        String::new()
                    } else {
                        format!(": {detail}")
                    }
                ),
            });
        }
        Ok(response)
    }

    fn read_error(&self, method: &str, error: &reqwest::Error) -> McpError {
        McpError::Read {
            message: format!(
                "reading the MCP server's {method} answer: {}",
                why(error, self.timeout)
            ),
            timed_out: error.is_timeout(),
        }
    }

    /// Reads a whole answer, up to the session's limit.
    async fn read_body(
        &self,
        mut response: reqwest::Response,
        method: &str,
    ) -> Result<Vec<u8>, McpError> {
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|error| self.read_error(method, &error))?
        {
            if body.len() + chunk.len() > self.max_bytes {
                return Err(McpError::TooLarge(format!(
                    "the MCP server at {} answered {method} with more than {} bytes",
                    self.url, self.max_bytes
                )));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// Reads server-sent events until the JSON-RPC response with `id` arrives; other messages
    /// (notifications, progress, requests from the server) are skipped. One event is bounded
    /// by the session's limit ([`SseEvents`] keeps the reading linear); the stream as a whole
    /// by time.
    async fn read_sse(
        &self,
        mut response: reqwest::Response,
        id: u64,
        method: &str,
    ) -> Result<Value, McpError> {
        let mut events = SseEvents::default();
        loop {
            while let Some(event) = events.next_event() {
                if let Some(message) = response_in(event, id) {
                    return Ok(message);
                }
            }
            if events.pending() > self.max_bytes {
                return Err(McpError::TooLarge(format!(
                    "an event of the MCP server's {method} stream is larger than {} bytes",
                    self.max_bytes
                )));
            }
            let chunk = response
                .chunk()
                .await
                .map_err(|error| self.read_error(method, &error))?;
            let Some(chunk) = chunk else {
                return Err(McpError::Invalid(format!(
                    "the MCP server's {method} stream ended without a response"
                )));
            };
            events.push(&chunk);
        }
    }

    /// Ends the session, if the server opened one (best effort: errors are ignored).
    pub async fn close(&self) {
        if self.headers.contains_key("mcp-session-id") {
            let _ = self
                .client
                .delete(&self.url)
                .headers(self.headers.clone())
                .timeout(self.timeout)
                .send()
                .await;
        }
    }
}

/// Server-sent events cut out of a byte stream. Bytes, not text: a character may be split
/// between two chunks. Carriage returns are dropped so that CRLF line ends read as LF.
///
/// Linear in the stream, whatever the server sends: each byte is scanned for an event's end
/// once (a scan resumes where the last one stopped), and the events taken are dropped once
/// per chunk, not once per event.
#[derive(Debug, Default)]
struct SseEvents {
    buffer: Vec<u8>,
    /// Where the next event starts.
    start: usize,
    /// No event ends before this offset.
    scanned: usize,
    /// Bytes scanned so far, for the test that keeps the reading linear.
    examined: usize,
}

impl SseEvents {
    /// Adds a chunk of the stream.
    fn push(&mut self, chunk: &[u8]) {
        self.buffer.drain(..self.start);
        self.scanned -= self.start;
        self.start = 0;
        self.buffer
            .extend(chunk.iter().filter(|byte| **byte != b'\r'));
    }

    /// The next complete event (without its blank line), if the stream holds one.
    fn next_event(&mut self) -> Option<&[u8]> {
        let from = self.scanned.max(self.start);
        match self.buffer[from..]
            .windows(2)
            .position(|pair| pair == b"\n\n")
        {
            Some(offset) => {
                self.examined += offset + 2;
                let (start, end) = (self.start, from + offset);
                self.start = end + 2;
                self.scanned = self.start;
                Some(&self.buffer[start..end])
            }
            None => {
                self.examined += self.buffer.len() - from;
                // The last byte may be the first half of a blank line.
                self.scanned = self.buffer.len().saturating_sub(1).max(self.start);
                None
            }
        }
    }

    /// Bytes of the event not yet complete.
    fn pending(&self) -> usize {
        self.buffer.len() - self.start
    }
}

/// The JSON-RPC response to request `id` that one server-sent event carries, if it carries
/// one. Only a response answers: a request from the server (`sampling/createMessage`, …) has a
/// `method` and may reuse any id, since ids are per direction.
fn response_in(event: &[u8], id: u64) -> Option<Value> {
    let event = String::from_utf8_lossy(event);
    let data: Vec<&str> = event
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|d| d.strip_prefix(' ').unwrap_or(d))
        .collect();
    if data.is_empty() {
        return None;
    }
    let message = serde_json::from_str::<Value>(&data.join("\n")).ok()?;
    is_response_to(&message, id).then_some(message)
}

/// Whether `message` is the response to request `id` (not a request that reuses the id).
fn is_response_to(message: &Value, id: u64) -> bool {
    message.get("id").and_then(Value::as_u64) == Some(id) && message.get("method").is_none()
}

/// A response and the session id that came with it.
struct Answer {
    reply: McpReply,
    session_id: Option<HeaderValue>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events_of(chunks: &[&[u8]]) -> Vec<String> {
        let mut events = SseEvents::default();
        let mut out = Vec::new();
        for chunk in chunks {
            events.push(chunk);
            while let Some(event) = events.next_event() {
                out.push(String::from_utf8_lossy(event).into_owned());
            }
        }
        out
    }

    #[test]
    fn events_are_cut_at_blank_lines_wherever_the_chunks_split_them() {
        let expected = ["data: 1", "event: x\ndata: 2", "data: 3"];
        assert_eq!(
            events_of(&[b"data: 1\n\nevent: x\ndata: 2\n\ndata: 3\n\n"]),
            expected
        );
        assert_eq!(
            events_of(&[
                b"data: 1\n",
                b"\nevent: x\r\ndata: 2\r",
                b"\n\r\n",
                b"data: 3\n\n"
            ]),
            expected
        );
        let bytes = b"data: 1\n\nevent: x\ndata: 2\n\ndata: 3\n\n";
        let one_by_one: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(events_of(&one_by_one), expected);
    }

    #[test]
    fn an_endless_event_in_small_writes_is_scanned_once() {
        let mut events = SseEvents::default();
        let chunk = [b'x'; 256];
        for _ in 0..16_384 {
            events.push(&chunk);
            assert!(events.next_event().is_none());
        }
        assert_eq!(events.pending(), 4 << 20);
        // One byte of each chunk is looked at twice: it may start a blank line.
        assert!(
            events.examined <= (4 << 20) + 16_384,
            "{} bytes scanned",
            events.examined
        );
        let mut many = SseEvents::default();
        many.push(&b"data: {}\n\n".repeat(100_000));
        let mut count = 0;
        while many.next_event().is_some() {
            count += 1;
        }
        assert_eq!(count, 100_000);
        assert!(many.examined <= 1_000_000, "{}", many.examined);
    }

    #[test]
    fn only_a_response_answers_a_request() {
        let response = json!({"jsonrpc": "2.0", "id": 7, "result": {}});
        let request = json!({"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage"});
        assert!(is_response_to(&response, 7));
        assert!(!is_response_to(&response, 8));
        assert!(!is_response_to(&request, 7));
        let event = format!("data: {request}");
        assert_eq!(response_in(event.as_bytes(), 7), None);
        let event = format!("event: message\ndata: {response}");
        assert_eq!(response_in(event.as_bytes(), 7), Some(response));
    }
}
