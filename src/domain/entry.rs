//! One tool's manifest entry as agents see it, serialised once per snapshot (on first use) so
//! that a manifest only appends the per-request part; the snapshot keeps it, manifests read it.

use serde::Serialize;
use serde_json::Value;

use super::model::Tool;

/// One tool's manifest entry, serialised once per snapshot.
#[derive(Debug, Clone)]
pub struct ToolEntry {
    /// `{"tool_id":…,…,"next_state":…` — the entry without `groups` and the closing brace.
    json_prefix: Box<str>,
    /// Hash of the prefix and of the tool's visibility flags.
    content_hash: [u8; 16],
}

/// The fixed part of an entry, in the field order agents see.
#[derive(Serialize)]
struct EntryFields<'t> {
    tool_id: &'t str,
    name: &'t str,
    description: &'t str,
    input_schema: &'t Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<&'t Value>,
    source_id: &'t str,
    source_path: &'t str,
    method: &'t str,
    tags: &'t [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<&'t str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    available_in_states: Option<&'t [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_state: Option<&'t str>,
}

impl ToolEntry {
    pub(super) fn new(tool: &Tool) -> ToolEntry {
        let fields = EntryFields {
            tool_id: &tool.id,
            name: &tool.name,
            description: &tool.description,
            input_schema: &tool.input_schema,
            output_schema: tool.output_schema.as_deref(),
            source_id: &tool.source_id,
            source_path: tool.path.as_deref().unwrap_or(""),
            method: tool.method.as_deref().unwrap_or(""),
            tags: &tool.tags,
            version: tool.version.as_deref(),
            available_in_states: tool.available_in_states.as_deref(),
            next_state: tool.next_state.as_deref(),
        };
        let mut json =
            serde_json::to_string(&fields).expect("a tool entry always serialises to JSON");
        json.pop(); // the closing brace; groups follow per request
        let mut hasher = blake3::Hasher::new();
        hasher.update(json.as_bytes());
        hasher.update(&[u8::from(tool.enabled), u8::from(tool.deprecated)]);
        ToolEntry {
            json_prefix: json.into_boxed_str(),
            content_hash: truncate(hasher.finalize()),
        }
    }

    pub fn json_prefix(&self) -> &str {
        &self.json_prefix
    }

    /// Hash of the entry's content and visibility flags: equal hashes, equal entries.
    pub(super) fn content_hash(&self) -> &[u8; 16] {
        &self.content_hash
    }
}

/// The first 128 bits of a hash: plenty to tell entries and manifests apart.
pub(super) fn truncate(hash: blake3::Hash) -> [u8; 16] {
    let mut out = [0u8; 16];
    out.copy_from_slice(&hash.as_bytes()[..16]);
    out
}
