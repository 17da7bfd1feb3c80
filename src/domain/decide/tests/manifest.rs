//! Tables for what shapes a manifest once policies have decided: visibility, request-level
//! narrowing, warnings, the `groups` of entries, the etag, and explanations.

use serde_json::{Value, json};

use super::{catalog, claims, everyone, ids, options_with, policy, policy_groups};
use crate::domain::manifest::ManifestOptions;
use crate::domain::snapshot::Snapshot;

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
            tool("billing:list_invoices").decision.as_str(),
            tool("billing:list_invoices").deciding_policy.as_str()
        ),
        ("granted", "allow")
    );
    let delete = tool("crm:delete_customer");
    assert_eq!(
        (
            delete.decision.as_str(),
            delete.deciding_policy.as_str(),
            delete.priority
        ),
        ("denied", "deny", 5)
    );
    assert_eq!(
        delete.hidden_because,
        Some(crate::domain::explain::Hidden::Disabled)
    );
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
