//! A run as its Redis keys hold it: what never changes ([`Meta`], one JSON field) and the
//! record read back from the hash and its lists.

use std::collections::{BTreeMap, HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use super::failed;
use crate::domain::run::forest::{CallLine, Counter, RunRecord};
use crate::service::runs::store::RunStoreError;

/// What never changes of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Meta {
    pub(super) id: String,
    pub(super) root: String,
    #[serde(default)]
    pub(super) parent: Option<String>,
    #[serde(default)]
    pub(super) ancestors: Vec<String>,
    pub(super) depth: usize,
    pub(super) sub: String,
    pub(super) created_at: i64,
    pub(super) pinned: String,
    pub(super) pinned_revision: u64,
    /// The counter names held along the chain (the run's and its ancestors').
    #[serde(default)]
    pub(super) counters: Vec<String>,
    /// The claims the run's token is evaluated as.
    #[serde(default)]
    pub(super) claims: crate::domain::claims::Claims,
}

impl Meta {
    /// What never changes of `record`, with the counter names held along its chain.
    pub(super) fn of(record: &RunRecord, counters: Vec<String>) -> Meta {
        Meta {
            id: record.id.clone(),
            root: record.root.clone(),
            parent: record.parent.clone(),
            ancestors: record.ancestors.clone(),
            depth: record.depth,
            sub: record.sub.clone(),
            created_at: record.created_at,
            pinned: record.pinned.clone(),
            pinned_revision: record.pinned_revision,
            counters,
            claims: record.claims.clone(),
        }
    }
}

/// A record from a run's hash and lists.
pub(super) fn record_of(
    fields: &HashMap<String, String>,
    children: Vec<String>,
    calls: Vec<String>,
) -> Result<RunRecord, RunStoreError> {
    let meta: Meta =
        serde_json::from_str(fields.get("meta").map_or("", String::as_str)).map_err(failed)?;
    let number = |name: &str| fields.get(name).and_then(|v| v.parse::<i64>().ok());
    let mut budget = BTreeMap::new();
    for (field, value) in fields {
        if let Some(name) = field.strip_prefix("c:") {
            let left = value.parse::<i64>().unwrap_or(0).max(0).unsigned_abs();
            let limit = number(&format!("l:{name}"))
                .unwrap_or(0)
                .max(0)
                .unsigned_abs();
            let from = fields.get(&format!("f:{name}")).cloned();
            budget.insert(name.to_owned(), Counter { limit, left, from });
        }
    }
    let calls: VecDeque<CallLine> = calls
        .iter()
        .rev()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    Ok(RunRecord {
        id: meta.id,
        root: meta.root,
        parent: meta.parent,
        ancestors: meta.ancestors,
        depth: meta.depth,
        sub: meta.sub,
        state: fields.get("state").cloned().unwrap_or_default(),
        created_at: meta.created_at,
        expires_at: number("exp").unwrap_or(0),
        ended_at: number("ended"),
        budget,
        pinned: meta.pinned,
        pinned_revision: meta.pinned_revision,
        children,
        calls,
        claims: meta.claims,
    })
}
