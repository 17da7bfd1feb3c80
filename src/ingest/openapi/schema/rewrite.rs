//! The rewrites that make an expanded schema object agent-facing (see [`super`]): keywords that
//! say nothing about what is valid are dropped, OpenAPI 3.0's `nullable` becomes JSON Schema,
//! and an `allOf` of plain object schemas is merged into one.

use serde_json::{Map, Value, json};

/// Whether a schema keyword reaches agents. `$recursiveAnchor` does not: every
/// `$recursiveRef` is resolved to the schema that had it (see [`super::Expansion`]).
pub(super) fn agent_facing(key: &str) -> bool {
    !key.starts_with("x-") && !["example", "examples", "$recursiveAnchor"].contains(&key)
}

/// OpenAPI 3.0's `nullable: true` as JSON Schema; `nullable: false` is just dropped.
pub(super) fn nullable(mut schema: Map<String, Value>) -> Map<String, Value> {
    if schema.remove("nullable") != Some(Value::Bool(true)) {
        return schema;
    }
    match schema.get_mut("type") {
        Some(Value::String(single)) => {
            let single = std::mem::take(single);
            schema.insert("type".to_owned(), json!([single, "null"]));
        }
        Some(Value::Array(types)) => {
            if !types.iter().any(|t| t == "null") {
                types.push(json!("null"));
            }
        }
        _ => {
            let composed = ["$ref", "allOf", "anyOf", "oneOf", "enum", "const"]
                .iter()
                .any(|key| schema.contains_key(*key));
            if !composed {
                // No `type` and no constraint that could exclude null: null is already valid.
                return schema;
            }
            let mut wrapper = Map::new();
            wrapper.insert(
                "anyOf".to_owned(),
                json!([Value::Object(schema), {"type": "null"}]),
            );
            return wrapper;
        }
    }
    if let Some(Value::Array(values)) = schema.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    schema
}

/// Merges an `allOf` of object schemas into the schema holding it; leaves it when a part is not
/// an object, is a reference (`$ref`), or the parts' `type`s disagree.
pub(super) fn merge_all_of(mut schema: Map<String, Value>) -> Map<String, Value> {
    let Some(Value::Array(parts)) = schema.get("allOf") else {
        return schema;
    };
    if parts
        .iter()
        .any(|part| !part.is_object() || part.get("$ref").is_some())
    {
        return schema;
    }
    let Some(Value::Array(parts)) = schema.remove("allOf") else {
        return schema;
    };
    let mut merged = Map::new();
    let fits = parts
        .iter()
        .filter_map(Value::as_object)
        .chain([&schema])
        .all(|part| merge_into(&mut merged, part));
    if fits {
        return merged;
    }
    schema.insert("allOf".to_owned(), Value::Array(parts));
    schema
}

/// Adds `part` to `merged`; false when their `type`s conflict.
fn merge_into(merged: &mut Map<String, Value>, part: &Map<String, Value>) -> bool {
    for (key, value) in part {
        match key.as_str() {
            "properties" => {
                let target = merged
                    .entry("properties")
                    .or_insert_with(|| json!({}))
                    .as_object_mut();
                if let (Some(target), Value::Object(properties)) = (target, value) {
                    for (name, property) in properties {
                        target.insert(name.clone(), property.clone());
                    }
                }
            }
            "required" => {
                let target = merged.entry("required").or_insert_with(|| json!([]));
                if let (Value::Array(target), Value::Array(required)) = (target, value) {
                    for name in required {
                        if !target.contains(name) {
                            target.push(name.clone());
                        }
                    }
                }
            }
            "type" => match merged.get("type") {
                Some(existing) if existing != value => return false,
                _ => {
                    merged.insert(key.clone(), value.clone());
                }
            },
            _ => {
                merged.insert(key.clone(), value.clone());
            }
        }
    }
    true
}
