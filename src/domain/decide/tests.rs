//! One table per rule of SEMANTICS.md sections 4–7. Each case states a catalog fragment, the
//! claims and options, and the exact tool ids expected.

use serde_json::{Value, json};

use crate::domain::claims::Claims;
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

fn claims(value: Value) -> Claims {
    value.as_object().expect("claims are an object").clone()
}

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

#[test]
fn visibility_table() {
    let snapshot = Snapshot::compile(
        catalog(
            json!([{"id": "g", "name": "g", "selectors": [{}]}]),
            everyone(&["g"]),
        ),
        1,
    )
    .expect("compiles");
    let visible = ids(&snapshot, json!({"sub": "a"}), &ManifestOptions::default());
    assert_eq!(
        visible,
        [
            "billing:create_invoice",
            "billing:list_invoices",
            "billing:refund",
            "crm:get_customer",
            "crm:spawn_agents"
        ],
        "disabled, deprecated and disabled-source tools are hidden"
    );
    let preview = snapshot.manifest(&claims(json!({"sub": "a"})), &options_with(true));
    let all: Vec<&str> = preview.tool_ids().collect();
    assert_eq!(
        all.len(),
        8,
        "admin preview shows every granted tool: {all:?}"
    );
    let body: Value = serde_json::from_slice(&preview.to_json()).expect("json");
    let entry = |id: &str| {
        body["data"]
            .as_array()
            .expect("data")
            .iter()
            .find(|e| e["tool_id"] == id)
            .cloned()
    };
    assert_eq!(
        entry("crm:delete_customer").expect("present")["enabled"],
        json!(false)
    );
    assert_eq!(
        entry("crm:old_search").expect("present")["deprecated"],
        json!(true)
    );
    assert_eq!(
        entry("off:ping").expect("present")["enabled"],
        json!(true),
        "its source is what is off"
    );
    let plain: Value = serde_json::from_slice(
        &snapshot
            .manifest(&claims(json!({"sub": "a"})), &ManifestOptions::default())
            .to_json(),
    )
    .expect("json");
    assert!(
        plain["data"][0].get("enabled").is_none(),
        "agents never see enabled/deprecated"
    );
}

#[test]
fn narrowing_table() {
    let policies = json!([policy(
        "p",
        0,
        json!([{"json_path": "sub", "operator": "exists"}]),
        &["reads", "coordination"],
        &[]
    )]);
    let snapshot = Snapshot::compile(catalog(policy_groups(), policies), 1).expect("compiles");
    let list = |text: &str| Some(ManifestOptions::list(text));
    let cases: Vec<(&str, ManifestOptions, &[&str])> = vec![
        (
            "no narrowing",
            ManifestOptions::default(),
            &[
                "billing:list_invoices",
                "crm:get_customer",
                "crm:spawn_agents",
            ],
        ),
        (
            "group by id",
            ManifestOptions {
                groups: list("coordination"),
                ..Default::default()
            },
            &["crm:spawn_agents"],
        ),
        (
            "group by name, several",
            ManifestOptions {
                groups: list("reads, coordination"),
                ..Default::default()
            },
            &[
                "billing:list_invoices",
                "crm:get_customer",
                "crm:spawn_agents",
            ],
        ),
        (
            "group *",
            ManifestOptions {
                groups: list("*"),
                ..Default::default()
            },
            &[
                "billing:list_invoices",
                "crm:get_customer",
                "crm:spawn_agents",
            ],
        ),
        (
            "group empty keeps none",
            ManifestOptions {
                groups: list(""),
                ..Default::default()
            },
            &[],
        ),
        (
            "group not granted gives nothing",
            ManifestOptions {
                groups: list("billing"),
                ..Default::default()
            },
            &[],
        ),
        (
            "state keeps tools without states and those listing it or *",
            ManifestOptions {
                state: Some("research".into()),
                ..Default::default()
            },
            &[
                "billing:list_invoices",
                "crm:get_customer",
                "crm:spawn_agents",
            ],
        ),
        (
            "state not listed removes the tool",
            ManifestOptions {
                state: Some("undefined".into()),
                ..Default::default()
            },
            &["billing:list_invoices", "crm:spawn_agents"],
        ),
        (
            "tools exact names",
            ManifestOptions {
                tools: list("spawn_agents,get_customer"),
                ..Default::default()
            },
            &["crm:get_customer", "crm:spawn_agents"],
        ),
        (
            "tools glob",
            ManifestOptions {
                tools: list("*_customer"),
                ..Default::default()
            },
            &["crm:get_customer"],
        ),
        (
            "tools globs are case-sensitive",
            ManifestOptions {
                tools: list("GET_*"),
                ..Default::default()
            },
            &[],
        ),
        (
            "tools * keeps all",
            ManifestOptions {
                tools: list("*"),
                ..Default::default()
            },
            &[
                "billing:list_invoices",
                "crm:get_customer",
                "crm:spawn_agents",
            ],
        ),
        (
            "narrowing combines",
            ManifestOptions {
                groups: list("reads"),
                state: Some("undefined".into()),
                tools: list("*"),
                ..Default::default()
            },
            &["billing:list_invoices"],
        ),
        (
            "tools cannot widen past the grant",
            ManifestOptions {
                tools: list("refund"),
                ..Default::default()
            },
            &[],
        ),
    ];
    for (name, options, expected) in cases {
        assert_eq!(
            ids(&snapshot, json!({"sub": "a"}), &options),
            expected,
            "{name}"
        );
    }
}

#[test]
fn unknown_plain_tool_names_are_warnings_not_errors() {
    let policies = json!([policy(
        "p",
        0,
        json!([{"json_path": "sub", "operator": "exists"}]),
        &["reads"],
        &[]
    )]);
    let snapshot = Snapshot::compile(catalog(policy_groups(), policies), 1).expect("compiles");
    let options = ManifestOptions {
        tools: Some(ManifestOptions::list("get_customer,nope,refund,zzz_*")),
        ..Default::default()
    };
    let manifest = snapshot.manifest(&claims(json!({"sub": "a"})), &options);
    assert_eq!(
        manifest.tool_ids().collect::<Vec<_>>(),
        ["crm:get_customer"]
    );
    assert_eq!(
        manifest.warnings(),
        [
            "tools: 'nope' matches no tool available to this agent",
            "tools: 'refund' matches no tool available to this agent"
        ],
        "plain names only; globs that match nothing are not warned about"
    );
}

#[test]
fn entries_carry_the_granted_groups_that_contain_them_sorted() {
    let policies = json!([
        policy(
            "a",
            0,
            json!([{"json_path": "sub", "operator": "exists"}]),
            &["reads", "billing"],
            &[]
        ),
        policy(
            "b",
            0,
            json!([{"json_path": "nope", "operator": "exists"}]),
            &["dangerous"],
            &[]
        ),
    ]);
    let snapshot = Snapshot::compile(catalog(policy_groups(), policies), 1).expect("compiles");
    let manifest = snapshot.manifest(&claims(json!({"sub": "a"})), &ManifestOptions::default());
    assert_eq!(
        manifest.groups_of("billing:list_invoices"),
        Some(vec!["billing", "reads"])
    );
    assert_eq!(
        manifest.groups_of("billing:refund"),
        Some(vec!["billing"]),
        "dangerous was not granted"
    );
    assert_eq!(manifest.groups_of("crm:get_customer"), Some(vec!["reads"]));
}

#[test]
fn body_is_deterministic_and_etag_ignores_volatile_claims_and_unrelated_changes() {
    let policies = everyone(&["reads"]);
    let snapshot =
        Snapshot::compile(catalog(policy_groups(), policies.clone()), 7).expect("compiles");
    let a = snapshot.manifest(
        &claims(json!({"sub": "a", "exp": 1, "iat": 0})),
        &ManifestOptions::default(),
    );
    let b = snapshot.manifest(
        &claims(json!({"iat": 5, "sub": "a", "exp": 99})),
        &ManifestOptions::default(),
    );
    assert_eq!(a.to_json(), b.to_json());
    assert_eq!(a.revision(), 7);
    let body: Value = serde_json::from_slice(&a.to_json()).expect("valid json");
    assert_eq!(body["count"], json!(2));
    assert_eq!(body["revision"], json!(7));
    assert_eq!(body["etag"], json!(a.etag()));
    assert!(a.etag().starts_with('"') && a.etag().ends_with('"') && a.etag().len() == 34);

    // An unrelated change (a new tool nobody is granted) keeps the etag; the revision moves.
    let mut unrelated = catalog(policy_groups(), policies.clone());
    unrelated.tools[1].description = "changed, but not granted to this agent".into();
    let later = Snapshot::compile(unrelated, 8).expect("compiles");
    let c = later.manifest(&claims(json!({"sub": "a"})), &ManifestOptions::default());
    assert_eq!(c.etag(), a.etag());
    assert_ne!(c.to_json(), a.to_json(), "the revision is in the body");

    // A change to a granted tool changes the etag.
    let mut related = catalog(policy_groups(), policies);
    related.tools[0].description = "changed".into();
    let changed = Snapshot::compile(related, 9).expect("compiles");
    assert_ne!(
        changed
            .manifest(&claims(json!({"sub": "a"})), &ManifestOptions::default())
            .etag(),
        a.etag()
    );
    // Preview of the same tools is a different representation.
    assert_ne!(
        snapshot
            .manifest(&claims(json!({"sub": "a"})), &options_with(true))
            .etag(),
        a.etag()
    );
}

#[test]
fn explanation_names_failing_matchers_members_exclusions_and_deciders() {
    let groups = json!([
        {"id": "billing", "name": "billing", "selectors": [{"source_pattern": "billing-api"}],
         "explicit_tool_ids": ["crm:spawn_agents"], "excluded_tool_ids": ["billing:refund"]},
        {"id": "dangerous", "name": "dangerous", "selectors": [{"required_tags": ["dangerous"]}]}
    ]);
    let policies = json!([
        policy(
            "allow",
            1,
            json!([{"json_path": "sub", "operator": "exists"}]),
            &["billing"],
            &[]
        ),
        policy(
            "deny",
            5,
            json!([{"json_path": "sub", "operator": "exists"}]),
            &[],
            &["dangerous"]
        ),
        policy(
            "admins",
            9,
            json!([{"json_path": "sub", "operator": "exists"},
                                   {"json_path": "roles", "operator": "contains", "value": "admin"}]),
            &["dangerous"],
            &[]
        ),
    ]);
    let snapshot = Snapshot::compile(catalog(groups, policies), 1).expect("compiles");
    let explained = snapshot.explain(&claims(json!({"sub": "a"})), &ManifestOptions::default());
    let e = explained.explanation;
    let admins = e
        .policies
        .iter()
        .find(|p| p.policy_id == "admins")
        .expect("listed");
    assert!(!admins.matched);
    let failed = admins
        .failed_matcher
        .as_ref()
        .expect("has a failing matcher");
    assert_eq!(
        (
            failed.index,
            failed.json_path.as_str(),
            failed.claim_present
        ),
        (1, "roles", false)
    );
    assert_eq!(
        e.policies
            .iter()
            .map(|p| p.policy_id.as_str())
            .collect::<Vec<_>>(),
        ["admins", "deny", "allow"]
    );

    let billing = e
        .groups
        .iter()
        .find(|g| g.group_id == "billing")
        .expect("explained");
    assert_eq!(billing.allowed_by, ["allow"]);
    assert_eq!(billing.excluded, ["billing:refund"]);
    let spawn = billing
        .members
        .iter()
        .find(|m| m.tool_id == "crm:spawn_agents")
        .expect("member");
    assert_eq!(spawn.via, ["explicit"]);
    let list = billing
        .members
        .iter()
        .find(|m| m.tool_id == "billing:list_invoices")
        .expect("member");
    assert_eq!(list.via, ["selectors[0]"]);

    let tool = |id: &str| {
        e.tools
            .iter()
            .find(|t| t.tool_id == id)
            .expect("explained tool")
    };
    assert_eq!(
        (
            tool("billing:list_invoices").decision,
            tool("billing:list_invoices").deciding_policy.as_str()
        ),
        ("granted", "allow")
    );
    let delete = tool("crm:delete_customer");
    assert_eq!(
        (
            delete.decision,
            delete.deciding_policy.as_str(),
            delete.priority
        ),
        ("denied", "deny", 5)
    );
    assert_eq!(delete.hidden_because, Some("disabled"));
    assert!(!delete.in_manifest);
    assert!(tool("billing:list_invoices").in_manifest);
}

#[test]
fn group_members_endpoint_data() {
    let groups = json!([{"id": "g", "name": "g", "selectors": [{"method_pattern": "GET"}, {"required_tags": ["read-only"]}],
                         "explicit_tool_ids": ["billing:list_invoices", "off:ping"]}]);
    let snapshot = Snapshot::compile(catalog(groups, everyone(&["g"])), 1).expect("compiles");
    let members = snapshot.group_members("g").expect("group exists");
    let rows: Vec<(&str, Vec<&str>)> = members
        .iter()
        .map(|m| {
            (
                m.tool_id.as_str(),
                m.via.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (
                "billing:list_invoices",
                vec!["selectors[0]", "selectors[1]", "explicit"]
            ),
            ("crm:get_customer", vec!["selectors[0]", "selectors[1]"]),
            ("off:ping", vec!["explicit"]),
        ]
    );
    assert!(snapshot.group_members("nope").is_none());
}
