use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{Value, json};
use utoipa::PartialSchema;

use super::*;
use crate::domain::explain::{
    Explanation, FailedMatcher, GroupExplanation, GroupMember, PolicyExplanation, ToolExplanation,
};
use crate::domain::model::Catalog;

/// The keys `value` serialises to (every optional field must be set in it).
fn keys(value: &impl Serialize) -> BTreeSet<String> {
    match serde_json::to_value(value).expect("serialises") {
        Value::Object(map) => map.into_iter().map(|(key, _)| key).collect(),
        other => panic!("not an object: {other}"),
    }
}

/// The properties the mirror's schema declares.
fn properties<S: PartialSchema>() -> BTreeSet<String> {
    let schema = serde_json::to_value(S::schema()).expect("a schema serialises");
    schema["properties"]
        .as_object()
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default()
}

/// A catalog with every optional field of every entity set.
fn full_catalog() -> Catalog {
    let stamps = json!({"created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
                        "created_by": "a", "updated_by": "b"});
    let with = |mut value: Value| {
        for (key, stamp) in stamps.as_object().expect("an object") {
            value[key] = stamp.clone();
        }
        value
    };
    serde_json::from_value(json!({
        "sources": [with(json!({"id": "s", "name": "s", "type": "manual", "description": "d",
                                "enabled": false, "config": {"a": 1}}))],
        "tools": [with(json!({"id": "s:t", "source_id": "s", "operation_id": "t", "name": "t",
            "title": "T", "description": "d", "method": "GET", "path": "/t", "tags": ["x"],
            "label_ids": ["l"], "input_schema": {"type": "object"},
            "output_schema": {"type": "object"}, "enabled": false, "deprecated": true,
            "available_in_states": ["s"], "next_state": "n", "version": "1",
            "disabled_reason": "r", "service_config": {"k": "v"},
            "arguments": [{"name": "q", "type": "string", "description": "d"}],
            "imported": {"content_hash": "h", "name": "t", "description": "d",
                         "definition_hash": "dh", "definition": {"tool": {}},
                         "drift": {"upstream_hash": "u", "rejected": true}},
            "definition_hash": "dh"}))],
        "labels": [with(json!({"id": "l", "name": "l", "description": "d", "color": "#fff"}))],
        "groups": [with(json!({"id": "g", "name": "g", "description": "d", "active": false,
            "selectors": [{"source_pattern": "a", "name_pattern": "b", "path_pattern": "c",
                           "method_pattern": "d", "required_tags": ["e"], "excluded_tags": ["f"],
                           "required_label_ids": ["l"]}],
            "explicit_tool_ids": ["s:t"], "excluded_tool_ids": ["s:t"]}))],
        "policies": [with(json!({"id": "p", "name": "p", "description": "d", "priority": 1,
            "active": false, "claim_matchers": [{"json_path": "a", "operator": "equals",
                                                 "value": 1}],
            "allowed_group_ids": ["g"], "denied_group_ids": ["g"]}))]
    }))
    .expect("a full catalog parses")
}

#[test]
fn every_mirror_has_exactly_the_fields_of_its_model() {
    let catalog = full_catalog();
    let tool = &catalog.tools[0];
    let group = &catalog.groups[0];
    let policy = &catalog.policies[0];
    let member = GroupMember {
        tool_id: "s:t".into(),
        name: "t".into(),
        via: vec!["explicit".into()],
    };
    let membership = crate::domain::explain::ToolMembership {
        group_id: "g".into(),
        name: "g".into(),
        via: vec!["explicit".into()],
    };
    let failed = FailedMatcher {
        index: 0,
        json_path: "a".into(),
        operator: "equals".into(),
        claim_present: false,
    };
    let policy_explained = PolicyExplanation {
        policy_id: "p".into(),
        name: "p".into(),
        priority: 1,
        active: true,
        matched: false,
        failed_matcher: Some(failed.clone()),
    };
    let group_explained = GroupExplanation {
        group_id: "g".into(),
        name: "g".into(),
        active: true,
        allowed_by: vec![],
        denied_by: vec![],
        members: vec![member.clone()],
        excluded: vec![],
    };
    let tool_explained = ToolExplanation {
        tool_id: "s:t".into(),
        decision: crate::domain::explain::ToolDecision::Granted,
        priority: 1,
        deciding_policy: "p".into(),
        groups: vec![],
        visible: false,
        hidden_because: Some(crate::domain::explain::Hidden::Disabled),
        in_manifest: false,
    };
    let explanation = Explanation {
        policies: vec![policy_explained.clone()],
        groups: vec![group_explained.clone()],
        tools: vec![tool_explained.clone()],
        run: Some(crate::domain::explain::RunExplanation {
            run_id: Some("run_x".into()),
            state: Some("s".into()),
            run_pinned: vec![],
            run_state: vec![],
        }),
        delegation: Some(crate::domain::explain::DelegationExplanation {
            depth: 1,
            scopes: vec![vec!["tool:s:t".into()]],
            removed: vec![],
        }),
    };
    let revision: crate::domain::revision::Revision = serde_json::from_value(json!({
        "id": "r", "tool_id": "s:t", "source_id": "s", "kind": "renamed",
        "previous_tool_id": "s:o", "previous_hash": "a", "hash": "b", "diff": [],
        "findings": [{"rule": "hidden-unicode", "severity": "high", "path": "/tool", "excerpt": "x"}],
        "detected_at": "2026-01-01T00:00:00Z", "status": "approved", "decided_by": "a",
        "decided_at": "2026-01-01T00:00:00Z", "reason": "r", "acknowledged": ["hidden-unicode"],
        "definition": {"tool": {}},
        "proposed": {"operation_id": "t", "name": "t", "description": "d", "method": "MCP",
                     "path": "mcp://s/t", "input_schema": {}}
    }))
    .expect("a revision");
    let run_explained = explanation.run.clone().expect("a run");
    let pairs: [(&str, BTreeSet<String>, BTreeSet<String>); 21] = [
        ("Catalog", keys(&catalog), properties::<CatalogSchema>()),
        (
            "Source",
            keys(&catalog.sources[0]),
            properties::<SourceSchema>(),
        ),
        ("Tool", keys(tool), properties::<ToolSchema>()),
        (
            "ToolArgument",
            keys(&tool.arguments[0]),
            properties::<ToolArgumentSchema>(),
        ),
        (
            "Imported",
            keys(&tool.imported),
            properties::<ImportedSchema>(),
        ),
        (
            "Label",
            keys(&catalog.labels[0]),
            properties::<LabelSchema>(),
        ),
        ("ToolGroup", keys(group), properties::<ToolGroupSchema>()),
        (
            "Selector",
            keys(&group.selectors[0]),
            properties::<SelectorSchema>(),
        ),
        (
            "AccessPolicy",
            keys(policy),
            properties::<AccessPolicySchema>(),
        ),
        (
            "ClaimMatcher",
            keys(&policy.claim_matchers[0]),
            properties::<ClaimMatcherSchema>(),
        ),
        (
            "Explanation",
            keys(&explanation),
            properties::<ExplanationSchema>(),
        ),
        (
            "RunExplanation",
            keys(&run_explained),
            properties::<RunExplanationSchema>(),
        ),
        (
            "PolicyExplanation",
            keys(&policy_explained),
            properties::<PolicyExplanationSchema>(),
        ),
        (
            "FailedMatcher",
            keys(&failed),
            properties::<FailedMatcherSchema>(),
        ),
        (
            "GroupExplanation",
            keys(&group_explained),
            properties::<GroupExplanationSchema>(),
        ),
        (
            "GroupMember",
            keys(&member),
            properties::<GroupMemberSchema>(),
        ),
        (
            "ToolMembership",
            keys(&membership),
            properties::<ToolMembershipSchema>(),
        ),
        (
            "ToolExplanation",
            keys(&tool_explained),
            properties::<ToolExplanationSchema>(),
        ),
        (
            "Drift",
            keys(&tool.imported.as_ref().and_then(|i| i.drift.clone())),
            properties::<DriftSchema>(),
        ),
        ("Revision", keys(&revision), properties::<RevisionSchema>()),
        (
            "Finding",
            keys(&revision.findings[0]),
            properties::<FindingSchema>(),
        ),
    ];
    for (name, model, mirror) in pairs {
        assert!(!model.is_empty(), "{name}");
        assert_eq!(
            model, mirror,
            "{name}: the model's fields, then the mirror's"
        );
    }
}
