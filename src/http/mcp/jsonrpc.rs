//! JSON-RPC 2.0 as MCP uses it over Streamable HTTP: one message per POST (batches were removed
//! in protocol revision 2025-06-18), requests answered with one response object, notifications
//! and client responses acknowledged with 202.

use serde::Serialize;
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
