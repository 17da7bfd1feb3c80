//! A tool as written in a request body: seed 001's tier-2 descriptor is turned into a tool, and
//! an explicit input schema that its arguments would silently replace is refused.

use crate::domain::model::Tool;
use crate::domain::validate::{ErrorKind, FieldError};

/// The fields of a [`Tool`] as written in a body: in a seed's tier-2 descriptor, every other
/// key is a config value of the service.
const TOOL_FIELDS: [&str; 26] = [
    "id",
    "source_id",
    "operation_id",
    "name",
    "title",
    "description",
    "method",
    "path",
    "tags",
    "label_ids",
    "input_schema",
    "output_schema",
    "enabled",
    "deprecated",
    "available_in_states",
    "next_state",
    "version",
    "disabled_reason",
    "service_config",
    "arguments",
    "imported",
    "definition_hash",
    "created_at",
    "updated_at",
    "created_by",
    "updated_by",
];

/// Seed 001's tier-2 tool descriptor, `{"type": "tool-service", "name", "description",
/// "service", <config values>, "arguments"}`, as a tool: `service` is the source, `name` also
/// the operation id (unless one is given), and every key that is not a tool field goes to
/// `service_config`, where validation checks it against the service's declared parameters.
pub(super) fn tool_from_descriptor(body: &mut serde_json::Value) {
    let serde_json::Value::Object(fields) = body else {
        return;
    };
    if fields.get("type").and_then(serde_json::Value::as_str) != Some("tool-service")
        || fields.contains_key("source_id")
    {
        return;
    }
    fields.remove("type");
    if let Some(service) = fields.remove("service") {
        fields.insert("source_id".to_owned(), service);
    }
    if !fields.contains_key("operation_id")
        && let Some(name) = fields.get("name").cloned()
    {
        fields.insert("operation_id".to_owned(), name);
    }
    let values: Vec<String> = fields
        .keys()
        .filter(|key| !TOOL_FIELDS.contains(&key.as_str()))
        .cloned()
        .collect();
    let mut config = match fields.remove("service_config") {
        Some(serde_json::Value::Object(config)) => config,
        _ => serde_json::Map::new(),
    };
    for key in values {
        if let Some(value) = fields.remove(&key) {
            config.insert(key, value);
        }
    }
    fields.insert(
        "service_config".to_owned(),
        serde_json::Value::Object(config),
    );
}

/// A tool with `arguments` has the input schema they define: an explicit `input_schema` that
/// says something else would be silently replaced, so it is refused (one equal to the derived
/// schema, as a read gives it back, is fine).
pub(super) fn explicit_schema_with_arguments(
    body: &serde_json::Value,
) -> Result<(), Vec<FieldError>> {
    let (Some(schema), Some(arguments)) = (body.get("input_schema"), body.get("arguments")) else {
        return Ok(());
    };
    let Ok(arguments) =
        serde_json::from_value::<Vec<crate::domain::model::ToolArgument>>(arguments.clone())
    else {
        return Ok(());
    };
    if arguments.is_empty() || *schema == Tool::arguments_schema(&arguments) {
        return Ok(());
    }
    Err(vec![FieldError {
        field: "input_schema".to_owned(),
        message: "a tool with arguments has the input schema they define; give one or the \
                  other, not both"
            .to_owned(),
        kind: ErrorKind::Invalid,
    }])
}
