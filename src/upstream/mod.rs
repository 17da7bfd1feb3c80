//! Executing a tool call against the tool's upstream, after the caller has decided that the
//! call is allowed and checked its arguments ([`check_arguments`]).
//!
//! - `mcp` sources: `tools/call` on the source's MCP server, over one pooled session per source
//!   ([`mcp`]); the server's `CallToolResult` is passed through.
//! - `openapi` sources: the HTTP request the operation describes ([`openapi`], built by
//!   [`request`]); the answer becomes text content, plus `structuredContent` when the tool has
//!   an object output schema ([`response`]).
//! - `manual` and `tool-service` sources: toolgate cannot execute their tools
//!   ([`CallOutcome::NotExecutable`]).
//!
//! What goes upstream is the source's configured headers, the token its `config.auth` asks
//! for ([`credentials`]: the gateway's own, or one exchanged for the caller's) and the call's
//! arguments, never the agent's token or anything else of the agent's request. Every failure is a result, not an
//! error: a `CallToolResult` with `isError: true` whose text says what happened, and a
//! [`CallOutcome`] for metrics.
//!
//! Nothing of a source's config reaches the agent: its URLs carry credentials in their query
//! or userinfo, and its headers are credentials. A failure whose cause is told in the
//! gateway's words (an unreachable host, a document that cannot be fetched, a config that
//! makes no request) is [`CallResult::hidden`]: the agent reads the tool, the kind of failure
//! and the upstream's HTTP status, and the cause goes to the log with its URLs redacted
//! ([`crate::telemetry::redact::redact_urls`]). Only the upstream's own answer (an error body,
//! a JSON-RPC error) and what is wrong with the agent's arguments are passed on as text. Every call is bounded ([`CallLimits`]: time, answer size) and is
//! one `call tool` span carrying the tool id, source type, outcome and upstream status — never
//! the arguments or the result.

pub mod arguments;
pub mod credentials;
mod mcp_server;
mod openapi;
mod pool;
pub mod request;
mod response;

use std::time::Duration;

use serde_json::{Map, Value, json};
use tracing::field::Empty;

use crate::domain::model::{Source, SourceType, Tool};
use crate::domain::source_config::CallSettings;

pub use arguments::{ArgumentError, ValidatorCache, check_arguments};
pub use credentials::OnBehalf;

/// How long an idle upstream connection is kept for the next call.
pub const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(4);

/// How long a call may take and how large an answer may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    /// The whole call: a session handshake or document fetch it needs included.
    pub timeout: Duration,
    /// The upstream's answer body; a larger one is [`CallOutcome::TooLarge`].
    pub max_response_bytes: usize,
}

/// What became of a call, for metrics (a small closed set, so fit to be a label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// The upstream answered and the tool did not report an error.
    Ok,
    /// The tool reported an error (`isError`, a JSON-RPC error, a non-2xx answer), or the
    /// arguments cannot make a request.
    ToolError,
    /// No answer within [`CallLimits::timeout`].
    Timeout,
    /// The upstream could not be reached (refused, unresolvable).
    Unreachable,
    /// The answer was larger than [`CallLimits::max_response_bytes`].
    TooLarge,
    /// The upstream answered with something that is not a usable answer.
    BadUpstream,
    /// toolgate cannot execute this tool (its source type, or what its operation needs).
    NotExecutable,
}

impl CallOutcome {
    /// Every outcome, in declaration order.
    pub const ALL: [CallOutcome; 7] = [
        CallOutcome::Ok,
        CallOutcome::ToolError,
        CallOutcome::Timeout,
        CallOutcome::Unreachable,
        CallOutcome::TooLarge,
        CallOutcome::BadUpstream,
        CallOutcome::NotExecutable,
    ];

    /// The outcome's name in metrics and spans.
    pub const fn name(self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::ToolError => "tool_error",
            CallOutcome::Timeout => "timeout",
            CallOutcome::Unreachable => "unreachable",
            CallOutcome::TooLarge => "too_large",
            CallOutcome::BadUpstream => "bad_upstream",
            CallOutcome::NotExecutable => "not_executable",
        }
    }
}

/// What a call gives back.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    /// The MCP CallToolResult object: `{"content": [...], "structuredContent"?: {...},
    /// "isError": bool}`.
    pub result: Value,
    pub outcome: CallOutcome,
    /// HTTP status of the upstream answer, when there was one.
    pub upstream_status: Option<u16>,
    /// The cause of a [`CallResult::hidden`] failure, for the log only: it may quote the
    /// source's config. [`Upstream::call`] takes it out before the result leaves.
    cause: Option<String>,
}

impl CallResult {
    /// A result with one text block and `isError: true`. The agent reads `text`, so it must
    /// hold nothing of the source's config: only the upstream's own answer or what is wrong
    /// with the arguments.
    pub fn failure(outcome: CallOutcome, text: impl Into<String>, status: Option<u16>) -> Self {
        CallResult {
            result: error_content(text.into()),
            outcome,
            upstream_status: status,
            cause: None,
        }
    }

    /// A failure whose `cause` may name the source's config (its URLs, its id, its document):
    /// the agent reads only the kind of failure ([`public_text`]); the cause is logged.
    pub fn hidden(outcome: CallOutcome, cause: impl Into<String>, status: Option<u16>) -> Self {
        CallResult {
            result: Value::Null,
            outcome,
            upstream_status: status,
            cause: Some(cause.into()),
        }
    }
}

/// The tool error of a call whose upstream definition differs from the approved one.
pub(crate) fn awaiting_approval() -> CallResult {
    CallResult::failure(
        CallOutcome::NotExecutable,
        "definition changed upstream; awaiting approval",
        None,
    )
}

/// Whether the last refresh found the upstream's definition of `tool` other than the approved
/// one (changed or gone).
fn drifted(tool: &Tool) -> bool {
    tool.imported
        .as_ref()
        .is_some_and(|imported| imported.drift.is_some())
}

fn error_content(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

/// What an agent reads of a [`CallResult::hidden`] failure: the tool, the kind of failure
/// and the upstream's status; never a URL, a source id or a header.
fn public_text(tool_id: &str, result: &CallResult, limits: CallLimits) -> String {
    let what = match result.outcome {
        CallOutcome::Timeout => format!(
            "the upstream gave no answer within {} s",
            limits.timeout.as_secs_f64()
        ),
        CallOutcome::Unreachable => "the upstream cannot be reached".to_owned(),
        CallOutcome::TooLarge => format!(
            "the upstream's answer is larger than {} bytes, more than a call may return",
            limits.max_response_bytes
        ),
        CallOutcome::BadUpstream => "the upstream's answer is not a usable answer".to_owned(),
        CallOutcome::NotExecutable => "toolgate cannot make this call as the tool's source is \
                                       configured (an admin finds why in the gateway's log)"
            .to_owned(),
        CallOutcome::ToolError | CallOutcome::Ok => "the upstream refused the call".to_owned(),
    };
    match result.upstream_status {
        Some(status) => format!("tool '{tool_id}' failed: {what} (upstream HTTP status {status})"),
        None => format!("tool '{tool_id}' failed: {what}"),
    }
}

/// The call adapter: one HTTP client, the pooled MCP sessions and the cached OpenAPI
/// documents. One per server, shared by every call.
pub struct Upstream {
    limits: CallLimits,
    /// Built at start: a gateway whose client cannot be set up (its TLS setup failed) does not
    /// start, rather than failing every later call.
    client: reqwest::Client,
    sessions: mcp_server::Sessions,
    documents: openapi::Documents,
    validators: ValidatorCache,
    credentials: credentials::Credentials,
    /// When documents are read, compared with the tools' `updated_at` (stamped by the same
    /// clock, the App's).
    clock: std::sync::Arc<dyn crate::clock::Clock>,
}

impl Upstream {
    /// An adapter whose calls keep to `limits`.
    pub fn new(limits: CallLimits) -> Result<Upstream, reqwest::Error> {
        let client = reqwest::Client::builder()
            .connect_timeout(limits.timeout.min(Duration::from_secs(10)))
            // Below the 5 s keep-alive of common servers (uvicorn, Node): a connection is
            // dropped here before the server closes it, never reused as it closes.
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .redirect(response::same_origin_redirects())
            .build()?;
        Ok(Upstream {
            limits,
            client,
            sessions: mcp_server::Sessions::default(),
            documents: openapi::Documents::default(),
            validators: ValidatorCache::default(),
            credentials: credentials::Credentials::default(),
            clock: std::sync::Arc::new(crate::clock::SystemClock),
        })
    }

    /// The same adapter, counting the tokens it asks for with `metrics`, and keeping them
    /// until `clock` says they are near expiry (the App's clock, which callers' tokens
    /// expire by).
    pub fn with_tokens(
        mut self,
        metrics: crate::telemetry::upstream_tokens::TokenMetrics,
        clock: std::sync::Arc<dyn crate::clock::Clock>,
    ) -> Upstream {
        self.credentials =
            credentials::Credentials::new(Some(metrics), std::sync::Arc::clone(&clock));
        self.clock = clock;
        self
    }

    /// The limits calls keep to.
    pub fn limits(&self) -> CallLimits {
        self.limits
    }

    /// [`check_arguments`] against `tool`'s input schema, with its compiled validator kept for
    /// the next call of the tool.
    pub fn check_arguments(
        &self,
        tool: &Tool,
        arguments: &Map<String, Value>,
    ) -> Result<(), ArgumentError> {
        // The validator reads a `Value`: one copy of the (small) arguments.
        let arguments = Value::Object(arguments.clone());
        self.validators.check(&tool.input_schema, &arguments)
    }

    /// Executes `tool` of `source` with `arguments` (already authorized and validated),
    /// reading the source's config now (see [`Upstream::call_with`]).
    pub async fn call(
        &self,
        source: &Source,
        tool: &Tool,
        arguments: &Map<String, Value>,
    ) -> CallResult {
        let settings = CallSettings::of(source);
        self.call_with((source, &settings), tool, arguments).await
    }

    /// Executes `tool` of `source` with `arguments` (already authorized and validated), with
    /// what the source's config gives its calls already read (once per snapshot:
    /// [`crate::domain::snapshot::Snapshot::call_settings`]), for no caller in particular (a
    /// source whose `auth` exchanges the caller's token cannot be called so).
    pub async fn call_with(
        &self,
        target: (&Source, &CallSettings),
        tool: &Tool,
        arguments: &Map<String, Value>,
    ) -> CallResult {
        self.call_for(target, tool, arguments, None).await
    }

    /// [`Upstream::call_with`] made for `caller`: the subject of a token exchange.
    pub async fn call_for(
        &self,
        (source, settings): (&Source, &CallSettings),
        tool: &Tool,
        arguments: &Map<String, Value>,
        caller: Option<OnBehalf<'_>>,
    ) -> CallResult {
        let span = tracing::info_span!(
            "call tool",
            otel.name = "call tool",
            tool.id = %tool.id,
            "source.type" = %source.source_type,
            outcome = Empty,
            upstream.status = Empty,
        );
        let timeout = self.limits.timeout;
        let execute = async {
            let execute = self.execute((source, settings), tool, arguments, caller);
            match tokio::time::timeout(timeout, execute).await {
                Ok(result) => result,
                Err(_) => CallResult::failure(
                    CallOutcome::Timeout,
                    format!(
                        "the upstream did not answer within {} s (timed out)",
                        timeout.as_secs_f64()
                    ),
                    None,
                ),
            }
        };
        let mut result = crate::telemetry::in_span(&span, execute).await;
        if let Some(cause) = result.cause.take() {
            let cause = crate::telemetry::redact::redact_urls(&cause);
            tracing::warn!(parent: &span, outcome = result.outcome.name(), %cause, "tool call failed");
            result.result = error_content(public_text(&tool.id, &result, self.limits));
        }
        span.record("outcome", result.outcome.name());
        if let Some(status) = result.upstream_status {
            span.record("upstream.status", status);
        }
        tracing::debug!(parent: &span, outcome = result.outcome.name(), "tool called");
        result
    }

    async fn execute(
        &self,
        (source, settings): (&Source, &CallSettings),
        tool: &Tool,
        arguments: &Map<String, Value>,
        caller: Option<OnBehalf<'_>>,
    ) -> CallResult {
        let client = &self.client;
        let target = (source, settings);
        // The last refresh found the upstream's tool other than the one approved: what a call
        // would do there is not what an admin approved.
        if drifted(tool) {
            return awaiting_approval();
        }
        let executable = matches!(source.kind(), Some(SourceType::Mcp | SourceType::OpenApi));
        let authorization = if executable {
            let asked = self
                .credentials
                .authorization(client, self.limits, target, caller);
            match asked.await {
                Ok(authorization) => authorization,
                Err(result) => return result,
            }
        } else {
            None
        };
        match source.kind() {
            Some(SourceType::Mcp) => {
                let call = mcp_server::McpCall {
                    sessions: &self.sessions,
                    client,
                    limits: self.limits,
                    authorization: authorization.as_deref(),
                    identity: caller.map(|caller| caller.identity),
                };
                call.run(target, tool, arguments).await
            }
            Some(SourceType::OpenApi) => {
                let call = openapi::Call {
                    client,
                    limits: self.limits,
                    documents: &self.documents,
                    authorization: authorization.as_deref(),
                    clock: self.clock.as_ref(),
                };
                call.run(target, tool, arguments).await
            }
            Some(SourceType::Manual | SourceType::ToolService) | None => not_executable(source),
        }
    }
}

/// The answer for a tool of a source type toolgate does not execute.
fn not_executable(source: &Source) -> CallResult {
    let text = match source.kind() {
        Some(SourceType::ToolService) => {
            "toolgate cannot execute tools of a tool-service source: they are run by the service \
             that listens on the source's request queue. Call that service directly (toolgate \
             answers whether the call is allowed at POST /access/v1/evaluation)."
                .to_owned()
        }
        Some(SourceType::Manual) => {
            "toolgate cannot execute tools of a manual source: it does not know where \
                     they run. Call the tool's service directly (toolgate answers whether the \
                     call is allowed at POST /access/v1/evaluation)."
                .to_owned()
        }
        _ => format!(
            "toolgate cannot execute tools of a '{}' source",
            source.source_type
        ),
    };
    CallResult::failure(CallOutcome::NotExecutable, text, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_names_are_distinct_and_all_listed() {
        let names: std::collections::BTreeSet<&str> =
            CallOutcome::ALL.iter().map(|o| o.name()).collect();
        assert_eq!(names.len(), CallOutcome::ALL.len());
        assert_eq!(CallOutcome::Ok.name(), "ok");
        assert_eq!(CallOutcome::NotExecutable.name(), "not_executable");
    }

    #[test]
    fn the_default_limits_are_30_seconds_and_4_mib() {
        let limits = CallLimits::default();
        assert_eq!(limits.timeout, Duration::from_secs(30));
        assert_eq!(limits.max_response_bytes, 4 << 20);
    }

    #[test]
    fn a_failure_is_one_text_block_with_is_error() {
        let result = CallResult::failure(CallOutcome::Timeout, "late", Some(504));
        assert_eq!(
            result.result,
            json!({"content": [{"type": "text", "text": "late"}], "isError": true})
        );
        assert_eq!(result.upstream_status, Some(504));
    }
}
