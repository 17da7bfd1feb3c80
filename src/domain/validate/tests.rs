//! One case per class of validation error: each starts from a valid catalog, breaks one thing,
//! and expects exactly one error at exactly one field.

use serde_json::json;

use super::*;

fn valid() -> Catalog {
    let mut catalog: Catalog = serde_json::from_value(json!({
        "sources": [{"id": "billing", "name": "billing-api", "type": "manual"}],
        "labels": [{"id": "l-pii", "name": "pii"}],
        "tools": [
            {"source_id": "billing", "operation_id": "list", "name": "list", "label_ids": ["l-pii"]},
            {"source_id": "billing", "operation_id": "refund", "name": "refund"}
        ],
        "groups": [{"id": "g1", "name": "all", "selectors": [{"name_pattern": "*"}],
                    "explicit_tool_ids": ["billing:list"], "excluded_tool_ids": ["billing:refund"]}],
        "policies": [{"id": "p1", "name": "everyone", "priority": 1,
                      "claim_matchers": [{"json_path": "sub", "operator": "exists"}],
                      "allowed_group_ids": ["g1"]}]
    }))
    .expect("valid catalog document");
    catalog.normalize();
    catalog
}

fn only_error(catalog: &Catalog) -> FieldError {
    let errors = validate(catalog);
    assert_eq!(errors.len(), 1, "expected one error, got {errors:#?}");
    errors.into_iter().next().expect("one error")
}

#[test]
fn the_base_catalog_is_valid() {
    assert_eq!(validate(&valid()), vec![]);
}

#[test]
fn each_class_of_error_is_reported_at_its_field() {
    type Break = fn(&mut Catalog);
    let cases: Vec<(&str, Break, &str, &str, ErrorKind)> = vec![
        (
            "unknown operator",
            |c| c.policies[0].claim_matchers[0].operator = "eq".into(),
            "policies[0].claim_matchers[0].operator",
            "unknown operator 'eq'",
            ErrorKind::Invalid,
        ),
        (
            "invalid claim regex",
            |c| {
                c.policies[0].claim_matchers[0].operator = "matches".into();
                c.policies[0].claim_matchers[0].value = json!("(");
            },
            "policies[0].claim_matchers[0].value",
            "invalid regular expression '('",
            ErrorKind::Invalid,
        ),
        (
            "bad claim path",
            |c| c.policies[0].claim_matchers[0].json_path = "a..b".into(),
            "policies[0].claim_matchers[0].json_path",
            "'a..b' has an empty segment",
            ErrorKind::Invalid,
        ),
        (
            "invalid selector regex",
            |c| c.groups[0].selectors[0].name_pattern = "regex:[".into(),
            "groups[0].selectors[0].name_pattern",
            "invalid regular expression '['",
            ErrorKind::Invalid,
        ),
        (
            "invalid glob",
            |c| c.groups[0].selectors[0].path_pattern = Some("/a/[b".into()),
            "groups[0].selectors[0].path_pattern",
            "invalid glob pattern '/a/[b'",
            ErrorKind::Invalid,
        ),
        (
            "policy without matchers",
            |c| c.policies[0].claim_matchers.clear(),
            "policies[0].claim_matchers",
            "a policy needs at least one claim matcher",
            ErrorKind::Invalid,
        ),
        (
            "policy without groups",
            |c| c.policies[0].allowed_group_ids.clear(),
            "policies[0].allowed_group_ids",
            "a policy needs at least one group",
            ErrorKind::Invalid,
        ),
        (
            "unknown allowed group",
            |c| c.policies[0].allowed_group_ids.push("nope".into()),
            "policies[0].allowed_group_ids[1]",
            "unknown group 'nope'",
            ErrorKind::Invalid,
        ),
        (
            "unknown denied group",
            |c| c.policies[0].denied_group_ids.push("nope".into()),
            "policies[0].denied_group_ids[0]",
            "unknown group 'nope'",
            ErrorKind::Invalid,
        ),
        (
            "unknown explicit tool",
            |c| c.groups[0].explicit_tool_ids.push("x:y".into()),
            "groups[0].explicit_tool_ids[1]",
            "unknown tool 'x:y'",
            ErrorKind::Invalid,
        ),
        (
            "unknown excluded tool",
            |c| c.groups[0].excluded_tool_ids[0] = "x:y".into(),
            "groups[0].excluded_tool_ids[0]",
            "unknown tool 'x:y'",
            ErrorKind::Invalid,
        ),
        (
            "unknown required label",
            |c| {
                c.groups[0].selectors[0]
                    .required_label_ids
                    .push("l-x".into())
            },
            "groups[0].selectors[0].required_label_ids[0]",
            "unknown label 'l-x'",
            ErrorKind::Invalid,
        ),
        (
            "unknown tool label",
            |c| c.tools[1].label_ids.push("l-x".into()),
            "tools[1].label_ids[0]",
            "unknown label 'l-x'",
            ErrorKind::Invalid,
        ),
        (
            "unknown source",
            |c| c.tools[1].source_id = "nope".into(),
            "tools[1].source_id",
            "unknown source 'nope'",
            ErrorKind::Invalid,
        ),
        (
            "unknown source type",
            |c| c.sources[0].source_type = "grpc".into(),
            "sources[0].type",
            "unknown source type 'grpc'",
            ErrorKind::Invalid,
        ),
        (
            "duplicate tool id",
            |c| {
                let mut twin = c.tools[1].clone();
                twin.id = "billing:list".into();
                c.tools.push(twin);
            },
            "tools[2].id",
            "id 'billing:list' is already used by tools[0]",
            ErrorKind::Conflict,
        ),
        (
            "duplicate group name",
            |c| {
                let mut twin = c.groups[0].clone();
                twin.id = "g2".into();
                c.groups.push(twin);
            },
            "groups[1].name",
            "group name 'all' is already used by groups[0]",
            ErrorKind::Conflict,
        ),
        (
            "empty id",
            |c| c.policies[0].id.clear(),
            "policies[0].id",
            "must not be empty",
            ErrorKind::Invalid,
        ),
        (
            "over-long name",
            |c| c.groups[0].name = "n".repeat(256),
            "groups[0].name",
            "must be at most 255 characters, found 256",
            ErrorKind::Invalid,
        ),
        (
            "name at the limit is fine, over-long description",
            |c| {
                c.groups[0].name = "n".repeat(255);
                c.groups[0].description = "d".repeat(4097);
            },
            "groups[0].description",
            "must be at most 4096 characters, found 4097",
            ErrorKind::Invalid,
        ),
        (
            "control character in a name",
            |c| c.tools[0].name = "bad\nname".into(),
            "tools[0].name",
            "must not contain control characters",
            ErrorKind::Invalid,
        ),
        (
            "blank name",
            |c| c.sources[0].name = "  ".into(),
            "sources[0].name",
            "must not be empty",
            ErrorKind::Invalid,
        ),
        (
            "input schema not an object",
            |c| c.tools[0].input_schema = json!("string").into(),
            "tools[0].input_schema",
            "must be a JSON Schema object",
            ErrorKind::Invalid,
        ),
        (
            "output schema not an object",
            |c| c.tools[0].output_schema = Some(json!([1]).into()),
            "tools[0].output_schema",
            "must be a JSON Schema object",
            ErrorKind::Invalid,
        ),
    ];
    for (name, break_it, field, message_start, kind) in cases {
        let mut catalog = valid();
        break_it(&mut catalog);
        let error = only_error(&catalog);
        assert_eq!(error.field, field, "{name}");
        assert!(
            error.message.starts_with(message_start),
            "{name}: {:?} should start with {message_start:?}",
            error.message
        );
        assert_eq!(error.kind, kind, "{name}");
    }
}

#[test]
fn all_errors_are_reported_not_just_the_first() {
    let mut catalog = valid();
    catalog.policies[0].claim_matchers[0].operator = "eq".into();
    catalog.groups[0].selectors[0].source_pattern = "regex:(".into();
    catalog.tools[0].source_id = "gone".into();
    let fields: Vec<String> = validate(&catalog).into_iter().map(|e| e.field).collect();
    assert_eq!(
        fields,
        [
            "tools[0].source_id",
            "groups[0].selectors[0].source_pattern",
            "policies[0].claim_matchers[0].operator"
        ]
    );
}

#[test]
fn a_pattern_used_by_several_selectors_is_reported_at_each() {
    // Patterns are checked once per distinct text; every use still gets its error.
    let mut catalog = valid();
    let mut second = catalog.groups[0].clone();
    second.id = "g2".into();
    second.name = "again".into();
    catalog.groups.push(second);
    for group in &mut catalog.groups {
        group.selectors[0].name_pattern = "[unclosed".into();
    }
    let errors = validate(&catalog);
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "groups[0].selectors[0].name_pattern",
            "groups[1].selectors[0].name_pattern"
        ]
    );
    assert_eq!(errors[0].message, errors[1].message);
}

#[test]
fn unknown_fields_are_rejected_when_parsing() {
    let error = serde_json::from_value::<Catalog>(json!({
        "policies": [{"id": "p", "name": "p", "claim_matcher": [], "allowed_group_ids": ["g"]}]
    }))
    .expect_err("typo in a field name");
    assert!(
        error.to_string().contains("unknown field `claim_matcher`"),
        "{error}"
    );
}

#[test]
fn normalize_fills_tool_ids_from_source_and_operation() {
    let catalog = valid();
    assert_eq!(catalog.tools[0].id, "billing:list");
    let mut explicit = catalog.clone();
    explicit.tools[0].id = "custom".into();
    explicit.normalize();
    assert_eq!(explicit.tools[0].id, "custom");
}

#[test]
fn a_tool_whose_id_makes_another_tools_mcp_name_is_a_conflict() {
    let mut catalog = valid();
    let mut twin = catalog.tools[0].clone();
    twin.id = "billing.list".to_owned();
    catalog.tools.push(twin);
    let error = only_error(&catalog);
    assert_eq!(error.field, "tools[2].id");
    assert_eq!(error.kind, ErrorKind::Conflict);
    assert!(
        error.message.contains("MCP name 'billing.list'") && error.message.contains("tools[0]"),
        "{}",
        error.message
    );
}

#[test]
fn a_mask_in_a_secrets_place_is_refused_where_nothing_stands_behind_it() {
    // A `GET /admin/catalog` export read back as a seed or by `toolgate check`: "***" there
    // would be sent upstream as the credential.
    let mut catalog = valid();
    catalog.sources[0].config = serde_json::from_value(json!({
        "headers": {"X-Api-Key": "***", "X-Trace": "t"},
        "auth": {"client_secret": "***", "scopes": ["***"]},
        "spec": {"paths": {}, "components": {"securitySchemes": {"api_token": "***"}}}
    }))
    .expect("an object");
    let errors = validate(&catalog);
    let mut masked: Vec<&str> = errors
        .iter()
        .filter(|e| e.message.contains("none is stored here"))
        .map(|e| e.field.as_str())
        .collect();
    masked.sort_unstable();
    assert_eq!(
        masked,
        [
            "sources[0].config.auth.client_secret",
            "sources[0].config.headers.X-Api-Key",
            "sources[0].config.spec.components.securitySchemes.api_token"
        ]
    );
}
