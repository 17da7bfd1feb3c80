//! The decision service: membership in the manifest, one evaluation per subject and scope,
//! semantics, reasons, search pages.

use serde_json::json;

use super::*;
use crate::domain::model::Catalog;

fn snapshot(revision: u64) -> Snapshot {
    let mut catalog: Catalog = serde_json::from_value(json!({
        "sources": [{"id": "s", "name": "s", "type": "manual"}],
        "tools": [
            {"source_id": "s", "operation_id": "read", "name": "read", "method": "GET",
             "available_in_states": ["research"]},
            {"source_id": "s", "operation_id": "write", "name": "write", "method": "POST"},
            {"source_id": "s", "operation_id": "drop", "name": "drop", "method": "DELETE"},
            {"source_id": "s", "operation_id": "off", "name": "off", "method": "GET", "enabled": false}],
        "groups": [
            {"id": "g-all", "name": "all", "selectors": [{}]},
            {"id": "g-reads", "name": "reads", "selectors": [{"method_pattern": "GET"}]},
            {"id": "g-drop", "name": "drop", "explicit_tool_ids": ["s:drop"]}],
        "policies": [
            {"id": "p-staff", "name": "staff", "priority": 10, "allowed_group_ids": ["g-all"],
             "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "staff"}]},
            {"id": "p-readers", "name": "readers", "allowed_group_ids": ["g-reads"],
             "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": "reader"}]},
            {"id": "p-no-drop", "name": "no drop", "priority": 100, "denied_group_ids": ["g-drop"],
             "claim_matchers": [{"json_path": "depth", "operator": "gte", "value": 1}]}]
    }))
    .expect("catalog");
    catalog.normalize();
    catalog.sort_by_id();
    Snapshot::compile(catalog, revision).expect("compiles")
}

use crate::domain::claims::claims_of as claims;

fn ask<'q>(claims: &'q Claims, scope: &'q Scope, tool_id: &'q str) -> Question<'q> {
    Question {
        claims,
        scope,
        action: CALL,
        resource_type: TOOL,
        tool_id,
    }
}

fn decisions() -> Decisions {
    Decisions::new(Arc::new(AccessCache::new(1 << 20)), 1 << 20)
}

/// (hits, misses) of the evaluations kept.
fn lookups(decisions: &Decisions) -> (u64, u64) {
    let stats = decisions.evaluation_stats();
    (stats.hits, stats.misses)
}

fn permitted(answers: &[Answer]) -> Vec<bool> {
    answers.iter().map(|answer| answer.permitted).collect()
}

#[test]
fn a_decision_is_membership_in_the_manifest() {
    let snapshot = snapshot(1);
    let decisions = decisions();
    let tools = ["s:drop", "s:off", "s:read", "s:write", "s:ghost"];
    for value in [
        json!({"sub": "a", "roles": ["staff"]}),
        json!({"sub": "a", "roles": ["staff"], "depth": 1}),
        json!({"sub": "b", "roles": ["reader"]}),
        json!({"sub": "c"}),
    ] {
        let claims = claims(value);
        for scope in [
            Scope::default(),
            Scope {
                state: Some("research".into()),
                groups: None,
                pinned: None,
            },
            Scope {
                state: None,
                groups: Some(vec!["reads".into()]),
                pinned: None,
            },
        ] {
            let manifest = snapshot.manifest(&claims, &scope.options());
            let questions: Vec<Question<'_>> =
                tools.iter().map(|id| ask(&claims, &scope, id)).collect();
            let answers = decisions.decide(&snapshot, &questions, Semantic::ExecuteAll, false);
            let expected: Vec<bool> = tools
                .iter()
                .map(|id| manifest.groups_of(id).is_some())
                .collect();
            assert_eq!(permitted(&answers), expected, "{claims:?} {scope:?}");
        }
    }
}

#[test]
fn a_batch_about_one_subject_costs_one_evaluation() {
    let snapshot = snapshot(1);
    let decisions = decisions();
    let staff = claims(json!({"sub": "a", "roles": ["staff"]}));
    let scope = Scope::default();
    let ids: Vec<String> = (0..100).map(|i| format!("s:tool{i}")).collect();
    let questions: Vec<Question<'_>> = ids.iter().map(|id| ask(&staff, &scope, id)).collect();
    decisions.decide(&snapshot, &questions, Semantic::ExecuteAll, false);
    assert_eq!(lookups(&decisions), (0, 1), "one lookup, one evaluation");
    // Equal claims given separately (not the same reference) share the evaluation too.
    let copy = staff.clone();
    let questions = [ask(&staff, &scope, "s:read"), ask(&copy, &scope, "s:read")];
    decisions.decide(&snapshot, &questions, Semantic::ExecuteAll, true);
    assert_eq!(lookups(&decisions), (1, 1), "then a cache hit");
    // Another subject, another scope: one more each.
    let reader = claims(json!({"sub": "b", "roles": ["reader"]}));
    let research = Scope {
        state: Some("research".into()),
        groups: None,
        pinned: None,
    };
    let questions = [
        ask(&staff, &research, "s:read"),
        ask(&reader, &scope, "s:read"),
        ask(&reader, &scope, "s:write"),
    ];
    decisions.decide(&snapshot, &questions, Semantic::ExecuteAll, false);
    assert_eq!(lookups(&decisions), (1, 3));
}

#[test]
fn claims_that_differ_only_where_no_policy_reads_share_an_evaluation() {
    let first = snapshot(1);
    let decisions = decisions();
    let scope = Scope::default();
    let token = claims(json!({"sub": "a", "roles": ["staff"], "exp": 1}));
    let refreshed = claims(json!({"sub": "a", "roles": ["staff"], "exp": 2}));
    decisions.decide(
        &first,
        &[ask(&token, &scope, "s:read")],
        Semantic::ExecuteAll,
        false,
    );
    decisions.decide(
        &first,
        &[ask(&refreshed, &scope, "s:read")],
        Semantic::ExecuteAll,
        false,
    );
    assert_eq!(lookups(&decisions), (1, 1));
    // A new revision evaluates again: nothing of the old one is used.
    let newer = snapshot(2);
    decisions.decide(
        &newer,
        &[ask(&token, &scope, "s:read")],
        Semantic::ExecuteAll,
        false,
    );
    assert_eq!(lookups(&decisions), (1, 2));
}

#[test]
fn claims_that_differ_where_policies_read_but_reach_the_same_decision_share_an_evaluation() {
    let snapshot = snapshot(1);
    let decisions = decisions();
    let scope = Scope::default();
    let staff = claims(json!({"sub": "a", "roles": ["staff"]}));
    let also_staff = claims(json!({"sub": "a", "roles": ["staff", "guest"]}));
    for claims in [&staff, &also_staff] {
        decisions.decide(
            &snapshot,
            &[ask(claims, &scope, "s:read")],
            Semantic::ExecuteAll,
            false,
        );
    }
    let access = decisions.access.stats();
    assert_eq!((access.hits, access.misses), (0, 2), "two claims keys");
    assert_eq!(lookups(&decisions), (1, 1), "one decision, one evaluation");
}

#[test]
fn semantics_stop_after_the_first_deny_or_permit() {
    let snapshot = snapshot(1);
    let decisions = decisions();
    let reader = claims(json!({"sub": "b", "roles": ["reader"]}));
    let scope = Scope::default();
    let questions: Vec<Question<'_>> = ["s:read", "s:write", "s:read", "s:drop"]
        .iter()
        .map(|id| ask(&reader, &scope, id))
        .collect();
    let cases = [
        (Semantic::ExecuteAll, vec![true, false, true, false]),
        (Semantic::DenyOnFirstDeny, vec![true, false]),
        (Semantic::PermitOnFirstPermit, vec![true]),
    ];
    for (semantic, expected) in cases {
        let answers = decisions.decide(&snapshot, &questions, semantic, false);
        assert_eq!(permitted(&answers), expected, "{semantic:?}");
    }
    let all_denied = [
        ask(&reader, &scope, "s:write"),
        ask(&reader, &scope, "s:drop"),
    ];
    let answers = decisions.decide(&snapshot, &all_denied, Semantic::PermitOnFirstPermit, false);
    assert_eq!(
        permitted(&answers),
        [false, false],
        "no permit: all answered"
    );
    for name in Semantic::NAMES {
        assert!(Semantic::parse(name).is_some(), "{name}");
    }
    assert_eq!(Semantic::parse("all"), None);
}

#[test]
fn other_actions_and_resource_types_are_denied_with_a_reason() {
    let snapshot = snapshot(1);
    let decisions = decisions();
    let staff = claims(json!({"sub": "a", "roles": ["staff"]}));
    let scope = Scope::default();
    let read = ask(&staff, &scope, "s:read");
    let questions = [
        Question {
            action: "list",
            ..read
        },
        Question {
            resource_type: "document",
            ..read
        },
        read,
    ];
    let answers = decisions.decide(&snapshot, &questions, Semantic::ExecuteAll, true);
    assert_eq!(permitted(&answers), [false, false, true]);
    let codes: Vec<&str> = answers
        .iter()
        .map(|answer| answer.reason.as_ref().expect("explained").code.as_str())
        .collect();
    assert_eq!(
        codes,
        ["unsupported_action", "unsupported_resource_type", "granted"]
    );
    assert_eq!(lookups(&decisions), (0, 1), "only the call was evaluated");
    let plain = decisions.decide(&snapshot, &questions, Semantic::ExecuteAll, false);
    assert!(plain.iter().all(|answer| answer.reason.is_none()));
}

#[test]
fn reasons_name_the_deciding_policy_and_groups() {
    let snapshot = snapshot(1);
    let decisions = decisions();
    let deep = claims(json!({"sub": "a", "roles": ["staff"], "depth": 2}));
    let research = Scope {
        state: Some("x".into()),
        groups: None,
        pinned: None,
    };
    let reason = |scope: &Scope, tool: &str| {
        decisions.decide(
            &snapshot,
            &[ask(&deep, scope, tool)],
            Semantic::ExecuteAll,
            true,
        )[0]
        .reason
        .clone()
        .expect("explained")
    };
    let denied = reason(&Scope::default(), "s:drop");
    assert_eq!(denied.code.as_str(), "denied");
    assert_eq!(denied.policy_id.as_deref(), Some("p-no-drop"));
    assert_eq!(denied.priority, Some(100));
    assert_eq!(denied.group_ids, ["g-drop"]);
    assert_eq!(
        denied.message,
        "denied by policy 'p-no-drop' (priority 100) through group 'g-drop'"
    );
    let granted = reason(&Scope::default(), "s:write");
    assert_eq!(
        granted.message,
        "granted by policy 'p-staff' (priority 10) through group 'g-all'"
    );
    let hidden = reason(&Scope::default(), "s:off");
    assert_eq!(
        (hidden.code.as_str(), hidden.detail),
        ("hidden", Some("disabled"))
    );
    let narrowed = reason(&research, "s:read");
    assert_eq!(
        (narrowed.code.as_str(), narrowed.detail),
        ("narrowed", Some("state"))
    );
    assert!(narrowed.message.ends_with("not available in the state 'x'"));
    assert_eq!(
        reason(&Scope::default(), "s:nope").code.as_str(),
        "unknown_tool"
    );
    let nobody = claims(json!({"sub": "z"}));
    let answer = &decisions.decide(
        &snapshot,
        &[ask(&nobody, &Scope::default(), "s:read")],
        Semantic::ExecuteAll,
        true,
    )[0];
    assert_eq!(
        answer.reason.as_ref().expect("explained").code,
        ReasonCode::NotGranted
    );
}

#[test]
fn search_pages_through_the_manifest_in_id_order() {
    let snapshot = snapshot(1);
    let decisions = decisions();
    let staff = claims(json!({"sub": "a", "roles": ["staff"]}));
    let scope = Scope::default();
    let page = |after: Option<&str>, limit| {
        decisions.search(
            &snapshot,
            &Search {
                claims: &staff,
                scope: &scope,
                action: CALL,
                resource_type: TOOL,
                after,
                limit,
            },
        )
    };
    let first = page(None, 2);
    assert_eq!(first.tool_ids, ["s:drop", "s:read"]);
    assert!(first.more);
    assert_eq!(first.total, 3);
    let second = page(Some("s:read"), 2);
    assert_eq!(second.tool_ids, ["s:write"]);
    assert!(!second.more);
    let exact = page(None, 3);
    assert!(!exact.more, "a full last page says there is no more");
    let other = decisions.search(
        &snapshot,
        &Search {
            claims: &staff,
            scope: &scope,
            action: "delete",
            resource_type: TOOL,
            after: None,
            limit: 10,
        },
    );
    assert_eq!((other.tool_ids.len(), other.total), (0, 0));
}
