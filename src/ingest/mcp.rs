//! A remote MCP server over Streamable HTTP → tools.
//!
//! The client side of the MCP handshake, just enough to list tools: JSON-RPC `initialize`, the
//! `notifications/initialized` notification, then `tools/list` page by page (`nextCursor`).
//! Every request is a POST that the server may answer with `application/json` or with a
//! `text/event-stream` carrying the response; a session id the server hands out
//! (`Mcp-Session-Id`) is sent back on every later request, and the session is ended with a
//! DELETE at the end (best effort).
//!
//! Each tool keeps its `inputSchema` and `outputSchema` verbatim; `method` is `MCP`, `path` is
//! `mcp://{source name}/{tool name}`, and the behaviour hints of its annotations become tags
//! (`readOnlyHint` → `read-only`, `destructiveHint` → `destructive`, `idempotentHint` →
//! `idempotent`, `openWorldHint` → `open-world`) so that selectors can use them.
//!
//! Hints take the defaults the MCP specification gives them, which fail closed for the two
//! that matter to access: a tool that does not say `destructiveHint: false` is tagged
//! `destructive`, one that does not say `openWorldHint: false` is tagged `open-world`, so
//! `excluded_tags: ["destructive"]` excludes every tool that did not promise otherwise
//! (SEMANTICS.md section 9). `read-only` and `idempotent` need an explicit `true`. A hint that
//! is not a boolean counts as absent.

use std::sync::Arc;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::{ImportedTool, IngestError, client, read_body};

/// The protocol version offered in `initialize`; the server may answer with another one it
/// supports, which is then sent as `MCP-Protocol-Version`.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// The most `tools/list` pages followed (a server that keeps returning cursors is cut off).
const MAX_PAGES: usize = 100;

/// Annotation hints that become tags, with the value MCP says to assume when a hint is absent.
pub const HINT_TAGS: [(&str, &str, bool); 4] = [
    ("readOnlyHint", "read-only", false),
    ("destructiveHint", "destructive", true),
    ("idempotentHint", "idempotent", false),
    ("openWorldHint", "open-world", true),
];

/// Lists the tools of the MCP server at `url`.
pub async fn list_tools(
    source_name: &str,
    url: &str,
    headers: &[(String, String)],
) -> Result<Vec<ImportedTool>, IngestError> {
    let mut session = Session::new(url, headers)?;
    let result = session.list_tools().await;
    session.close().await;
    let tools = result?;
    tools
        .iter()
        .map(|tool| tool_from_mcp(source_name, tool))
        .collect()
}

/// Converts one entry of a `tools/list` result.
pub fn tool_from_mcp(source_name: &str, tool: &Value) -> Result<ImportedTool, IngestError> {
    let name = tool
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| IngestError::Definition(format!("an MCP tool without a name: {tool}")))?;
    let text = |key: &str| {
        tool.get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let description = text("description")
        .or_else(|| text("title"))
        .or_else(|| {
            tool.pointer("/annotations/title")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        })
        .map_or_else(|| format!("MCP tool {name}"), str::to_owned);
    let input_schema = match tool.get("inputSchema") {
        Some(schema @ Value::Object(_)) => Arc::new(schema.clone()),
        _ => {
            return Err(IngestError::Definition(format!(
                "MCP tool '{name}' has no inputSchema object"
            )));
        }
    };
    let output_schema = tool
        .get("outputSchema")
        .filter(|s| s.is_object())
        .map(|s| Arc::new(s.clone()));
    let tags = HINT_TAGS
        .iter()
        .filter(|(hint, _, default)| {
            tool.get("annotations")
                .and_then(|annotations| annotations.get(hint))
                .and_then(Value::as_bool)
                .unwrap_or(*default)
        })
        .map(|(_, tag, _)| (*tag).to_owned())
        .collect();
    Ok(ImportedTool {
        operation_id: name.to_owned(),
        name: name.to_owned(),
        description,
        method: "MCP".to_owned(),
        path: format!("mcp://{source_name}/{name}"),
        tags,
        input_schema,
        output_schema,
        deprecated: false,
    })
}

struct Session {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    next_id: u64,
}

impl Session {
    fn new(url: &str, headers: &[(String, String)]) -> Result<Session, IngestError> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                IngestError::NotImportable(format!("config.headers: '{name}' is not a header name"))
            })?;
            let value = HeaderValue::from_str(value).map_err(|_| {
                IngestError::NotImportable(format!("config.headers.{name}: not a header value"))
            })?;
            map.insert(name, value);
        }
        map.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Ok(Session {
            client: client()?,
            url: url.to_owned(),
            headers: map,
            next_id: 1,
        })
    }

    async fn list_tools(&mut self) -> Result<Vec<Value>, IngestError> {
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
        if let Some(version) = init.get("protocolVersion").and_then(Value::as_str)
            && let Ok(value) = HeaderValue::from_str(version)
        {
            self.headers.insert("mcp-protocol-version", value);
        }
        self.notify("notifications/initialized").await?;
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(cursor) => json!({"cursor": cursor}),
                None => json!({}),
            };
            let page = self.call("tools/list", params).await?;
            match page.get("tools") {
                Some(Value::Array(page_tools)) => tools.extend(page_tools.iter().cloned()),
                _ => {
                    return Err(IngestError::Definition(
                        "the MCP server's tools/list result has no 'tools' array".to_owned(),
                    ));
                }
            }
            cursor = page
                .get("nextCursor")
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty())
                .map(str::to_owned);
            if cursor.is_none() {
                return Ok(tools);
            }
        }
        Err(IngestError::Definition(format!(
            "the MCP server's tools/list went on for more than {MAX_PAGES} pages"
        )))
    }

    /// Sends a JSON-RPC request and returns its `result`.
    async fn call(&mut self, method: &str, params: Value) -> Result<Value, IngestError> {
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let response = self.post(&body, method).await?;
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.headers.insert("mcp-session-id", session.clone());
        }
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let message = if is_sse {
            self.read_sse(response, id, method).await?
        } else {
            let body = read_body(response, &self.url).await?;
            serde_json::from_slice::<Value>(&body).map_err(|error| {
                IngestError::Definition(format!(
                    "the MCP server answered {method} with invalid JSON: {error}"
                ))
            })?
        };
        if let Some(error) = message.get("error") {
            return Err(IngestError::Upstream(format!(
                "the MCP server answered {method} with error {}: {}",
                error.get("code").unwrap_or(&Value::Null),
                error.get("message").and_then(Value::as_str).unwrap_or("")
            )));
        }
        message.get("result").cloned().ok_or_else(|| {
            IngestError::Definition(format!("the MCP server's answer to {method} has no result"))
        })
    }

    async fn notify(&mut self, method: &str) -> Result<(), IngestError> {
        let body = json!({"jsonrpc": "2.0", "method": method});
        self.post(&body, method).await.map(drop)
    }

    async fn post(&self, body: &Value, method: &str) -> Result<reqwest::Response, IngestError> {
        let response = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .body(body.to_string())
            .send()
            .await
            .map_err(|error| {
                IngestError::Upstream(format!(
                    "the MCP server at {} cannot be reached ({method}): {}",
                    self.url,
                    super::why(&error)
                ))
            })?;
        let status = response.status();
        if !status.is_success() {
            let detail = read_body(response, &self.url)
                .await
                .map(|b| {
                    String::from_utf8_lossy(&b)
                        .chars()
                        .take(300)
                        .collect::<String>()
                })
                .unwrap_or_default();
            return Err(IngestError::Upstream(format!(
                "the MCP server at {} answered {method} with {status}{}",
                self.url,
                if detail.is_empty() {
                    String::new()
                } else {
                    format!(": {detail}")
                }
            )));
        }
        Ok(response)
    }

    /// Reads server-sent events until the JSON-RPC response with `id` arrives.
    async fn read_sse(
        &self,
        mut response: reqwest::Response,
        id: u64,
        method: &str,
    ) -> Result<Value, IngestError> {
        let mut buffer = String::new();
        let mut read = 0usize;
        loop {
            while let Some(end) = buffer.find("\n\n") {
                let event: String = buffer.drain(..end + 2).collect();
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
            let chunk = response.chunk().await.map_err(|error| {
                IngestError::Upstream(format!("reading the MCP server's {method} stream: {error}"))
            })?;
            let Some(chunk) = chunk else {
                return Err(IngestError::Definition(format!(
                    "the MCP server's {method} stream ended without a response"
                )));
            };
            read += chunk.len();
            if read > super::MAX_FETCH_BYTES {
                return Err(IngestError::Definition(format!(
                    "the MCP server's {method} stream is larger than {} bytes",
                    super::MAX_FETCH_BYTES
                )));
            }
            buffer.push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
        }
    }

    /// Ends the session, if the server opened one (best effort: errors are ignored).
    async fn close(&self) {
        if self.headers.contains_key("mcp-session-id") {
            let _ = self
                .client
                .delete(&self.url)
                .headers(self.headers.clone())
                .send()
                .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_become_tags_and_schemas_stay_verbatim() {
        let tool = tool_from_mcp(
            "files",
            &json!({"name": "read", "description": "Read a file",
                    "inputSchema": {"type": "object", "properties": {"p": {"type": "string"}}, "x-extra": 1},
                    "annotations": {"readOnlyHint": true, "destructiveHint": false, "openWorldHint": true}}),
        )
        .expect("a tool");
        assert_eq!(tool.path, "mcp://files/read");
        assert_eq!(tool.method, "MCP");
        assert_eq!(tool.tags, ["read-only", "open-world"]);
        assert_eq!(
            *tool.input_schema,
            json!({"type": "object", "properties": {"p": {"type": "string"}}, "x-extra": 1})
        );
    }

    #[test]
    fn absent_hints_take_the_defaults_that_fail_closed() {
        let tags = |annotations: Option<Value>| {
            let mut tool = json!({"name": "t", "inputSchema": {"type": "object"}});
            if let Some(annotations) = annotations {
                tool["annotations"] = annotations;
            }
            tool_from_mcp("s", &tool).expect("a tool").tags
        };
        assert_eq!(tags(None), ["destructive", "open-world"]);
        assert_eq!(tags(Some(json!({}))), ["destructive", "open-world"]);
        assert_eq!(
            tags(Some(json!({"readOnlyHint": true}))),
            ["read-only", "destructive", "open-world"],
            "no promise about destruction: assumed destructive, as MCP says"
        );
        assert_eq!(
            tags(Some(
                json!({"destructiveHint": "no", "openWorldHint": null})
            )),
            ["destructive", "open-world"],
            "a hint that is not a boolean counts as absent"
        );
        assert_eq!(
            tags(Some(json!({"readOnlyHint": true, "destructiveHint": false,
                              "idempotentHint": true, "openWorldHint": false}))),
            ["read-only", "idempotent"]
        );
    }
}
