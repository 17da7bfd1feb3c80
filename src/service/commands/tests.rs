//! The pure catalog mutations behind the commands: what a write commits and what an impact
//! preview computes.

use chrono::{TimeZone, Utc};
use serde_json::json;

use super::*;
use crate::domain::model::{Label, ToolGroup};

fn stamp(by: &str) -> Stamp {
    Stamp {
        at: Utc
            .with_ymd_and_hms(2026, 5, 1, 12, 0, 0)
            .single()
            .expect("a valid time"),
        by: by.to_owned(),
    }
}

fn catalog() -> Catalog {
    serde_json::from_value(json!({
        "sources": [{"id": "s", "name": "s", "type": "manual"}],
        "tools": [{"id": "s:a", "source_id": "s", "operation_id": "a", "name": "a",
                   "label_ids": ["pii"]}],
        "labels": [{"id": "pii", "name": "pii", "created_by": "alice"}],
        "groups": [{"id": "g", "name": "g", "explicit_tool_ids": ["s:a"],
                    "selectors": [{"required_label_ids": ["pii"]}]}],
        "policies": [{"id": "p", "name": "p", "claim_matchers": [], "allowed_group_ids": ["g"]}]
    }))
    .expect("a valid catalog")
}

fn label(id: &str) -> Label {
    serde_json::from_value(json!({"id": id, "name": id, "created_by": "mallory"})).expect("a label")
}

#[test]
fn a_create_is_stamped_by_the_writer_whatever_the_body_says() {
    let mut catalog = catalog();
    let (notes, summary) =
        apply_create(&mut catalog, &label("new"), None, &stamp("bob")).expect("created");
    let created = catalog
        .labels
        .iter()
        .find(|l| l.id == "new")
        .expect("added");
    assert_eq!(created.created_by.as_deref(), Some("bob"));
    assert_eq!(created.updated_by.as_deref(), Some("bob"));
    assert!(summary.is_none());
    assert_eq!(notes.len(), 1);
    assert_eq!(
        (notes[0].action.as_str(), notes[0].id.as_str()),
        ("create", "new")
    );
}

#[test]
fn a_create_of_a_taken_id_is_a_conflict() {
    let mut catalog = catalog();
    let error = apply_create(&mut catalog, &label("pii"), None, &stamp("bob"))
        .expect_err("the id is taken");
    assert!(matches!(error, WriteError::Conflict { .. }), "{error:?}");
}

#[test]
fn a_patch_merges_keeps_the_creation_and_cannot_change_the_id() {
    let mut catalog = catalog();
    let mut patch = Map::new();
    patch.insert("description".to_owned(), json!("personal data"));
    let edit: Edit<Label> = Edit::Patch(patch);
    let (notes, next) =
        apply_update(&mut catalog, "pii", &edit, None, &stamp("bob")).expect("patched");
    assert_eq!(next.description, "personal data");
    assert_eq!(next.name, "pii");
    assert_eq!(next.created_by.as_deref(), Some("alice"));
    assert_eq!(next.updated_by.as_deref(), Some("bob"));
    assert_eq!(notes[0].action, AuditAction::Update);

    let mut renamed = Map::new();
    renamed.insert("id".to_owned(), json!("other"));
    let error = apply_update(
        &mut catalog,
        "pii",
        &Edit::<Label>::Patch(renamed),
        None,
        &stamp("bob"),
    )
    .expect_err("ids cannot change");
    match error {
        WriteError::Invalid(errors) => assert_eq!(errors[0].field, "id"),
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn an_update_of_a_missing_entity_is_not_found() {
    let error = apply_update(
        &mut catalog(),
        "nope",
        &Edit::Replace(label("nope")),
        None,
        &stamp("bob"),
    )
    .expect_err("missing");
    assert!(matches!(error, WriteError::NotFound { .. }), "{error:?}");
}

#[test]
fn deleting_a_tool_removes_the_ids_pointing_at_it() {
    let mut catalog = catalog();
    let notes = apply_delete::<Tool>(&mut catalog, "s:a").expect("deleted");
    assert!(catalog.tools.is_empty());
    assert!(catalog.groups[0].explicit_tool_ids.is_empty());
    assert_eq!(notes[0].action, AuditAction::Delete);
}

#[test]
fn a_label_a_selector_requires_and_a_group_a_policy_names_cannot_be_deleted() {
    let mut catalog = catalog();
    let before = catalog.clone();
    let label = apply_delete::<Label>(&mut catalog, "pii").expect_err("in use");
    assert!(matches!(label, WriteError::Conflict { .. }), "{label:?}");
    let group = apply_delete::<ToolGroup>(&mut catalog, "g").expect_err("in use");
    assert!(matches!(group, WriteError::Conflict { .. }), "{group:?}");
    assert_eq!(catalog, before, "a refused delete changes nothing");
}

#[test]
fn a_replace_notes_each_entity_and_keeps_the_stamps_of_what_did_not_change() {
    let mut catalog = catalog();
    let mut document = catalog.clone();
    document.labels.push(label("new"));
    document.labels[0].created_by = Some("mallory".to_owned()); // same content otherwise
    document.policies.clear();
    let (notes, counts) = apply_replace(&mut catalog, &document, &stamp("bob")).expect("replaced");
    assert_eq!(counts.policies, 0);
    assert_eq!(counts.labels, 2);
    let actions: Vec<(&str, &str)> = notes
        .iter()
        .map(|n| (n.action.as_str(), n.id.as_str()))
        .collect();
    assert_eq!(
        actions,
        [("replace", "catalog"), ("create", "new"), ("delete", "p")]
    );
    let kept = catalog.labels.iter().find(|l| l.id == "pii").expect("kept");
    assert_eq!(kept.created_by.as_deref(), Some("alice"));
    let new = catalog.labels.iter().find(|l| l.id == "new").expect("new");
    assert_eq!(new.created_by.as_deref(), Some("bob"));
}

#[test]
fn merge_patch_follows_rfc_7396() {
    let mut target = json!({"a": 1, "b": {"c": 2, "d": 3}, "e": [1]});
    merge_patch(
        &mut target,
        &json!({"a": null, "b": {"c": 5}, "e": [2], "f": "x"}),
    );
    assert_eq!(target, json!({"b": {"c": 5, "d": 3}, "e": [2], "f": "x"}));
}
