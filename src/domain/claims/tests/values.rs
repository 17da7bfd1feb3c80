//! Matcher values: a malformed one is refused when the policy is written, and only JSON
//! number syntax counts as a number, in a claim or in a value.

use serde_json::{Value, json};

use crate::domain::claims::{ClaimPath, CompiledMatcher, is_json_number};
use crate::domain::model::ClaimMatcher;

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
