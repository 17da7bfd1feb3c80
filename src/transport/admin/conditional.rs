//! Conditional admin requests: the catalog revision as an entity tag (`ETag: "r42"`) on every
//! admin answer, and `If-Match` on every admin write (docs/api.md, "Conditional writes").
//!
//! The tag names the whole catalog's revision, not one entity's: an admin who read anything at
//! revision 42 and writes with `If-Match: "r42"` is refused (412) if anything changed since,
//! which is what keeps a read-modify-write from reverting a change it never saw. The check
//! itself is made by the catalog service, inside the write.

use axum::extract::{FromRequestParts, State};
use axum::http::header::{ETAG, IF_MATCH};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;

use crate::service::Precondition;
use crate::transport::AppState;
use crate::transport::errors::ApiError;

/// The entity tag of catalog revision `revision`: `"r42"`.
pub(super) fn etag(revision: u64) -> HeaderValue {
    HeaderValue::from_str(&format!("\"r{revision}\"")).expect("digits are a valid header value")
}

/// The `If-Match` of a write, as the revisions it admits.
pub(crate) struct IfMatch(pub Precondition);

impl<S: Send + Sync> FromRequestParts<S> for IfMatch {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let mut values = parts.headers.get_all(IF_MATCH).iter().peekable();
        if values.peek().is_none() {
            return Ok(IfMatch(Precondition::Any));
        }
        let mut tags = Vec::new();
        for value in values {
            tags.extend(entity_tags(value.as_bytes()).ok_or_else(|| {
                ApiError::Malformed(format!(
                    "If-Match must be * or a list of quoted entity tags such as \"r42\", found {:?}",
                    String::from_utf8_lossy(value.as_bytes())
                ))
            })?);
        }
        precondition(&tags).map(IfMatch).ok_or_else(|| {
            ApiError::Malformed(
                "If-Match: * stands alone; it cannot be listed with entity tags".to_owned(),
            )
        })
    }
}

/// One element of an `If-Match` list.
#[derive(Debug, PartialEq, Eq)]
enum Tag<'v> {
    Any,
    Weak(&'v [u8]),
    Strong(&'v [u8]),
}

/// The revisions the tags admit; `None` when `*` comes with other tags.
fn precondition(tags: &[Tag<'_>]) -> Option<Precondition> {
    if tags.contains(&Tag::Any) {
        return (tags.len() == 1).then_some(Precondition::Any);
    }
    // Strong comparison (RFC 9110 13.1.1): a weak tag never matches, and neither does a tag
    // this server never issues (`"r042"` is not `"r42"`).
    let revisions = tags
        .iter()
        .filter_map(|tag| match tag {
            Tag::Strong(opaque) => revision(opaque),
            Tag::Any | Tag::Weak(_) => None,
        })
        .collect();
    Some(Precondition::OneOf(revisions))
}

fn revision(opaque: &[u8]) -> Option<u64> {
    let digits = std::str::from_utf8(opaque.strip_prefix(b"r")?).ok()?;
    let revision: u64 = digits.parse().ok()?;
    (revision.to_string() == digits).then_some(revision)
}

/// The elements of one `If-Match` field value (`*` / `#entity-tag`, RFC 9110 13.1.1); `None`
/// when it is not one, or holds no element at all.
fn entity_tags(value: &[u8]) -> Option<Vec<Tag<'_>>> {
    let is_space = |b: &u8| *b == b' ' || *b == b'\t';
    let mut tags = Vec::new();
    let mut rest = value;
    loop {
        // Empty list elements (`a, , b`) are allowed and ignored.
        while let Some((first, tail)) = rest.split_first() {
            if is_space(first) || *first == b',' {
                rest = tail;
            } else {
                break;
            }
        }
        if rest.is_empty() {
            break;
        }
        let (tag, tail) = if let Some(tail) = rest.strip_prefix(b"*") {
            (Tag::Any, tail)
        } else {
            let (weak, quoted) = match rest.strip_prefix(b"W/") {
                Some(quoted) => (true, quoted),
                None => (false, rest),
            };
            let body = quoted.strip_prefix(b"\"")?;
            let end = body.iter().position(|b| *b == b'"')?;
            let opaque = &body[..end];
            // etagc: %x21 / %x23-7E / obs-text.
            if !opaque
                .iter()
                .all(|b| *b == 0x21 || (*b >= 0x23 && *b != 0x7F))
            {
                return None;
            }
            let tag = if weak {
                Tag::Weak(opaque)
            } else {
                Tag::Strong(opaque)
            };
            (tag, &body[end + 1..])
        };
        tags.push(tag);
        // An element ends at a comma or at the end, after optional whitespace.
        let after = tail.iter().position(|b| !is_space(b)).unwrap_or(tail.len());
        rest = &tail[after..];
        if !rest.is_empty() && !rest.starts_with(b",") {
            return None;
        }
    }
    (!tags.is_empty()).then_some(tags)
}

/// Gives an admin answer that does not carry a revision yet (an error, the audit log) the
/// revision the catalog is at now. Not to 401 and 403 answers: a caller who is not an admin
/// learns nothing about the catalog, not even how often it changes.
pub(super) async fn with_current_etag(
    State(state): State<AppState>,
    mut response: Response,
) -> Response {
    let status = response.status();
    if status == StatusCode::UNAUTHORIZED
        || status == StatusCode::FORBIDDEN
        || response.headers().contains_key(ETAG)
    {
        return response;
    }
    let revision = state.app.revision();
    response.headers_mut().insert(ETAG, etag(revision));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(value: &str) -> Option<Precondition> {
        precondition(&entity_tags(value.as_bytes())?)
    }

    #[test]
    fn if_match_values_read_as_the_revisions_they_admit() {
        let cases = [
            ("\"r42\"", Some(Precondition::OneOf(vec![42]))),
            ("\"r1\", \"r42\"", Some(Precondition::OneOf(vec![1, 42]))),
            ("\"r1\",\t\"r2\" ,, ", Some(Precondition::OneOf(vec![1, 2]))),
            ("*", Some(Precondition::Any)),
            (" * ", Some(Precondition::Any)),
            ("W/\"r42\"", Some(Precondition::OneOf(vec![]))),
            ("\"r042\", \"x\", \"\"", Some(Precondition::OneOf(vec![]))),
            ("\"a,b\", \"r3\"", Some(Precondition::OneOf(vec![3]))),
            ("r42", None),
            ("\"r42", None),
            ("\"r42\" \"r43\"", None),
            ("\"r42\"x", None),
            ("", None),
            (" , ", None),
            ("*, \"r1\"", None),
            ("w/\"r1\"", None),
            ("\"r 1\"", None),
        ];
        for (value, expected) in cases {
            assert_eq!(parse(value), expected, "{value:?}");
        }
    }
}
