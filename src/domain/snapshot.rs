//! The compiled catalog: everything a decision needs, computed once per catalog revision.
//!
//! Invariants a [`Snapshot`] keeps:
//! - tools are indexed in ascending `tool_id` order, so iterating a tool bitset yields the
//!   manifest's sort order for free;
//! - groups are indexed in ascending id order, so a sorted list of group indices is a sorted
//!   list of group ids;
//! - every group's member set is precomputed (docs/semantics.md section 5), an inactive group's is
//!   empty;
//! - policies are ordered by priority, highest first (ties by id), inactive ones left out;
//! - each distinct claim path and each distinct matcher appears once, so a request resolves a
//!   path and evaluates a matcher at most once however many policies share it.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use fixedbitset::FixedBitSet;

use super::carry;
use super::claims::{ClaimPath, CompiledMatcher};
pub use super::compile_error::CompileError;
use super::entry::{ToolEntry, truncate};
use super::entry_arena::EntryArena;
use super::memberships::{MAX_MEMBERSHIPS, Memberships};
use super::model::{Catalog, Source};
use super::selection::SelectionIndex;
use super::source_config::CallSettings;
use super::source_config::withheld;
use super::tool_index::ToolIndex;
use super::workers::{OnThisThread, Workers};

/// A compiled, immutable catalog at one revision. Share it behind an `Arc`.
#[derive(Debug)]
pub struct Snapshot {
    pub(super) revision: u64,
    /// In ascending id order: [`tool_index`] finds a tool by binary search.
    pub(super) tools: Vec<CompiledTool>,
    /// `tools` by id.
    pub(super) tool_index: ToolIndex,
    /// Tools that are enabled, not deprecated, and whose source exists and is enabled.
    pub(super) visible: FixedBitSet,
    pub(super) groups: Vec<CompiledGroup>,
    pub(super) group_index: HashMap<String, u32>,
    /// Each tool's groups, unless there are too many to keep.
    pub(super) memberships: Option<Memberships>,
    /// Every tool's entry, in tool order, in one buffer.
    pub(super) entry_arena: EntryArena,
    pub(super) policies: Vec<CompiledPolicy>,
    pub(super) paths: Vec<ClaimPath>,
    /// The distinct places in the claims that the active policies read, sorted: a decision
    /// depends on the claims only through the values there (docs/semantics.md section 6.4).
    read_paths: Vec<ClaimPath>,
    pub(super) matchers: Vec<SharedMatcher>,
    /// The catalog this snapshot was compiled from (admin reads and explanations use it).
    pub(super) catalog: Catalog,
    /// `catalog.sources` by id.
    source_index: HashMap<String, usize>,
    /// What calls of each source (as in `catalog.sources`) need from its config, read on the
    /// first call at this revision.
    call_settings: Vec<OnceLock<Arc<CallSettings>>>,
    /// How many tool entries this compile serialised (the others were carried over).
    entries_built: usize,
    /// What a shared decision must have been made against besides the revision (which a store
    /// restored from a backup repeats): [`super::digest::of_policies`].
    pub(super) policies_digest: String,
}

#[derive(Debug)]
pub(super) struct CompiledTool {
    pub id: String,
    pub name: String,
    pub available_in_states: Option<Vec<String>>,
    pub enabled: bool,
    pub deprecated: bool,
    /// Position of the tool in `catalog.tools`.
    pub catalog_position: usize,
    /// The manifest entry's JSON without `groups` and the closing brace, and its hash; built
    /// when the snapshot is compiled, or carried over from the previous snapshot when the tool
    /// is unchanged (`carry.rs`), so no request serialises a tool.
    pub entry: Arc<ToolEntry>,
}

#[derive(Debug)]
pub(super) struct CompiledGroup {
    pub id: String,
    pub name: String,
    pub active: bool,
    /// Position of the group in `catalog.groups`.
    pub catalog_position: usize,
    /// Tools matching all selectors (empty when the group has none).
    pub selected: FixedBitSet,
    /// Explicitly added tools that exist, ascending (usually few: a list, not a bitset).
    pub explicit: Vec<u32>,
    /// Excluded tools that exist, ascending.
    pub excluded: Vec<u32>,
    /// The id as a JSON string, quotes included: what manifests write, copied as bytes.
    pub json_id: Box<str>,
    /// A digest of the id, standing for it in etags and entry hashes.
    pub id_digest: [u8; 16],
    /// `(selected ∪ explicit) − excluded`, or nothing when inactive.
    pub members: FixedBitSet,
}

#[derive(Debug)]
pub(super) struct CompiledPolicy {
    pub priority: i64,
    /// Position of the policy in `catalog.policies`.
    pub catalog_position: usize,
    /// Indices into `Snapshot::matchers`, in the policy's own order.
    pub matchers: Vec<u32>,
    /// Indices of existing groups (inactive ones included: they simply have no members).
    pub allowed: Vec<u32>,
    pub denied: Vec<u32>,
}

#[derive(Debug)]
pub(super) struct SharedMatcher {
    /// Index into `Snapshot::paths`.
    pub path: u32,
    pub matcher: CompiledMatcher,
}

impl Snapshot {
    /// Compiles a (normalised) catalog on the calling thread. Dangling references are
    /// tolerated and contribute nothing, as docs/semantics.md says; only patterns, paths and
    /// matcher values must be valid.
    pub fn compile(catalog: Catalog, revision: u64) -> Result<Snapshot, CompileError> {
        Snapshot::compile_with(catalog, revision, &OnThisThread)
    }

    /// [`Snapshot::compile`] with independent work (the selector patterns) spread over
    /// `workers`.
    pub fn compile_with(
        catalog: Catalog,
        revision: u64,
        workers: &dyn Workers,
    ) -> Result<Snapshot, CompileError> {
        Snapshot::compile_after(catalog, revision, workers, None)
    }

    /// [`Snapshot::compile_with`], taking from `previous` (the snapshot this one replaces) the
    /// serialised entries of the tools that did not change.
    pub fn compile_after(
        catalog: Catalog,
        revision: u64,
        workers: &dyn Workers,
        previous: Option<&Snapshot>,
    ) -> Result<Snapshot, CompileError> {
        let order = tool_order(&catalog);
        let positions: Vec<usize> = order.iter().map(|&(_, position)| position).collect();
        let carry::Entries { entries, built } = carry::entries(
            &catalog,
            &positions,
            |tool| previous.and_then(|previous| previous.entry_of(tool)),
            workers,
        );
        let ToolPass {
            tools,
            visible,
            mut selection,
        } = ToolPass::over(&catalog, &order, entries);
        selection.prepare(&catalog.groups, workers);
        let tool_ids: HashMap<&str, u32> = order
            .iter()
            .enumerate()
            .map(|(index, &(id, _))| (id, index as u32))
            .collect();
        let (groups, group_index) =
            compile_groups(&catalog, &mut selection, &tool_ids, order.len())?;
        let mut interner = MatcherInterner::default();
        let policies = compile_policies(&catalog, &group_index, &mut interner)?;

        let memberships = Memberships::of(
            groups.iter().map(|group| &group.members),
            tools.len(),
            MAX_MEMBERSHIPS,
        );
        let entry_arena = EntryArena::of(tools.iter().map(|tool| &*tool.entry));
        Ok(Snapshot {
            revision,
            memberships,
            entry_arena,
            tool_index: ToolIndex::new(tools.iter().map(|tool| tool.id.as_str())),
            tools,
            visible,
            groups,
            group_index,
            policies,
            read_paths: {
                let mut read = interner.paths.clone();
                // A delegation chain is decided by these whatever the policies read.
                for claim in [super::claims::ACT_CLAIM, super::claims::DELEGATION_CLAIM] {
                    read.extend(ClaimPath::parse(claim).ok());
                }
                read.sort_unstable();
                read.dedup();
                read
            },
            paths: interner.paths,
            matchers: interner.matchers,
            source_index: catalog
                .sources
                .iter()
                .enumerate()
                .map(|(position, source)| (source.id.clone(), position))
                .collect(),
            call_settings: catalog.sources.iter().map(|_| OnceLock::new()).collect(),
            entries_built: built,
            policies_digest: super::digest::of_policies(&catalog.policies),
            catalog,
        })
    }

    /// The source `source_id` and what its calls need from its config (read once per
    /// snapshot); `None` when there is no such source.
    pub fn call_settings(&self, source_id: &str) -> Option<(&Source, Arc<CallSettings>)> {
        let position = *self.source_index.get(source_id)?;
        let source = self.catalog.sources.get(position)?;
        let settings = self.call_settings.get(position)?;
        let settings = settings.get_or_init(|| Arc::new(CallSettings::of(source)));
        Some((source, Arc::clone(settings)))
    }

    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The digest of this snapshot's policies (hex).
    pub fn policies_digest(&self) -> &str {
        &self.policies_digest
    }

    /// The catalog this snapshot was compiled from.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The distinct claim paths the active policies read, sorted. Two sets of claims with the
    /// same values at these paths get the same decision from this snapshot, whatever else
    /// they hold; claims that differ at one of them may not.
    pub fn read_paths(&self) -> &[ClaimPath] {
        &self.read_paths
    }

    /// Every tool's id, ascending.
    pub(super) fn tool_ids_ascending(&self) -> Vec<&str> {
        self.tools.iter().map(|tool| tool.id.as_str()).collect()
    }

    pub fn tool_count(&self) -> usize {
        self.tools.len()
    }

    /// Tool `t`'s serialised manifest entry.
    pub(super) fn tool_entry(&self, t: usize) -> &ToolEntry {
        &self.tools[t].entry
    }

    /// This snapshot's entry for `tool` if it holds a tool with the same id equal to it.
    fn entry_of(&self, tool: &super::model::Tool) -> Option<Arc<ToolEntry>> {
        let compiled = &self.tools[tool_index(self, &tool.id)? as usize];
        (self.catalog.tools[compiled.catalog_position] == *tool)
            .then(|| Arc::clone(&compiled.entry))
    }

    /// How many tool entries compiling this snapshot serialised; the others were carried over
    /// from the snapshot it replaced. (What keeps a one-tool write from costing a request a
    /// whole catalog's serialisation.)
    pub fn entries_built(&self) -> usize {
        self.entries_built
    }
}

/// The snapshot index of the tool with this id, if any (`tools` is in id order).
pub(super) fn tool_index(snapshot: &Snapshot, id: &str) -> Option<u32> {
    snapshot
        .tool_index
        .find(id, |position| snapshot.tools[position as usize].id.as_str())
}

/// The tools' ids with their positions in `catalog.tools`, in id order; of tools sharing an
/// id, the first. (A catalog read from a store is usually in id order already, which the sort
/// notices in one pass.)
fn tool_order(catalog: &Catalog) -> Vec<(&str, usize)> {
    let mut order: Vec<(&str, usize)> = catalog
        .tools
        .iter()
        .enumerate()
        .map(|(position, tool)| (tool.id.as_str(), position))
        .collect();
    order.sort_by(|a, b| a.0.cmp(b.0));
    order.dedup_by(|a, b| a.0 == b.0);
    order
}

/// What the one pass over the tools fills: everything that needs their fields (see
/// `SelectionIndex::add` for why one pass).
struct ToolPass<'c> {
    tools: Vec<CompiledTool>,
    visible: FixedBitSet,
    /// Not yet prepared for the groups' selectors.
    selection: SelectionIndex<'c>,
}

impl<'c> ToolPass<'c> {
    /// `order` is [`tool_order`]'s: the tools get their snapshot indices from it; `entries`
    /// are their serialised entries, in the same order.
    fn over(catalog: &'c Catalog, order: &[(&str, usize)], entries: Vec<Arc<ToolEntry>>) -> Self {
        let sources: HashMap<&str, &super::model::Source> = catalog
            .sources
            .iter()
            .map(|source| (source.id.as_str(), source))
            .collect();
        let tool_count = order.len();
        let mut tools = Vec::with_capacity(tool_count);
        let mut visible = FixedBitSet::with_capacity(tool_count);
        let mut selection = SelectionIndex::with_capacity(tool_count);
        for ((index, &(_, position)), entry) in order.iter().enumerate().zip(entries) {
            let tool = &catalog.tools[position];
            let source = sources.get(tool.source_id.as_str());
            let source_visible =
                source.is_some_and(|source| source.enabled && !withheld(tool, source));
            visible.set(index, tool.enabled && !tool.deprecated && source_visible);
            selection.add(index, tool, source.map(|source| source.name.as_str()));
            tools.push(CompiledTool {
                id: tool.id.clone(),
                name: tool.name.clone(),
                available_in_states: tool.available_in_states.clone(),
                enabled: tool.enabled,
                deprecated: tool.deprecated,
                catalog_position: position,
                entry,
            });
        }
        ToolPass {
            tools,
            visible,
            selection,
        }
    }
}

/// The groups in id order (of groups sharing an id, the first), and each one's index by id.
/// The first invalid selector pattern, in that order, is the error.
fn compile_groups<'c>(
    catalog: &'c Catalog,
    selection: &mut SelectionIndex<'c>,
    tool_ids: &HashMap<&str, u32>,
    tool_count: usize,
) -> Result<(Vec<CompiledGroup>, HashMap<String, u32>), CompileError> {
    let mut group_order: Vec<usize> = (0..catalog.groups.len()).collect();
    group_order.sort_by(|&a, &b| catalog.groups[a].id.cmp(&catalog.groups[b].id));
    group_order.dedup_by(|&mut a, &mut b| catalog.groups[a].id == catalog.groups[b].id);
    let mut groups = Vec::with_capacity(group_order.len());
    let mut group_index = HashMap::with_capacity(group_order.len());
    for &position in &group_order {
        let group = &catalog.groups[position];
        let compiled = compile_group(group, position, selection, tool_ids, tool_count)?;
        group_index.insert(group.id.clone(), groups.len() as u32);
        groups.push(compiled);
    }
    Ok((groups, group_index))
}

/// One group with its member set precomputed: `(selected ∪ explicit) − excluded`, or nothing
/// when inactive (the selectors are still checked, so an invalid one fails either way).
fn compile_group<'c>(
    group: &'c super::model::ToolGroup,
    position: usize,
    selection: &mut SelectionIndex<'c>,
    tool_ids: &HashMap<&str, u32>,
    tool_count: usize,
) -> Result<CompiledGroup, CompileError> {
    let mut selected = FixedBitSet::with_capacity(tool_count);
    if !group.selectors.is_empty() {
        selected.insert_range(..);
        for (j, selector) in group.selectors.iter().enumerate() {
            let matched = selection
                .matching(selector)
                .map_err(|error| error.within(format_args!("groups[{position}].selectors[{j}]")))?;
            selected.intersect_with(&matched);
        }
    }
    let explicit = indices_of(&group.explicit_tool_ids, tool_ids);
    let excluded = indices_of(&group.excluded_tool_ids, tool_ids);
    let mut members = FixedBitSet::with_capacity(tool_count);
    if group.active {
        members.union_with(&selected);
        for &t in &explicit {
            members.insert(t as usize);
        }
        for &t in &excluded {
            members.remove(t as usize);
        }
    }
    Ok(CompiledGroup {
        json_id: serde_json::to_string(&group.id)
            .expect("a string always serialises")
            .into_boxed_str(),
        id_digest: truncate(blake3::hash(group.id.as_bytes())),
        id: group.id.clone(),
        name: group.name.clone(),
        active: group.active,
        catalog_position: position,
        selected,
        explicit,
        excluded,
        members,
    })
}

/// The active policies, highest priority first (ties by id), their matchers interned. The
/// first invalid matcher, in catalog order, is the error.
fn compile_policies(
    catalog: &Catalog,
    group_index: &HashMap<String, u32>,
    interner: &mut MatcherInterner,
) -> Result<Vec<CompiledPolicy>, CompileError> {
    let mut policies = Vec::new();
    for (position, policy) in catalog.policies.iter().enumerate() {
        if !policy.active {
            continue;
        }
        let matchers = policy
            .claim_matchers
            .iter()
            .enumerate()
            .map(|(j, matcher)| {
                interner.intern(matcher).map_err(|error| {
                    error.within(format_args!("policies[{position}].claim_matchers[{j}]"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let groups_of = |ids: &[String]| -> Vec<u32> {
            let mut indices: Vec<u32> = ids
                .iter()
                .filter_map(|id| group_index.get(id).copied())
                .collect();
            indices.sort_unstable();
            indices.dedup();
            indices
        };
        policies.push(CompiledPolicy {
            priority: policy.priority,
            catalog_position: position,
            matchers,
            allowed: groups_of(&policy.allowed_group_ids),
            denied: groups_of(&policy.denied_group_ids),
        });
    }
    policies.sort_by(|a, b| {
        b.priority.cmp(&a.priority).then_with(|| {
            catalog.policies[a.catalog_position]
                .id
                .cmp(&catalog.policies[b.catalog_position].id)
        })
    });
    Ok(policies)
}

/// The snapshot indices of the ids that name existing tools, ascending and deduplicated.
fn indices_of(ids: &[String], tool_ids: &HashMap<&str, u32>) -> Vec<u32> {
    let mut indices: Vec<u32> = ids
        .iter()
        .filter_map(|id| tool_ids.get(id.as_str()).copied())
        .collect();
    indices.sort_unstable();
    indices.dedup();
    indices
}

/// Deduplicates claim paths and matchers while compiling policies.
#[derive(Default)]
struct MatcherInterner {
    paths: Vec<ClaimPath>,
    path_ids: HashMap<String, u32>,
    matchers: Vec<SharedMatcher>,
    matcher_ids: HashMap<(u32, String, String), u32>,
}

impl MatcherInterner {
    /// The matcher's index; an error names the matcher's key (`json_path`, `value`…).
    fn intern(&mut self, matcher: &super::model::ClaimMatcher) -> Result<u32, CompileError> {
        let path = match self.path_ids.get(&matcher.json_path) {
            Some(&id) => id,
            None => {
                let parsed =
                    ClaimPath::parse(&matcher.json_path).map_err(|error| CompileError {
                        field: "json_path".to_owned(),
                        message: error.to_string(),
                    })?;
                let id = self.paths.len() as u32;
                self.paths.push(parsed);
                self.path_ids.insert(matcher.json_path.clone(), id);
                id
            }
        };
        let key = (path, matcher.operator.clone(), matcher.value.to_string());
        if let Some(&id) = self.matcher_ids.get(&key) {
            return Ok(id);
        }
        let compiled = CompiledMatcher::compile(matcher).map_err(|error| CompileError {
            field: error.field.to_string(),
            message: error.message,
        })?;
        let id = self.matchers.len() as u32;
        self.matchers.push(SharedMatcher {
            path,
            matcher: compiled,
        });
        self.matcher_ids.insert(key, id);
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn compile(edit: impl FnOnce(&mut Value)) -> Result<Snapshot, CompileError> {
        let mut value = json!({
            "sources": [{"id": "s", "name": "svc", "type": "manual"}],
            "tools": [
                {"source_id": "s", "operation_id": "b", "name": "b", "method": "GET"},
                {"source_id": "s", "operation_id": "a", "name": "a", "method": "POST"}
            ],
            "groups": [
                {"id": "g-all", "name": "all", "selectors": [{}]},
                {"id": "g-get", "name": "get", "selectors": [{}, {"method_pattern": "GET"}],
                 "explicit_tool_ids": ["s:a", "s:missing"]}
            ],
            "policies": [{"id": "p", "name": "p", "allowed_group_ids": ["g-get"],
                          "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "r"}]}]
        });
        edit(&mut value);
        let mut catalog: Catalog = serde_json::from_value(value).expect("catalog parses");
        catalog.normalize();
        Snapshot::compile(catalog, 1)
    }

    /// A source's config is read for calls once per snapshot, and only for a source that
    /// exists.
    #[test]
    fn call_settings_are_read_once_per_snapshot() {
        let snapshot = compile(|catalog| {
            catalog["sources"][0] = json!({"id": "s", "name": "svc", "type": "mcp",
                "config": {"url": "https://mcp.example/mcp", "headers": {"x-key": "k"}}});
        })
        .expect("compiles");
        let (source, first) = snapshot.call_settings("s").expect("the source");
        assert_eq!(source.id, "s");
        let (_, again) = snapshot.call_settings("s").expect("the source");
        assert!(Arc::ptr_eq(&first, &again), "read once");
        assert!(first.import.is_ok(), "{:?}", first.import);
        assert!(snapshot.call_settings("nope").is_none());
    }

    #[test]
    fn tools_are_indexed_in_id_order_and_explicit_ids_resolve() {
        let snapshot = compile(|_| {}).expect("compiles");
        let ids: Vec<&str> = snapshot.tools.iter().map(|tool| tool.id.as_str()).collect();
        assert_eq!(ids, ["s:a", "s:b"]);
        assert_eq!(tool_index(&snapshot, "s:b"), Some(1));
        assert_eq!(tool_index(&snapshot, "s:c"), None);
        let get = &snapshot.groups[1];
        assert_eq!(get.explicit, [0], "the missing id contributes nothing");
        assert_eq!(get.members.ones().collect::<Vec<_>>(), [0, 1]);
    }

    #[test]
    fn errors_carry_the_full_field_path() {
        let error = compile(|catalog| {
            catalog["groups"][1]["selectors"][1]["name_pattern"] = json!("regex:(");
        })
        .expect_err("invalid pattern");
        assert_eq!(error.field, "groups[1].selectors[1].name_pattern");
        assert!(
            error.message.starts_with("invalid regular expression"),
            "{error}"
        );

        let error = compile(|catalog| {
            catalog["policies"][0]["claim_matchers"][0] =
                json!({"json_path": "sub", "operator": "matches", "value": "("});
        })
        .expect_err("invalid matcher");
        assert_eq!(error.field, "policies[0].claim_matchers[0].value");

        let error = compile(|catalog| {
            catalog["policies"][0]["claim_matchers"][0]["json_path"] = json!("/a~2");
        })
        .expect_err("invalid path");
        assert_eq!(error.field, "policies[0].claim_matchers[0].json_path");
    }
}
