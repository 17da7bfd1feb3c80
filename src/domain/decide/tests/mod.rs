//! One table per rule of docs/semantics.md sections 4–7. Each case states a catalog fragment, the
//! claims and options, and the exact tool ids expected. This file: selectors, group membership
//! and policies; `manifest.rs`: visibility, narrowing, entries, etag and explanations.

mod fields;
mod manifest;

use serde_json::{Value, json};

use crate::domain::manifest::ManifestOptions;
use crate::domain::model::Catalog;
use crate::domain::snapshot::Snapshot;

/// Six tools over two sources; groups and policies come from each case.
fn catalog(groups: Value, policies: Value) -> Catalog {
    let mut catalog: Catalog = serde_json::from_value(json!({
        "sources": [
            {"id": "billing", "name": "billing-api", "type": "openapi"},
            {"id": "crm", "name": "CRM-api", "type": "manual"},
            {"id": "off", "name": "legacy", "type": "manual", "enabled": false}
        ],
        "labels": [{"id": "l-pii", "name": "pii"}, {"id": "l-new", "name": "new"}],
        "tools": [
            {"source_id": "billing", "operation_id": "list_invoices", "name": "list_invoices",
             "method": "GET", "path": "/invoices", "tags": ["read-only", "billing"]},
            {"source_id": "billing", "operation_id": "create_invoice", "name": "create_invoice",
             "method": "POST", "path": "/invoices", "tags": ["billing"], "label_ids": ["l-new"]},
            {"source_id": "billing", "operation_id": "refund", "name": "refund", "method": "POST",
             "path": "/payments/{id}/refund", "tags": ["billing", "dangerous"]},
            {"source_id": "crm", "operation_id": "get_customer", "name": "get_customer",
             "method": "GET", "path": "/customers/{id}", "tags": ["read-only"],
             "label_ids": ["l-pii", "l-new"], "available_in_states": ["research", "analysis"]},
            {"source_id": "crm", "operation_id": "delete_customer", "name": "delete_customer",
             "method": "DELETE", "path": "/customers/{id}", "tags": ["dangerous"], "enabled": false},
            {"source_id": "crm", "operation_id": "spawn_agents", "name": "spawn_agents",
             "tags": ["coordination"], "available_in_states": ["*"]},
            {"source_id": "crm", "operation_id": "old_search", "name": "old_search",
             "method": "GET", "deprecated": true},
            {"source_id": "off", "operation_id": "ping", "name": "ping", "method": "GET"}
        ],
        "groups": groups,
        "policies": policies
    }))
    .expect("test catalog parses");
    catalog.normalize();
    catalog
}

use crate::domain::claims::claims_of as claims;

fn ids(snapshot: &Snapshot, claims_value: Value, options: &ManifestOptions) -> Vec<String> {
    snapshot
        .manifest(&claims(claims_value), options)
        .tool_ids()
        .map(str::to_owned)
        .collect()
}

fn everyone(group_ids: &[&str]) -> Value {
    json!([{"id": "p", "name": "p", "claim_matchers": [{"json_path": "sub", "operator": "exists"}],
            "allowed_group_ids": group_ids}])
}

fn options_with(include_disabled: bool) -> ManifestOptions {
    ManifestOptions {
        include_disabled,
        ..ManifestOptions::default()
    }
}

#[test]
fn selector_criteria_table() {
    let all = options_with(true);
    let cases: Vec<(&str, Value, &[&str])> = vec![
        (
            "empty selector matches every tool",
            json!([{}]),
            &[
                "billing:create_invoice",
                "billing:list_invoices",
                "billing:refund",
                "crm:delete_customer",
                "crm:get_customer",
                "crm:old_search",
                "crm:spawn_agents",
                "off:ping",
            ],
        ),
        (
            "source_pattern matches the source name, not id, ignoring case",
            json!([{"source_pattern": "crm-*"}]),
            &[
                "crm:delete_customer",
                "crm:get_customer",
                "crm:old_search",
                "crm:spawn_agents",
            ],
        ),
        (
            "source_pattern does not match the source id",
            json!([{"source_pattern": "billing"}]),
            &[],
        ),
        (
            "name_pattern glob",
            json!([{"name_pattern": "*_customer"}]),
            &["crm:delete_customer", "crm:get_customer"],
        ),
        (
            "name_pattern regex matches the whole name",
            json!([{"name_pattern": "regex:(list|create)_.*"}]),
            &["billing:create_invoice", "billing:list_invoices"],
        ),
        (
            "path_pattern: * crosses slashes",
            json!([{"path_pattern": "/customers*"}]),
            &["crm:delete_customer", "crm:get_customer"],
        ),
        (
            "path_pattern does not match tools without a path",
            json!([{"path_pattern": "/*"}]),
            &[
                "billing:create_invoice",
                "billing:list_invoices",
                "billing:refund",
                "crm:delete_customer",
                "crm:get_customer",
            ],
        ),
        (
            "empty path_pattern is not applied",
            json!([{"path_pattern": "", "source_pattern": "legacy"}]),
            &["off:ping"],
        ),
        (
            "method_pattern ignores case",
            json!([{"method_pattern": "get"}]),
            &[
                "billing:list_invoices",
                "crm:get_customer",
                "crm:old_search",
                "off:ping",
            ],
        ),
        (
            "method_pattern alternatives",
            json!([{"method_pattern": "{POST,DELETE}"}]),
            &[
                "billing:create_invoice",
                "billing:refund",
                "crm:delete_customer",
            ],
        ),
        (
            "required_tags: all present",
            json!([{"required_tags": ["billing", "dangerous"]}]),
            &["billing:refund"],
        ),
        (
            "required_tags are case-sensitive",
            json!([{"required_tags": ["Billing"]}]),
            &[],
        ),
        (
            "excluded_tags: none present",
            json!([{"source_pattern": "billing-api", "excluded_tags": ["dangerous"]}]),
            &["billing:create_invoice", "billing:list_invoices"],
        ),
        (
            "required_label_ids: all present",
            json!([{"required_label_ids": ["l-pii", "l-new"]}]),
            &["crm:get_customer"],
        ),
        (
            "criteria within a selector AND",
            json!([{"source_pattern": "billing-api", "method_pattern": "POST", "name_pattern": "c*"}]),
            &["billing:create_invoice"],
        ),
        (
            "selectors AND across each other",
            json!([{"method_pattern": "GET"}, {"required_tags": ["read-only"]}, {"source_pattern": "crm*"}]),
            &["crm:get_customer"],
        ),
    ];
    for (name, selectors, expected) in cases {
        let catalog = catalog(
            json!([{"id": "g", "name": "g", "selectors": selectors}]),
            everyone(&["g"]),
        );
        let snapshot = Snapshot::compile(catalog, 1).expect("compiles");
        assert_eq!(
            ids(&snapshot, json!({"sub": "a"}), &all),
            expected,
            "{name}"
        );
    }
}

#[test]
fn group_membership_table() {
    let all = options_with(true);
    let cases: Vec<(&str, Value, &[&str])> = vec![
        (
            "group without selectors adds nothing by selection",
            json!({"explicit_tool_ids": ["billing:refund"]}),
            &["billing:refund"],
        ),
        (
            "explicit additions union with selectors",
            json!({"selectors": [{"method_pattern": "DELETE"}], "explicit_tool_ids": ["billing:refund"]}),
            &["billing:refund", "crm:delete_customer"],
        ),
        (
            "exclusion beats a selector match",
            json!({"selectors": [{"source_pattern": "billing-api"}], "excluded_tool_ids": ["billing:refund"]}),
            &["billing:create_invoice", "billing:list_invoices"],
        ),
        (
            "exclusion beats an explicit addition",
            json!({"explicit_tool_ids": ["billing:refund", "off:ping"], "excluded_tool_ids": ["billing:refund"]}),
            &["off:ping"],
        ),
        (
            "explicit ids of tools that do not exist add nothing",
            json!({"explicit_tool_ids": ["nope:nope", "off:ping"]}),
            &["off:ping"],
        ),
        (
            "inactive group has no members",
            json!({"active": false, "selectors": [{}], "explicit_tool_ids": ["off:ping"]}),
            &[],
        ),
    ];
    for (name, group, expected) in cases {
        let mut group = group;
        group["id"] = json!("g");
        group["name"] = json!("g");
        let catalog = catalog(json!([group]), everyone(&["g"]));
        let snapshot = Snapshot::compile(catalog, 1).expect("compiles");
        assert_eq!(
            ids(&snapshot, json!({"sub": "a"}), &all),
            expected,
            "{name}"
        );
    }
}

/// Groups used by the policy tables: `reads` (GETs), `billing`, `coordination`, `dangerous`.
fn policy_groups() -> Value {
    json!([
        {"id": "reads", "name": "reads", "selectors": [{"method_pattern": "GET"}]},
        {"id": "billing", "name": "billing", "selectors": [{"source_pattern": "billing-api"}]},
        {"id": "coordination", "name": "coordination", "explicit_tool_ids": ["crm:spawn_agents"]},
        {"id": "dangerous", "name": "dangerous", "selectors": [{"required_tags": ["dangerous"]}]},
        {"id": "off", "name": "off", "active": false, "selectors": [{}]}
    ])
}

fn policy(id: &str, priority: i64, matchers: Value, allow: &[&str], deny: &[&str]) -> Value {
    json!({"id": id, "name": id, "priority": priority, "claim_matchers": matchers,
           "allowed_group_ids": allow, "denied_group_ids": deny})
}

#[test]
fn policy_priority_and_deny_table() {
    let sub = json!([{"json_path": "sub", "operator": "exists"}]);
    let cases: Vec<(&str, Vec<Value>, &[&str])> = vec![
        (
            "no matching policy: empty manifest",
            vec![policy(
                "p",
                0,
                json!([{"json_path": "x", "operator": "exists"}]),
                &["reads"],
                &[],
            )],
            &[],
        ),
        (
            "all matchers must hold",
            vec![policy(
                "p",
                0,
                json!([{"json_path": "sub", "operator": "exists"},
                                      {"json_path": "x", "operator": "exists"}]),
                &["reads"],
                &[],
            )],
            &[],
        ),
        (
            "union across matching policies",
            vec![
                policy("a", 0, sub.clone(), &["reads"], &[]),
                policy("b", 5, sub.clone(), &["coordination"], &[]),
            ],
            &[
                "billing:list_invoices",
                "crm:get_customer",
                "crm:spawn_agents",
            ],
        ),
        (
            "higher-priority deny beats a lower allow",
            vec![
                policy("a", 1, sub.clone(), &["billing"], &[]),
                policy("d", 2, sub.clone(), &[], &["dangerous"]),
            ],
            &["billing:create_invoice", "billing:list_invoices"],
        ),
        (
            "higher-priority allow beats a lower deny",
            vec![
                policy("a", 3, sub.clone(), &["billing"], &[]),
                policy("d", 2, sub.clone(), &[], &["dangerous"]),
            ],
            &[
                "billing:create_invoice",
                "billing:list_invoices",
                "billing:refund",
            ],
        ),
        (
            "deny wins a priority tie",
            vec![
                policy("a", 2, sub.clone(), &["billing"], &[]),
                policy("d", 2, sub.clone(), &[], &["dangerous"]),
            ],
            &["billing:create_invoice", "billing:list_invoices"],
        ),
        (
            "one policy that allows and denies the same tool denies it",
            vec![policy("a", 0, sub.clone(), &["billing"], &["dangerous"])],
            &["billing:create_invoice", "billing:list_invoices"],
        ),
        (
            "deny only covers the denied group's tools",
            vec![
                policy("d", 9, sub.clone(), &[], &["coordination"]),
                policy("a", 0, sub.clone(), &["reads"], &[]),
            ],
            &["billing:list_invoices", "crm:get_customer"],
        ),
        (
            "a non-matching deny changes nothing",
            vec![
                policy("a", 0, sub.clone(), &["billing"], &[]),
                policy(
                    "d",
                    9,
                    json!([{"json_path": "x", "operator": "exists"}]),
                    &[],
                    &["billing"],
                ),
            ],
            &[
                "billing:create_invoice",
                "billing:list_invoices",
                "billing:refund",
            ],
        ),
        (
            "inactive policies take no part",
            vec![{
                let mut p = policy("a", 0, sub.clone(), &["reads"], &[]);
                p["active"] = json!(false);
                p
            }],
            &[],
        ),
        (
            "unknown and inactive groups contribute nothing",
            vec![policy("a", 0, sub.clone(), &["nope", "off"], &[])],
            &[],
        ),
        (
            "a deny through an inactive group denies nothing",
            vec![
                policy("a", 0, sub.clone(), &["coordination"], &[]),
                policy("d", 5, sub.clone(), &[], &["off"]),
            ],
            &["crm:spawn_agents"],
        ),
        (
            "negative priorities order below zero",
            vec![
                policy("a", 0, sub.clone(), &["coordination"], &[]),
                policy("d", -1, sub.clone(), &[], &["coordination"]),
            ],
            &["crm:spawn_agents"],
        ),
    ];
    for (name, policies, expected) in cases {
        let snapshot = Snapshot::compile(catalog(policy_groups(), Value::Array(policies)), 1)
            .expect("compiles");
        assert_eq!(
            ids(&snapshot, json!({"sub": "a"}), &ManifestOptions::default()),
            expected,
            "{name}"
        );
    }
}

#[test]
fn sub_agent_restriction_example_of_the_spec() {
    let policies = json!([
        policy(
            "base",
            0,
            json!([{"json_path": "sub", "operator": "exists"}]),
            &["coordination", "reads"],
            &[]
        ),
        policy(
            "coordination-deny",
            10,
            json!([{"json_path": "depth", "operator": "gte", "value": 1}]),
            &[],
            &["coordination"]
        ),
        policy(
            "delegation-opt-in",
            20,
            json!([{"json_path": "depth", "operator": "lt", "value": 2},
                                               {"json_path": "delegation", "operator": "exists"}]),
            &["coordination"],
            &[]
        ),
    ]);
    let snapshot = Snapshot::compile(catalog(policy_groups(), policies), 1).expect("compiles");
    let has_spawn = |claims_value: Value| {
        ids(&snapshot, claims_value, &ManifestOptions::default())
            .contains(&"crm:spawn_agents".to_owned())
    };
    assert!(
        has_spawn(json!({"sub": "root", "depth": 0})),
        "top-level agent"
    );
    assert!(
        has_spawn(json!({"sub": "a", "depth": 1, "delegation": true})),
        "depth 1 with delegation"
    );
    assert!(
        !has_spawn(json!({"sub": "a", "depth": 1})),
        "depth 1 without delegation"
    );
    assert!(
        !has_spawn(json!({"sub": "a", "depth": 2, "delegation": true})),
        "depth 2"
    );
    // Whatever else grants it: the reads group still comes through.
    assert!(
        ids(
            &snapshot,
            json!({"sub": "a", "depth": 2}),
            &ManifestOptions::default()
        )
        .contains(&"crm:get_customer".to_owned())
    );
}

/// A token with many roles is read through a set of its strings (decide.rs); the answers are
/// those of a scan: a role near the end matches, an absent one does not, `not_contains` and
/// `in` agree, and an array with a non-string element is still read element by element.
#[test]
fn long_role_arrays_match_as_short_ones_do() {
    let policy = |id: &str, operator: &str, value: Value, group: &str| {
        json!({"id": id, "name": id, "claim_matchers": [
            {"json_path": "roles", "operator": operator, "value": value}
        ], "allowed_group_ids": [group]})
    };
    let snapshot = Snapshot::compile(
        catalog(
            json!([
                {"id": "g-read", "name": "read", "selectors": [{"required_tags": ["read-only"]}]},
                {"id": "g-bill", "name": "bill", "selectors": [{"source_pattern": "billing*"}]},
                {"id": "g-coord", "name": "coord", "selectors": [{"required_tags": ["coordination"]}]}
            ]),
            json!([
                policy("p1", "contains", json!("role-39"), "g-read"),
                policy("p2", "not_contains", json!("role-40"), "g-bill"),
                policy("p3", "in", json!(["x", "role-7"]), "g-coord"),
            ]),
        ),
        1,
    )
    .expect("compiles");
    let roles: Vec<Value> = (0..40).map(|i| json!(format!("role-{i}"))).collect();
    let all = ids(
        &snapshot,
        json!({"sub": "a", "roles": roles}),
        &ManifestOptions::default(),
    );
    assert_eq!(
        all,
        [
            "billing:create_invoice",
            "billing:list_invoices",
            "billing:refund",
            "crm:get_customer",
            "crm:spawn_agents"
        ]
    );
    let mut with_forty = roles.clone();
    with_forty.push(json!("role-40"));
    with_forty.retain(|role| role != "role-39" && role != "role-7");
    with_forty.push(json!(7));
    let fewer = ids(
        &snapshot,
        json!({"sub": "a", "roles": with_forty}),
        &ManifestOptions::default(),
    );
    assert!(fewer.is_empty(), "{fewer:?}");
}

/// Entries' group lists are the same whether written from each tool's memberships (the usual
/// path) or from each granted group's members (catalogs with too many memberships to keep),
/// for every set of granted groups over a catalog whose groups overlap.
#[test]
fn both_ways_of_listing_entry_groups_agree() {
    use super::entries_by_tool;
    use crate::domain::memberships::Memberships;
    let snapshot = Snapshot::compile(
        catalog(
            json!([
                {"id": "g-a", "name": "a", "selectors": [{"required_tags": ["billing"]}]},
                {"id": "g-b", "name": "b", "selectors": [{}]},
                {"id": "g-c", "name": "c", "explicit_tool_ids": ["crm:get_customer", "billing:refund"]},
                {"id": "g-d", "name": "d", "selectors": [{"method_pattern": "GET"}]}
            ]),
            json!([]),
        ),
        1,
    )
    .expect("compiles");
    let members = || snapshot.groups.iter().map(|group| &group.members);
    let memberships =
        Memberships::of(members(), snapshot.tools.len(), usize::MAX).expect("within any bound");
    assert!(
        Memberships::of(members(), snapshot.tools.len(), 3).is_none(),
        "past the bound"
    );
    let group_count = snapshot.groups.len();
    for mask in 0..(1u32 << group_count) {
        let granted: Vec<u32> = (0..group_count as u32)
            .filter(|g| mask & (1 << g) != 0)
            .collect();
        let mut set = fixedbitset::FixedBitSet::with_capacity(group_count);
        set.extend(granted.iter().map(|&g| g as usize));
        let mut result = fixedbitset::FixedBitSet::with_capacity(snapshot.tools.len());
        for &g in &granted {
            result.union_with(&snapshot.groups[g as usize].members);
        }
        assert_eq!(
            entries_by_tool(&memberships, &result, &set),
            snapshot.entries_by_group(&result, &granted),
            "granted {granted:?}"
        );
    }
}
