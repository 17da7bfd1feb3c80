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

/// `id: <id>\nevent: <name>\ndata: <data>\n\n`: an event of `GET /agents/tools/stream`.
pub fn encode(kind: EventKind, id: Option<&str>, data: &[u8]) -> Bytes {
    event(Some(kind.name()), id, data)
}

/// The one SSE encoder, for the manifest streams and the MCP notification streams (whose
/// events have no name: `message`). An id with a line break is left out (it cannot happen
/// with etags; it must not corrupt the stream if it ever did). Data with line breaks is split
/// over several `data:` lines, which a client joins back with `\n`.
///
/// The buffer is sized exactly before it is filled: a `Vec` that grows doubles its allocation,
/// and `Bytes` keeps the whole allocation alive, so a 2.4 MB event that outgrew a guessed
/// capacity by a few bytes pinned 4.8 MB in every queue it waited in, while queues count its
/// length (issue 24, item 8).
pub fn event(name: Option<&'static str>, id: Option<&str>, data: &[u8]) -> Bytes {
    let id = id.filter(|id| !id.contains(['\n', '\r', '\0']));
    let mut out = Vec::with_capacity(encoded_len(name, id, data));
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    if let Some(name) = name {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(name.as_bytes());
        out.push(b'\n');
    }
    for line in data.split(|&byte| byte == b'\n') {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line.strip_suffix(b"\r").unwrap_or(line));
        out.push(b'\n');
    }
    out.push(b'\n');
    debug_assert_eq!(out.len(), out.capacity(), "sized exactly");
    out.into()
}

/// The length of [`event`]'s output: each line of `data` (split at `\n`, a `\r` before it
/// dropped) becomes `data: <line>\n`.
fn encoded_len(name: Option<&str>, id: Option<&str>, data: &[u8]) -> usize {
    let id_line = id.map_or(0, |id| "id: ".len() + id.len() + 1);
    let event_line = name.map_or(0, |name| "event: ".len() + name.len() + 1);
    let mut data_lines = 0;
    for line in data.split(|&byte| byte == b'\n') {
        data_lines += "data: ".len() + line.strip_suffix(b"\r").unwrap_or(line).len() + 1;
    }
    id_line + event_line + data_lines + 1
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
    fn an_event_takes_exactly_its_length_in_memory() {
        let etag = format!("\"{}\"", "e".repeat(64));
        let data = vec![b'x'; 100_000];
        for (kind, id, data) in [
            (EventKind::ToolsChanged, Some(etag.as_str()), &data[..]),
            (EventKind::Tools, None, &b"a\r\nb\n\nc"[..]),
            (EventKind::TokenExpired, Some("bad\nid"), &b""[..]),
        ] {
            let bytes = encode(kind, id, data);
            // `Bytes` made from a full `Vec` is that `Vec`'s allocation, no more.
            let vec: Vec<u8> = bytes.into();
            assert_eq!(vec.len(), vec.capacity(), "{kind:?}");
        }
    }

    #[test]
    fn line_breaks_never_escape_their_line() {
        let bytes = encode(EventKind::Unchanged, Some("a\nevent: evil"), b"one\ntwo");
        assert_eq!(&bytes[..], b"event: unchanged\ndata: one\ndata: two\n\n");
    }
}
