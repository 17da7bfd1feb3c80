//! The checks a 2026-07-28 request passes before it is answered, in the order the revision
//! gives them (the first failure answers):
//! 1. `params._meta` carries `io.modelcontextprotocol/protocolVersion` and
//!    `io.modelcontextprotocol/clientCapabilities` (else -32602);
//! 2. the routing headers repeat the body: `MCP-Protocol-Version` the envelope's revision,
//!    `Mcp-Method` the method, `Mcp-Name` the tool of a `tools/call` (else -32020), so that a
//!    proxy routing on headers and this server routing on the body cannot be told two stories;
//! 3. the revision is a string (else -32602) this server speaks statelessly (else -32022, with
//!    the supported revisions as data).

use axum::http::HeaderMap;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use super::jsonrpc::{INVALID_PARAMS, RpcError};
use super::version::Version;
use super::{META_PROTOCOL_VERSION, PROTOCOL_VERSION};

/// The `_meta` key of the client's capabilities.
pub(super) const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// A routing header that does not repeat the body.
pub(super) const HEADER_MISMATCH: i64 = -32020;
/// A revision this server does not speak.
pub(super) const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";

/// The revision of a stateless request, or the error that refuses it.
pub(super) fn check(
    headers: &HeaderMap,
    method: &str,
    params: &Map<String, Value>,
) -> Result<Version, RpcError> {
    let meta = params
        .get("_meta")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            RpcError::new(
                INVALID_PARAMS,
                format!(
                    "params._meta must be an object carrying '{META_PROTOCOL_VERSION}' and \
                 '{META_CLIENT_CAPABILITIES}'"
                ),
            )
        })?;
    let missing: Vec<&str> = [META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES]
        .into_iter()
        .filter(|key| !meta.contains_key(*key))
        .collect();
    if !missing.is_empty() {
        return Err(RpcError::new(
            INVALID_PARAMS,
            format!(
                "params._meta is missing the required key(s): {}",
                missing.join(", ")
            ),
        ));
    }
    let asked = &meta[META_PROTOCOL_VERSION];
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    if header(PROTOCOL_VERSION).is_none_or(|version| Some(version) != asked.as_str()) {
        return Err(mismatch(
            "the MCP-Protocol-Version header does not repeat params._meta's protocol version",
        ));
    }
    if header(METHOD_HEADER) != Some(method) {
        return Err(mismatch(
            "the Mcp-Method header does not repeat the request's method",
        ));
    }
    if method == "tools/call"
        && let Some(name) = params.get("name").and_then(Value::as_str)
        && header(NAME_HEADER).and_then(decode).as_deref() != Some(name)
    {
        return Err(mismatch(
            "the Mcp-Name header is missing or does not repeat the name of the tool called",
        ));
    }
    let Some(asked) = asked.as_str() else {
        return Err(RpcError::new(
            INVALID_PARAMS,
            "the protocol version in params._meta must be a string",
        ));
    };
    match Version::parse(asked).filter(|version| version.is_stateless()) {
        Some(version) => Ok(version),
        None => Err(RpcError::new(
            UNSUPPORTED_PROTOCOL_VERSION,
            format!(
                "unsupported protocol version '{asked}'; without a session this server speaks {}",
                Version::V2026_07_28.as_str()
            ),
        )
        .with_data(json!({
            "supported": [Version::V2026_07_28.as_str()],
            "requested": asked,
        }))),
    }
}

fn mismatch(message: &str) -> RpcError {
    RpcError::new(HEADER_MISMATCH, message)
}

/// A routing header's value: as it is, or decoded from the `=?base64?…?=` form a client uses
/// for values that are not plain ASCII. `None` for a form that does not decode.
fn decode(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(encoded) => STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok()),
        None => Some(value.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).expect("a header value"));
        }
        map
    }

    fn params(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("an object")
    }

    fn envelope(version: Value) -> Value {
        json!({"_meta": {META_PROTOCOL_VERSION: version, META_CLIENT_CAPABILITIES: {}}})
    }

    #[test]
    fn a_complete_request_passes() {
        let good = headers(&[
            (PROTOCOL_VERSION, "2026-07-28"),
            (METHOD_HEADER, "tools/list"),
        ]);
        assert_eq!(
            check(&good, "tools/list", &params(envelope(json!("2026-07-28")))),
            Ok(Version::V2026_07_28)
        );
        let mut call = params(envelope(json!("2026-07-28")));
        call.insert("name".into(), json!("billing.refund"));
        for name in ["billing.refund", "=?base64?YmlsbGluZy5yZWZ1bmQ=?="] {
            let headers = headers(&[
                (PROTOCOL_VERSION, "2026-07-28"),
                (METHOD_HEADER, "tools/call"),
                (NAME_HEADER, name),
            ]);
            assert_eq!(
                check(&headers, "tools/call", &call),
                Ok(Version::V2026_07_28)
            );
        }
    }

    #[test]
    fn each_rung_refuses_with_its_code() {
        let good = headers(&[
            (PROTOCOL_VERSION, "2026-07-28"),
            (METHOD_HEADER, "tools/list"),
        ]);
        let code = |headers: &HeaderMap, method: &str, params: Value| {
            check(
                headers,
                method,
                &params.as_object().cloned().unwrap_or_default(),
            )
            .expect_err("refused")
            .code
        };
        assert_eq!(code(&good, "tools/list", json!({})), INVALID_PARAMS);
        assert_eq!(
            code(
                &good,
                "tools/list",
                json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}})
            ),
            INVALID_PARAMS,
            "capabilities are required"
        );
        assert_eq!(
            code(&good, "tools/call", envelope(json!("2026-07-28"))),
            HEADER_MISMATCH,
            "Mcp-Method says tools/list"
        );
        let no_version = headers(&[(METHOD_HEADER, "tools/list")]);
        assert_eq!(
            code(&no_version, "tools/list", envelope(json!("2026-07-28"))),
            HEADER_MISMATCH
        );
        let mut call = envelope(json!("2026-07-28"));
        call["name"] = json!("a");
        let other_name = headers(&[
            (PROTOCOL_VERSION, "2026-07-28"),
            (METHOD_HEADER, "tools/call"),
            (NAME_HEADER, "b"),
        ]);
        assert_eq!(
            code(&other_name, "tools/call", call.clone()),
            HEADER_MISMATCH
        );
        let no_name = headers(&[
            (PROTOCOL_VERSION, "2026-07-28"),
            (METHOD_HEADER, "tools/call"),
        ]);
        assert_eq!(
            code(&no_name, "tools/call", call),
            HEADER_MISMATCH,
            "Mcp-Name is required for tools/call"
        );
        let old = headers(&[
            (PROTOCOL_VERSION, "2025-11-25"),
            (METHOD_HEADER, "tools/list"),
        ]);
        let refused = check(&old, "tools/list", &params(envelope(json!("2025-11-25"))))
            .expect_err("a session revision without a session");
        assert_eq!(refused.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(
            refused.data,
            Some(json!({"supported": ["2026-07-28"], "requested": "2025-11-25"}))
        );
    }
}
