//! The catalog as MCP clients see it (docs/api.md, "MCP endpoint"): one name per tool that MCP
//! accepts, and each tool as an MCP `Tool` object, serialised once per snapshot.
//!
//! **Names.** MCP tool names match `^[A-Za-z0-9_.-]{1,128}$`, are unique in a list, and must not
//! change between identities or revisions, so a tool's name depends on its id alone
//! ([`name_of`]), never on who asks or on which other tools exist:
//! - an id that is already a valid name is its own name;
//! - otherwise `:` and `/` become `.`, every other run of characters outside the set becomes one
//!   `_`, and a result longer than 128 is cut and given `-` and 8 hex digits of the id's BLAKE3
//!   (`billing:list_invoices` → `billing.list_invoices`).
//!
//! Two tools with one name are refused when the catalog is written
//! ([`crate::domain::validate`] names both), so creating a tool never renames another one
//! behind a client's back. A stored catalog that still holds such a pair (written before the
//! rule) lists neither derived name, and an id that is its own name keeps it: fewer tools,
//! never the wrong one, and never a silent rename (docs/semantics.md section 9).
//!
//! **Objects.** `name`, `title` (the tool's title, else its name), `description`, `inputSchema`,
//! `outputSchema` (when the tool has an object schema), `annotations` from tags and
//! `_meta."toolgate/tool_id"`. Annotations promise only what a tag asserts: `read-only` →
//! `readOnlyHint: true`, `idempotent` → `idempotentHint: true`, `destructive` →
//! `destructiveHint: true`, `open-world` → `openWorldHint: true`. Without `destructive` or
//! `open-world` the hint is left out, which MCP clients read as `true`: a tool is never said to
//! be safer than its tags say.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Serialize;
use serde_json::{Map, Value};

use super::model::Tool;
use super::snapshot::{Snapshot, tool_index};
use super::verdict::Evaluation;

/// The longest MCP tool name.
pub const MAX_NAME_LEN: usize = 128;
/// The `_meta` key that carries a tool's id.
pub const TOOL_ID_META: &str = "toolgate/tool_id";
/// Hex digits of the id's BLAKE3 that a cut name ends with.
const SUFFIX_DIGITS: usize = 8;

/// Whether `name` is a valid MCP tool name as it is.
pub fn is_valid_name(name: &str) -> bool {
    (1..=MAX_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// The name each id gets, in the order given: [`name_of`], except that a derived name another
/// id also has is no one's (see the module documentation). `ids` must be distinct (tool ids
/// are).
pub fn names<'a>(ids: impl IntoIterator<Item = &'a str>) -> Vec<Option<Box<str>>> {
    let ids: Vec<&str> = ids.into_iter().collect();
    let names: Vec<String> = ids.iter().map(|id| name_of(id)).collect();
    let mut count: HashMap<&str, usize> = HashMap::with_capacity(names.len());
    for name in &names {
        *count.entry(name.as_str()).or_insert(0) += 1;
    }
    ids.iter()
        .zip(&names)
        .map(|(id, name)| {
            let own = is_valid_name(id);
            (own || count[name.as_str()] == 1).then(|| name.clone().into_boxed_str())
        })
        .collect()
}

/// The MCP name of the tool with id `id`: the id itself when it is a valid name, else the id
/// sanitised (and cut with a hash suffix when too long).
pub fn name_of(id: &str) -> String {
    if is_valid_name(id) {
        return id.to_owned();
    }
    let name = sanitized(id);
    if name.len() > MAX_NAME_LEN {
        with_suffix(&name, id, SUFFIX_DIGITS)
    } else {
        name
    }
}

/// `id` with `:` and `/` as `.` and every other run of characters MCP refuses as one `_`;
/// `tool` when nothing is left.
fn sanitized(id: &str) -> String {
    let mut name = String::with_capacity(id.len());
    let mut replaced = false;
    for c in id.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
            replaced = false;
            name.push(c);
        } else if matches!(c, ':' | '/') {
            replaced = false;
            name.push('.');
        } else if !replaced {
            replaced = true;
            name.push('_');
        }
    }
    if name.chars().all(|c| c == '_') {
        return "tool".to_owned();
    }
    name
}

/// `prefix` cut to leave room, `-`, and `digits` hex digits of the BLAKE3 of `id`.
fn with_suffix(prefix: &str, id: &str, digits: usize) -> String {
    let hash = blake3::hash(id.as_bytes()).to_hex();
    let keep = prefix.len().min(MAX_NAME_LEN - digits - 1);
    // Only ASCII is left after sanitising, so any cut is on a character boundary.
    format!("{}-{}", &prefix[..keep], &hash[..digits])
}

/// A snapshot's tools as MCP sees them: names for all, objects serialised on first use. Built
/// once per revision by the caller ([`McpCatalog::of`]) and meaningful only with a snapshot of
/// that revision: with any other, it finds and lists nothing.
#[derive(Debug)]
pub struct McpCatalog {
    revision: u64,
    /// Per snapshot tool index.
    names: Vec<Option<Box<str>>>,
    by_name: HashMap<Box<str>, u32>,
    /// Per snapshot tool index: the `Tool` object, serialised on first use.
    objects: Vec<OnceLock<Box<str>>>,
}

/// One page of a `tools/list` answer.
#[derive(Debug)]
pub struct McpPage<'s> {
    /// The JSON array of `Tool` objects.
    pub tools: Vec<u8>,
    /// The id of the last tool on the page, when more follow: where the next page starts.
    pub next_after: Option<&'s str>,
}

/// A tool found by its MCP name.
#[derive(Debug, Clone, Copy)]
pub struct Named<'s> {
    pub tool_id: &'s str,
    pub tool: &'s Tool,
}

impl McpCatalog {
    /// The names of `snapshot`'s tools (objects come later, as pages need them).
    pub fn of(snapshot: &Snapshot) -> McpCatalog {
        let names = names(snapshot.tools.iter().map(|tool| tool.id.as_str()));
        let by_name = names
            .iter()
            .enumerate()
            .filter_map(|(t, name)| name.clone().map(|name| (name, t as u32)))
            .collect();
        McpCatalog {
            revision: snapshot.revision,
            objects: (0..names.len()).map(|_| OnceLock::new()).collect(),
            names,
            by_name,
        }
    }

    /// The revision this catalog was built from.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The tool with MCP name `name` in `snapshot`, if any (whether a caller may use it is the
    /// evaluation's business).
    pub fn tool<'s>(&self, snapshot: &'s Snapshot, name: &str) -> Option<Named<'s>> {
        if snapshot.revision != self.revision {
            return None;
        }
        let t = *self.by_name.get(name)? as usize;
        let compiled = &snapshot.tools[t];
        Some(Named {
            tool_id: &compiled.id,
            tool: &snapshot.catalog.tools[compiled.catalog_position],
        })
    }

    /// The MCP name of the tool with id `tool_id` in `snapshot`, if it has one.
    pub fn name(&self, snapshot: &Snapshot, tool_id: &str) -> Option<&str> {
        if snapshot.revision != self.revision {
            return None;
        }
        let t = tool_index(snapshot, tool_id)? as usize;
        self.names[t].as_deref()
    }

    /// Up to `limit` (at least 1) of the tools `evaluation` lists, in manifest order (ascending
    /// id), starting after the tool with id `after`. Nothing for a snapshot or an evaluation of
    /// another revision; tools without a name are left out.
    pub fn page<'s>(
        &self,
        snapshot: &'s Snapshot,
        evaluation: &Evaluation,
        after: Option<&str>,
        limit: usize,
    ) -> McpPage<'s> {
        let mut out = Vec::with_capacity(limit.min(1024) * 256);
        out.push(b'[');
        let mut written = 0;
        let mut last = None;
        let mut more = false;
        let same = snapshot.revision == self.revision;
        for t in snapshot.listed_indices(evaluation, after).filter(|_| same) {
            if self.names[t].is_none() {
                continue;
            }
            if written == limit.max(1) {
                more = true;
                break;
            }
            if written > 0 {
                out.push(b',');
            }
            out.extend_from_slice(self.object(snapshot, t).as_bytes());
            written += 1;
            last = Some(snapshot.tools[t].id.as_str());
        }
        out.push(b']');
        McpPage {
            tools: out,
            next_after: if more { last } else { None },
        }
    }

    /// Tool `t`'s MCP object (it has a name; `snapshot` is of this revision).
    fn object(&self, snapshot: &Snapshot, t: usize) -> &str {
        self.objects[t].get_or_init(|| {
            let name = self.names[t].as_deref().unwrap_or_default();
            object(
                name,
                &snapshot.catalog.tools[snapshot.tools[t].catalog_position],
            )
        })
    }
}

/// The MCP `Tool` object's fields, in the order clients see them.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolObject<'t> {
    name: &'t str,
    title: &'t str,
    description: &'t str,
    input_schema: &'t Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<&'t Value>,
    annotations: Map<String, Value>,
    #[serde(rename = "_meta")]
    meta: Map<String, Value>,
}

fn object(name: &str, tool: &Tool) -> Box<str> {
    let mut annotations = Map::new();
    let tagged = |tag: &str| tool.tags.iter().any(|t| t == tag);
    annotations.insert("readOnlyHint".into(), Value::Bool(tagged("read-only")));
    for (tag, hint) in [
        ("destructive", "destructiveHint"),
        ("idempotent", "idempotentHint"),
        ("open-world", "openWorldHint"),
    ] {
        if tagged(tag) {
            annotations.insert(hint.into(), Value::Bool(true));
        }
    }
    let mut meta = Map::new();
    meta.insert(TOOL_ID_META.into(), Value::String(tool.id.clone()));
    let object = ToolObject {
        name,
        title: tool.title.as_deref().unwrap_or(&tool.name),
        description: &tool.description,
        input_schema: &tool.input_schema,
        // MCP requires an output schema to describe an object (structuredContent is one).
        output_schema: tool
            .output_schema
            .as_deref()
            .filter(|schema| schema.get("type").and_then(Value::as_str) == Some("object")),
        annotations,
        meta,
    };
    serde_json::to_string(&object)
        .expect("a tool object always serialises to JSON")
        .into_boxed_str()
}

#[cfg(test)]
mod tests;
