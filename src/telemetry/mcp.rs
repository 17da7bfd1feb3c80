//! The MCP endpoint's instruments: requests by method and outcome, notifications sent, and
//! tool calls by outcome with their time. Labels are closed sets the transport passes as static
//! strings (a method this server does not know counts as `other`); never a tool id, a name or a
//! subject.

use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter};

/// Bucket bounds of a tool call, seconds: from a refused call (microseconds) to the longest
/// upstream timeout.
const CALL_SECONDS: [f64; 14] = [
    0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0,
];

/// Instruments of `/mcp`.
pub struct McpMetrics {
    requests: Counter<u64>,
    notifications: Counter<u64>,
    calls: Counter<u64>,
    call_duration: Histogram<f64>,
}

impl McpMetrics {
    pub(super) fn new(meter: &Meter) -> McpMetrics {
        McpMetrics {
            requests: meter
                .u64_counter("toolgate.mcp.requests")
                .with_description(
                    "JSON-RPC messages received at /mcp, by method (other for one this server \
                     does not know) and outcome (ok, error)",
                )
                .build(),
            notifications: meter
                .u64_counter("toolgate.mcp.notifications")
                .with_description(
                    "notifications/tools/list_changed sent to MCP clients, by reason: \
                     list_changed (the caller's manifest changed) or token_expired",
                )
                .build(),
            calls: meter
                .u64_counter("toolgate.tool_calls")
                .with_description(
                    "tools/call requests by outcome: refused (not in the caller's manifest), \
                     invalid_arguments, or how the upstream call ended",
                )
                .build(),
            call_duration: meter
                .f64_histogram("toolgate.tool_call.duration")
                .with_unit("s")
                .with_description("Time of a tools/call, decision and upstream call, by outcome")
                .with_boundaries(CALL_SECONDS.to_vec())
                .build(),
        }
    }

    /// One message at `/mcp`.
    pub fn request(&self, method: &'static str, ok: bool) {
        self.requests.add(
            1,
            &[
                KeyValue::new("method", method),
                KeyValue::new("outcome", if ok { "ok" } else { "error" }),
            ],
        );
    }

    /// One `list_changed` sent, for `reason`.
    pub fn notification(&self, reason: &'static str) {
        self.notifications
            .add(1, &[KeyValue::new("reason", reason)]);
    }

    /// One `tools/call` that ended with `outcome` after `took`.
    pub fn call(&self, outcome: &'static str, took: Duration) {
        let labels = [KeyValue::new("outcome", outcome)];
        self.calls.add(1, &labels);
        self.call_duration.record(took.as_secs_f64(), &labels);
    }
}
