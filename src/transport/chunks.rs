//! A response body made of a few shared chunks, sent as they are. A large cached body (an MCP
//! `tools/list` page) goes out between a small head and tail that differ per request (the
//! JSON-RPC id, the cursor) without being copied into one buffer first: hyper writes the
//! chunks with one vectored write, and the exact length is known, so the response carries a
//! `Content-Length` rather than chunked framing.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

/// The concatenation of its `N` chunks, held inline: a cached manifest's response allocates
/// nothing for its body.
#[derive(Debug)]
pub(crate) struct Chunks<const N: usize> {
    parts: [Bytes; N],
    /// The first part not yet sent.
    next: usize,
    /// The bytes not yet sent: the sum of the lengths of `parts[next..]`.
    remaining: u64,
}

impl<const N: usize> Chunks<N> {
    /// The body `parts` make, in order (empty ones are skipped when sending).
    pub(crate) fn new(parts: [Bytes; N]) -> Chunks<N> {
        let remaining = parts.iter().map(|part| part.len() as u64).sum();
        Chunks {
            parts,
            next: 0,
            remaining,
        }
    }
}

impl<const N: usize> Body for Chunks<N> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        while let Some(part) = this.parts.get_mut(this.next) {
            this.next += 1;
            if !part.is_empty() {
                let part = std::mem::take(part);
                this.remaining -= part.len() as u64;
                return Poll::Ready(Some(Ok(Frame::data(part))));
            }
        }
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    #[tokio::test]
    async fn the_body_is_the_chunks_in_order_with_an_exact_length() {
        let body = Chunks::new([
            Bytes::from_static(b"{\"a\":"),
            Bytes::new(),
            Bytes::from(vec![b'1'; 3]),
            Bytes::from_static(b"}"),
        ]);
        assert_eq!(body.size_hint().exact(), Some(9));
        assert!(!body.is_end_stream());
        let collected = body.collect().await.expect("infallible").to_bytes();
        assert_eq!(&collected[..], b"{\"a\":111}");
        assert!(Chunks::new([Bytes::new()]).is_end_stream());
    }
}
