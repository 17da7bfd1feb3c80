//! The comparison of a preview, claim set by claim set, into a report of bounded size: each
//! claim set's difference is counted in the totals and then kept only as far as the answer
//! has room for tool ids ([`MAX_LISTED_IDS`] in all); what does not fit is cut, marked
//! `truncated`, and said in a warning. The totals always count every claim set in full.
//!
//! Nothing grows with the catalog per claim set: the comparison remembers decisions within a
//! byte budget ([`Comparison`]), and a difference is dropped once reported.

use std::collections::{BTreeMap, HashSet};

use serde_json::value::RawValue;

use super::{ClaimSetImpact, ImpactReport, SeenImpact, ToolTotals};
use crate::domain::claims::Claims;
use crate::domain::fingerprint::Fingerprint;
use crate::domain::impact::{Comparison, DEFAULT_BUDGET, Difference};
use crate::domain::snapshot::Snapshot;
use crate::service::seen::Seen;

/// The most tool ids one answer lists, `gained` and `lost` of every claim set together (about
/// 3 MB of JSON): enough to read every difference of any change that affects a few thousand
/// identities, far less than the hundreds of MB a catalog-wide change over 10,000 claim sets
/// would list.
pub const MAX_LISTED_IDS: usize = 100_000;

/// The report for `given` (in order) and `seen` (those that change), `before` → `after`.
/// A remembered set that a given one stands for (the same claims where `before`'s policies
/// read) is left out: it is answered once, as given.
///
/// `given` are JSON objects' texts (checked by the caller), parsed one at a time: a text that
/// does not parse as an object is evaluated as no claims at all (fewer tools).
pub(super) fn compare(
    before: &Snapshot,
    after: &Snapshot,
    given: Vec<Box<RawValue>>,
    seen: Vec<Seen>,
    warnings: Vec<String>,
) -> ImpactReport {
    let paths = [before.read_paths()];
    let mut named: HashSet<Fingerprint> = HashSet::with_capacity(given.len());
    let mut comparison = Comparison::new(before, after, DEFAULT_BUDGET);
    let mut room = Room {
        left: MAX_LISTED_IDS,
        cut: 0,
    };
    let mut report = ImpactReport {
        revision: before.revision(),
        claims_sets: Vec::with_capacity(given.len()),
        seen: Vec::new(),
        totals: BTreeMap::new(),
        warnings,
    };
    for text in given {
        let claims: Claims = serde_json::from_str(text.get()).unwrap_or_default();
        named.insert(Fingerprint::of_projection(&claims, &paths));
        let difference = comparison.difference(&claims);
        drop(claims);
        count(&mut report.totals, &difference);
        let (gained, lost, truncated) = room.keep(difference);
        report.claims_sets.push(ClaimSetImpact {
            claims: text,
            gained,
            lost,
            truncated,
        });
    }
    for seen in seen {
        if named.contains(&Fingerprint::of_projection(&seen.claims, &paths)) {
            continue;
        }
        let difference = comparison.difference(&seen.claims);
        if difference.is_empty() {
            continue;
        }
        count(&mut report.totals, &difference);
        let (gained, lost, truncated) = room.keep(difference);
        report.seen.push(SeenImpact {
            claims: seen.claims,
            last_seen: seen.last_seen,
            gained,
            lost,
            truncated,
        });
    }
    if room.cut > 0 {
        report.warnings.push(format!(
            "the answer lists at most {MAX_LISTED_IDS} tool ids in all: the lists of {} claim \
             sets were cut (marked truncated); totals count every claim set in full (preview \
             fewer claim sets at a time to see every list)",
            room.cut
        ));
    }
    report
}

/// What is left of the answer's room for tool ids, and how many claim sets' lists were cut.
struct Room {
    left: usize,
    cut: usize,
}

impl Room {
    /// `difference`'s lists as far as they fit, and whether anything was cut.
    fn keep(&mut self, difference: Difference) -> (Vec<String>, Vec<String>, bool) {
        let Difference {
            mut gained,
            mut lost,
        } = difference;
        let listed = gained.len() + lost.len();
        if listed <= self.left {
            self.left -= listed;
            return (gained, lost, false);
        }
        gained.truncate(self.left);
        lost.truncate(self.left - gained.len());
        self.left = 0;
        self.cut += 1;
        (gained, lost, true)
    }
}

fn count(totals: &mut BTreeMap<String, ToolTotals>, difference: &Difference) {
    for tool in &difference.gained {
        tally(totals, tool).gained += 1;
    }
    for tool in &difference.lost {
        tally(totals, tool).lost += 1;
    }
}

/// The totals of `tool`, made on first use (its id copied once, not once per claim set).
fn tally<'t>(totals: &'t mut BTreeMap<String, ToolTotals>, tool: &str) -> &'t mut ToolTotals {
    if !totals.contains_key(tool) {
        totals.insert(tool.to_owned(), ToolTotals::default());
    }
    totals.get_mut(tool).expect("inserted above")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(prefix: &str, n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{prefix}{i}")).collect()
    }

    #[test]
    fn lists_are_kept_until_the_room_is_spent_then_cut_and_marked() {
        let mut room = Room { left: 5, cut: 0 };
        let whole = room.keep(Difference {
            gained: ids("g", 2),
            lost: ids("l", 1),
        });
        assert_eq!(whole, (ids("g", 2), ids("l", 1), false));
        let cut = room.keep(Difference {
            gained: ids("g", 1),
            lost: ids("l", 3),
        });
        assert_eq!(cut, (ids("g", 1), ids("l", 1), true));
        let none = room.keep(Difference {
            gained: ids("g", 1),
            lost: Vec::new(),
        });
        assert_eq!(none, (Vec::new(), Vec::new(), true));
        assert_eq!(room.cut, 2);
        let empty = room.keep(Difference::default());
        assert_eq!(empty, (Vec::new(), Vec::new(), false), "nothing to cut");
    }
}
