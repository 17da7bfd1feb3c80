//! The params of each method, typed: params of the wrong shape are a -32602 that names the
//! path serde stopped at (`params.arguments: invalid type: integer `1`, expected a map`),
//! rather than hand-written checks per field. Params a method does not read are ignored, as
//! JSON-RPC peers expect (clients send `capabilities`, `clientInfo`, …).

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::jsonrpc::RpcError;

/// `initialize`.
#[derive(Debug, Deserialize)]
pub(super) struct Initialize {
    /// The revision the client speaks.
    #[serde(rename = "protocolVersion")]
    pub protocol_version: String,
}

/// `tools/list`.
#[derive(Debug, Deserialize)]
pub(super) struct ToolsList {
    /// Where the page starts: a cursor this server gave out.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Manifest options replacing the URL's.
    #[serde(rename = "_meta", default)]
    pub meta: Option<Map<String, Value>>,
}

/// `tools/call`.
#[derive(Debug, Deserialize)]
pub(super) struct ToolsCall {
    /// The name of the tool to call, as `tools/list` gave it.
    pub name: String,
    #[serde(default)]
    pub arguments: Option<Map<String, Value>>,
    #[serde(rename = "_meta", default)]
    pub meta: Option<Map<String, Value>>,
}

/// `subscriptions/listen` (2026-07-28).
#[derive(Debug, Deserialize)]
pub(super) struct Listen {
    /// The notifications to receive (`{"toolsListChanged": true}`).
    pub notifications: Map<String, Value>,
    #[serde(rename = "_meta", default)]
    pub meta: Option<Map<String, Value>>,
}

/// `params` as the method's params, or the -32602 naming what is wrong where.
pub(super) fn parse<T: DeserializeOwned>(params: Map<String, Value>) -> Result<T, RpcError> {
    serde_path_to_error::deserialize(Value::Object(params)).map_err(|error| {
        let path = error.path().to_string();
        let at = if path == "." {
            "params".to_owned()
        } else {
            format!("params.{path}")
        };
        RpcError::invalid_params(format!("{at}: {}", error.inner()))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn params(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("object")
    }

    #[test]
    fn a_wrong_shape_is_named_by_its_path() {
        let cases = [
            (json!({}), "params: missing field `name`"),
            (json!({"name": 7}), "params.name: invalid type: integer `7`"),
            (
                json!({"name": "t", "arguments": [1]}),
                "params.arguments: invalid type",
            ),
            (
                json!({"name": "t", "_meta": "x"}),
                "params._meta: invalid type",
            ),
        ];
        for (value, expected) in cases {
            let error = parse::<ToolsCall>(params(value.clone())).expect_err("refused");
            assert!(
                error.message.starts_with(expected),
                "{value}: {}",
                error.message
            );
        }
        let call: ToolsCall =
            parse(params(json!({"name": "t", "arguments": null, "extra": 1}))).expect("parsed");
        assert_eq!((call.name.as_str(), call.arguments), ("t", None));
        let list: ToolsList = parse(params(json!({"cursor": null}))).expect("parsed");
        assert_eq!(list.cursor, None);
    }
}
