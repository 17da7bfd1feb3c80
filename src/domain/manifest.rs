//! The manifest an agent receives (SEMANTICS.md section 6): its entries, its options, its etag
//! and its JSON body. What changes between two manifests is in `manifest_diff.rs`.
//!
//! Serving a manifest must cost little more than copying bytes, so each tool's entry is
//! serialised at most once per snapshot ([`ToolEntry`], on first use); a manifest only appends
//! the per-request part
//! (`groups`, and `enabled`/`deprecated` in admin preview). The etag hashes each entry's
//! precomputed content hash and its groups, never the body, and never the revision: an
//! unrelated catalog change leaves it unchanged.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use super::model::Tool;
use super::snapshot::{Snapshot, tool_index};

/// Request options of `GET /agents/tools` (and of admin preview).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ManifestOptions {
    /// Show tools that are not visible (disabled, deprecated, disabled source); admin only.
    pub include_disabled: bool,
    /// `group=a,b`: keep members of the listed granted groups (by id or name); `*` keeps all,
    /// an empty list keeps none. `None`: no narrowing.
    pub groups: Option<Vec<String>>,
    /// `state=s`: keep tools available in state `s`.
    pub state: Option<String>,
    /// `tools=p1,p2`: keep tools whose name matches one of these case-sensitive globs.
    pub tools: Option<Vec<String>>,
}

impl ManifestOptions {
    /// Splits a comma-separated query value into trimmed, non-empty items.
    pub fn list(value: &str) -> Vec<String> {
        value
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

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

    /// Approximate heap bytes held, for memory reports.
    pub fn heap_size(&self) -> usize {
        self.json_prefix.len()
    }
}

fn truncate(hash: blake3::Hash) -> [u8; 16] {
    let mut out = [0u8; 16];
    out.copy_from_slice(&hash.as_bytes()[..16]);
    out
}

/// One tool in a manifest: indices into the snapshot it was computed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub(super) tool: u32,
    /// Granted groups containing the tool, ascending (= ascending ids).
    pub(super) groups: Vec<u32>,
}

/// The tools one agent may see, for one snapshot and one set of options.
#[derive(Debug)]
pub struct Manifest<'s> {
    pub(super) snapshot: &'s Snapshot,
    pub(super) entries: Vec<Entry>,
    pub(super) warnings: Vec<String>,
    pub(super) include_disabled: bool,
    pub(super) etag: String,
    /// No matching policy granted any group (the reference design's "access denied"); request
    /// options that narrow the manifest to nothing do not count.
    pub(super) denied: bool,
}

impl<'s> Manifest<'s> {
    pub(super) fn new(
        snapshot: &'s Snapshot,
        entries: Vec<Entry>,
        warnings: Vec<String>,
        include_disabled: bool,
    ) -> Self {
        let etag = etag(snapshot, &entries, &warnings, include_disabled);
        Manifest {
            snapshot,
            entries,
            warnings,
            include_disabled,
            etag,
            denied: false,
        }
    }

    /// The tool ids, ascending.
    pub fn tool_ids(&self) -> impl ExactSizeIterator<Item = &'s str> + '_ {
        self.entries
            .iter()
            .map(|entry| self.snapshot.tools[entry.tool as usize].id.as_str())
    }

    /// The granted groups containing `tool_id`, ascending, if the tool is in the manifest.
    pub fn groups_of(&self, tool_id: &str) -> Option<Vec<&'s str>> {
        let entry = self.entry(tool_id)?;
        Some(
            entry
                .groups
                .iter()
                .map(|&g| self.snapshot.groups[g as usize].id.as_str())
                .collect(),
        )
    }

    /// The id of the tool behind `entry`.
    pub(super) fn tool_id(&self, entry: &Entry) -> &'s str {
        self.snapshot.tools[entry.tool as usize].id.as_str()
    }

    fn entry(&self, tool_id: &str) -> Option<&Entry> {
        let index = tool_index(&self.snapshot.tools, tool_id)?;
        self.entries
            .binary_search_by_key(&index, |entry| entry.tool)
            .ok()
            .map(|position| &self.entries[position])
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether the claims were granted no group at all.
    pub fn is_denied(&self) -> bool {
        self.denied
    }

    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The strong HTTP entity tag, quotes included: `"9f2c…"`.
    pub fn etag(&self) -> &str {
        &self.etag
    }

    pub fn revision(&self) -> u64 {
        self.snapshot.revision
    }

    /// Writes the response body of `GET /agents/tools`:
    /// `{"data":[…],"count":N,"revision":R,"etag":"…","warnings":[…]}`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"data\":[");
        for (i, entry) in self.entries.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            self.write_entry(entry, out);
        }
        out.extend_from_slice(b"],\"count\":");
        out.extend_from_slice(self.entries.len().to_string().as_bytes());
        out.extend_from_slice(b",\"revision\":");
        out.extend_from_slice(self.snapshot.revision.to_string().as_bytes());
        out.extend_from_slice(b",\"etag\":");
        write_json_string(&self.etag, out);
        out.extend_from_slice(b",\"warnings\":[");
        for (i, warning) in self.warnings.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_json_string(warning, out);
        }
        out.extend_from_slice(b"]}");
    }

    /// The body as bytes; see [`Manifest::write_json`].
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.estimated_json_len());
        self.write_json(&mut out);
        out
    }

    /// Writes one entry object.
    pub(super) fn write_entry(&self, entry: &Entry, out: &mut Vec<u8>) {
        let tool = &self.snapshot.tools[entry.tool as usize];
        out.extend_from_slice(
            self.snapshot
                .tool_entry(entry.tool as usize)
                .json_prefix
                .as_bytes(),
        );
        out.extend_from_slice(b",\"groups\":[");
        for (i, &group) in entry.groups.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_json_string(&self.snapshot.groups[group as usize].id, out);
        }
        out.push(b']');
        if self.include_disabled {
            out.extend_from_slice(if tool.enabled {
                b",\"enabled\":true"
            } else {
                b",\"enabled\":false"
            });
            out.extend_from_slice(if tool.deprecated {
                b",\"deprecated\":true"
            } else {
                b",\"deprecated\":false"
            });
        }
        out.push(b'}');
    }

    fn estimated_json_len(&self) -> usize {
        let entries: usize = self
            .entries
            .iter()
            .map(|entry| {
                self.snapshot
                    .tool_entry(entry.tool as usize)
                    .json_prefix
                    .len()
                    + 48
            })
            .sum();
        entries + 128
    }
}

pub(super) fn write_json_string(text: &str, out: &mut Vec<u8>) {
    serde_json::to_writer(&mut *out, text).expect("writing to a Vec cannot fail");
}

/// Content hash of a manifest: entries (content and groups), warnings, and the preview flag.
fn etag(snapshot: &Snapshot, entries: &[Entry], warnings: &[String], preview: bool) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&[u8::from(preview)]);
    for entry in entries {
        hasher.update(&snapshot.tool_entry(entry.tool as usize).content_hash);
        hasher.update(&(entry.groups.len() as u32).to_le_bytes());
        for &group in &entry.groups {
            let id = &snapshot.groups[group as usize].id;
            hasher.update(&(id.len() as u32).to_le_bytes());
            hasher.update(id.as_bytes());
        }
    }
    hasher.update(&(warnings.len() as u32).to_le_bytes());
    for warning in warnings {
        hasher.update(&(warning.len() as u32).to_le_bytes());
        hasher.update(warning.as_bytes());
    }
    let hash = truncate(hasher.finalize());
    let mut tag = String::with_capacity(34);
    tag.push('"');
    for byte in hash {
        write!(tag, "{byte:02x}").expect("writing to a String cannot fail");
    }
    tag.push('"');
    tag
}
