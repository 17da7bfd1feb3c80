//! One OpenAPI schema made agent-facing and self-contained.
//!
//! `$ref`s are resolved at every depth, **local ones only** (`#/...`): a remote reference is
//! an error of the operation that uses it and is never fetched (a document must not make the
//! gateway request arbitrary URLs).
//!
//! A schema is first expanded **inline** (what agents read best). Inlining is exponential in
//! the worst case (a schema referring ten times to one referring ten times to …), so past
//! [`INLINE_NODES`] the schema is expanded again with **every** reference put once into the
//! schema's own `$defs` and referred to as `#/$defs/<Name>`: that form is never larger than the
//! part of the document the schema reaches. A reference cycle (a tree, a linked list) goes to
//! `$defs` in both forms, so recursive schemas stay bounded. Past [`MAX_SCHEMA_NODES`] even in
//! that form the schema is refused ([`SchemaError::TooLarge`]).
//!
//! Agent-facing means: OpenAPI 3.0 `nullable: true` becomes JSON Schema (`type: [T, "null"]`,
//! or `anyOf` with `{"type": "null"}` when there is no `type`), and `x-*` extensions and
//! `example`/`examples` are dropped (they cost tokens and say nothing about what is valid).
//! Names under `properties` (and the like) and values under `enum`, `const`, `default` are
//! data: kept exactly.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::Instant;

use serde_json::{Map, Value, json};

/// Nodes up to which a schema is inlined; a larger one is expanded with shared `$defs`.
pub const INLINE_NODES: usize = 20_000;
/// The most nodes one schema may have in its `$defs` form (guards against reference bombs).
pub const MAX_SCHEMA_NODES: usize = 100_000;

/// Why a schema could not be expanded.
#[derive(Debug, Clone, PartialEq)]
pub enum SchemaError {
    /// Over the node limit of the current form.
    TooLarge,
    /// The budget of the whole import (work or time) is spent: the text says which.
    ImportBudget(String),
    /// A reference that cannot be followed: the text says which and why.
    Invalid(String),
}

impl SchemaError {
    /// The reason reported for the operation (`part` is "input" or "output").
    pub fn reason(&self, part: &str) -> String {
        match self {
            SchemaError::TooLarge => format!(
                "the {part} schema has more than {MAX_SCHEMA_NODES} nodes even with its $refs shared in $defs"
            ),
            SchemaError::ImportBudget(reason) => reason.clone(),
            SchemaError::Invalid(reason) => format!("the {part} schema: {reason}"),
        }
    }
}

/// The bound on one whole import: schema nodes expanded (work, inlining attempts included)
/// and a deadline. Shared by every schema of the document.
///
/// It also remembers the references found too large to inline (their expansion alone took at
/// least half of [`INLINE_NODES`]), so that the hundred operations that use one such schema
/// do not each try to inline it first.
#[derive(Debug)]
pub struct ImportBudget {
    work_left: Cell<usize>,
    deadline: Instant,
    max_work: usize,
    large: RefCell<HashSet<String>>,
}

impl ImportBudget {
    pub fn new(max_work: usize, deadline: Instant) -> ImportBudget {
        ImportBudget {
            work_left: Cell::new(max_work),
            deadline,
            max_work,
            large: RefCell::new(HashSet::new()),
        }
    }

    /// Takes one node of work; the reason when the budget is spent.
    fn take(&self) -> Result<(), SchemaError> {
        let left = self.work_left.get();
        if left == 0 {
            return Err(self.spent_reason());
        }
        self.work_left.set(left - 1);
        // Reading the clock is cheaper than a node, but not free: every 4096 nodes.
        if left.is_multiple_of(4096) && Instant::now() > self.deadline {
            self.work_left.set(0);
            return Err(self.spent_reason());
        }
        Ok(())
    }

    /// Whether nothing more can be expanded.
    pub fn spent(&self) -> bool {
        self.work_left.get() == 0 || Instant::now() > self.deadline
    }

    /// Why operations are skipped once the budget is spent.
    pub fn spent_reason(&self) -> SchemaError {
        SchemaError::ImportBudget(if self.work_left.get() == 0 {
            format!(
                "not imported: the document's schemas expand to more than {} nodes in all",
                self.max_work
            )
        } else {
            "not imported: the import took longer than its time limit".to_owned()
        })
    }
}

/// Resolves local references in one document.
pub struct Resolver<'d> {
    pub root: &'d Value,
}

impl<'d> Resolver<'d> {
    /// The object `value` stands for, following `$ref`s (of path items, parameters, bodies,
    /// responses) until one is not a reference.
    pub fn follow(&self, value: &'d Value, at: &str) -> Result<&'d Map<String, Value>, String> {
        let mut current = value;
        for _ in 0..32 {
            match current {
                Value::Object(map) => match map.get("$ref").and_then(Value::as_str) {
                    Some(reference) => current = self.target(reference)?,
                    None => return Ok(map),
                },
                _ => return Err(format!("{at} is not an object")),
            }
        }
        Err(format!("{at}: a chain of more than 32 $refs"))
    }

    /// What a local `$ref` points at.
    pub fn target(&self, reference: &str) -> Result<&'d Value, String> {
        let Some(pointer) = reference.strip_prefix('#') else {
            return Err(format!(
                "remote $ref '{reference}' is not followed: only local references ('#/...') are resolved"
            ));
        };
        self.root
            .pointer(&percent_decode(pointer))
            .ok_or_else(|| format!("$ref '{reference}' points at nothing"))
    }
}

/// Builds one self-contained schema with `build`, which expands its parts through the
/// [`Expansion`] it is given: inline first, with shared `$defs` when that is too large.
/// Returns the schema and its node count.
pub fn expand_with<F>(
    resolver: &Resolver<'_>,
    budget: &ImportBudget,
    build: F,
) -> Result<(Value, usize), SchemaError>
where
    F: Fn(&mut Expansion<'_, '_>) -> Result<Value, SchemaError>,
{
    if budget.spent() {
        return Err(budget.spent_reason());
    }
    for (mode, limit) in [(Mode::Inline, INLINE_NODES), (Mode::Defs, MAX_SCHEMA_NODES)] {
        let mut expansion = Expansion {
            resolver,
            budget,
            mode,
            limit,
            nodes: 0,
            names: HashMap::new(),
            taken: BTreeSet::new(),
            pending: Vec::new(),
        };
        match build(&mut expansion).and_then(|schema| expansion.finish(schema)) {
            Err(SchemaError::TooLarge) if mode == Mode::Inline => continue,
            result => return result,
        }
    }
    Err(SchemaError::TooLarge)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// References inlined, cycles in `$defs`.
    Inline,
    /// Every reference in `$defs`.
    Defs,
}

/// The state of expanding one schema: the definitions it needs in `$defs`.
pub struct Expansion<'r, 'd> {
    resolver: &'r Resolver<'d>,
    budget: &'r ImportBudget,
    mode: Mode,
    limit: usize,
    nodes: usize,
    /// `$ref` → name in `$defs`.
    names: HashMap<String, String>,
    taken: BTreeSet<String>,
    pending: Vec<String>,
}

/// Keys whose value maps names (not keywords) to schemas.
const NAMED_SCHEMAS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
/// Keys whose value is data, never a schema.
const DATA: [&str; 6] = ["enum", "const", "default", "required", "type", "format"];

/// Whether a schema keyword reaches agents. `$recursiveAnchor` does not: every
/// `$recursiveRef` is resolved to the schema that had it (see [`Expansion::expand`]).
fn agent_facing(key: &str) -> bool {
    !key.starts_with("x-") && !["example", "examples", "$recursiveAnchor"].contains(&key)
}

impl Expansion<'_, '_> {
    fn count(&mut self, nodes: usize) -> Result<(), SchemaError> {
        self.nodes += nodes;
        if self.nodes > self.limit {
            return Err(SchemaError::TooLarge);
        }
        self.budget.take()
    }

    /// The expansion of one schema (a document's schema object, or a boolean schema).
    pub fn schema(&mut self, value: &Value) -> Result<Value, SchemaError> {
        self.expand(value, &mut Vec::new())
    }

    fn expand(&mut self, value: &Value, stack: &mut Vec<String>) -> Result<Value, SchemaError> {
        self.count(1)?;
        let Value::Object(map) = value else {
            return Ok(value.clone());
        };
        // `$recursiveRef: "#"` (2019-09, OpenAI's CompoundFilter) means the nearest enclosing
        // schema with `$recursiveAnchor: true`; inlined, "#" would mean the tool's own root.
        if let Some(recursive) = map.get("$recursiveRef") {
            let anchor = stack.iter().rev().find(|reference| {
                self.resolver
                    .target(reference)
                    .is_ok_and(|t| t.get("$recursiveAnchor") == Some(&Value::Bool(true)))
            });
            let Some(anchor) = anchor.filter(|_| recursive == "#") else {
                return Err(SchemaError::Invalid(format!(
                    "$recursiveRef {recursive} has no enclosing $recursiveAnchor to refer to"
                )));
            };
            let mut local = map.clone();
            local.remove("$recursiveRef");
            local.insert("$ref".to_owned(), Value::String(anchor.clone()));
            return self.expand(&Value::Object(local), stack);
        }
        let mut out = if let Some(Value::String(reference)) = map.get("$ref") {
            let target = self
                .resolver
                .target(reference)
                .map_err(SchemaError::Invalid)?;
            let resolved = if self.mode == Mode::Defs || stack.contains(reference) {
                json!({"$ref": format!("#/$defs/{}", self.def_name(reference))})
            } else if self.budget.large.borrow().contains(reference) {
                return Err(SchemaError::TooLarge);
            } else {
                let start = self.nodes;
                stack.push(reference.clone());
                let resolved = self.expand(target, stack);
                stack.pop();
                if resolved == Err(SchemaError::TooLarge) && self.nodes - start >= INLINE_NODES / 2
                {
                    self.budget.large.borrow_mut().insert(reference.clone());
                }
                resolved?
            };
            match resolved {
                Value::Object(resolved) => resolved,
                // A boolean schema: keywords beside it have nothing to refine.
                other => return Ok(other),
            }
        } else {
            Map::new()
        };
        // Beside a `$ref` (3.1 allows it: a description), keywords refine the target.
        for (key, child) in map {
            if key == "$ref" || !agent_facing(key) {
                continue;
            }
            let child = self.keyword(key, child, stack)?;
            out.insert(key.clone(), child);
        }
        Ok(Value::Object(nullable(merge_all_of(out))))
    }

    fn keyword(
        &mut self,
        key: &str,
        child: &Value,
        stack: &mut Vec<String>,
    ) -> Result<Value, SchemaError> {
        if DATA.contains(&key) {
            self.count(1 + child.as_array().map_or(0, Vec::len))?;
            return Ok(child.clone());
        }
        match child {
            Value::Object(named) if NAMED_SCHEMAS.contains(&key) => {
                let mut out = Map::new();
                for (name, schema) in named {
                    out.insert(name.clone(), self.expand(schema, stack)?);
                }
                Ok(Value::Object(out))
            }
            Value::Array(items) => items
                .iter()
                .map(|item| self.expand(item, stack))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            _ => self.expand(child, stack),
        }
    }

    fn def_name(&mut self, reference: &str) -> String {
        if let Some(name) = self.names.get(reference) {
            return name.clone();
        }
        // The name is a JSON Pointer token inside a URI fragment: keep it to characters that
        // need no escaping in either.
        let base: String = reference
            .rsplit('/')
            .next()
            .map(|last| percent_decode(last).replace("~1", "_").replace("~0", "_"))
            .unwrap_or_default()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "_-.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let base = if base.is_empty() {
            "def".to_owned()
        } else {
            base
        };
        let mut name = base.clone();
        let mut n = 2;
        while self.taken.contains(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        self.names.insert(reference.to_owned(), name.clone());
        self.pending.push(reference.to_owned());
        name
    }

    /// Expands the definitions referred to, puts them under `$defs` of `schema`, and returns
    /// it with its node count.
    fn finish(&mut self, mut schema: Value) -> Result<(Value, usize), SchemaError> {
        let mut defs = Map::new();
        while let Some(reference) = self.pending.pop() {
            let target = self
                .resolver
                .target(&reference)
                .map_err(SchemaError::Invalid)?;
            let mut stack = vec![reference.clone()];
            let expanded = self.expand(target, &mut stack)?;
            defs.insert(self.names[&reference].clone(), expanded);
        }
        if !defs.is_empty() {
            let Value::Object(object) = &mut schema else {
                return Err(SchemaError::Invalid(
                    "a boolean schema cannot hold $defs".to_owned(),
                ));
            };
            let entry = object
                .entry("$defs")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(existing) = entry {
                existing.extend(defs);
            }
        }
        Ok((schema, self.nodes))
    }
}

/// OpenAPI 3.0's `nullable: true` as JSON Schema; `nullable: false` is just dropped.
fn nullable(mut schema: Map<String, Value>) -> Map<String, Value> {
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
fn merge_all_of(mut schema: Map<String, Value>) -> Map<String, Value> {
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

fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .map_or_else(|_| text.to_owned(), |decoded| decoded.into_owned())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn expand(document: &Value, schema: &Value) -> Result<Value, SchemaError> {
        let resolver = Resolver { root: document };
        let budget = ImportBudget::new(10_000_000, Instant::now() + Duration::from_secs(60));
        expand_with(&resolver, &budget, |expansion| expansion.schema(schema))
            .map(|(schema, _)| schema)
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
}
