//! JSON-RPC 2.0 as MCP uses it over Streamable HTTP: one message per POST (batches were removed
//! in protocol revision 2025-06-18), requests answered with one response object, notifications
//! and client responses acknowledged with 202.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// Invalid JSON.
pub const PARSE_ERROR: i64 = -32700;
/// Not a JSON-RPC request.
pub const INVALID_REQUEST: i64 = -32600;
/// No such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Bad parameters; MCP also uses it for an unknown tool and for arguments that do not fit.
pub const INVALID_PARAMS: i64 = -32602;
/// The server failed (never with internal details).
pub const INTERNAL_ERROR: i64 = -32603;

/// A request id: a string or a number (MCP forbids `null`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Id {
    Number(serde_json::Number),
    Text(String),
}

/// One message a client sent.
#[derive(Debug)]
pub enum Incoming {
    /// Expects an answer.
    Request {
        id: Id,
        method: String,
        params: Map<String, Value>,
    },
    /// Expects none.
    Notification {
        method: String,
        params: Map<String, Value>,
    },
    /// The client's answer to a request of the server's (this server sends none).
    Response,
}

/// A JSON-RPC error object, with the id of the request it answers when known.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> RpcError {
        self.data = Some(data);
        self
    }

    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(INVALID_PARAMS, message)
    }
}

/// Why a body is not one message: the error to answer with, id unknown (`null`).
#[derive(Debug)]
pub struct Unreadable(pub RpcError);

/// Reads one message. An array (a batch), anything but an object, a wrong `jsonrpc`, a `null`
/// or non-scalar id, or non-object params are refused with the code JSON-RPC gives them.
pub fn parse(body: &[u8]) -> Result<Incoming, Unreadable> {
    match well_formed(body) {
        Some(message) => Ok(message),
        None => parse_value(body),
    }
}

/// The usual message in one pass, without a tree of the whole body: an object with
/// `"jsonrpc": "2.0"`, a `method` string, a string or number `id` (or none) and object (or
/// absent, or `null`) `params`, each key once. Anything else is `None`, and [`parse_value`]
/// reads it and says what is wrong, so both give the same answer for every body.
fn well_formed(body: &[u8]) -> Option<Incoming> {
    #[derive(Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow)]
        jsonrpc: &'a str,
        /// Present (even as `null`, which `Option` alone would read as absent).
        #[serde(borrow, default, deserialize_with = "present")]
        id: Option<&'a RawValue>,
        method: String,
        #[serde(default)]
        params: Option<Map<String, Value>>,
    }
    fn present<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<&'de RawValue>, D::Error> {
        <&RawValue>::deserialize(deserializer).map(Some)
    }
    let envelope: Envelope<'_> = serde_json::from_slice(body).ok()?;
    if envelope.jsonrpc != "2.0" {
        return None;
    }
    let params = envelope.params.unwrap_or_default();
    let method = envelope.method;
    let Some(raw) = envelope.id else {
        return Some(Incoming::Notification { method, params });
    };
    let id = match raw.get().as_bytes().first()? {
        b'"' => Id::Text(serde_json::from_str(raw.get()).ok()?),
        b'-' | b'0'..=b'9' => Id::Number(serde_json::from_str(raw.get()).ok()?),
        _ => return None,
    };
    Some(Incoming::Request { id, method, params })
}

/// [`parse`] through a tree of the whole body: every message, and the reason one is refused.
fn parse_value(body: &[u8]) -> Result<Incoming, Unreadable> {
    let value: Value = serde_json::from_slice(body).map_err(|error| {
        Unreadable(RpcError::new(
            PARSE_ERROR,
            format!("the body is not JSON: {error}"),
        ))
    })?;
    let invalid = |message: &str| Unreadable(RpcError::new(INVALID_REQUEST, message));
    let mut object = match value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return Err(invalid(
                "JSON-RPC batches are not supported (MCP removed them in 2025-06-18); send one \
                 message per request",
            ));
        }
        _ => return Err(invalid("a JSON-RPC message is a JSON object")),
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("\"jsonrpc\" must be \"2.0\""));
    }
    let id = match object.remove("id") {
        None => None,
        Some(Value::String(text)) => Some(Id::Text(text)),
        Some(Value::Number(number)) => Some(Id::Number(number)),
        Some(_) => return Err(invalid("\"id\" must be a string or a number")),
    };
    let method = match object.remove("method") {
        Some(Value::String(method)) => Some(method),
        Some(_) => return Err(invalid("\"method\" must be a string")),
        None => None,
    };
    let Some(method) = method else {
        return if id.is_some() && (object.contains_key("result") || object.contains_key("error")) {
            Ok(Incoming::Response)
        } else {
            Err(invalid("a request needs \"method\""))
        };
    };
    let params = match object.remove("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(params)) => params,
        Some(_) => return Err(invalid("\"params\" must be an object")),
    };
    Ok(match id {
        Some(id) => Incoming::Request { id, method, params },
        None => Incoming::Notification { method, params },
    })
}

/// The response to request `id`: its result, or its error.
pub fn response(id: Option<&Id>, outcome: Result<Value, RpcError>) -> Vec<u8> {
    #[derive(Serialize)]
    struct ErrorObject<'e> {
        code: i64,
        message: &'e str,
        #[serde(skip_serializing_if = "Option::is_none")]
        data: Option<&'e Value>,
    }
    #[derive(Serialize)]
    struct Response<'r> {
        jsonrpc: &'static str,
        id: Option<&'r Id>,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<&'r Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<ErrorObject<'r>>,
    }
    let (result, error) = match &outcome {
        Ok(result) => (Some(result), None),
        Err(error) => (
            None,
            Some(ErrorObject {
                code: error.code,
                message: &error.message,
                data: error.data.as_ref(),
            }),
        ),
    };
    serde_json::to_vec(&Response {
        jsonrpc: "2.0",
        id,
        result,
        error,
    })
    .expect("a response always serialises")
}

/// A notification from the server.
pub fn notification(method: &str, params: Option<Value>) -> Vec<u8> {
    let mut message = serde_json::json!({"jsonrpc": "2.0", "method": method});
    if let Some(params) = params {
        message["params"] = params;
    }
    serde_json::to_vec(&message).expect("a notification always serialises")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn code(body: &str) -> i64 {
        match parse(body.as_bytes()) {
            Err(Unreadable(error)) => error.code,
            Ok(message) => panic!("{body} parsed as {message:?}"),
        }
    }

    #[test]
    fn messages_are_told_apart() {
        let request = parse(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#);
        assert!(
            matches!(request, Ok(Incoming::Request { id: Id::Number(_), ref method, .. })
            if method == "tools/list")
        );
        let request = parse(br#"{"jsonrpc":"2.0","id":"a","method":"m","params":{"x":1}}"#);
        assert!(
            matches!(request, Ok(Incoming::Request { id: Id::Text(_), ref params, .. })
            if params["x"] == 1)
        );
        let note = parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert!(matches!(note, Ok(Incoming::Notification { .. })));
        let answer = parse(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        assert!(matches!(answer, Ok(Incoming::Response)));
    }

    #[test]
    fn what_is_not_one_message_gets_its_code() {
        assert_eq!(code("{"), PARSE_ERROR);
        assert_eq!(code("[]"), INVALID_REQUEST);
        assert_eq!(
            code(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#),
            INVALID_REQUEST
        );
        assert_eq!(code("1"), INVALID_REQUEST);
        assert_eq!(code(r#"{"id":1,"method":"ping"}"#), INVALID_REQUEST);
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#),
            INVALID_REQUEST
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#),
            INVALID_REQUEST
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}"#),
            INVALID_REQUEST
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1}"#), INVALID_REQUEST);
    }

    /// The one-pass reading gives what the tree gives, for bodies of every shape it takes or
    /// leaves to the tree.
    #[test]
    fn the_one_pass_reading_agrees_with_the_tree() {
        let bodies = [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":-7.5e3,"method":"m","params":null}"#,
            r#"{"jsonrpc":"2.0","id":"a\u00e9","method":"m","params":{"x":[1,{"y":null}]}}"#,
            r#"{"method":"m","params":{},"jsonrpc":"2.0","extra":{"z":1}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":2,"id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            "{",
            "",
            "1",
            "null",
        ];
        for body in bodies {
            let fast = well_formed(body.as_bytes());
            let tree = parse_value(body.as_bytes());
            match (&fast, &tree) {
                (Some(fast), Ok(tree)) => {
                    assert_eq!(format!("{fast:?}"), format!("{tree:?}"), "{body}");
                }
                (None, _) => {}
                (Some(fast), Err(error)) => panic!("{body}: read as {fast:?}, refused {error:?}"),
            }
            assert_eq!(
                format!("{:?}", parse(body.as_bytes())),
                format!("{tree:?}"),
                "{body}"
            );
        }
        assert!(
            well_formed(bodies[0].as_bytes()).is_some(),
            "the usual case is one pass"
        );
    }

    #[test]
    fn responses_carry_the_id_and_one_of_result_or_error() {
        let id = Id::Text("x".into());
        let ok: Value =
            serde_json::from_slice(&response(Some(&id), Ok(json!({"a": 1})))).expect("json");
        assert_eq!(ok, json!({"jsonrpc": "2.0", "id": "x", "result": {"a": 1}}));
        let failed: Value = serde_json::from_slice(&response(
            None,
            Err(RpcError::new(PARSE_ERROR, "bad").with_data(json!({"at": 1}))),
        ))
        .expect("json");
        assert_eq!(
            failed,
            json!({"jsonrpc": "2.0", "id": null,
                   "error": {"code": -32700, "message": "bad", "data": {"at": 1}}})
        );
    }
}
