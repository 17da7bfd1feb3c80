//! The manifest an agent receives (docs/semantics.md section 6): its entries, its options, its etag
//! and its JSON body. What changes between two manifests is in `manifest_diff.rs`.
//!
//! Serving a manifest must cost little more than copying bytes, so each tool's entry is
//! serialised at most once per snapshot ([`super::entry::ToolEntry`], on first use); a manifest only appends
//! the per-request part
//! (`groups`, and `enabled`/`deprecated` in admin preview). The etag hashes each entry's
//! precomputed content hash and its groups, never the body, and never the revision: an
//! unrelated catalog change leaves it unchanged.

use std::fmt::Write as _;
use std::ops::Range;

use super::entry::{Field, Fields, truncate};
use super::reach::Reach;
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
    /// `fields=name,input_schema`: the entry fields written (`tool_id` always); all by default.
    /// Narrows what each entry says, never which tools are listed.
    pub fields: Fields,
    /// A run's pinned set (docs/runs.md, "Pinned grant"): keep only these tools. Set by the
    /// gateway for a run token, never by a request.
    pub pinned: Option<super::run::Pinned>,
}

impl ManifestOptions {
    /// Bytes these options hold on the heap (they are part of cache keys bounded in bytes).
    pub fn heap_bytes(&self) -> usize {
        let list = |items: &Option<Vec<String>>| {
            items.as_ref().map_or(0, |items| {
                items.capacity() * size_of::<String>()
                    + items.iter().map(String::capacity).sum::<usize>()
            })
        };
        list(&self.groups)
            + list(&self.tools)
            + self.state.as_ref().map_or(0, String::capacity)
            + self
                .pinned
                .as_ref()
                .map_or(0, super::run::Pinned::heap_bytes)
    }

    /// Splits a comma-separated query value into trimmed, non-empty items.
    pub fn list(value: &str) -> Vec<String> {
        Self::list_of([value])
    }

    /// The items of several values, each comma-separated (a repeated query parameter, an
    /// array in JSON): the one reading of a list option that REST, MCP and AuthZEN share, so
    /// `["a,b", "c"]` is three items everywhere.
    pub fn list_of<'v>(values: impl IntoIterator<Item = &'v str>) -> Vec<String> {
        values
            .into_iter()
            .flat_map(|value| value.split(','))
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

/// One tool in a manifest: indices into the snapshot it was computed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub(super) tool: u32,
    /// Where the granted groups containing the tool are in [`Manifest`]'s `group_lists`:
    /// ascending (= ascending ids). One list for all entries, not one allocation each.
    pub(super) groups: Range<u32>,
}

/// The tools one agent may see, for one snapshot and one set of options.
#[derive(Debug)]
pub struct Manifest<'s> {
    pub(super) snapshot: &'s Snapshot,
    pub(super) entries: Vec<Entry>,
    /// The entries' group lists, one after another (see [`Entry::groups`]).
    pub(super) group_lists: Vec<u32>,
    pub(super) warnings: Vec<String>,
    pub(super) include_disabled: bool,
    pub(super) fields: Fields,
    pub(super) etag: String,
    /// No matching policy granted any group (the reference design's "access denied"); request
    /// options that narrow the manifest to nothing do not count.
    pub(super) denied: bool,
    /// What the decision behind it grants (empty until set from the decision: an empty reach
    /// never carries to a later revision).
    pub(super) reach: Reach,
}

impl<'s> Manifest<'s> {
    pub(super) fn new(
        snapshot: &'s Snapshot,
        (entries, group_lists): (Vec<Entry>, Vec<u32>),
        warnings: Vec<String>,
        options: &ManifestOptions,
    ) -> Self {
        let etag = etag(
            snapshot,
            &entries,
            &group_lists,
            &warnings,
            (options.include_disabled, options.fields),
        );
        Manifest {
            snapshot,
            entries,
            group_lists,
            warnings,
            include_disabled: options.include_disabled,
            fields: options.fields,
            etag,
            denied: false,
            reach: Reach::default(),
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
            self.entry_groups(entry)
                .iter()
                .map(|&g| self.snapshot.groups[g as usize].id.as_str())
                .collect(),
        )
    }

    /// The granted groups containing `entry`'s tool, ascending.
    pub(super) fn entry_groups(&self, entry: &Entry) -> &[u32] {
        &self.group_lists[entry.groups.start as usize..entry.groups.end as usize]
    }

    /// The id of the tool behind `entry`.
    pub(super) fn tool_id(&self, entry: &Entry) -> &'s str {
        self.snapshot.tools[entry.tool as usize].id.as_str()
    }

    fn entry(&self, tool_id: &str) -> Option<&Entry> {
        let index = tool_index(self.snapshot, tool_id)?;
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

    /// The tools the decision behind this manifest grants, under any options.
    pub fn reach(&self) -> &Reach {
        &self.reach
    }

    /// Whether it is an admin preview (hidden tools listed too, with their flags).
    pub fn is_preview(&self) -> bool {
        self.include_disabled
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
        out.push(b'{');
        self.write_members(out);
        out.push(b'}');
    }

    /// The members of the body object, without its braces: for bodies that add members of
    /// their own after them (an explained manifest).
    pub fn write_members(&self, out: &mut Vec<u8>) {
        self.write_members_marking(out);
    }

    /// [`Manifest::write_members`], returning where in `out` the revision number went.
    fn write_members_marking(&self, out: &mut Vec<u8>) -> Range<usize> {
        out.extend_from_slice(b"\"data\":[");
        for (i, entry) in self.entries.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            self.write_entry(entry, out);
        }
        out.extend_from_slice(b"],\"count\":");
        out.extend_from_slice(self.entries.len().to_string().as_bytes());
        out.extend_from_slice(b",\"revision\":");
        let revision_at = out.len();
        out.extend_from_slice(self.snapshot.revision.to_string().as_bytes());
        let revision_at = revision_at..out.len();
        out.extend_from_slice(b",\"etag\":");
        write_json_string(&self.etag, out);
        out.extend_from_slice(b",\"warnings\":[");
        for (i, warning) in self.warnings.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_json_string(warning, out);
        }
        out.push(b']');
        revision_at
    }

    /// The body as bytes; see [`Manifest::write_json`].
    pub fn to_json(&self) -> Vec<u8> {
        self.to_json_marking().0
    }

    /// [`Manifest::to_json`], and where in it the revision number is: a manifest carried to a
    /// later revision ([`super::continuity`]) differs from this body only there.
    pub fn to_json_marking(&self) -> (Vec<u8>, Range<usize>) {
        let mut out = Vec::with_capacity(self.estimated_json_len());
        out.push(b'{');
        let revision_at = self.write_members_marking(&mut out);
        out.push(b'}');
        (out, revision_at)
    }

    /// Writes one entry object.
    pub(super) fn write_entry(&self, entry: &Entry, out: &mut Vec<u8>) {
        let tool = &self.snapshot.tools[entry.tool as usize];
        if self.fields.is_all() {
            out.extend_from_slice(self.snapshot.entry_arena.prefix(entry.tool as usize));
        } else {
            self.snapshot
                .tool_entry(entry.tool as usize)
                .write_prefix(self.fields, out);
        }
        if self.fields.contains(Field::Groups) {
            out.extend_from_slice(b",\"groups\":[");
            for (i, &group) in self.entry_groups(entry).iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(self.snapshot.groups[group as usize].json_id.as_bytes());
            }
            out.push(b']');
        }
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

    /// How many bytes the body takes, at most and (for all fields, the default) within a few
    /// dozen bytes: the buffer is sized once, never grows (a copy of megabytes) and is not cut
    /// to fit afterwards (another one).
    pub fn estimated_json_len(&self) -> usize {
        let groups = self.fields.contains(Field::Groups);
        // `,"groups":[` and `]`; `,"enabled":false,"deprecated":false`; `}` and `,`.
        let per_entry = usize::from(groups) * 12 + usize::from(self.include_disabled) * 35 + 2;
        let entries: usize = self
            .entries
            .iter()
            .map(|entry| self.snapshot.tool_entry(entry.tool as usize).prefix_len() + per_entry)
            .sum();
        let group_bytes: usize = if groups {
            self.group_lists
                .iter()
                .map(|&g| self.snapshot.groups[g as usize].json_id.len() + 1)
                .sum()
        } else {
            0
        };
        // Escaping can make a warning's JSON up to six bytes per byte.
        let warnings: usize = self.warnings.iter().map(|w| w.len() * 6 + 3).sum();
        entries + group_bytes + warnings + 128
    }
}

pub(super) fn write_json_string(text: &str, out: &mut Vec<u8>) {
    serde_json::to_writer(&mut *out, text).expect("writing to a Vec cannot fail");
}

/// Content hash of a manifest: entries (content and groups, as far as the requested fields
/// show them), warnings, the preview flag and the fields.
/// Everything is laid out in one buffer of fixed-size digests (each entry's content hash, its
/// group count and its groups' id digests, all computed at compile) and hashed in one call:
/// thousands of small hasher updates cost more than the hashing itself.
fn etag(
    snapshot: &Snapshot,
    entries: &[Entry],
    group_lists: &[u32],
    warnings: &[String],
    (preview, fields): (bool, Fields),
) -> String {
    let mut laid_out = Vec::with_capacity(3 + entries.len() * 20 + group_lists.len() * 16);
    laid_out.push(u8::from(preview));
    if !fields.is_all() {
        // Narrowed manifests have other bytes, hence other tags; the default keeps its own.
        laid_out.extend_from_slice(&fields.to_le_bytes());
    }
    let with_groups = fields.contains(Field::Groups);
    for entry in entries {
        laid_out.extend_from_slice(
            &snapshot
                .tool_entry(entry.tool as usize)
                .content_hash(fields),
        );
        if !with_groups {
            continue;
        }
        let groups = &group_lists[entry.groups.start as usize..entry.groups.end as usize];
        laid_out.extend_from_slice(&(groups.len() as u32).to_le_bytes());
        for &group in groups {
            laid_out.extend_from_slice(&snapshot.groups[group as usize].id_digest);
        }
    }
    let mut hasher = blake3::Hasher::new();
    hasher.update(&laid_out);
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
