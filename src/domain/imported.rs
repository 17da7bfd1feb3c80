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
    /// The upstream's definition (`definition.rs`), which approvals are about. Not part of
    /// [`ImportedTool::content_hash`] (it keeps the value tools imported before definitions
    /// were pinned recorded) and kept apart where a tool is stored.
    #[serde(skip)]
    pub definition: Arc<Value>,
}

impl ImportedTool {
    /// BLAKE3 of the catalog fields the import sets (hex): equal hashes mean the catalog's
    /// copy is what the upstream defines.
    pub fn content_hash(&self) -> String {
        let json = serde_json::to_vec(self).expect("an imported tool always serialises");
        blake3::hash(&json).to_hex().to_string()
    }
}
