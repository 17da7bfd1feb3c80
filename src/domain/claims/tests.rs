//! One row per rule of SEMANTICS.md sections 2 and 3.

use serde_json::{Value, json};

use super::*;

fn claims() -> Claims {
    json!({
        "sub": "agent-1",
        "tenant": "acme",
        "depth": 1,
        "level": "3",
        "score": 2.5,
        "big": 9007199254740993u64,
        "verified": true,
        "nothing": null,
        "roles": ["analyst", "staff"],
        "ids": [1, 2, 3],
        "realm_access": {"roles": ["crm-admin"]},
        "resource_access": {"my-client": {"roles": ["reader"]}},
        "groups": ["/eng", "/ops"],
        "https://example.com/roles": ["ns-admin"],
        "a~b": "tilde",
        "profile": {"email": "a@example.com"}
    })
    .as_object()
    .expect("object")
    .clone()
}

fn eval(path: &str, operator: &str, value: Value) -> bool {
    let matcher = ClaimMatcher {
        json_path: path.to_owned(),
        operator: operator.to_owned(),
        value,
    };
    let compiled = CompiledMatcher::compile(&matcher).expect("valid matcher");
    let path = ClaimPath::parse(path).expect("valid path");
    let claims = claims();
    compiled.matches(path.resolve(&claims))
}

#[test]
fn paths_resolve_dots_indices_and_pointers() {
    let claims = claims();
    let cases: &[(&str, Option<Value>)] = &[
        ("tenant", Some(json!("acme"))),
        ("realm_access.roles", Some(json!(["crm-admin"]))),
        ("resource_access.my-client.roles", Some(json!(["reader"]))),
        ("groups.0", Some(json!("/eng"))),
        ("groups.1", Some(json!("/ops"))),
        ("groups.2", None),
        ("groups.01", None),
        ("groups.-1", None),
        ("tenant.x", None),
        ("missing", None),
        ("nothing", None),
        ("/https:~1~1example.com~1roles", Some(json!(["ns-admin"]))),
        ("/https:~1~1example.com~1roles/0", Some(json!("ns-admin"))),
        ("/a~0b", Some(json!("tilde"))),
        ("/realm_access/roles", Some(json!(["crm-admin"]))),
        ("/missing", None),
    ];
    for (path, expected) in cases {
        let parsed = ClaimPath::parse(path).expect("valid path");
        assert_eq!(parsed.resolve(&claims), expected.as_ref(), "path {path}");
    }
}

#[test]
fn invalid_paths_are_rejected() {
    for path in ["", "a..b", ".a", "a.", "/a~2b", "/a~"] {
        assert!(
            ClaimPath::parse(path).is_err(),
            "{path:?} should be invalid"
        );
    }
}

#[test]
fn operator_table() {
    let cases: Vec<(&str, &str, &str, Value, bool)> = vec![
        // equals
        (
            "equals: string exact",
            "tenant",
            "equals",
            json!("acme"),
            true,
        ),
        (
            "equals: case-sensitive",
            "tenant",
            "equals",
            json!("ACME"),
            false,
        ),
        (
            "equals: array any element",
            "roles",
            "equals",
            json!("staff"),
            true,
        ),
        (
            "equals: array no element",
            "roles",
            "equals",
            json!("admin"),
            false,
        ),
        ("equals: number", "depth", "equals", json!(1), true),
        (
            "equals: number vs float",
            "depth",
            "equals",
            json!(1.0),
            true,
        ),
        (
            "equals: number vs numeric string",
            "depth",
            "equals",
            json!("1"),
            true,
        ),
        (
            "equals: number vs other string",
            "depth",
            "equals",
            json!("one"),
            false,
        ),
        (
            "equals: string claim vs number value",
            "level",
            "equals",
            json!(3),
            false,
        ),
        (
            "equals: big integers compare exactly",
            "big",
            "equals",
            json!(9007199254740993u64),
            true,
        ),
        (
            "equals: big integers differ by one",
            "big",
            "equals",
            json!(9007199254740992u64),
            false,
        ),
        ("equals: boolean", "verified", "equals", json!(true), true),
        (
            "equals: boolean vs string",
            "verified",
            "equals",
            json!("true"),
            true,
        ),
        (
            "equals: boolean vs wrong string",
            "verified",
            "equals",
            json!("false"),
            false,
        ),
        ("equals: array of numbers", "ids", "equals", json!(2), true),
        (
            "equals: object never equals",
            "profile",
            "equals",
            json!("x"),
            false,
        ),
        ("equals: absent", "missing", "equals", json!("x"), false),
        (
            "equals: null is absent",
            "nothing",
            "equals",
            json!("x"),
            false,
        ),
        // not_equals
        (
            "not_equals: differs",
            "tenant",
            "not_equals",
            json!("other"),
            true,
        ),
        (
            "not_equals: same",
            "tenant",
            "not_equals",
            json!("acme"),
            false,
        ),
        (
            "not_equals: array none equal",
            "roles",
            "not_equals",
            json!("admin"),
            true,
        ),
        (
            "not_equals: array one equal",
            "roles",
            "not_equals",
            json!("staff"),
            false,
        ),
        (
            "not_equals: absent fails closed",
            "missing",
            "not_equals",
            json!("x"),
            false,
        ),
        (
            "not_equals: null fails closed",
            "nothing",
            "not_equals",
            json!("x"),
            false,
        ),
        // contains
        (
            "contains: array element",
            "roles",
            "contains",
            json!("analyst"),
            true,
        ),
        (
            "contains: array no element",
            "roles",
            "contains",
            json!("ana"),
            false,
        ),
        (
            "contains: substring",
            "tenant",
            "contains",
            json!("cm"),
            true,
        ),
        (
            "contains: not a substring",
            "tenant",
            "contains",
            json!("xyz"),
            false,
        ),
        ("contains: number array", "ids", "contains", json!(3), true),
        (
            "contains: number claim",
            "depth",
            "contains",
            json!(1),
            false,
        ),
        ("contains: absent", "missing", "contains", json!("x"), false),
        // not_contains
        (
            "not_contains: array lacks",
            "roles",
            "not_contains",
            json!("admin"),
            true,
        ),
        (
            "not_contains: array has",
            "roles",
            "not_contains",
            json!("staff"),
            false,
        ),
        (
            "not_contains: string lacks",
            "tenant",
            "not_contains",
            json!("z"),
            true,
        ),
        (
            "not_contains: absent fails closed",
            "missing",
            "not_contains",
            json!("x"),
            false,
        ),
        // in
        (
            "in: scalar in array value",
            "tenant",
            "in",
            json!(["a", "acme"]),
            true,
        ),
        (
            "in: scalar not in",
            "tenant",
            "in",
            json!(["a", "b"]),
            false,
        ),
        (
            "in: comma string trimmed",
            "tenant",
            "in",
            json!("foo , acme ,bar"),
            true,
        ),
        (
            "in: array claim overlaps",
            "roles",
            "in",
            json!(["admin", "staff"]),
            true,
        ),
        (
            "in: array claim disjoint",
            "roles",
            "in",
            json!("admin,root"),
            false,
        ),
        (
            "in: number claim vs comma string",
            "depth",
            "in",
            json!("0,1,2"),
            true,
        ),
        (
            "in: number claim vs numbers",
            "depth",
            "in",
            json!([2, 3]),
            false,
        ),
        ("in: absent", "missing", "in", json!(["x"]), false),
        // not_in
        (
            "not_in: scalar not listed",
            "tenant",
            "not_in",
            json!(["a", "b"]),
            true,
        ),
        (
            "not_in: scalar listed",
            "tenant",
            "not_in",
            json!("acme,b"),
            false,
        ),
        (
            "not_in: array overlapping",
            "roles",
            "not_in",
            json!(["staff"]),
            false,
        ),
        (
            "not_in: absent fails closed",
            "missing",
            "not_in",
            json!(["x"]),
            false,
        ),
        // matches
        (
            "matches: whole string",
            "tenant",
            "matches",
            json!("ac.e"),
            true,
        ),
        (
            "matches: partial is not enough",
            "tenant",
            "matches",
            json!("ac"),
            false,
        ),
        (
            "matches: case-sensitive",
            "tenant",
            "matches",
            json!("ACME"),
            false,
        ),
        (
            "matches: any array element",
            "groups",
            "matches",
            json!("/e.*"),
            true,
        ),
        (
            "matches: no array element",
            "groups",
            "matches",
            json!("/x.*"),
            false,
        ),
        (
            "matches: number string form",
            "depth",
            "matches",
            json!("[0-9]"),
            true,
        ),
        (
            "matches: boolean string form",
            "verified",
            "matches",
            json!("true"),
            true,
        ),
        (
            "matches: object has no string form",
            "profile",
            "matches",
            json!(".*"),
            false,
        ),
        ("matches: absent", "missing", "matches", json!(".*"), false),
        // exists / not_exists
        ("exists: present", "tenant", "exists", Value::Null, true),
        (
            "exists: nested",
            "realm_access.roles",
            "exists",
            Value::Null,
            true,
        ),
        ("exists: absent", "missing", "exists", Value::Null, false),
        (
            "exists: null is absent",
            "nothing",
            "exists",
            Value::Null,
            false,
        ),
        (
            "not_exists: absent",
            "missing",
            "not_exists",
            Value::Null,
            true,
        ),
        (
            "not_exists: null",
            "nothing",
            "not_exists",
            Value::Null,
            true,
        ),
        (
            "not_exists: present",
            "tenant",
            "not_exists",
            Value::Null,
            false,
        ),
        // numeric comparisons
        ("gt: number", "depth", "gt", json!(0), true),
        ("gt: equal is not greater", "depth", "gt", json!(1), false),
        ("gte: equal", "depth", "gte", json!(1), true),
        ("gte: less", "depth", "gte", json!(2), false),
        ("lt: number", "depth", "lt", json!(2), true),
        ("lt: equal", "depth", "lt", json!(1), false),
        ("lte: equal", "depth", "lte", json!(1), true),
        ("lte: greater", "depth", "lte", json!(0), false),
        ("gt: numeric string claim", "level", "gt", json!(2), true),
        (
            "gt: numeric string value",
            "depth",
            "gt",
            json!("0.5"),
            true,
        ),
        ("gt: float claim", "score", "gt", json!(2), true),
        ("lt: float claim", "score", "lt", json!(2.6), true),
        ("gt: non-numeric claim", "tenant", "gt", json!(0), false),
        ("gt: array claim", "ids", "gt", json!(0), false),
        ("gt: boolean claim", "verified", "gt", json!(0), false),
        ("gte: absent", "missing", "gte", json!(0), false),
        ("lte: absent", "missing", "lte", json!(100), false),
    ];
    for (name, path, operator, value, expected) in cases {
        assert_eq!(eval(path, operator, value), expected, "{name}");
    }
}

#[test]
fn malformed_matchers_are_rejected_on_write() {
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        ("eq", json!("x"), "operator", "unknown operator 'eq'"),
        (
            "EQUALS",
            json!("x"),
            "operator",
            "unknown operator 'EQUALS'",
        ),
        (
            "equals",
            json!(["x"]),
            "value",
            "'equals' needs a string, number or boolean value, found an array",
        ),
        (
            "contains",
            Value::Null,
            "value",
            "'contains' needs a string, number or boolean value, found nothing",
        ),
        (
            "in",
            json!(5),
            "value",
            "'in' needs an array or a comma-separated string, found a number",
        ),
        (
            "in",
            json!(["a", {"b": 1}]),
            "value",
            "item 1 of the 'in' list must be a string, number or boolean, found an object",
        ),
        (
            "matches",
            json!("(unclosed"),
            "value",
            "invalid regular expression '(unclosed'",
        ),
        (
            "matches",
            json!(1),
            "value",
            "'matches' needs a regular expression string, found a number",
        ),
        (
            "gt",
            json!("high"),
            "value",
            "'gt' needs a number (or a string holding one), found a string",
        ),
        ("lte", json!("NaN"), "value", "'lte' needs a number"),
    ];
    for (operator, value, field, message_start) in cases {
        let matcher = ClaimMatcher {
            json_path: "x".to_owned(),
            operator: operator.to_owned(),
            value,
        };
        let error = CompiledMatcher::compile(&matcher).expect_err(operator);
        assert_eq!(error.field, field, "{operator}");
        assert!(
            error.message.starts_with(message_start),
            "{operator}: {:?} should start with {message_start:?}",
            error.message
        );
    }
}

#[test]
fn operator_names_round_trip() {
    for (name, op) in Operator::ALL {
        assert_eq!(Operator::parse(name), Some(op));
        assert_eq!(op.name(), name);
    }
}

#[test]
fn only_json_number_syntax_parses_as_a_number() {
    for (text, number) in [
        ("2", true),
        ("-2", true),
        ("0", true),
        ("-0", true),
        ("2.5", true),
        ("1e3", true),
        ("1E+3", true),
        ("2.5e-1", true),
        ("+2", false),
        ("02", false),
        ("-02", false),
        (".5", false),
        ("2.", false),
        ("2.e1", false),
        ("1e", false),
        ("1e+", false),
        (" 2", false),
        ("2 ", false),
        ("-", false),
        ("", false),
        ("inf", false),
        ("NaN", false),
        ("0x10", false),
        ("1_000", false),
    ] {
        assert_eq!(is_json_number(text), number, "{text:?}");
    }
    // Through the operators: a string claim that is not a JSON number never compares as one…
    let path = ClaimPath::parse("n").expect("valid path");
    for (claim, holds) in [("2", true), ("+2", false), ("02", false), ("2.", false)] {
        let claims = json!({"n": claim}).as_object().expect("object").clone();
        for (operator, value) in [("gte", json!(2)), ("lt", json!(3))] {
            let matcher = ClaimMatcher {
                json_path: "n".to_owned(),
                operator: operator.to_owned(),
                value,
            };
            let compiled = CompiledMatcher::compile(&matcher).expect("valid matcher");
            assert_eq!(
                compiled.matches(path.resolve(&claims)),
                holds,
                "{claim:?} {operator}"
            );
        }
    }
    // …and a number claim equals only a string value that is a JSON number.
    let claims = json!({"n": 2}).as_object().expect("object").clone();
    for (value, holds) in [
        ("2", true),
        ("+2", false),
        ("02", false),
        ("2.", false),
        (" 2", false),
    ] {
        let matcher = ClaimMatcher {
            json_path: "n".to_owned(),
            operator: "equals".to_owned(),
            value: json!(value),
        };
        let compiled = CompiledMatcher::compile(&matcher).expect("valid matcher");
        assert_eq!(compiled.matches(path.resolve(&claims)), holds, "{value:?}");
    }
    // And a matcher value written so is refused when the policy is written.
    let matcher = ClaimMatcher {
        json_path: "n".to_owned(),
        operator: "gt".to_owned(),
        value: json!("+2"),
    };
    assert!(CompiledMatcher::compile(&matcher).is_err());
}

#[test]
fn bad_paths_are_typed_errors_that_say_what_to_write() {
    let cases = [
        ("", ClaimPathError::Empty, "must not be empty"),
        (
            "realm_access..roles",
            ClaimPathError::EmptySegment {
                path: "realm_access..roles".to_owned(),
            },
            "a dot path looks like 'realm_access.roles'",
        ),
        (
            "/a~2b",
            ClaimPathError::PointerEscape {
                token: "a~2b".to_owned(),
            },
            "'~' must be followed by 0 or 1",
        ),
        (
            "/a~",
            ClaimPathError::PointerEscape {
                token: "a~".to_owned(),
            },
            "invalid JSON Pointer escape in 'a~'",
        ),
    ];
    for (text, expected, says) in cases {
        let error = ClaimPath::parse(text).expect_err(text);
        assert_eq!(error, expected, "{text}");
        assert!(error.to_string().contains(says), "{text}: {error}");
    }
    assert!(ClaimPath::parse("/a~1b~0c").is_ok());
}
