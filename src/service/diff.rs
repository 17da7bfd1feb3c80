//! The store changes that turn one catalog into another: a `Put` for every entity that is new
//! or different, a `Delete` for every entity that is gone.
//!
//! Writes are expressed as edits of a whole catalog (which is what gets validated); the store,
//! though, should only rewrite what changed, so that a one-tool edit in a 10,000-tool catalog
//! is a one-row transaction.

use std::collections::HashMap;

use crate::domain::model::Catalog;
use crate::store::{Change, Entity, EntityKind};

pub(super) fn changes_between(old: &Catalog, new: &Catalog) -> Vec<Change> {
    let mut changes = Vec::new();
    collection(
        &mut changes,
        EntityKind::Sources,
        &old.sources,
        &new.sources,
        |e| &e.id,
        |e| Entity::Source(e.clone()),
    );
    collection(
        &mut changes,
        EntityKind::Tools,
        &old.tools,
        &new.tools,
        |e| &e.id,
        |e| Entity::Tool(e.clone()),
    );
    collection(
        &mut changes,
        EntityKind::Labels,
        &old.labels,
        &new.labels,
        |e| &e.id,
        |e| Entity::Label(e.clone()),
    );
    collection(
        &mut changes,
        EntityKind::Groups,
        &old.groups,
        &new.groups,
        |e| &e.id,
        |e| Entity::Group(e.clone()),
    );
    collection(
        &mut changes,
        EntityKind::Policies,
        &old.policies,
        &new.policies,
        |e| &e.id,
        |e| Entity::Policy(e.clone()),
    );
    collection(
        &mut changes,
        EntityKind::Revisions,
        &old.revisions,
        &new.revisions,
        |e| &e.id,
        |e| Entity::Revision(e.clone()),
    );
    changes
}

fn collection<T: PartialEq>(
    changes: &mut Vec<Change>,
    kind: EntityKind,
    old: &[T],
    new: &[T],
    id: impl Fn(&T) -> &String,
    entity: impl Fn(&T) -> Entity,
) {
    let before: HashMap<&String, &T> = old.iter().map(|e| (id(e), e)).collect();
    for item in new {
        if before
            .get(id(item))
            .is_none_or(|previous| *previous != item)
        {
            changes.push(Change::Put(entity(item)));
        }
    }
    let after: HashMap<&String, &T> = new.iter().map(|e| (id(e), e)).collect();
    for item in old {
        if !after.contains_key(id(item)) {
            changes.push(Change::Delete {
                kind,
                id: id(item).clone(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_what_changed_is_written() {
        let old: Catalog = serde_json::from_value(json!({
            "labels": [{"id": "a", "name": "a"}, {"id": "b", "name": "b"}, {"id": "c", "name": "c"}]
        }))
        .expect("catalog");
        let mut new = old.clone();
        new.labels[1].name = "B".into();
        new.labels.remove(2);
        new.labels
            .push(serde_json::from_value(json!({"id": "d", "name": "d"})).expect("label"));
        let changes = changes_between(&old, &new);
        let summary: Vec<String> = changes
            .iter()
            .map(|change| match change {
                Change::Put(entity) => format!("put {}", entity.id()),
                Change::Delete { id, .. } => format!("delete {id}"),
                Change::ReplaceAll(_) => "replace".into(),
            })
            .collect();
        assert_eq!(summary, ["put b", "put d", "delete c"]);
    }
}
