//! `tools/call` on an `mcp` source's server, over one pooled session per source.
//!
//! The session ([`McpSession`], the same client the importer lists tools with) is made on the
//! first call and shared by every call after it; it is keyed by the source's id and a hash of
//! its `url` and `headers`, so an edited source gets a new session. A server that forgot the
//! session (HTTP 404, as the MCP specification says it answers, e.g. after a restart) gets a
//! new handshake and the call is sent once more.
//!
//! The tool is called by its upstream name (`operation_id`) with the call's arguments, and the
//! server's `CallToolResult` is passed through (`content`, `structuredContent`, `isError`). A
//! JSON-RPC error is the tool's error (`isError: true`, its message as text); an HTTP error or
//! an answer that is not a result is the upstream's.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::pool::Pool;
use super::{CallLimits, CallOutcome, CallResult};
use crate::domain::model::{Source, Tool};
use crate::domain::source_config::{CallSettings, ImportConfig, UpstreamAuth};
use crate::ingest::mcp_server::{McpError, McpReply, McpSession};

/// Sessions kept open at once: one per source, or per (source, caller) for a source whose
/// token is exchanged for each caller.
pub(super) const MAX_SESSIONS: usize = 1024;

/// The pooled sessions, one per `mcp` source.
pub(super) struct Sessions {
    pool: Pool<McpSession>,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions {
            pool: Pool::new(MAX_SESSIONS, None, end_session),
        }
    }
}

/// Ends a session that leaves the pool (best effort, in the background).
fn end_session(session: Arc<McpSession>) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move { session.close().await });
    }
}

/// One call's view of the adapter.
pub(super) struct McpCall<'u> {
    pub sessions: &'u Sessions,
    pub client: &'u reqwest::Client,
    pub limits: CallLimits,
    /// The token `config.auth` asked for (`Bearer …`), sent as `Authorization`.
    pub authorization: Option<&'u str>,
    /// The caller's identity: a token exchanged for one caller is used on that caller's own
    /// session, never on a session another caller shares.
    pub identity: Option<&'u str>,
}

impl McpCall<'_> {
    /// Calls `tool` on the MCP server of `source`.
    pub(super) async fn run(
        &self,
        (source, settings): (&Source, &CallSettings),
        tool: &Tool,
        arguments: &Map<String, Value>,
    ) -> CallResult {
        let Ok(ImportConfig::Mcp { url, headers }) = &settings.import else {
            return CallResult::hidden(
                CallOutcome::NotExecutable,
                format!(
                    "the MCP source '{}' has no usable config (config.url, config.headers): \
                     its tools cannot be called",
                    source.id
                ),
                None,
            );
        };
        let (slot, version, headers) = self.session_of(source, settings, headers);
        let params = json!({"name": tool.operation_id, "arguments": arguments});
        let (client, limits, headers_ref) = (self.client, self.limits, &headers);
        let make = move || async move {
            let mut session = McpSession::new(
                client.clone(),
                url,
                headers_ref,
                limits.timeout,
                limits.max_response_bytes,
            )?;
            session.initialize().await?;
            Ok::<_, McpError>(session)
        };
        let mut retried = false;
        loop {
            let (session, fresh) = match self.sessions.pool.get(&slot, version, make).await {
                Ok(got) => got,
                Err(error) => return failure(error),
            };
            match session.request("tools/call", params.clone()).await {
                Ok(reply) => return passed_through(reply),
                // The server forgot the session: once more, on a new one (not when the session
                // is new, which a server that keeps answering 404 would make a loop).
                Err(McpError::Status { status: 404, .. }) if !retried && !fresh => {
                    tracing::debug!(source = %source.id, "the MCP session expired; initializing again");
                    self.sessions.pool.forget(&slot, &session).await;
                    retried = true;
                }
                Err(error) => return failure(error),
            }
        }
    }

    /// The pool slot, version and headers of this call's session: one session per source, or
    /// per (source, caller) when the token is exchanged for the caller. The token is part of
    /// the version, so a renewed token makes a new session.
    fn session_of(
        &self,
        source: &Source,
        settings: &CallSettings,
        configured: &[(String, String)],
    ) -> (String, blake3::Hash, Vec<(String, String)>) {
        let mut headers = configured.to_vec();
        let mut version = blake3::Hasher::new();
        version.update(&settings.version);
        if let Some(authorization) = self.authorization {
            headers.push(("Authorization".to_owned(), authorization.to_owned()));
            version.update(authorization.as_bytes());
        }
        let slot = match (&settings.auth, self.identity) {
            (UpstreamAuth::TokenExchange(_), Some(identity)) => {
                format!("{}\u{0}{identity}", source.id)
            }
            _ => source.id.clone(),
        };
        (slot, version.finalize(), headers)
    }
}

/// The server's `CallToolResult`, passed through.
fn passed_through(reply: McpReply) -> CallResult {
    let status = Some(reply.status);
    let Some(content @ Value::Array(_)) = reply.result.get("content") else {
        return CallResult::failure(
            CallOutcome::BadUpstream,
            "the MCP server's tools/call result has no 'content' array",
            status,
        );
    };
    let is_error = reply.result.get("isError") == Some(&Value::Bool(true));
    let mut result = json!({"content": content, "isError": is_error});
    if let Some(structured) = reply.result.get("structuredContent") {
        result["structuredContent"] = structured.clone();
    }
    CallResult {
        result,
        outcome: if is_error {
            CallOutcome::ToolError
        } else {
            CallOutcome::Ok
        },
        upstream_status: status,
        cause: None,
    }
}

/// The result for a call that got no `CallToolResult`. Only a JSON-RPC error is the tool's
/// own answer; every other message is the gateway's and names the server's URL, so it is
/// [`CallResult::hidden`].
fn failure(error: McpError) -> CallResult {
    match error {
        McpError::Config(message) => CallResult::hidden(CallOutcome::NotExecutable, message, None),
        McpError::Send { message, timed_out } => CallResult::hidden(
            if timed_out {
                CallOutcome::Timeout
            } else {
                CallOutcome::Unreachable
            },
            message,
            None,
        ),
        McpError::Status { status, message } => {
            CallResult::hidden(CallOutcome::BadUpstream, message, Some(status))
        }
        McpError::Read { message, timed_out } => CallResult::hidden(
            if timed_out {
                CallOutcome::Timeout
            } else {
                CallOutcome::BadUpstream
            },
            message,
            None,
        ),
        McpError::TooLarge(message) => CallResult::hidden(CallOutcome::TooLarge, message, None),
        McpError::Invalid(message) => CallResult::hidden(CallOutcome::BadUpstream, message, None),
        McpError::Rpc { status, message } => {
            CallResult::failure(CallOutcome::ToolError, message, Some(status))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_result_is_passed_through() {
        let reply = McpReply {
            status: 200,
            result: json!({"content": [{"type": "text", "text": "hi"}],
                           "structuredContent": {"words": 1}, "isError": false, "_meta": {"x": 1}}),
        };
        let result = passed_through(reply);
        assert_eq!(result.outcome, CallOutcome::Ok);
        assert_eq!(
            result.result,
            json!({"content": [{"type": "text", "text": "hi"}], "structuredContent": {"words": 1}, "isError": false})
        );
        let tool_error = passed_through(McpReply {
            status: 200,
            result: json!({"content": [{"type": "text", "text": "bad"}], "isError": true}),
        });
        assert_eq!(tool_error.outcome, CallOutcome::ToolError);
        let broken = passed_through(McpReply {
            status: 200,
            result: json!({"text": "hi"}),
        });
        assert_eq!(broken.outcome, CallOutcome::BadUpstream);
    }

    #[test]
    fn failures_keep_apart_what_went_wrong() {
        let outcome = |error| failure(error).outcome;
        assert_eq!(
            outcome(McpError::Send {
                message: String::new(),
                timed_out: true
            }),
            CallOutcome::Timeout
        );
        assert_eq!(
            outcome(McpError::Send {
                message: String::new(),
                timed_out: false
            }),
            CallOutcome::Unreachable
        );
        assert_eq!(
            outcome(McpError::Status {
                status: 500,
                message: String::new()
            }),
            CallOutcome::BadUpstream
        );
        assert_eq!(
            outcome(McpError::TooLarge(String::new())),
            CallOutcome::TooLarge
        );
        let rpc = failure(McpError::Rpc {
            status: 200,
            message: "error -32602: Unknown tool".to_owned(),
        });
        assert_eq!(rpc.outcome, CallOutcome::ToolError);
        assert_eq!(rpc.result["isError"], true);
        assert_eq!(
            rpc.result["content"][0]["text"],
            "error -32602: Unknown tool"
        );
    }
}
