//! One tool as an upstream defines it, mapped to the catalog's fields: what an import produces
//! and what a pending revision proposes (`revision.rs`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool as the upstream defines it: everything the importer owns.
///
/// Schemas are shared: an import gives equal schemas one `Arc`, which the catalog keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportedTool {
    /// The upstream's own identifier (an `operationId`, an MCP tool name), kept as written:
    /// the tool id is `{source_id}:{operation_id}`.
    pub operation_id: String,
    /// A function name for LLMs, made from `operation_id` by `ingest::names::assign`.
    pub name: String,
    /// A human-readable name, when the upstream gives one (OpenAPI `summary`, MCP `title`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub description: String,
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub tags: Vec<String>,
    pub input_schema: Arc<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Arc<Value>>,
    /// The upstream marks the operation deprecated: imported, but as a deprecated tool.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deprecated: bool,
    /// The upstream's definition (`definition.rs`), which approvals are about; with
    /// `schemas_apart`, without its `input_schema` and `output_schema`, which are this tool's
    /// own (shared) schemas: an import of 10,000 operations does not copy its shared schemas
    /// 10,000 times ([`ImportedTool::definition_value`] is the whole). Not part of
    /// [`ImportedTool::content_hash`] (it keeps the value tools imported before definitions
    /// were pinned recorded) and kept apart where a tool is stored.
    #[serde(skip)]
    pub definition: Arc<Value>,
    /// Whether the definition's `input_schema` and `output_schema` members are left out of
    /// `definition` (an OpenAPI operation's are this tool's schemas).
    #[serde(skip)]
    pub schemas_apart: bool,
}

impl ImportedTool {
    /// The findings on the whole definition (`findings::check`), its schemas checked where
    /// they are when kept apart.
    pub fn findings(
        &self,
        context: &super::findings::Context<'_>,
    ) -> Vec<super::findings::Finding> {
        if !self.schemas_apart {
            return super::findings::check(&self.definition, context);
        }
        let output = self.output_schema.as_deref().unwrap_or(&Value::Null);
        let parts = [
            ("input_schema", &*self.input_schema),
            ("output_schema", output),
        ];
        super::findings::check_parts(&self.definition, &parts, context)
    }

    /// The whole definition: `definition` with the schemas put in when they are kept apart.
    pub fn definition_value(&self) -> Value {
        let mut definition = (*self.definition).clone();
        if self.schemas_apart
            && let Value::Object(members) = &mut definition
        {
            members.insert("input_schema".to_owned(), (*self.input_schema).clone());
            let output = self
                .output_schema
                .as_deref()
                .cloned()
                .unwrap_or(Value::Null);
            members.insert("output_schema".to_owned(), output);
        }
        definition
    }

    /// BLAKE3 of the catalog fields the import sets (hex): equal hashes mean the catalog's
    /// copy is what the upstream defines.
    pub fn content_hash(&self) -> String {
        let json = serde_json::to_vec(self).expect("an imported tool always serialises");
        blake3::hash(&json).to_hex().to_string()
    }
}
