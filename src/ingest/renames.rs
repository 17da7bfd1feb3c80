//! Finding renames in one refresh: a tool gone upstream and a new one that is the same tool.
//!
//! A renamed tool keeps none of its approvals by accident: it is reported as `renamed` and
//! never approved automatically. A renamer who also edits the tool a little is still found:
//! first by the definition's hash without its name (exact), then by [`definition::nearly_same`]
//! (most description words and most input properties shared). Gone tools whose removal was
//! approved earlier are candidates too, so that removing in one refresh and adding in the next
//! does not dodge the check.

use std::collections::{HashMap, HashSet};

use crate::domain::definition::{self, Shape};
use crate::domain::imported::ImportedTool;
use crate::domain::model::Tool;

/// How many (gone, new) pairs are compared by shape at most in one refresh. Past it only exact
/// renames are found and the refresh is [`Pairs::unsure`].
pub const MAX_COMPARISONS: usize = 250_000;

/// The renames found: for each new tool, the gone tool it renames, if any.
#[derive(Debug, Default)]
pub struct Pairs {
    previous: Vec<Option<usize>>,
    paired: HashSet<usize>,
    /// Too many tools came and went to compare them all: some renames may be unseen.
    pub unsure: bool,
}

impl Pairs {
    /// The catalog position of the tool that new tool `fresh` renames.
    pub fn previous_of(&self, fresh: usize) -> Option<usize> {
        self.previous.get(fresh).copied().flatten()
    }

    /// Whether the tool at catalog position `gone` is renamed by a new tool.
    pub fn is_paired(&self, gone: usize) -> bool {
        self.paired.contains(&gone)
    }
}

/// Pairs new tools (`fresh`, by id and upstream definition) with the tools at catalog
/// positions `gone` (of the same source, no longer defined upstream) that they rename.
/// `shape_of` gives the shape of a new tool when it was worked out before (outside the
/// catalog's write lock).
pub fn pair(
    tools: &[Tool],
    gone: &[usize],
    fresh: &[(String, ImportedTool)],
    shape_of: &dyn Fn(usize) -> Option<Shape>,
) -> Pairs {
    let mut pairs = Pairs {
        previous: vec![None; fresh.len()],
        ..Pairs::default()
    };
    let candidates: Vec<(usize, serde_json::Value)> = gone
        .iter()
        .filter_map(|&at| {
            let definition = tools[at].imported.as_ref()?.definition.as_ref()?;
            Some((at, definition.value()))
        })
        .collect();
    if candidates.is_empty() || fresh.is_empty() {
        return pairs;
    }
    let mut by_nameless: HashMap<String, Vec<usize>> = HashMap::new();
    for (at, definition) in &candidates {
        let at = *at;
        by_nameless
            .entry(definition::nameless_hash(definition))
            .or_default()
            .push(at);
    }
    for (index, (_, upstream)) in fresh.iter().enumerate() {
        let key = definition::nameless_hash(&upstream.definition_value());
        if let Some(at) = by_nameless.get_mut(&key).and_then(|ats| {
            ats.iter()
                .position(|at| !pairs.paired.contains(at))
                .map(|i| ats.remove(i))
        }) {
            pairs.previous[index] = Some(at);
            pairs.paired.insert(at);
        }
    }
    nearly(&mut pairs, &candidates, fresh, shape_of);
    pairs
}

/// Pairs what the exact pass left by shape, within [`MAX_COMPARISONS`]: each comparison costs
/// a bounded number of steps ([`definition::SKETCH_SIZE`]), so the pairs bound the work.
fn nearly(
    pairs: &mut Pairs,
    candidates: &[(usize, serde_json::Value)],
    fresh: &[(String, ImportedTool)],
    shape_of: &dyn Fn(usize) -> Option<Shape>,
) {
    let left: Vec<(usize, Shape)> = candidates
        .iter()
        .filter(|(at, _)| !pairs.paired.contains(at))
        .map(|(at, definition)| (*at, Shape::of(definition)))
        .collect();
    let unpaired: Vec<usize> = (0..fresh.len())
        .filter(|&i| pairs.previous[i].is_none())
        .collect();
    if left.is_empty() || unpaired.is_empty() {
        return;
    }
    if left.len().saturating_mul(unpaired.len()) > MAX_COMPARISONS {
        pairs.unsure = true;
        return;
    }
    for index in unpaired {
        let shape =
            shape_of(index).unwrap_or_else(|| Shape::of(&fresh[index].1.definition_value()));
        if let Some((at, _)) = left.iter().find(|(at, other)| {
            !pairs.paired.contains(at) && definition::nearly_same(&shape, other)
        }) {
            pairs.previous[index] = Some(*at);
            pairs.paired.insert(*at);
        }
    }
}
