//! The SSE body of an MCP notification stream (the 2025 revisions' `GET /mcp`, and the
//! 2026-07-28 `subscriptions/listen` answer): [`Notice`]s of a [`Watch`] as JSON-RPC
//! notifications. Every `notifications/tools/list_changed` carries the new manifest's etag as its
//! event id, so a client that reconnects with `Last-Event-ID` is told again only if its
//! manifest moved meanwhile.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::Stream;

use super::jsonrpc;
use crate::stream::frame;
use crate::stream::{Notice, Watch};
use crate::telemetry::Metrics;

/// The method that tells a client to list its tools again.
pub(super) const LIST_CHANGED: &str = "notifications/tools/list_changed";

/// What opens and closes a stream, besides the notices.
pub(super) struct Framing {
    /// Sent first: a priming event (an id and no data, 2025-11-25) or a comment.
    pub opening: Option<Bytes>,
    /// Sent after the last notice, when the stream ends by itself (2026-07-28's closing
    /// result); not when the client goes away.
    pub closing: Option<Bytes>,
    /// Whether the client asked to be told of changes (a 2026-07-28 subscription may not).
    pub changes: bool,
}

/// `id: <etag>\ndata: <list_changed>\n\n`.
pub(super) fn list_changed(etag: &str, params: Option<serde_json::Value>) -> Bytes {
    let message = jsonrpc::notification(LIST_CHANGED, params);
    event(Some(etag), &message)
}

/// One SSE `message` event ([`frame::event`], the one encoder).
pub(super) fn event(id: Option<&str>, data: &[u8]) -> Bytes {
    frame::event(None, id, data)
}

/// A priming event: the current etag as id and empty data, so that even a client that never
/// hears a notice can resume from where it started (2025-11-25).
pub(super) fn priming(etag: &str) -> Bytes {
    frame::event(None, Some(etag), b"")
}

/// The stream: `framing.opening`, then one event per notice (`list_changed` for a change and,
/// last, for an expired token), keep-alive comments, then `framing.closing`.
pub(super) fn body(
    watch: Watch,
    framing: Framing,
    params: Option<serde_json::Value>,
    metrics: Arc<Metrics>,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send {
    struct State {
        watch: Watch,
        opening: Option<Bytes>,
        closing: Option<Bytes>,
        params: Option<serde_json::Value>,
        metrics: Arc<Metrics>,
        changes: bool,
        done: bool,
    }
    let state = State {
        watch,
        opening: framing.opening,
        closing: framing.closing,
        changes: framing.changes,
        params,
        metrics,
        done: false,
    };
    futures_util::stream::unfold(state, |mut state| async move {
        if let Some(opening) = state.opening.take() {
            return Some((Ok(opening), state));
        }
        if state.done {
            return None;
        }
        let bytes = match state.watch.next().await {
            Some(Notice::Changed(_)) if !state.changes => Bytes::from_static(b": changed\n\n"),
            Some(Notice::Changed(etag)) => {
                state.metrics.mcp.notification("list_changed");
                list_changed(&etag, state.params.clone())
            }
            Some(Notice::Expired) if !state.changes => {
                state.done = true;
                state.closing.take()?
            }
            Some(Notice::Expired) => {
                // The client must list again, with a new token: say so, then end.
                state.done = true;
                state.metrics.mcp.notification("token_expired");
                let etag = Arc::clone(state.watch.current());
                let last = list_changed(&etag, state.params.clone());
                match state.closing.take() {
                    Some(closing) => [last, closing].concat().into(),
                    None => last,
                }
            }
            Some(Notice::Ping) => Bytes::from_static(b": ping\n\n"),
            None => {
                state.done = true;
                state.closing.take()?
            }
        };
        Some((Ok(bytes), state))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_carry_the_etag_and_one_json_line() {
        assert_eq!(
            &list_changed("\"ab\"", None)[..],
            b"id: \"ab\"\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"
        );
        assert_eq!(&priming("\"ab\"")[..], b"id: \"ab\"\ndata: \n\n");
        assert_eq!(&event(Some("a\nb"), b"{}")[..], b"data: {}\n\n");
    }
}
