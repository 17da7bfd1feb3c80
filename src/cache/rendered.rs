//! A rendered manifest: the bytes to send, and their compressed forms, each made once by the
//! first request that accepts it and kept beside the plain bytes, so that a hot request never
//! compresses (a 14.5 MB manifest takes tens of milliseconds to gzip).

use std::io::{Read as _, Write as _};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;

use crate::domain::continuity::{Continuity, Reach};
use crate::domain::manifest::Manifest;

/// A content coding a manifest can be sent in (RFC 9110 section 8.4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    /// RFC 8878: smaller than gzip for JSON, and several times faster to make and to read.
    Zstd,
    Gzip,
}

impl Coding {
    /// Preference order on equal weights in `Accept-Encoding`.
    pub const ALL: [Coding; 2] = [Coding::Zstd, Coding::Gzip];

    /// The token of `Content-Encoding`, and the suffix of the form's entity tag.
    pub fn as_str(self) -> &'static str {
        match self {
            Coding::Zstd => "zstd",
            Coding::Gzip => "gzip",
        }
    }

    /// The compressed form of the body `head` then `tail`.
    fn compress(self, head: &[u8], tail: &[u8]) -> Vec<u8> {
        let out = Vec::with_capacity((head.len() + tail.len()) / 8);
        match self {
            Coding::Zstd => zstd::stream::encode_all(head.chain(tail), ZSTD_LEVEL),
            Coding::Gzip => {
                let mut encoder =
                    flate2::write::GzEncoder::new(out, flate2::Compression::default());
                (encoder.write_all(head))
                    .and_then(|()| encoder.write_all(tail))
                    .and_then(|()| encoder.finish())
            }
        }
        .expect("compressing into memory cannot fail")
    }
}

/// `bytes` as `Bytes` whose allocation is its length (give or take 1/16): `Bytes` made from a
/// `Vec` keeps the `Vec`'s whole allocation, and one that grew by doubling can hold twice what
/// the caches and queues count for it. Copies only when the spare room is larger.
pub fn fitted(mut bytes: Vec<u8>) -> Bytes {
    if bytes.capacity() - bytes.len() > bytes.len() / 16 {
        bytes.shrink_to_fit();
    }
    bytes.into()
}

/// zstd's own default: as small as gzip's default level or smaller, at a fraction of its time.
const ZSTD_LEVEL: i32 = 3;

/// A manifest ready to send, and its compressed forms once clients asked for them.
///
/// The body is kept in two parts, cut where the revision number starts, so that a manifest
/// carried to a later revision ([`crate::domain::continuity`]) shares the megabytes before it
/// and only writes a new, short tail.
#[derive(Debug)]
pub struct RenderedManifest {
    /// The body up to its revision number (or the whole body, when it cannot be carried).
    head: Bytes,
    /// The rest of the body.
    tail: Bytes,
    /// The strong entity tag, quotes included.
    pub etag: String,
    pub revision: u64,
    pub tool_count: usize,
    /// No policy granted the claims any group (counted as `agent_access_denied`).
    pub denied: bool,
    /// What it needs to be carried to a later revision; `None`: it never is.
    carry: Option<Carry>,
    /// One per [`Coding`] (in [`Coding::ALL`] order), made by the first request that accepts
    /// it. `None` inside: it did not fit the room left (the plain body serves instead).
    forms: [OnceLock<Option<Bytes>>; 2],
    /// Bytes of the reserved room (see [`RenderedManifest::weight`]) not yet taken by a form.
    room: AtomicUsize,
}

/// What carrying a rendered manifest to a later revision needs.
#[derive(Debug)]
struct Carry {
    /// What the decision behind it grants.
    reach: Reach,
    /// It is an admin preview (it shows hidden tools and their flags).
    preview: bool,
    /// How many bytes the revision number takes at the start of `tail`.
    digits: usize,
}

/// The room a rendered manifest reserves for its compressed forms together, as a share of its
/// body (manifests are JSON with much repetition: gzip leaves 10–20 %, zstd less).
pub(super) const COMPRESSED_SHARE: usize = 3;

impl RenderedManifest {
    /// A manifest whose body is `body`, never carried to another revision.
    pub fn new(body: Bytes, etag: String, revision: u64, tool_count: usize, denied: bool) -> Self {
        RenderedManifest::of_parts(
            body,
            Bytes::new(),
            etag,
            (revision, tool_count, denied),
            None,
        )
    }

    /// The rendering of `manifest`: the body, cut at its revision number, and what carrying it
    /// to a later revision needs.
    pub fn of(manifest: &Manifest<'_>) -> Self {
        let (body, revision_at) = manifest.to_json_marking();
        let body = fitted(body);
        let carry = Carry {
            reach: manifest.reach().clone(),
            preview: manifest.is_preview(),
            digits: revision_at.len(),
        };
        RenderedManifest::of_parts(
            body.slice(..revision_at.start),
            body.slice(revision_at.start..),
            manifest.etag().to_owned(),
            (manifest.revision(), manifest.len(), manifest.is_denied()),
            Some(carry),
        )
    }

    fn of_parts(
        head: Bytes,
        tail: Bytes,
        etag: String,
        (revision, tool_count, denied): (u64, usize, bool),
        carry: Option<Carry>,
    ) -> Self {
        let room = (head.len() + tail.len()) / COMPRESSED_SHARE;
        RenderedManifest {
            head,
            tail,
            etag,
            revision,
            tool_count,
            denied,
            carry,
            forms: [OnceLock::new(), OnceLock::new()],
            room: AtomicUsize::new(room),
        }
    }

    /// This manifest at the later revision `continuity` leads to, if the change between the
    /// two leaves it unchanged: the same body but for the revision number, sharing the bytes
    /// before it. Compressed forms are not carried (they hold the revision too).
    pub fn carried(&self, continuity: &Continuity) -> Option<RenderedManifest> {
        let carry = self.carry.as_ref()?;
        if self.revision != continuity.from() || !continuity.keeps(&carry.reach, carry.preview) {
            return None;
        }
        let digits = continuity.to().to_string();
        let rest = self.tail.get(carry.digits..)?;
        let mut tail = Vec::with_capacity(digits.len() + rest.len());
        tail.extend_from_slice(digits.as_bytes());
        tail.extend_from_slice(rest);
        Some(RenderedManifest::of_parts(
            self.head.clone(),
            Bytes::from(tail),
            self.etag.clone(),
            (continuity.to(), self.tool_count, self.denied),
            Some(Carry {
                reach: carry.reach.clone(),
                preview: carry.preview,
                digits: digits.len(),
            }),
        ))
    }

    /// The body's length in bytes.
    pub fn len(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The body, in order, as shared parts (send them one after the other).
    pub fn parts(&self) -> [Bytes; 2] {
        [self.head.clone(), self.tail.clone()]
    }

    /// The body in one buffer (a copy; for what cannot take parts).
    pub fn to_vec(&self) -> Vec<u8> {
        [&self.head[..], &self.tail[..]].concat()
    }

    /// Bytes it holds or may come to hold (for caches bounded in bytes): the compressed forms
    /// are counted in advance, as their reserved room.
    pub fn weight(&self) -> usize {
        // The head may be shared with the same manifest at other revisions; each counts it.
        size_of::<RenderedManifest>()
            + self.len()
            + self.len() / COMPRESSED_SHARE
            + self.etag.capacity()
            + self
                .carry
                .as_ref()
                .map_or(0, |carry| carry.reach.heap_bytes())
    }

    /// The `coding` form if it was made already (`Some(None)`: it was tried and did not fit).
    pub fn compressed_if_made(&self, coding: Coding) -> Option<Option<Bytes>> {
        self.form(coding).get().cloned()
    }

    /// The `coding` form, made now if needed (CPU work proportional to the body: call it off
    /// the I/O threads). `None` when it does not fit the room left for it.
    pub fn compressed(&self, coding: Coding) -> Option<Bytes> {
        self.form(coding)
            .get_or_init(|| {
                let compressed = coding.compress(&self.head, &self.tail);
                self.take_room(compressed.len()).then(|| fitted(compressed))
            })
            .clone()
    }

    fn form(&self, coding: Coding) -> &OnceLock<Option<Bytes>> {
        &self.forms[coding as usize]
    }

    /// Takes `bytes` of the reserved room, if that much is left.
    fn take_room(&self, bytes: usize) -> bool {
        self.room
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                left.checked_sub(bytes)
            })
            .is_ok()
    }
}

#[cfg(test)]
mod fitted_tests {
    use super::fitted;

    #[test]
    fn a_grown_buffer_is_fitted_and_a_snug_one_is_kept() {
        let mut grown = Vec::with_capacity(1000);
        grown.extend_from_slice(&[1; 600]);
        let kept: Vec<u8> = fitted(grown).into();
        assert!(kept.capacity() - kept.len() <= kept.len() / 16);
        let mut snug = Vec::with_capacity(1030);
        snug.extend_from_slice(&[1; 1000]);
        let pointer = snug.as_ptr();
        assert_eq!(fitted(snug).as_ptr(), pointer, "no copy");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest_like() -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "data": (0..200).map(|i| serde_json::json!({"tool_id": format!("s:t{i}"), "description": "the same words again"})).collect::<Vec<_>>()
        }))
        .expect("json")
    }

    fn decode(coding: Coding, bytes: &[u8]) -> Vec<u8> {
        match coding {
            Coding::Zstd => zstd::stream::decode_all(bytes).expect("zstd"),
            Coding::Gzip => {
                let mut plain = Vec::new();
                std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(bytes), &mut plain)
                    .expect("gzip");
                plain
            }
        }
    }

    #[test]
    fn each_form_is_made_once_decodes_to_the_body_and_is_counted_in_advance() {
        let body = manifest_like();
        let rendered =
            RenderedManifest::new(Bytes::from(body.clone()), "\"e\"".into(), 1, 200, false);
        let weight = rendered.weight();
        assert!(weight >= body.len() + body.len() / COMPRESSED_SHARE);
        for coding in Coding::ALL {
            assert_eq!(rendered.compressed_if_made(coding), None);
            let compressed = rendered.compressed(coding).expect("JSON compresses well");
            assert!(compressed.len() * 5 < body.len(), "{coding:?}");
            assert_eq!(
                rendered.compressed_if_made(coding),
                Some(Some(compressed.clone()))
            );
            assert_eq!(decode(coding, &compressed), body, "{coding:?}");
        }
        assert_eq!(
            rendered.weight(),
            weight,
            "the forms were counted from the start"
        );
    }

    #[test]
    fn what_does_not_fit_the_room_left_is_not_kept() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 24) as u8
            })
            .collect();
        let rendered = RenderedManifest::new(Bytes::from(noise), "\"n\"".into(), 1, 0, false);
        for coding in Coding::ALL {
            assert_eq!(rendered.compressed(coding), None, "{coding:?}");
            assert_eq!(rendered.compressed_if_made(coding), Some(None));
        }
        // Room is shared: a form that fits alone is refused once another took the room.
        let body = manifest_like();
        let rendered = RenderedManifest::new(Bytes::from(body), "\"e\"".into(), 1, 200, false);
        let zstd = rendered.compressed(Coding::Zstd).expect("fits").len();
        rendered.room.store(zstd / 2, Ordering::Release);
        assert_eq!(rendered.compressed(Coding::Gzip), None);
    }
}
