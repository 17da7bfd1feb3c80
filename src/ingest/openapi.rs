//! OpenAPI 3.0 / 3.1 documents → tools. Pure: the document is already fetched.
//!
//! Each operation (`get put post delete options head patch`) becomes one tool:
//! - `operation_id`: the `operationId`, else `{method}_{path slug}` (`get_pets_petId`), stable
//!   as long as the method and path are;
//! - `description`: the description, else the summary, else `METHOD path`;
//! - `input_schema`: an object with one property per path, query and header parameter (cookie
//!   parameters are not agent input) and `body` for a JSON request body; path parameters and
//!   required ones are `required`;
//! - `output_schema`: the schema of the first 2xx response with JSON content.
//!
//! `$ref`s are resolved at every depth, **local ones only** (`#/...`): a remote reference is an
//! error and is never fetched (a spec must not make the gateway request arbitrary URLs).
//! A reference cycle (a tree, a linked list) is cut rather than refused: the cyclic definition
//! is put once into the tool schema's own `$defs` and referred to as `#/$defs/<Name>`, so every
//! schema is self-contained. `allOf` lists of objects are merged into one schema (properties and
//! `required` united) unless their `type`s conflict, in which case the `allOf` stays.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value, json};

use super::{ImportedTool, IngestError};

/// The HTTP methods an OpenAPI path item can hold operations for, in the specification's order.
pub const METHODS: [&str; 7] = ["get", "put", "post", "delete", "options", "head", "patch"];

/// The most schema nodes one tool schema may expand to (guards against reference bombs).
const MAX_EXPANDED_NODES: usize = 100_000;

/// Parses JSON or YAML text into a JSON value (YAML keys such as `200:` become text).
pub fn parse_document(text: &str) -> Result<Value, IngestError> {
    if text.trim_start().starts_with('{') {
        return serde_json::from_str(text).map_err(|error| {
            IngestError::Definition(format!("the OpenAPI document is not valid JSON: {error}"))
        });
    }
    let yaml: serde_norway::Value = serde_norway::from_str(text).map_err(|error| {
        IngestError::Definition(format!(
            "the OpenAPI document is neither JSON nor valid YAML: {error}"
        ))
    })?;
    Ok(yaml_to_json(yaml))
}

fn yaml_to_json(value: serde_norway::Value) -> Value {
    use serde_norway::Value as Y;
    match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                json!(i)
            } else if let Some(u) = n.as_u64() {
                json!(u)
            } else {
                n.as_f64()
                    .and_then(serde_json::Number::from_f64)
                    .map_or(Value::Null, Value::Number)
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(items.into_iter().map(yaml_to_json).collect()),
        Y::Mapping(mapping) => Value::Object(
            mapping
                .into_iter()
                .map(|(key, value)| {
                    let key = match yaml_to_json(key) {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    (key, yaml_to_json(value))
                })
                .collect(),
        ),
        Y::Tagged(tagged) => yaml_to_json(tagged.value),
    }
}

/// The tools of an OpenAPI 3.0/3.1 document, sorted by operation id.
pub fn tools_from_document(document: &Value) -> Result<Vec<ImportedTool>, IngestError> {
    let Value::Object(root) = document else {
        return Err(definition("the OpenAPI document is not an object"));
    };
    if let Some(version) = root.get("swagger") {
        return Err(definition(format!(
            "Swagger {} documents are not supported: convert it to OpenAPI 3.0 or 3.1",
            version.as_str().unwrap_or("2.0")
        )));
    }
    let version = root.get("openapi").and_then(Value::as_str).ok_or_else(|| {
        definition("the document has no 'openapi' version field: it is not an OpenAPI 3 document")
    })?;
    if !(version.starts_with("3.0") || version.starts_with("3.1")) {
        return Err(definition(format!(
            "OpenAPI version '{version}' is not supported; expected 3.0.x or 3.1.x"
        )));
    }
    let resolver = Resolver { root: document };
    let mut tools = Vec::new();
    let mut seen: HashMap<String, String> = HashMap::new();
    let empty = Map::new();
    let paths = match root.get("paths") {
        Some(Value::Object(paths)) => paths,
        None => &empty,
        Some(_) => return Err(definition("'paths' is not an object")),
    };
    for (path, item) in paths {
        let item = resolver.follow(item, &format!("paths.{path}"))?;
        let path_parameters = item.get("parameters").and_then(Value::as_array);
        for method in METHODS {
            let Some(operation) = item.get(method) else {
                continue;
            };
            let Value::Object(operation) = operation else {
                return Err(definition(format!(
                    "{} {path} is not an object",
                    upper(method)
                )));
            };
            let tool = operation_tool(&resolver, path, method, operation, path_parameters)?;
            let at = format!("{} {path}", upper(method));
            if let Some(first) = seen.insert(tool.operation_id.clone(), at.clone()) {
                return Err(definition(format!(
                    "operationId '{}' is used by both {first} and {at}",
                    tool.operation_id
                )));
            }
            tools.push(tool);
        }
    }
    tools.sort_by(|a, b| a.operation_id.cmp(&b.operation_id));
    Ok(tools)
}

fn operation_tool(
    resolver: &Resolver,
    path: &str,
    method: &str,
    operation: &Map<String, Value>,
    path_parameters: Option<&Vec<Value>>,
) -> Result<ImportedTool, IngestError> {
    let at = format!("{} {path}", upper(method));
    let operation_id = match operation.get("operationId").and_then(Value::as_str) {
        Some(id) if !id.trim().is_empty() => id.to_owned(),
        _ => generated_operation_id(method, path),
    };
    let text = |key: &str| {
        operation
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let description = text("description")
        .or_else(|| text("summary"))
        .map_or_else(|| at.clone(), str::to_owned);
    let tags = operation
        .get("tags")
        .and_then(Value::as_array)
        .map(|tags| {
            tags.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();

    // Operation parameters override path-level ones with the same name and location.
    let mut parameters: Vec<Map<String, Value>> = Vec::new();
    for list in [
        path_parameters,
        operation.get("parameters").and_then(Value::as_array),
    ]
    .into_iter()
    .flatten()
    {
        for parameter in list {
            let parameter = resolver
                .follow(parameter, &format!("{at} parameters"))?
                .clone();
            let key = |p: &Map<String, Value>| (p.get("name").cloned(), p.get("in").cloned());
            parameters.retain(|p| key(p) != key(&parameter));
            parameters.push(parameter);
        }
    }

    let mut input = Expansion::default();
    let mut properties = Map::new();
    let mut required: Vec<String> = Vec::new();
    for parameter in &parameters {
        let location = parameter.get("in").and_then(Value::as_str).unwrap_or("");
        if !["path", "query", "header"].contains(&location) {
            continue;
        }
        let Some(name) = parameter.get("name").and_then(Value::as_str) else {
            return Err(definition(format!("{at}: a parameter has no name")));
        };
        let schema = match parameter.get("schema") {
            Some(schema) => schema.clone(),
            None => parameter
                .get("content")
                .and_then(Value::as_object)
                .and_then(|content| content.values().next())
                .and_then(|media| media.get("schema"))
                .cloned()
                .unwrap_or_else(|| json!({})),
        };
        let mut schema = resolver.expand_schema(&schema, &mut input)?;
        if let (Value::Object(schema), Some(description)) =
            (&mut schema, parameter.get("description"))
        {
            schema
                .entry("description")
                .or_insert_with(|| description.clone());
        }
        properties.insert(name.to_owned(), schema);
        if location == "path" || parameter.get("required") == Some(&Value::Bool(true)) {
            required.push(name.to_owned());
        }
    }
    if let Some(body) = operation.get("requestBody") {
        let body = resolver.follow(body, &format!("{at} requestBody"))?;
        if let Some(schema) = json_schema_of(body) {
            let mut schema = resolver.expand_schema(schema, &mut input)?;
            if let (Value::Object(schema), Some(description)) =
                (&mut schema, body.get("description"))
            {
                schema
                    .entry("description")
                    .or_insert_with(|| description.clone());
            }
            properties.insert("body".to_owned(), schema);
            if body.get("required") == Some(&Value::Bool(true)) {
                required.push("body".to_owned());
            }
        }
    }
    let mut input_schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        input_schema["required"] = json!(required);
    }
    input.finish(resolver, &mut input_schema)?;

    let output_schema = match success_response(resolver, operation, &at)? {
        Some(schema) => {
            let mut output = Expansion::default();
            let mut schema = resolver.expand_schema(schema, &mut output)?;
            output.finish(resolver, &mut schema)?;
            Some(schema)
        }
        None => None,
    };

    Ok(ImportedTool {
        name: operation_id.clone(),
        operation_id,
        description,
        method: upper(method),
        path: path.to_owned(),
        tags,
        input_schema,
        output_schema,
    })
}

/// The JSON schema of the first 2xx response (in status order) that has JSON content.
fn success_response<'d>(
    resolver: &Resolver<'d>,
    operation: &'d Map<String, Value>,
    at: &str,
) -> Result<Option<&'d Value>, IngestError> {
    let Some(Value::Object(responses)) = operation.get("responses") else {
        return Ok(None);
    };
    let mut statuses: Vec<&String> = responses
        .keys()
        .filter(|status| status.starts_with('2'))
        .collect();
    statuses.sort();
    for status in statuses {
        let response = resolver.follow(&responses[status], &format!("{at} responses.{status}"))?;
        if let Some(schema) = json_schema_of(response) {
            return Ok(Some(schema));
        }
    }
    Ok(None)
}

/// The schema of the JSON media type of a request body or response (`application/json` first,
/// then any `*/json` or `*+json`).
fn json_schema_of(holder: &Map<String, Value>) -> Option<&Value> {
    let content = holder.get("content")?.as_object()?;
    let is_json = |media: &str| {
        let media = media
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        media.ends_with("/json") || media.ends_with("+json")
    };
    let media = content
        .get("application/json")
        .or_else(|| content.iter().find(|(k, _)| is_json(k)).map(|(_, v)| v))?;
    media.get("schema")
}

/// `{method}_{path slug}`: the path's letters, digits and underscores, other runs as `_`.
pub fn generated_operation_id(method: &str, path: &str) -> String {
    let mut slug = String::new();
    for c in path.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('_') {
            slug.push('_');
        }
    }
    let slug = slug.trim_end_matches('_');
    format!("{method}_{}", if slug.is_empty() { "root" } else { slug })
}

fn upper(method: &str) -> String {
    method.to_ascii_uppercase()
}

fn definition(message: impl Into<String>) -> IngestError {
    IngestError::Definition(message.into())
}

/// Resolves local references in one document.
struct Resolver<'d> {
    root: &'d Value,
}

/// The state of expanding one tool schema: the cyclic definitions it needs in `$defs`.
#[derive(Default)]
struct Expansion {
    /// `$ref` → name in `$defs`.
    names: HashMap<String, String>,
    taken: BTreeSet<String>,
    pending: Vec<String>,
    defs: Map<String, Value>,
    nodes: usize,
}

impl Expansion {
    fn def_name(&mut self, reference: &str) -> String {
        if let Some(name) = self.names.get(reference) {
            return name.clone();
        }
        let base = reference.rsplit('/').next().unwrap_or("def").to_owned();
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

    /// Expands the cyclic definitions referred to and puts them under `$defs` of `schema`.
    fn finish(mut self, resolver: &Resolver, schema: &mut Value) -> Result<(), IngestError> {
        while let Some(reference) = self.pending.pop() {
            let target = resolver.target(&reference)?;
            let mut stack = vec![reference.clone()];
            let expanded = resolver.expand(target, &mut stack, &mut self)?;
            let name = self.names[&reference].clone();
            self.defs.insert(name, expanded);
        }
        if !self.defs.is_empty()
            && let Value::Object(schema) = schema
        {
            schema.insert("$defs".to_owned(), Value::Object(self.defs));
        }
        Ok(())
    }
}

impl<'d> Resolver<'d> {
    /// The object `value` stands for, following `$ref`s (of path items, parameters, bodies,
    /// responses) until one is not a reference.
    fn follow(&self, value: &'d Value, at: &str) -> Result<&'d Map<String, Value>, IngestError> {
        let mut current = value;
        for _ in 0..32 {
            match current {
                Value::Object(map) => match map.get("$ref").and_then(Value::as_str) {
                    Some(reference) => current = self.target(reference)?,
                    None => return Ok(map),
                },
                _ => return Err(definition(format!("{at} is not an object"))),
            }
        }
        Err(definition(format!("{at}: a chain of more than 32 $refs")))
    }

    /// What a local `$ref` points at.
    fn target(&self, reference: &str) -> Result<&'d Value, IngestError> {
        let Some(pointer) = reference.strip_prefix('#') else {
            return Err(definition(format!(
                "remote $ref '{reference}' is not followed: only local references ('#/...') are resolved"
            )));
        };
        self.root
            .pointer(&percent_decode(pointer))
            .ok_or_else(|| definition(format!("$ref '{reference}' points at nothing")))
    }

    fn expand_schema(
        &self,
        schema: &Value,
        expansion: &mut Expansion,
    ) -> Result<Value, IngestError> {
        self.expand(schema, &mut Vec::new(), expansion)
    }

    fn expand(
        &self,
        value: &Value,
        stack: &mut Vec<String>,
        expansion: &mut Expansion,
    ) -> Result<Value, IngestError> {
        expansion.nodes += 1;
        if expansion.nodes > MAX_EXPANDED_NODES {
            return Err(definition(format!(
                "a schema expands to more than {MAX_EXPANDED_NODES} nodes once its $refs are resolved"
            )));
        }
        match value {
            Value::Object(map) => {
                if let Some(Value::String(reference)) = map.get("$ref") {
                    let mut resolved = if stack.contains(reference) {
                        let name = expansion.def_name(reference);
                        json!({"$ref": format!("#/$defs/{name}")})
                    } else {
                        let target = self.target(reference)?;
                        stack.push(reference.clone());
                        let resolved = self.expand(target, stack, expansion);
                        stack.pop();
                        resolved?
                    };
                    // 3.1 allows keywords beside `$ref` (a description): they refine the target.
                    if let Value::Object(resolved) = &mut resolved {
                        for (key, sibling) in map {
                            if key != "$ref" {
                                let sibling = self.expand(sibling, stack, expansion)?;
                                resolved.insert(key.clone(), sibling);
                            }
                        }
                    }
                    return Ok(resolved);
                }
                let mut out = Map::new();
                for (key, child) in map {
                    out.insert(key.clone(), self.expand(child, stack, expansion)?);
                }
                Ok(Value::Object(merge_all_of(out)))
            }
            Value::Array(items) => Ok(Value::Array(
                items
                    .iter()
                    .map(|item| self.expand(item, stack, expansion))
                    .collect::<Result<_, _>>()?,
            )),
            other => Ok(other.clone()),
        }
    }
}

/// Merges an `allOf` of object schemas into the schema holding it; leaves it when a part is not
/// an object, is a cut cycle (`$ref`), or the parts' `type`s disagree.
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
    let parts = parts.clone();
    schema.remove("allOf");
    let mut merged = Map::new();
    for part in parts
        .iter()
        .chain(std::iter::once(&Value::Object(schema.clone())))
    {
        let Value::Object(part) = part else {
            unreachable!("checked above")
        };
        if !merge_into(&mut merged, part) {
            schema.insert("allOf".to_owned(), Value::Array(parts));
            return schema;
        }
    }
    merged
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
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(high), Some(low)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((high * 16 + low) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools(document: Value) -> Vec<ImportedTool> {
        tools_from_document(&document).expect("imports")
    }

    #[test]
    fn generated_ids_are_method_and_path_slug() {
        assert_eq!(
            generated_operation_id("get", "/pets/{petId}"),
            "get_pets_petId"
        );
        assert_eq!(generated_operation_id("post", "/"), "post_root");
        assert_eq!(
            generated_operation_id("delete", "/v1/a-b/{id}/x.json"),
            "delete_v1_a_b_id_x_json"
        );
    }

    #[test]
    fn swagger_2_is_rejected() {
        let error = tools_from_document(&json!({"swagger": "2.0", "paths": {}})).unwrap_err();
        assert!(error.to_string().contains("Swagger 2.0"), "{error}");
    }

    #[test]
    fn cycles_go_to_defs() {
        let imported = tools(json!({
            "openapi": "3.0.3",
            "paths": {"/tree": {"get": {"operationId": "tree", "responses": {"200": {
                "description": "ok",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Node"}}}}}}}},
            "components": {"schemas": {"Node": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}}}}
        }));
        assert_eq!(
            imported[0].output_schema,
            Some(json!({
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
                "$defs": {"Node": {"type": "object", "properties": {
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}
            }))
        );
    }

    #[test]
    fn remote_refs_are_never_followed() {
        let error = tools_from_document(&json!({
            "openapi": "3.1.0",
            "paths": {"/x": {"post": {"requestBody": {"content": {"application/json": {
                "schema": {"$ref": "https://evil.example/schema.json"}}}}}}}
        }))
        .unwrap_err();
        assert!(error.to_string().contains("remote $ref"), "{error}");
    }

    #[test]
    fn all_of_with_conflicting_types_is_kept() {
        let merged = merge_all_of(
            json!({"allOf": [{"type": "string"}, {"type": "object"}]})
                .as_object()
                .expect("object")
                .clone(),
        );
        assert!(merged.contains_key("allOf"));
    }
}
