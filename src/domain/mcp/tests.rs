//! MCP names (valid, unique, each a function of its id alone) and tool objects.

use std::collections::HashSet;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{MAX_NAME_LEN, McpCatalog, TOOL_ID_META, is_valid_name, name_of, names};
use crate::domain::claims::Claims;
use crate::domain::manifest::ManifestOptions;
use crate::domain::model::Catalog;
use crate::domain::snapshot::Snapshot;

fn named(ids: &[&str]) -> Vec<Option<String>> {
    names(ids.iter().copied())
        .into_iter()
        .map(|name| name.map(String::from))
        .collect()
}

fn hash8(id: &str) -> String {
    blake3::hash(id.as_bytes()).to_hex()[..8].to_owned()
}

#[test]
fn names_follow_the_rule_case_by_case() {
    let long = "x".repeat(200);
    let cases: Vec<(&str, String)> = vec![
        ("list_invoices", "list_invoices".into()),
        ("a.b-c_D9", "a.b-c_D9".into()),
        ("billing:list_invoices", "billing.list_invoices".into()),
        ("github:repos/get", "github.repos.get".into()),
        ("crm:find pet by id", "crm.find_pet_by_id".into()),
        ("crm:a  ,b", "crm.a_b".into()),
        ("ünïcode", "_n_code".into()),
        ("???", "tool".into()),
        (
            long.as_str(),
            format!("{}-{}", &long[..MAX_NAME_LEN - 9], hash8(&long)),
        ),
    ];
    for (id, expected) in cases {
        assert_eq!(named(&[id]), [Some(expected.clone())], "{id}");
        assert!(is_valid_name(&expected), "{expected}");
    }
}

#[test]
fn a_name_depends_on_its_id_alone_and_a_shared_derived_name_is_no_ones() {
    // What validation refuses to store: the literal id keeps its name, derived ones lose it
    // rather than take another one (a rename a client would not be told of).
    let got = named(&["a:b", "a.b", "a/b"]);
    assert_eq!(got, [None, Some("a.b".to_owned()), None]);
    let got = named(&["x y", "x?y", "z"]);
    assert_eq!(got, [None, None, Some("z".to_owned())]);
    // Adding a tool never renames another one.
    assert_eq!(named(&["a:b", "c"])[0].as_deref(), Some("a.b"));
}

proptest! {
    /// Over ids drawn from a small alphabet (collisions are common): every name is valid or
    /// absent, names are unique, every name present is the id's own (whatever else is in the
    /// catalog), and only a derived name that another id also has is absent.
    #[test]
    fn names_are_valid_unique_and_depend_on_the_id_alone(
        ids in prop::collection::hash_set("[ab:./ _-]{1,6}", 1..40)
    ) {
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let got = named(&ids);
        let mut seen = HashSet::new();
        for (id, name) in ids.iter().zip(&got) {
            let own = name_of(id);
            prop_assert!(is_valid_name(&own), "{own:?} for {id:?}");
            match name {
                Some(name) => {
                    prop_assert_eq!(name, &own);
                    prop_assert!(seen.insert(name.clone()), "{name:?} twice");
                }
                None => {
                    prop_assert!(!is_valid_name(id));
                    prop_assert!(ids.iter().any(|other| other != id && name_of(other) == own));
                }
            }
        }
    }
}

fn snapshot() -> Snapshot {
    let mut catalog: Catalog = serde_json::from_value(json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual"}],
        "tools": [
            {"source_id": "billing", "operation_id": "list_invoices", "name": "list_invoices",
             "title": "List invoices", "description": "List invoices", "tags": ["read-only", "idempotent"],
             "input_schema": {"type": "object", "properties": {"limit": {"type": "integer"}}},
             "output_schema": {"type": "object", "properties": {"items": {"type": "array"}}}},
            {"source_id": "billing", "operation_id": "refund", "name": "refund",
             "tags": ["destructive", "open-world"],
             "output_schema": {"type": "array"}},
            {"source_id": "billing", "operation_id": "plain", "name": "plain"},
            {"source_id": "billing", "operation_id": "hidden", "name": "hidden", "enabled": false}
        ],
        "groups": [{"id": "g", "name": "all", "selectors": [{"source_pattern": "*"}]}],
        "policies": [{"id": "p", "name": "p", "priority": 1,
                      "claim_matchers": [{"json_path": "sub", "operator": "exists"}],
                      "allowed_group_ids": ["g"]}]
    }))
    .expect("test catalog parses");
    catalog.normalize();
    Snapshot::compile(catalog, 1).expect("compiles")
}

fn claims() -> Claims {
    json!({"sub": "agent"})
        .as_object()
        .cloned()
        .expect("an object")
}

fn page(snapshot: &Snapshot, after: Option<&str>, limit: usize) -> (Value, Option<String>) {
    let evaluation = snapshot.evaluate(&claims(), &ManifestOptions::default());
    let catalog = McpCatalog::of(snapshot);
    let page = catalog.page(snapshot, &evaluation, after, limit);
    (
        serde_json::from_slice(&page.tools).expect("a JSON array"),
        page.next_after.map(str::to_owned),
    )
}

#[test]
fn tool_objects_carry_the_id_and_only_the_hints_tags_assert() {
    let snapshot = snapshot();
    let (tools, next) = page(&snapshot, None, 10);
    assert_eq!(next, None);
    assert_eq!(
        tools,
        json!([
            {"name": "billing.list_invoices", "title": "List invoices",
             "description": "List invoices",
             "inputSchema": {"type": "object", "properties": {"limit": {"type": "integer"}}},
             "outputSchema": {"type": "object", "properties": {"items": {"type": "array"}}},
             "annotations": {"readOnlyHint": true, "idempotentHint": true},
             "_meta": {TOOL_ID_META: "billing:list_invoices"}},
            {"name": "billing.plain", "title": "plain", "description": "",
             "inputSchema": {"type": "object", "properties": {}},
             "annotations": {"readOnlyHint": false},
             "_meta": {TOOL_ID_META: "billing:plain"}},
            {"name": "billing.refund", "title": "refund", "description": "",
             "inputSchema": {"type": "object", "properties": {}},
             "annotations": {"readOnlyHint": false, "destructiveHint": true,
                             "openWorldHint": true},
             "_meta": {TOOL_ID_META: "billing:refund"}}
        ]),
        "manifest order (by id); the disabled tool is not listed; a non-object output schema \
         is left out; the title, else the name"
    );
}

#[test]
fn pages_split_the_list_and_resume_after_the_last_id() {
    let snapshot = snapshot();
    let (first, next) = page(&snapshot, None, 2);
    assert_eq!(first.as_array().map(Vec::len), Some(2));
    assert_eq!(next.as_deref(), Some("billing:plain"));
    let (second, next) = page(&snapshot, next.as_deref(), 2);
    assert_eq!(second[0]["name"], "billing.refund");
    assert_eq!(next, None, "the last page says so");
    let (after_last, _) = page(&snapshot, Some("billing:refund"), 2);
    assert_eq!(after_last, json!([]));
}

#[test]
fn a_tool_is_found_by_its_name_and_names_by_id() {
    let snapshot = snapshot();
    let catalog = McpCatalog::of(&snapshot);
    let found = catalog.tool(&snapshot, "billing.refund").expect("found");
    assert_eq!(found.tool_id, "billing:refund");
    assert_eq!(found.tool.name, "refund");
    assert!(
        catalog.tool(&snapshot, "billing:refund").is_none(),
        "ids are not names"
    );
    assert_eq!(
        catalog.name(&snapshot, "billing:hidden"),
        Some("billing.hidden"),
        "every tool has a name, listed or not"
    );
    // Of another revision, the catalog finds and lists nothing.
    let newer = Snapshot::compile(snapshot.catalog().clone(), 2).expect("compiles");
    assert!(catalog.tool(&newer, "billing.refund").is_none());
    assert!(catalog.name(&newer, "billing:refund").is_none());
    let evaluation = newer.evaluate(&claims(), &ManifestOptions::default());
    assert_eq!(catalog.page(&newer, &evaluation, None, 10).tools, b"[]");
}
