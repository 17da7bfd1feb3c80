use std::time::Duration;

use super::*;

fn expand(document: &Value, schema: &Value) -> Result<Value, SchemaError> {
    let resolver = Resolver { root: document };
    let budget = ImportBudget::new(10_000_000, Instant::now() + Duration::from_secs(60));
    expand_with(&resolver, &budget, |expansion| expansion.schema(schema)).map(|(schema, _)| schema)
}

#[test]
fn cycles_go_to_defs() {
    let document = json!({"components": {"schemas": {"Node": {"type": "object", "properties": {
        "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}}}}});
    assert_eq!(
        expand(&document, &json!({"$ref": "#/components/schemas/Node"})),
        Ok(json!({
            "type": "object",
            "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            "$defs": {"Node": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}
        }))
    );
}

/// Ten levels of ten references each: 10^10 nodes inlined, 100 or so in `$defs`.
#[test]
fn a_reference_bomb_is_expanded_with_shared_defs() {
    let mut schemas = Map::new();
    schemas.insert("L0".to_owned(), json!({"type": "string"}));
    for level in 1..=10 {
        let properties: Map<String, Value> = (0..10)
            .map(|i| {
                (
                    format!("p{i}"),
                    json!({"$ref": format!("#/components/schemas/L{}", level - 1)}),
                )
            })
            .collect();
        schemas.insert(
            format!("L{level}"),
            json!({"type": "object", "properties": properties}),
        );
    }
    let document = json!({"components": {"schemas": schemas}});
    let expanded = expand(&document, &json!({"$ref": "#/components/schemas/L10"}))
        .expect("expands in the $defs form");
    assert_eq!(expanded["$ref"], json!("#/$defs/L10"));
    assert_eq!(expanded["$defs"].as_object().map(Map::len), Some(11));
    assert_eq!(
        expanded["$defs"]["L3"]["properties"]["p9"],
        json!({"$ref": "#/$defs/L2"})
    );
}

#[test]
fn nullable_becomes_json_schema() {
    let document = json!({"components": {"schemas": {"Pet": {"type": "object"}}}});
    let cases = [
        (
            json!({"type": "string", "nullable": true}),
            json!({"type": ["string", "null"]}),
        ),
        (
            json!({"type": "string", "enum": ["a"], "nullable": true}),
            json!({"type": ["string", "null"], "enum": ["a", null]}),
        ),
        (
            json!({"allOf": [{"$ref": "#/components/schemas/Pet"}], "nullable": true}),
            json!({"type": ["object", "null"]}),
        ),
        (
            json!({"oneOf": [{"type": "string"}, {"type": "integer"}], "nullable": true}),
            json!({"anyOf": [{"oneOf": [{"type": "string"}, {"type": "integer"}]}, {"type": "null"}]}),
        ),
        (
            json!({"type": "string", "nullable": false}),
            json!({"type": "string"}),
        ),
        (json!({"nullable": true}), json!({})),
    ];
    for (schema, expected) in cases {
        assert_eq!(expand(&document, &schema), Ok(expected), "{schema}");
    }
}

#[test]
fn extensions_and_examples_are_dropped_but_names_and_data_are_kept() {
    let schema = json!({
        "type": "object", "x-stripeResource": {"class_name": "Charge"}, "example": {"a": 1},
        "properties": {
            "example": {"type": "string", "examples": ["x"], "x-expandableFields": []},
            "x-rate": {"type": "integer", "default": {"x-keep": 1}, "enum": [{"example": 2}]}
        }
    });
    assert_eq!(
        expand(&json!({}), &schema),
        Ok(json!({
            "type": "object",
            "properties": {
                "example": {"type": "string"},
                "x-rate": {"type": "integer", "default": {"x-keep": 1}, "enum": [{"example": 2}]}
            }
        }))
    );
}

#[test]
fn a_recursive_ref_refers_to_its_anchor_in_defs() {
    let document = json!({"components": {"schemas": {"Filter": {
        "$recursiveAnchor": true, "type": "object",
        "properties": {"filters": {"type": "array", "items": {"$recursiveRef": "#"}}}}}}});
    assert_eq!(
        expand(&document, &json!({"$ref": "#/components/schemas/Filter"})),
        Ok(json!({
            "type": "object",
            "properties": {"filters": {"type": "array", "items": {"$ref": "#/$defs/Filter"}}},
            "$defs": {"Filter": {"type": "object", "properties": {
                "filters": {"type": "array", "items": {"$ref": "#/$defs/Filter"}}}}}
        }))
    );
    let lost = expand(&json!({}), &json!({"items": {"$recursiveRef": "#"}}));
    assert!(matches!(lost, Err(SchemaError::Invalid(_))), "{lost:?}");
}

#[test]
fn defs_names_need_no_escaping() {
    let document = json!({"components": {"schemas": {"a/b c": {"type": "array",
        "items": {"$ref": "#/components/schemas/a~1b%20c"}}}}});
    let expanded =
        expand(&document, &json!({"$ref": "#/components/schemas/a~1b%20c"})).expect("expands");
    assert_eq!(expanded["items"], json!({"$ref": "#/$defs/a_b_c"}));
    assert!(expanded["$defs"]["a_b_c"].is_object(), "{expanded}");
}

#[test]
fn remote_and_dangling_refs_are_errors() {
    let remote = expand(
        &json!({}),
        &json!({"$ref": "https://evil.example/schema.json"}),
    );
    assert!(
        matches!(&remote, Err(SchemaError::Invalid(reason)) if reason.contains("remote $ref")),
        "{remote:?}"
    );
    let dangling = expand(&json!({}), &json!({"$ref": "#/components/schemas/Gone"}));
    assert!(
        matches!(&dangling, Err(SchemaError::Invalid(reason)) if reason.contains("points at nothing")),
        "{dangling:?}"
    );
}

#[test]
fn the_import_budget_is_shared_and_stops_expansion() {
    let resolver = Resolver { root: &Value::Null };
    let budget = ImportBudget::new(5, Instant::now() + Duration::from_secs(60));
    let schema = json!({"type": "object", "properties": {"a": {}, "b": {}}});
    assert!(expand_with(&resolver, &budget, |e| e.schema(&schema)).is_ok());
    let spent = expand_with(&resolver, &budget, |e| e.schema(&schema));
    assert!(
        matches!(spent, Err(SchemaError::ImportBudget(_))),
        "{spent:?}"
    );
    assert!(budget.spent());
}

#[test]
fn all_of_with_conflicting_types_is_kept() {
    let merged = merge_all_of(
        json!({"allOf": [{"type": "string"}, {"type": "object"}]})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    assert!(merged.contains_key("allOf"));
}
