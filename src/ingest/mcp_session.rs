//! A client session with a remote MCP server over Streamable HTTP: the one MCP client of the
//! house, used by the importer (`tools/list`, [`super::mcp`]) and by the call adapter
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

use super::why;

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
            serde_json::from_slice::<Value>(&body).map_err(|error| {
                McpError::Invalid(format!(
                    "the MCP server answered {method} with invalid JSON: {error}"
                ))
            })?
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
    /// (notifications, progress) are skipped.
    async fn read_sse(
        &self,
        mut response: reqwest::Response,
        id: u64,
        method: &str,
    ) -> Result<Value, McpError> {
        // Bytes, not text: a character may be split between two chunks. Carriage returns are
        // dropped so that CRLF line ends read as LF.
        let mut buffer: Vec<u8> = Vec::new();
        let mut read = 0usize;
        loop {
            while let Some(end) = buffer.windows(2).position(|pair| pair == b"\n\n") {
                let event: Vec<u8> = buffer.drain(..end + 2).collect();
                let event = String::from_utf8_lossy(&event);
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(|d| d.strip_prefix(' ').unwrap_or(d))
                    .collect();
                if data.is_empty() {
                    continue;
                }
                if let Ok(message) = serde_json::from_str::<Value>(&data.join("\n"))
                    && message.get("id") == Some(&json!(id))
                {
                    return Ok(message);
                }
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
            read += chunk.len();
            if read > self.max_bytes {
                return Err(McpError::TooLarge(format!(
                    "the MCP server's {method} stream is larger than {} bytes",
                    self.max_bytes
                )));
            }
            buffer.extend(chunk.iter().filter(|byte| **byte != b'\r'));
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

/// A response and the session id that came with it.
struct Answer {
    reply: McpReply,
    session_id: Option<HeaderValue>,
}
