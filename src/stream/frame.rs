//! Server-sent-event framing: the bytes of one event, built once and shared.
//!
//! Event names come from a closed enum and ids are etags the gateway made itself, so no
//! outside input ever reaches an `event:` or `id:` line (a newline there would split the
//! event; axum's `sse::Event` panics on one instead).

use std::sync::Arc;

use bytes::Bytes;

/// A `tools_changed` event, encoded once and shared by every member of a group.
#[derive(Debug)]
pub struct Frame {
    /// The etag the change applies to; a connection at another etag needs a snapshot instead.
    pub from: Arc<str>,
    /// The etag after the change (the event's `id`).
    pub to: Arc<str>,
    /// The encoded event.
    pub bytes: Bytes,
}

/// The events of `GET /agents/tools/stream`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// The full manifest body.
    Tools,
    /// What changed since the last event.
    ToolsChanged,
    /// A resume whose `Last-Event-ID` still matches.
    Unchanged,
    /// The token expired; the stream closes after this event.
    TokenExpired,
}

impl EventKind {
    /// Every event, for counting them.
    pub const ALL: [EventKind; 4] = [
        EventKind::Tools,
        EventKind::ToolsChanged,
        EventKind::Unchanged,
        EventKind::TokenExpired,
    ];

    /// Position in [`EventKind::ALL`].
    pub const fn index(self) -> usize {
        match self {
            EventKind::Tools => 0,
            EventKind::ToolsChanged => 1,
            EventKind::Unchanged => 2,
            EventKind::TokenExpired => 3,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            EventKind::Tools => "tools",
            EventKind::ToolsChanged => "tools_changed",
            EventKind::Unchanged => "unchanged",
            EventKind::TokenExpired => "token_expired",
        }
    }
}

/// A keep-alive comment.
pub const PING: Bytes = Bytes::from_static(b": ping\n\n");

/// `id: <id>\nevent: <name>\ndata: <data>\n\n`. An id with a line break is left out (it cannot
/// happen with etags; it must not corrupt the stream if it ever did). Data with line breaks is
/// split over several `data:` lines, which a client joins back with `\n`.
pub fn encode(kind: EventKind, id: Option<&str>, data: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(data.len() + 64);
    if let Some(id) = id.filter(|id| !id.contains(['\n', '\r', '\0'])) {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(kind.name().as_bytes());
    out.push(b'\n');
    for line in data.split(|&byte| byte == b'\n') {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line.strip_suffix(b"\r").unwrap_or(line));
        out.push(b'\n');
    }
    out.push(b'\n');
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_has_id_name_and_data_lines() {
        let bytes = encode(EventKind::Tools, Some("\"ab\""), b"{\"x\":1}");
        assert_eq!(&bytes[..], b"id: \"ab\"\nevent: tools\ndata: {\"x\":1}\n\n");
    }

    #[test]
    fn line_breaks_never_escape_their_line() {
        let bytes = encode(EventKind::Unchanged, Some("a\nevent: evil"), b"one\ntwo");
        assert_eq!(&bytes[..], b"event: unchanged\ndata: one\ndata: two\n\n");
    }
}
