//! Reading AuthZEN bodies: every part, the defaults of a batch, and field paths for every
//! problem.

use serde_json::json;

use super::*;

fn fields(error: ApiError) -> Vec<String> {
    match error {
        ApiError::BadRequest(errors) => errors.into_iter().map(|e| e.field).collect(),
        other => panic!("expected a 400 with fields, got {other:?}"),
    }
}

#[test]
fn a_single_evaluation_reads_every_part() {
    let parts = single(&json!({
        "subject": {"type": "agent", "id": "a", "properties": {"claims": {"sub": "a"}, "x": 1}},
        "action": {"name": "call", "properties": {"k": 1}},
        "resource": {"type": "tool", "id": "s:read"},
        "context": {"state": "research", "group": ["a, b", "c"], "time": "now"},
        "unknown": true
    }))
    .expect("valid");
    let complete = complete_single(&parts).expect("complete");
    assert_eq!(complete.action, "call");
    assert_eq!(
        (complete.resource_type, complete.tool_id),
        ("tool", "s:read")
    );
    assert_eq!(complete.scope.state.as_deref(), Some("research"));
    assert_eq!(
        complete.scope.groups,
        Some(vec!["a".to_owned(), "b".to_owned(), "c".to_owned()])
    );
    let subject = complete.subject.expect("given");
    assert_eq!(subject.id, "a");
    assert_eq!(
        subject.claims,
        Some(json!({"sub": "a"}).as_object().expect("object").clone())
    );
}

#[test]
fn shape_errors_name_every_field() {
    let cases = [
        (json!([]), vec![""]),
        (json!({}), vec!["action", "resource"]),
        (
            json!({"action": {"name": 1}, "resource": {"type": "tool"}}),
            vec!["action.name", "resource.id"],
        ),
        (
            json!({"subject": {"id": "a"}, "action": {}, "resource": {"id": "x"},
                   "context": {"state": 3, "group": [1]}}),
            vec![
                "subject.type",
                "action.name",
                "resource.type",
                "context.state",
                "context.group[0]",
            ],
        ),
        (
            json!({"subject": {"type": "agent", "id": "a", "properties": {"claims": []}},
                   "action": {"name": "call"}, "resource": {"type": "tool", "id": "x"}}),
            vec!["subject.properties.claims"],
        ),
    ];
    for (body, expected) in cases {
        let error = single(&body)
            .and_then(|parts| complete_single(&parts).map(|_| ()))
            .expect_err("invalid");
        assert_eq!(fields(error), expected, "{body}");
    }
}

#[test]
fn batch_items_take_the_defaults_they_lack() {
    let batch = batch(&json!({
        "action": {"name": "call"},
        "context": {"state": "s"},
        "options": {"evaluations_semantic": "deny_on_first_deny", "other": 1},
        "evaluations": [
            {"resource": {"type": "tool", "id": "a"}},
            {"resource": {"type": "tool", "id": "b"}, "action": {"name": "list"},
             "subject": {"type": "agent", "id": "x"}, "context": {}}
        ]
    }))
    .expect("valid");
    assert_eq!(batch.semantic, Semantic::DenyOnFirstDeny);
    let items = complete(&batch).expect("complete");
    assert_eq!(items.len(), 2);
    assert_eq!((items[0].action, items[0].tool_id), ("call", "a"));
    assert_eq!(items[0].scope.state.as_deref(), Some("s"));
    assert!(items[0].subject.is_none());
    assert_eq!((items[1].action, items[1].tool_id), ("list", "b"));
    assert_eq!(
        items[1].scope, &NO_SCOPE,
        "an item's context replaces the default"
    );
    assert_eq!(items[1].subject_at, "evaluations[1]");
}

#[test]
fn batch_errors_name_the_item() {
    let error = batch(&json!({
        "evaluations": [{"resource": {"type": "tool", "id": "a"}}, 3,
                        {"resource": {"id": "b"}}],
        "options": {"evaluations_semantic": "all"}
    }))
    .expect_err("invalid");
    assert_eq!(
        fields(error),
        [
            "evaluations[1]",
            "evaluations[2].resource.type",
            "options.evaluations_semantic"
        ]
    );
    let parsed = batch(&json!({"evaluations": [
        {"action": {"name": "call"}}, {"resource": {"type": "tool", "id": "b"}}]}))
    .expect("well-formed");
    assert_eq!(
        fields(complete(&parsed).expect_err("incomplete")),
        ["evaluations[0].resource", "evaluations[1].action"]
    );
    assert_eq!(
        fields(batch(&json!({"evaluations": {}})).expect_err("not a list")),
        ["evaluations"]
    );
}

#[test]
fn a_search_needs_no_resource_id_and_reads_its_page() {
    let request = search(&json!({
        "action": {"name": "call"}, "resource": {"type": "tool", "id": "ignored"},
        "page": {"token": "abc", "limit": 2}
    }))
    .expect("valid");
    assert_eq!(request.token.as_deref(), Some("abc"));
    assert_eq!(request.limit, Some(2));
    assert_eq!(
        (request.action.as_str(), request.resource_type.as_str()),
        ("call", "tool")
    );
    let error =
        search(&json!({"resource": {"type": "tool"}, "page": {"limit": -1}})).expect_err("invalid");
    assert_eq!(fields(error), ["action", "page.limit"]);
}
