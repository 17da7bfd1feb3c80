//! Which tools a selector picks, for all groups of a catalog at once (docs/semantics.md section 3):
//! the index [`Snapshot::compile`](super::snapshot::Snapshot::compile) builds group member sets
//! from.
//!
//! Patterns dominate the compile of a large catalog (building a regex per distinct glob, then
//! matching it), so they are done as little and as much in parallel as possible: each distinct
//! pattern is compiled once whatever the number of groups using it, matched once per distinct
//! field value rather than per tool, and [`SelectionIndex::prepare`] does all of them up front
//! over the caller's [`Workers`], since they are independent of each other.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use fixedbitset::FixedBitSet;

use super::compile_error::CompileError;
use super::model::{Selector, Tool, ToolGroup};
use super::pattern::{Pattern, PatternError};
use super::workers::Workers;

/// Answers "which tools match this selector" with per-pattern and per-tag caches, so that a
/// pattern shared by many groups is matched against the tools once, and a pattern is matched
/// once per distinct field value (50 source names, 600 tool names…), not once per tool.
pub(super) struct SelectionIndex<'c> {
    len: usize,
    /// The distinct values of each pattern-matched field, indexed by [`Field`].
    fields: [FieldValues<'c>; 4],
    by_source_pattern: HashMap<&'c str, FixedBitSet>,
    by_name_pattern: HashMap<&'c str, FixedBitSet>,
    by_path_pattern: HashMap<&'c str, FixedBitSet>,
    by_method_pattern: HashMap<&'c str, FixedBitSet>,
    by_tag: HashMap<&'c str, FixedBitSet>,
    by_label: HashMap<&'c str, FixedBitSet>,
    empty: FixedBitSet,
}

impl<'c> SelectionIndex<'c> {
    /// An index for `len` tools, to be filled by [`SelectionIndex::add`] with tools 0..len.
    pub(super) fn with_capacity(len: usize) -> Self {
        SelectionIndex {
            len,
            fields: std::array::from_fn(|_| FieldValues::default()),
            by_source_pattern: HashMap::new(),
            by_name_pattern: HashMap::new(),
            by_path_pattern: HashMap::new(),
            by_method_pattern: HashMap::new(),
            by_tag: HashMap::new(),
            by_label: HashMap::new(),
            empty: FixedBitSet::with_capacity(len),
        }
    }

    /// Indexes tool `index` (tools come in index order), whose source is named `source_name`
    /// (`None` when the source does not exist: such a tool matches no source pattern but `*`).
    ///
    /// The compile calls this from its one pass over the catalog's tools: in a large catalog
    /// the tools' strings lie scattered among their schemas, so each pass costs a cache miss
    /// per string, and one pass is much cheaper than one per field.
    pub(super) fn add(&mut self, index: usize, tool: &'c Tool, source_name: Option<&'c str>) {
        let len = self.len;
        for tag in &tool.tags {
            self.by_tag
                .entry(tag.as_str())
                .or_insert_with(|| FixedBitSet::with_capacity(len))
                .insert(index);
        }
        for label in &tool.label_ids {
            self.by_label
                .entry(label.as_str())
                .or_insert_with(|| FixedBitSet::with_capacity(len))
                .insert(index);
        }
        // An absent path or method is `""`; an absent source has no name to match.
        let values = [
            source_name,
            Some(tool.name.as_str()),
            Some(tool.path.as_deref().unwrap_or("")),
            Some(tool.method.as_deref().unwrap_or("")),
        ];
        for (field, value) in self.fields.iter_mut().zip(values) {
            if let Some(value) = value {
                field.push(value, index as u32);
            }
        }
    }

    /// The tools `selector` picks; an error names the selector's key (the caller prefixes
    /// the selector's own path, see [`CompileError::within`]).
    pub(super) fn matching(&mut self, selector: &'c Selector) -> Result<FixedBitSet, CompileError> {
        let len = self.len;
        let mut result = FixedBitSet::with_capacity(len);
        result.insert_range(..);
        for (field, pattern) in patterns_of(selector) {
            if !self.cache(field).contains_key(pattern) {
                let matched =
                    self.tools_matching(field, pattern)
                        .map_err(|error| CompileError {
                            field: field.name().to_owned(),
                            message: error.to_string(),
                        })?;
                let cache = self.cache(field);
                cache.insert(pattern, matched);
            }
            result.intersect_with(&self.cache(field)[pattern]);
        }
        for tag in &selector.required_tags {
            result.intersect_with(self.by_tag.get(tag.as_str()).unwrap_or(&self.empty));
        }
        for tag in &selector.excluded_tags {
            if let Some(tagged) = self.by_tag.get(tag.as_str()) {
                result.difference_with(tagged);
            }
        }
        for label in &selector.required_label_ids {
            result.intersect_with(self.by_label.get(label.as_str()).unwrap_or(&self.empty));
        }
        Ok(result)
    }

    /// Compiles and matches, spread over `workers`, every distinct pattern the groups'
    /// selectors use, so that [`SelectionIndex::matching`] finds them all cached. A pattern
    /// that does not compile is left out: `matching` reports it, with its field path.
    pub(super) fn prepare(&mut self, groups: &'c [ToolGroup], workers: &dyn Workers) {
        let mut wanted: Vec<(Field, &'c str)> = Vec::new();
        for selector in groups.iter().flat_map(|group| &group.selectors) {
            for (field, pattern) in patterns_of(selector) {
                wanted.push((field, pattern));
            }
        }
        wanted.sort_unstable_by_key(|&(field, pattern)| (field as usize, pattern));
        wanted.dedup();
        // Patterns differ widely in cost (a `regex:` one costs a hundred times a literal, and
        // they sort together), so workers take the next pattern as they go rather than a
        // fixed share.
        let next = AtomicUsize::new(0);
        let matched: Mutex<Vec<(Field, &'c str, FixedBitSet)>> = Mutex::new(Vec::new());
        let this = &*self;
        let job = || {
            let mut done = Vec::new();
            while let Some(&(field, pattern)) = wanted.get(next.fetch_add(1, Ordering::Relaxed)) {
                if let Ok(tools) = this.tools_matching(field, pattern) {
                    done.push((field, pattern, tools));
                }
            }
            matched
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .extend(done);
        };
        workers.run((wanted.len() / PATTERNS_PER_THREAD).max(1), &job);
        let matched = matched
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for (field, pattern, tools) in matched {
            self.cache(field).insert(pattern, tools);
        }
    }

    /// The tools whose `field` matches `pattern`; the pattern's error when it does not compile.
    fn tools_matching(&self, field: Field, pattern: &str) -> Result<FixedBitSet, PatternError> {
        let compiled = Pattern::selector(pattern)?;
        let values = &self.fields[field as usize];
        let mut matched = FixedBitSet::with_capacity(self.len);
        for (value, tools) in values.distinct.iter().zip(&values.tools) {
            if compiled.is_match(value) {
                for &tool in tools {
                    matched.insert(tool as usize);
                }
            }
        }
        Ok(matched)
    }

    fn cache(&mut self, field: Field) -> &mut HashMap<&'c str, FixedBitSet> {
        match field {
            Field::SourceName => &mut self.by_source_pattern,
            Field::Name => &mut self.by_name_pattern,
            Field::Path => &mut self.by_path_pattern,
            Field::Method => &mut self.by_method_pattern,
        }
    }
}

/// One tool field's distinct values and, for each, the tools (snapshot indices) that have it:
/// a pattern is tested once per distinct value, and building its tool set costs as much as the
/// tools it matches, not a pass over every tool.
#[derive(Default)]
struct FieldValues<'c> {
    distinct: Vec<&'c str>,
    tools: Vec<Vec<u32>>,
    /// Position of each value in `distinct`.
    index: HashMap<&'c str, usize>,
}

impl<'c> FieldValues<'c> {
    fn push(&mut self, value: &'c str, tool: u32) {
        let slot = *self.index.entry(value).or_insert_with(|| {
            self.distinct.push(value);
            self.tools.push(Vec::new());
            self.distinct.len() - 1
        });
        self.tools[slot].push(tool);
    }
}

/// Below this many patterns per thread, more threads cost more than they save.
const PATTERNS_PER_THREAD: usize = 32;

/// The pattern criteria of a selector that narrow anything: `*` does not, nor does a path or
/// method pattern that is absent or `""` (docs/semantics.md section 5). A source or name pattern
/// of `""` does narrow: it is a glob matching only the empty value, so it selects nothing.
fn patterns_of(selector: &Selector) -> impl Iterator<Item = (Field, &str)> + '_ {
    [
        (Field::SourceName, Some(selector.source_pattern.as_str())),
        (Field::Name, Some(selector.name_pattern.as_str())),
        (
            Field::Path,
            selector.path_pattern.as_deref().filter(|p| !p.is_empty()),
        ),
        (
            Field::Method,
            selector.method_pattern.as_deref().filter(|p| !p.is_empty()),
        ),
    ]
    .into_iter()
    .filter_map(|(field, pattern)| {
        let pattern = pattern?;
        (pattern != "*").then_some((field, pattern))
    })
}

/// The pattern-matched tool fields; the discriminant indexes [`SelectionIndex::fields`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    SourceName,
    Name,
    Path,
    Method,
}

impl Field {
    /// The selector key that holds this field's pattern (for error paths).
    fn name(self) -> &'static str {
        match self {
            Field::SourceName => "source_pattern",
            Field::Name => "name_pattern",
            Field::Path => "path_pattern",
            Field::Method => "method_pattern",
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::model::Source;

    /// 200 tools over 4 sources; 120 groups with distinct name, path, source and method
    /// patterns: far more than one thread's share, so `prepare` really splits the work.
    fn fixture() -> (Vec<Tool>, Vec<Source>, Vec<ToolGroup>) {
        let sources: Vec<Source> = (0..4)
            .map(|s| {
                serde_json::from_value(
                    json!({"id": format!("s{s}"), "name": format!("svc-{s}"), "type": "manual"}),
                )
                .expect("source")
            })
            .collect();
        let methods = ["GET", "POST", "PUT", "DELETE"];
        let tools: Vec<Tool> = (0..200)
            .map(|t| {
                serde_json::from_value(json!({
                    "id": format!("s{}:op{t:03}", t % 4), "source_id": format!("s{}", t % 4),
                    "operation_id": format!("op{t:03}"), "name": format!("op{t:03}"),
                    "method": methods[t % 4], "path": format!("/things/{}/{t}", t % 7)}))
                .expect("tool")
            })
            .collect();
        let groups: Vec<ToolGroup> = (0..120)
            .map(|g| {
                // Every pattern distinct (so that there are many), each matching a few tools.
                let selector = match g % 4 {
                    0 => json!({"name_pattern": format!("op{:03}*", g + 50)}),
                    1 => json!({"path_pattern": format!("/things/{}/{g}*", g % 7), "method_pattern": methods[g % 4]}),
                    2 => json!({"source_pattern": format!("SVC-{}", g % 4), "name_pattern": format!("*{g:03}")}),
                    _ => json!({"name_pattern": format!("regex:op{g:03}|op0{}[0-9]", g % 10)}),
                };
                serde_json::from_value(json!({"id": format!("g{g}"), "name": format!("g{g}"), "selectors": [selector]}))
                    .expect("group")
            })
            .collect();
        (tools, sources, groups)
    }

    /// Real threads, as the service gives them, so that the work is really shared.
    struct ScopedThreads;

    impl Workers for ScopedThreads {
        fn run(&self, at_most: usize, job: &(dyn Fn() + Sync)) {
            std::thread::scope(|scope| {
                for _ in 1..at_most.min(4) {
                    scope.spawn(job);
                }
                job();
            });
        }
    }

    fn index<'c>(tools: &'c [Tool], sources: &'c [Source]) -> SelectionIndex<'c> {
        let mut index = SelectionIndex::with_capacity(tools.len());
        for (i, tool) in tools.iter().enumerate() {
            let source = sources.iter().find(|source| source.id == tool.source_id);
            index.add(i, tool, source.map(|source| source.name.as_str()));
        }
        index
    }

    #[test]
    fn prepared_patterns_select_exactly_what_matching_alone_does() {
        let (tools, sources, groups) = fixture();
        let mut prepared = index(&tools, &sources);
        prepared.prepare(&groups, &ScopedThreads);
        let distinct = prepared.by_name_pattern.len()
            + prepared.by_path_pattern.len()
            + prepared.by_source_pattern.len()
            + prepared.by_method_pattern.len();
        assert!(distinct > 2 * PATTERNS_PER_THREAD, "{distinct} patterns");
        let mut alone = index(&tools, &sources);
        let mut selected_any = false;
        for (g, group) in groups.iter().enumerate() {
            let selector = &group.selectors[0];
            let expected = alone.matching(selector).expect("compiles");
            selected_any |= expected.count_ones(..) > 0;
            assert_eq!(
                prepared.matching(selector).expect("compiles"),
                expected,
                "groups[{g}]"
            );
        }
        assert!(selected_any, "the fixture selects something");
    }

    #[test]
    fn a_pattern_that_does_not_compile_is_reported_with_its_key_after_prepare() {
        let (tools, sources, mut groups) = fixture();
        groups[7].selectors[0].name_pattern = "regex:op(".to_owned();
        let mut index = index(&tools, &sources);
        index.prepare(&groups, &ScopedThreads);
        let error = index
            .matching(&groups[7].selectors[0])
            .expect_err("invalid");
        assert_eq!(error.field, "name_pattern");
    }
}
