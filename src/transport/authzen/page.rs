//! `page.next_token` of resource searches. Opaque to clients; in fact the last tool id of the
//! page, behind a key of the request that produced it (the body without `page.token`, and the
//! caller's `sub`), so that a token is taken only with the request it was issued for: AuthZEN
//! says every entity and `limit` must stay the same while paging, and that a PDP should refuse
//! a token with a changed request rather than answer something else.
//!
//! Ids are sorted, so "after this id" pages stably across catalog changes: a tool added or
//! removed between two pages is seen or not, but nothing is repeated or skipped otherwise.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::domain::fingerprint::Fingerprint;
use crate::domain::validate::{ErrorKind, FieldError};
use crate::transport::errors::ApiError;

/// Bytes of the request key at the front of a token.
const KEY_BYTES: usize = 16;

/// The key of a search request: `body` without `page.token`, and who asked.
pub(super) fn request_key(body: &Value, caller_sub: &str) -> [u8; KEY_BYTES] {
    let mut request = body.clone();
    if let Some(page) = request.get_mut("page").and_then(Value::as_object_mut) {
        page.remove("token");
    }
    let hash = Fingerprint::of_value(&json!({"request": request, "caller": caller_sub}));
    let mut key = [0; KEY_BYTES];
    key.copy_from_slice(&hash.as_bytes()[..KEY_BYTES]);
    key
}

/// The token of the page after `after` (the last id of this page; `""`: from the start).
pub(super) fn encode(key: &[u8; KEY_BYTES], after: &str) -> String {
    let mut bytes = Vec::with_capacity(KEY_BYTES + after.len());
    bytes.extend_from_slice(key);
    bytes.extend_from_slice(after.as_bytes());
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The id after which the page of `token` starts; 400 at `page.token` when the token was not
/// issued by this gateway for this very request.
pub(super) fn decode(key: &[u8; KEY_BYTES], token: &str) -> Result<String, ApiError> {
    let refused = |message: &str| {
        ApiError::BadRequest(vec![FieldError {
            field: "page.token".to_owned(),
            message: message.to_owned(),
            kind: ErrorKind::Invalid,
        }])
    };
    let bytes = URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| refused("is not a next_token this gateway issued"))?;
    if bytes.len() < KEY_BYTES {
        return Err(refused("is not a next_token this gateway issued"));
    }
    let (issued_for, after) = bytes.split_at(KEY_BYTES);
    if issued_for != key {
        return Err(refused(
            "was issued for another request: while paging, send the same subject, action, \
             resource, context and page.limit (and the same caller) with each next_token",
        ));
    }
    String::from_utf8(after.to_vec())
        .map_err(|_| refused("is not a next_token this gateway issued"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_round_trips_for_its_own_request_only() {
        let body = json!({"action": {"name": "call"}, "resource": {"type": "tool"},
                          "page": {"limit": 2}});
        let key = request_key(&body, "agent-7");
        let token = encode(&key, "svc:get_x");
        let mut next = body.clone();
        next["page"]["token"] = json!(token);
        assert_eq!(
            request_key(&next, "agent-7"),
            key,
            "the token is not part of the key"
        );
        assert_eq!(decode(&key, &token).expect("decodes"), "svc:get_x");
        assert_eq!(decode(&key, &encode(&key, "")).expect("decodes"), "");

        let mut wider = next.clone();
        wider["page"]["limit"] = json!(3);
        let other_key = request_key(&wider, "agent-7");
        assert!(decode(&other_key, &token).is_err(), "another limit");
        assert!(
            decode(&request_key(&next, "agent-8"), &token).is_err(),
            "another caller"
        );
        for forged in ["", "!!", "AAAA"] {
            assert!(decode(&key, forged).is_err(), "{forged}");
        }
    }
}
