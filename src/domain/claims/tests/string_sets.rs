//! The set lookup for long arrays of strings answers exactly what scanning the array answers,
//! for every operator it answers at all, whatever the matcher's value.

use std::collections::HashSet;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::super::CompiledMatcher;
use crate::domain::model::ClaimMatcher;

fn value_strategy() -> impl Strategy<Value = Value> {
    let word = prop::sample::select(vec!["a", "b", "role-1", "1", "true", "false", "", "A"]);
    prop_oneof![
        word.clone().prop_map(|w| json!(w)),
        prop::sample::select(vec![json!(1), json!(true), json!(false), json!(1.0)]),
        prop::collection::vec(word, 0..3).prop_map(|items| json!(items)),
        prop::collection::vec(prop_oneof![Just(json!("a")), Just(json!(1))], 1..3)
            .prop_map(Value::Array),
    ]
}

proptest! {
    #[test]
    fn lookups_agree_with_the_scan(
        operator in prop::sample::select(vec![
            "equals", "not_equals", "contains", "not_contains", "in", "not_in", "exists",
            "matches", "gt",
        ]),
        value in value_strategy(),
        claim in prop::collection::vec(
            prop::sample::select(vec!["a", "b", "role-1", "1", "true", "", "x"]),
            0..40,
        ),
    ) {
        let matcher = ClaimMatcher {
            json_path: "roles".to_owned(),
            operator: operator.to_owned(),
            value,
        };
        let Ok(compiled) = CompiledMatcher::compile(&matcher) else {
            return Ok(());
        };
        let strings: HashSet<&str> = claim.iter().copied().collect();
        let array = json!(claim);
        if let Some(looked_up) = compiled.matches_strings(&strings) {
            prop_assert_eq!(looked_up, compiled.matches(Some(&array)));
        }
    }
}
