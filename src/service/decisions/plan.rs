//! A batch's questions grouped by the evaluation each needs, before any is made: so that the
//! caller can charge the batch by what it will cost (its distinct evaluations) and refuse it
//! before the work, and so that each distinct evaluation is made once, however many questions
//! share it.
//!
//! Two questions need the same evaluation when their claims have the same key (the projection
//! onto what the snapshot's policies read, as every cache keys them) and their scopes are
//! equal. Grouping is one hash lookup per question: claims given once for many questions (a
//! batch default, the caller's own) are keyed once, found by address.

use std::collections::HashMap;

use super::{Question, Scope, decided};
use crate::domain::claims::Claims;
use crate::domain::fingerprint::Fingerprint;
use crate::domain::snapshot::Snapshot;

/// One evaluation a batch needs: whose claims, their key, and in which scope.
pub(super) struct Needed<'q> {
    pub claims: &'q Claims,
    pub fingerprint: Fingerprint,
    pub scope: &'q Scope,
}

/// The questions of a batch, each with the evaluation it needs, if any.
pub struct Plan<'q> {
    pub(super) questions: &'q [Question<'q>],
    /// Per question, the index in `needed` of its evaluation; `None` for a question decided
    /// without one (another action or resource type: a deny).
    pub(super) needs: Vec<Option<usize>>,
    pub(super) needed: Vec<Needed<'q>>,
}

impl<'q> Plan<'q> {
    /// Groups `questions` by the evaluation each needs at `snapshot`.
    pub fn new(snapshot: &Snapshot, questions: &'q [Question<'q>]) -> Plan<'q> {
        let mut keys: HashMap<*const Claims, Fingerprint> = HashMap::new();
        let mut index: HashMap<(Fingerprint, &'q Scope), usize> = HashMap::new();
        let mut needed = Vec::new();
        let needs = questions
            .iter()
            .map(|question| {
                if !decided(question.action, question.resource_type) {
                    return None;
                }
                let claims = question.claims;
                let fingerprint = *keys.entry(std::ptr::from_ref(claims)).or_insert_with(|| {
                    Fingerprint::of_projection(claims, &[snapshot.read_paths()])
                });
                let at = *index
                    .entry((fingerprint, question.scope))
                    .or_insert_with(|| {
                        needed.push(Needed {
                            claims,
                            fingerprint,
                            scope: question.scope,
                        });
                        needed.len() - 1
                    });
                Some(at)
            })
            .collect();
        Plan {
            questions,
            needs,
            needed,
        }
    }

    /// How many distinct evaluations the batch needs (at most; a semantic that stops early
    /// makes fewer): what it costs beyond reading it.
    pub fn evaluations(&self) -> usize {
        self.needed.len()
    }
}
