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
use crate::domain::source_config::{CallSettings, ImportConfig};
use crate::ingest::mcp_server::{McpError, McpReply, McpSession};

/// Sources whose sessions are kept open at once.
pub(super) const MAX_SESSIONS: usize = 256;

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

/// Calls `tool` on the MCP server of `source`.
pub(super) async fn call(
    sessions: &Sessions,
    client: &reqwest::Client,
    limits: CallLimits,
    (source, settings): (&Source, &CallSettings),
    tool: &Tool,
    arguments: &Map<String, Value>,
) -> CallResult {
    let (url, headers) = match &settings.import {
        Ok(ImportConfig::Mcp { url, headers }) => (url, headers),
        Ok(ImportConfig::OpenApi { .. }) | Err(_) => {
            return CallResult::hidden(
                CallOutcome::NotExecutable,
                format!(
                    "the MCP source '{}' has no usable config (config.url, config.headers): \
                     its tools cannot be called",
                    source.id
                ),
                None,
            );
        }
    };
    let version = blake3::Hash::from(settings.version);
    let params = json!({"name": tool.operation_id, "arguments": arguments});
    let (url_ref, headers_ref) = (url, headers);
    let make = move || async move {
        let mut session = McpSession::new(
            client.clone(),
            url_ref,
            headers_ref,
            limits.timeout,
            limits.max_response_bytes,
        )?;
        session.initialize().await?;
        Ok::<_, McpError>(session)
    };
    let mut retried = false;
    loop {
        let (session, fresh) = match sessions.pool.get(&source.id, version, make).await {
            Ok(got) => got,
            Err(error) => return failure(error),
        };
        match session.request("tools/call", params.clone()).await {
            Ok(reply) => return passed_through(reply),
            // The server forgot the session: once more, on a new one (not when the session is
            // new, which a server that keeps answering 404 would make a loop).
            Err(McpError::Status { status: 404, .. }) if !retried && !fresh => {
                tracing::debug!(source = %source.id, "the MCP session expired; initializing again");
                sessions.pool.forget(&source.id, &session).await;
                retried = true;
            }
            Err(error) => return failure(error),
        }
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
