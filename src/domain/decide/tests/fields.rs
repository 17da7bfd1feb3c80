//! `fields=`: a narrowed manifest is the full one with the other keys taken out of every entry,
//! under a tag of its own, and a change to a field nobody asked for is no change to it.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::{catalog, claims, everyone, options_with};
use crate::domain::entry::{Field, Fields};
use crate::domain::manifest::ManifestOptions;
use crate::domain::manifest_diff::{ManifestDiff, ManifestSummary};
use crate::domain::model::Catalog;
use crate::domain::snapshot::Snapshot;

/// The test catalog with one group of every tool, and optional fields set on one tool so that
/// every field appears somewhere.
fn full_catalog(edit: impl FnOnce(&mut Catalog)) -> Snapshot {
    let mut catalog = catalog(
        json!([{"id": "all", "name": "all", "selectors": [{}]},
               {"id": "gets", "name": "gets", "selectors": [{"method_pattern": "GET"}]}]),
        everyone(&["all", "gets"]),
    );
    let tool = catalog
        .tools
        .iter_mut()
        .find(|t| t.id == "crm:get_customer")
        .expect("in the catalog");
    tool.output_schema = Some(json!({"type": "object"}).into());
    tool.version = Some("2".to_owned());
    tool.next_state = Some("done".to_owned());
    edit(&mut catalog);
    Snapshot::compile(catalog, 3).expect("compiles")
}

fn body(snapshot: &Snapshot, options: &ManifestOptions) -> (Value, String) {
    let manifest = snapshot.manifest(&claims(json!({"sub": "a"})), options);
    let body = serde_json::from_slice(&manifest.to_json()).expect("a manifest is JSON");
    (body, manifest.etag().to_owned())
}

/// Every subset of the 12 optional fields (4,096), with and without preview.
#[test]
fn every_subset_is_the_full_manifest_with_the_other_keys_taken_out() {
    let snapshot = full_catalog(|_| {});
    let mut tags = HashSet::new();
    for preview in [false, true] {
        let (full, full_tag) = body(&snapshot, &options_with(preview));
        for mask in 0u16..1 << 12 {
            let names: Vec<&str> = Field::ALL[1..]
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, field)| field.as_str())
                .collect();
            let fields = Fields::parse(names.iter().copied()).expect("all known");
            let options = ManifestOptions {
                fields,
                ..options_with(preview)
            };
            let (narrowed, tag) = body(&snapshot, &options);
            let mut expected = full.clone();
            for entry in expected["data"].as_array_mut().expect("data") {
                let entry = entry.as_object_mut().expect("an entry is an object");
                entry.retain(|key, _| {
                    key == "tool_id"
                        || names.contains(&key.as_str())
                        || (preview && (key == "enabled" || key == "deprecated"))
                });
            }
            expected["etag"] = json!(tag);
            assert_eq!(narrowed, expected, "fields {names:?}, preview {preview}");
            assert_eq!(tag == full_tag, fields.is_all(), "{names:?}");
            assert!(
                tags.insert(tag),
                "every fields set has its own tag: {names:?}"
            );
        }
    }
}

#[test]
fn a_change_to_a_field_not_asked_for_changes_nothing() {
    let before = full_catalog(|_| {});
    let after = full_catalog(|catalog| {
        let tool = catalog
            .tools
            .iter_mut()
            .find(|t| t.id == "crm:get_customer")
            .expect("in the catalog");
        tool.output_schema = Some(json!({"type": "object", "properties": {}}).into());
        tool.description = "changed".to_owned();
    });
    let who = claims(json!({"sub": "a"}));
    let narrowed = ManifestOptions {
        fields: Fields::parse(["name", "input_schema", "groups"]).expect("known"),
        ..ManifestOptions::default()
    };
    let old = before.manifest(&who, &narrowed);
    let new = after.manifest(&who, &narrowed);
    assert_eq!(old.to_json(), new.to_json(), "the same bytes");
    assert_eq!(old.etag(), new.etag(), "so the same tag: a 304 stays a 304");
    assert!(ManifestDiff::between(&ManifestSummary::of(&old), &new).is_empty());

    let full = ManifestOptions::default();
    let old = before.manifest(&who, &full);
    let new = after.manifest(&who, &full);
    assert_ne!(old.etag(), new.etag());
    let diff = ManifestDiff::between(&ManifestSummary::of(&old), &new);
    assert_eq!(diff.updated_ids(), ["crm:get_customer"]);

    // A narrowed stream still sees what it asked for change: the groups of an entry.
    let regrouped = full_catalog(|catalog| {
        catalog.groups.retain(|g| g.id != "gets");
    });
    let old = before.manifest(&who, &narrowed);
    let new = regrouped.manifest(&who, &narrowed);
    assert_ne!(old.etag(), new.etag());
    let diff = ManifestDiff::between(&ManifestSummary::of(&old), &new);
    assert_eq!(
        diff.updated_ids(),
        ["billing:list_invoices", "crm:get_customer"]
    );
}

#[test]
fn unknown_names_are_refused_and_tool_id_is_always_there() {
    let error = Fields::parse(["name", "outputschema"]).expect_err("not a field");
    assert_eq!(
        error.to_string(),
        "'outputschema' is not a manifest entry field; expected tool_id, name, title, description, \
         input_schema, output_schema, source_id, source_path, method, tags, version, \
         available_in_states, next_state, groups"
    );
    let only_ids = Fields::parse([]).expect("nothing asked for");
    assert!(only_ids.contains(Field::ToolId));
    assert!(!only_ids.contains(Field::Name));
    assert_eq!(Fields::parse(["tool_id"]), Ok(only_ids));
    assert!(Fields::default().is_all());
}

/// The body's buffer is sized once: never too small (it would grow, copying the body), and for
/// the default fields within 1/16 (or it is cut to fit afterwards, copying it again).
#[test]
fn the_body_size_estimate_is_a_tight_upper_bound() {
    let snapshot = full_catalog(|_| {});
    let narrowed = Fields::parse(["name"]).expect("a field");
    for (include_disabled, fields) in [
        (false, Fields::ALL),
        (true, Fields::ALL),
        (false, narrowed),
        (true, narrowed),
    ] {
        let options = ManifestOptions {
            include_disabled,
            fields,
            ..ManifestOptions::default()
        };
        let manifest = snapshot.manifest(&claims(json!({"sub": "a"})), &options);
        let (estimate, actual) = (manifest.estimated_json_len(), manifest.to_json().len());
        assert!(estimate >= actual, "{options:?}: {estimate} < {actual}");
        if fields.is_all() {
            assert!(
                estimate - actual <= actual / 16,
                "{options:?}: {estimate} for {actual}"
            );
        }
    }
}
