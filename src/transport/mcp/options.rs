//! The manifest options of an MCP request: the query options of `GET /agents/tools` (`group`,
//! `state`, `tools`, `include_disabled`), given in the endpoint's URL (`/mcp?group=billing`, which
//! also narrows the notifications of a stream opened there) or per request in `params._meta`
//! under `toolgate/…` keys, which replace the URL's value of the same option. Parsed as
//! strictly as the REST query: an unknown `toolgate/` key or a value of the wrong type is
//! refused, never ignored (a typo must not widen a manifest).

use serde_json::{Map, Value};

use super::jsonrpc::RpcError;
use crate::domain::manifest::ManifestOptions;

/// The `_meta` prefix of toolgate's own keys.
const PREFIX: &str = "toolgate/";
/// The keys read under [`PREFIX`].
const KEYS: [&str; 4] = ["group", "state", "tools", "include_disabled"];

/// `base` (from the URL) with the options `meta` gives replacing it.
pub(super) fn with_meta(
    base: &ManifestOptions,
    meta: Option<&Map<String, Value>>,
) -> Result<ManifestOptions, RpcError> {
    let mut options = base.clone();
    let Some(meta) = meta else {
        return Ok(options);
    };
    for (key, value) in meta {
        let Some(option) = key.strip_prefix(PREFIX) else {
            continue; // other namespaces (io.modelcontextprotocol/…, progressToken) are not ours
        };
        let field = format!("_meta.{key}");
        match option {
            "group" => options.groups = Some(list(&field, value)?),
            "tools" => options.tools = Some(list(&field, value)?),
            "state" => {
                options.state = Some(
                    value
                        .as_str()
                        .ok_or_else(|| wrong(&field, "a string"))?
                        .to_owned(),
                );
            }
            "include_disabled" => {
                options.include_disabled = value
                    .as_bool()
                    .ok_or_else(|| wrong(&field, "true or false"))?;
            }
            other => {
                return Err(RpcError::invalid_params(format!(
                    "_meta.{PREFIX}{other}: unknown option; expected one of {}",
                    KEYS.map(|key| format!("{PREFIX}{key}")).join(", ")
                )));
            }
        }
    }
    Ok(options)
}

/// A list option: a comma-separated string (as in the URL) or an array of strings, each
/// comma-separated too (as REST and AuthZEN read them).
fn list(field: &str, value: &Value) -> Result<Vec<String>, RpcError> {
    match value {
        Value::String(text) => Ok(ManifestOptions::list(text)),
        Value::Array(items) => {
            let texts = items
                .iter()
                .map(|item| {
                    item.as_str()
                        .ok_or_else(|| wrong(field, "a string or an array of strings"))
                })
                .collect::<Result<Vec<&str>, RpcError>>()?;
            Ok(ManifestOptions::list_of(texts))
        }
        _ => Err(wrong(field, "a string or an array of strings")),
    }
}

fn wrong(field: &str, expected: &str) -> RpcError {
    RpcError::invalid_params(format!("{field}: must be {expected}"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn meta(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("an object")
    }

    #[test]
    fn meta_replaces_the_url_option_by_option() {
        let base = ManifestOptions {
            groups: Some(vec!["a".into()]),
            state: Some("s".into()),
            ..ManifestOptions::default()
        };
        let got = with_meta(
            &base,
            Some(&meta(
                json!({"toolgate/group": ["b", " c ,d", ""], "toolgate/tools": "x*, y",
                              "progressToken": 1, "io.modelcontextprotocol/x": {}}),
            )),
        )
        .expect("valid");
        assert_eq!(
            got.groups,
            Some(vec!["b".into(), "c".into(), "d".into()]),
            "items are split on commas as REST and AuthZEN split them"
        );
        assert_eq!(got.tools, Some(vec!["x*".into(), "y".into()]));
        assert_eq!(got.state.as_deref(), Some("s"), "kept from the URL");
        assert_eq!(with_meta(&base, None).expect("valid"), base);
        let empty = with_meta(&base, Some(&meta(json!({"toolgate/group": []})))).expect("valid");
        assert_eq!(empty.groups, Some(vec![]), "an empty list keeps none");
    }

    #[test]
    fn typos_and_wrong_types_are_refused_with_the_field() {
        for (bad, field) in [
            (json!({"toolgate/groups": "a"}), "_meta.toolgate/groups"),
            (json!({"toolgate/state": 1}), "_meta.toolgate/state"),
            (
                json!({"toolgate/include_disabled": "yes"}),
                "_meta.toolgate/include_disabled",
            ),
            (json!({"toolgate/group": [1]}), "_meta.toolgate/group"),
        ] {
            let error =
                with_meta(&ManifestOptions::default(), Some(&meta(bad))).expect_err("refused");
            assert!(error.message.starts_with(field), "{}", error.message);
        }
    }
}
