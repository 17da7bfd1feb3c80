//! One row per rule of docs/semantics.md sections 2 and 3: `paths.rs` where a claim path leads,
//! `operators.rs` what each operator holds for, `values.rs` which values a matcher may hold.

mod operators;
mod paths;
mod string_sets;
mod values;

use serde_json::{Value, json};

use super::{ClaimPath, Claims, CompiledMatcher};
use crate::domain::model::ClaimMatcher;

/// Claims of every JSON type, with nested objects, arrays and keys that need a JSON Pointer.
fn claims() -> Claims {
    json!({
        "sub": "agent-1",
        "tenant": "acme",
        "depth": 1,
        "level": "3",
        "score": 2.5,
        "big": 9007199254740993u64,
        "verified": true,
        "nothing": null,
        "roles": ["analyst", "staff"],
        "ids": [1, 2, 3],
        "realm_access": {"roles": ["crm-admin"]},
        "resource_access": {"my-client": {"roles": ["reader"]}},
        "groups": ["/eng", "/ops"],
        "https://example.com/roles": ["ns-admin"],
        "a~b": "tilde",
        "profile": {"email": "a@example.com"}
    })
    .as_object()
    .expect("object")
    .clone()
}

/// Whether the claims of [`claims`] match `operator` `value` at `path`.
fn eval(path: &str, operator: &str, value: Value) -> bool {
    let matcher = ClaimMatcher {
        json_path: path.to_owned(),
        operator: operator.to_owned(),
        value,
    };
    let compiled = CompiledMatcher::compile(&matcher).expect("valid matcher");
    let path = ClaimPath::parse(path).expect("valid path");
    let claims = claims();
    compiled.matches(path.resolve(&claims))
}
