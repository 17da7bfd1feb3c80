//! OpenAPI 3.0 / 3.1 documents → tools. Pure: the document is already fetched.
//!
//! Each operation (`get put post delete options head patch trace`) becomes one tool
//! ([`operation`] says how its schemas are made, [`schema`] how references are expanded):
//! - `operation_id`: the `operationId`, else `{method}_{path slug}` (`get_pets_petId`), stable
//!   as long as the method and path are; two operations whose generated ids meet (`/pets/{id}`
//!   and `/pets/{id}/`) get `_2`, `_3`… in path order;
//! - `description`: the description, else the summary, else `METHOD path`;
//! - `deprecated`: the operation's `deprecated` flag.
//!
//! **One bad operation never refuses the document.** An operation that cannot be imported (a
//! remote or dangling `$ref`, an input schema over its budget, an `operationId` an earlier
//! operation already uses) is skipped, and one whose output schema cannot be expanded is
//! imported without it; both are reported per operation ([`ImportIssue`]). Only what makes the
//! whole document unreadable (not OpenAPI 3, `paths` not an object) is an error.
//!
//! The whole import is bounded ([`ImportBudget`]: nodes expanded, time); operations past the
//! bound are skipped and reported. Equal schemas are shared: one `Arc` per distinct schema.

mod binding;
mod document;
mod operation;
mod schema;

pub use binding::{BodyBinding, ParameterBinding, ParameterLocation, RequestShape, request_shape};
pub use document::parse_document;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use self::operation::Operation;
use self::schema::{ImportBudget, Resolver};
use super::{Import, ImportIssue, ImportedTool, IngestError, IssueOutcome};

/// The HTTP methods an OpenAPI path item can hold operations for, in the specification's order.
pub const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Schema nodes one import may expand in all (inlining attempts included).
pub const MAX_IMPORT_WORK: usize = 50_000_000;
/// Distinct schema nodes one import may keep (what the catalog will hold).
pub const MAX_IMPORT_NODES: usize = 5_000_000;
/// How long expanding one document's schemas may take.
pub const MAX_IMPORT_TIME: Duration = Duration::from_secs(30);

/// The state of importing one document.
struct Importer<'d> {
    resolver: Resolver<'d>,
    budget: ImportBudget,
    credentials: operation::Credentials,
    /// Distinct schemas by BLAKE3 of their JSON, and the nodes they hold in all.
    shared: HashMap<blake3::Hash, Arc<Value>>,
    kept_nodes: usize,
}

impl<'d> Importer<'d> {
    /// The one `Arc` of a schema equal to `schema`; an error when the import may keep no more.
    fn share(&mut self, (schema, nodes): (Value, usize)) -> Result<Arc<Value>, String> {
        let json = serde_json::to_vec(&schema).expect("a JSON value always serialises");
        let hash = blake3::hash(&json);
        if let Some(shared) = self.shared.get(&hash) {
            return Ok(Arc::clone(shared));
        }
        self.kept_nodes += nodes;
        if self.kept_nodes > MAX_IMPORT_NODES {
            return Err(format!(
                "not imported: the document's distinct schemas hold more than {MAX_IMPORT_NODES} nodes in all"
            ));
        }
        let shared = Arc::new(schema);
        self.shared.insert(hash, Arc::clone(&shared));
        Ok(shared)
    }

    /// The operation's definition (`crate::domain::definition`) but for its schemas, which are
    /// the tool's: what a call is made from and what an agent reads, references resolved.
    fn definition(&self, op: &Operation<'d>, operation_id: &str) -> Value {
        let text = |key: &str| op.operation.get(key).cloned().unwrap_or(Value::Null);
        let request = request_shape(self.resolver.root, op.method, op.path)
            .map_or(Value::Null, |shape| shape.to_json());
        serde_json::json!({
            "operation_id": operation_id,
            "method": upper(op.method),
            "path": op.path,
            "summary": text("summary"),
            "description": text("description"),
            "request": request,
        })
    }

    /// One operation as a tool, with the issue saying what was cut from it if anything was; or
    /// the issue saying why it is skipped. `seen` maps the operation ids taken so far to the
    /// operations that took them.
    fn import_operation(
        &mut self,
        op: &Operation<'d>,
        at: &str,
        seen: &HashMap<String, String>,
    ) -> Result<(ImportedTool, Option<ImportIssue>), ImportIssue> {
        let operation = op.operation;
        let given_id = operation
            .get("operationId")
            .and_then(Value::as_str)
            .filter(|id| !id.trim().is_empty());
        let skip = |reason: String| ImportIssue::skipped(at.to_owned(), given_id, reason);
        let operation_id = operation_id(given_id, op.method, op.path, seen).map_err(skip)?;
        if self.budget.spent() {
            return Err(skip(self.budget.spent_reason().reason("")));
        }
        let schemas = self.operation_schemas(op).map_err(skip)?;
        let shared = self.share(schemas.input).and_then(|input| {
            let output = schemas.output.map(|o| self.share(o)).transpose()?;
            Ok((input, output))
        });
        let (input_schema, output_schema) = shared.map_err(skip)?;
        let cut = schemas.cut.map(|reason| ImportIssue {
            outcome: IssueOutcome::Cut,
            ..skip(reason)
        });
        let definition = self.definition(op, &operation_id);
        let tool = ImportedTool {
            definition: Arc::new(definition),
            // The schemas are the tool's own, shared across the import.
            schemas_apart: true,
            name: operation_id.clone(),
            title: super::title(operation.get("summary").and_then(Value::as_str)),
            description: description(operation, at),
            operation_id,
            method: upper(op.method),
            path: op.path.to_owned(),
            tags: tags(operation),
            input_schema,
            output_schema,
            deprecated: operation.get("deprecated") == Some(&Value::Bool(true)),
        };
        Ok((tool, cut))
    }
}

/// The tools of an OpenAPI 3.0/3.1 document, sorted by operation id, and what was skipped or
/// cut on the way.
pub fn tools_from_document(document: &Value) -> Result<Import, IngestError> {
    let Value::Object(root) = document else {
        return Err(definition("the OpenAPI document is not an object"));
    };
    check_version(root)?;
    let empty = Map::new();
    let paths = match root.get("paths") {
        Some(Value::Object(paths)) => paths,
        None => &empty,
        Some(_) => return Err(definition("'paths' is not an object")),
    };
    let mut importer = Importer {
        resolver: Resolver { root: document },
        budget: ImportBudget::new(MAX_IMPORT_WORK, Instant::now() + MAX_IMPORT_TIME),
        credentials: operation::credentials(root),
        shared: HashMap::new(),
        kept_nodes: 0,
    };
    let mut import = Import::default();
    // operation id → the operation that has it.
    let mut seen: HashMap<String, String> = HashMap::new();
    for (path, item) in paths {
        let item = match importer.resolver.follow(item, &format!("paths.{path}")) {
            Ok(item) => item,
            Err(reason) => {
                import
                    .issues
                    .push(ImportIssue::skipped(path.clone(), None, reason));
                continue;
            }
        };
        if !path.starts_with('/') {
            let reason = "the path does not begin with '/' (OpenAPI paths do): a parameter at \
                          its start would extend the server's host or port"
                .to_owned();
            import
                .issues
                .push(ImportIssue::skipped(path.clone(), None, reason));
            continue;
        }
        let path_parameters = item.get("parameters").and_then(Value::as_array);
        for method in METHODS {
            let Some(operation) = item.get(method) else {
                continue;
            };
            let at = format!("{} {path}", upper(method));
            let Value::Object(operation) = operation else {
                let reason = "the operation is not an object".to_owned();
                import.issues.push(ImportIssue::skipped(at, None, reason));
                continue;
            };
            let op = Operation {
                path,
                method,
                operation,
                path_parameters,
            };
            match importer.import_operation(&op, &at, &seen) {
                Ok((tool, cut)) => {
                    import.issues.extend(cut);
                    seen.insert(tool.operation_id.clone(), at);
                    import.tools.push(tool);
                }
                Err(skipped) => import.issues.push(skipped),
            }
        }
    }
    import
        .tools
        .sort_by(|a, b| a.operation_id.cmp(&b.operation_id));
    Ok(import)
}

/// The tool's operation id: the given `operationId`, unless an earlier operation in `seen`
/// has it (then the reason to skip this one); else `{method}_{path slug}`, made unique with
/// `_2`, `_3`… in path order.
fn operation_id(
    given: Option<&str>,
    method: &str,
    path: &str,
    seen: &HashMap<String, String>,
) -> Result<String, String> {
    match given {
        Some(id) => match seen.get(id) {
            Some(first) => Err(format!("operationId '{id}' is already used by {first}")),
            None => Ok(id.to_owned()),
        },
        None => {
            let base = generated_operation_id(method, path);
            let mut id = base.clone();
            let mut n = 2;
            while seen.contains_key(&id) {
                id = format!("{base}_{n}");
                n += 1;
            }
            Ok(id)
        }
    }
}

/// Refuses what is not an OpenAPI 3.0 or 3.1 document.
fn check_version(root: &Map<String, Value>) -> Result<(), IngestError> {
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
    Ok(())
}

fn description(operation: &Map<String, Value>, at: &str) -> String {
    let text = |key: &str| {
        operation
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    text("description")
        .or_else(|| text("summary"))
        .map_or_else(|| at.to_owned(), str::to_owned)
}

fn tags(operation: &Map<String, Value>) -> Vec<String> {
    operation
        .get("tags")
        .and_then(Value::as_array)
        .map(|tags| {
            tags.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
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

#[cfg(test)]
mod tests;
