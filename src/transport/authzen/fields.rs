//! Reading a JSON body by hand, to name each problem by its field path (`resource.id`,
//! `evaluations[3].resource.type`) and report them all in one answer, where a derived
//! deserializer stops at the first.

use serde_json::{Map, Value};

use crate::domain::validate::{ErrorKind, FieldError};
use crate::transport::errors::ApiError;

/// Problems found so far, each with its field path.
#[derive(Default)]
pub(super) struct Problems(pub(super) Vec<FieldError>);

impl Problems {
    pub(super) fn add(&mut self, field: String, message: impl Into<String>) {
        self.0.push(FieldError {
            field,
            message: message.into(),
            kind: ErrorKind::Invalid,
        });
    }

    pub(super) fn into_result<T>(self, value: T) -> Result<T, ApiError> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(ApiError::BadRequest(self.0))
        }
    }
}

/// `prefix.key`, or `key` at the top.
pub(super) fn at(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_owned()
    } else {
        format!("{prefix}.{key}")
    }
}

/// The JSON type of a value, for messages.
pub(super) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `map[key]`, a JSON `null` counting as absent.
pub(super) fn field<'v>(map: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
    map.get(key).filter(|value| !value.is_null())
}

pub(super) fn object<'v>(
    value: &'v Value,
    path: &str,
    problems: &mut Problems,
) -> Option<&'v Map<String, Value>> {
    match value {
        Value::Object(map) => Some(map),
        other => {
            problems.add(
                path.to_owned(),
                format!("must be an object, found {}", kind_of(other)),
            );
            None
        }
    }
}

/// A required string member; `what` says what it is, for the message when it is missing.
pub(super) fn text(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
    what: &str,
    problems: &mut Problems,
) -> Option<String> {
    match field(map, key) {
        Some(Value::String(text)) => Some(text.clone()),
        Some(other) => {
            problems.add(
                at(path, key),
                format!("must be a string, found {}", kind_of(other)),
            );
            None
        }
        None => {
            problems.add(at(path, key), format!("is required: {what}"));
            None
        }
    }
}

/// The top-level object of a body.
pub(super) fn body_object(body: &Value) -> Result<&Map<String, Value>, ApiError> {
    let mut problems = Problems::default();
    let map = object(body, "", &mut problems);
    match map {
        Some(map) => Ok(map),
        None => Err(ApiError::BadRequest(problems.0)),
    }
}
