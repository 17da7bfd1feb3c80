//! Random catalogs, claims and request options for property tests (`tests/it/decision_model.rs`,
//! `tests/it/decisions.rs`), drawn from small vocabularies so that matches, ties, dangling
//! references and absent claims are all common, and from the classes of input that once failed
//! open: policies on "volatile" claims (`sid`, `jti`, `iat`), `""` and `**` patterns, `?` before
//! a multi-byte character, numbers written `+2` or `02`.
//!
//! Catalogs may hold dangling references (a tool of a source that does not exist, a group or
//! tool id `ghost`): the engine tolerates them, the admin API refuses them.

#![allow(dead_code)] // each test uses a different part

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolgate::domain::entry::{Field, Fields};
use toolgate::domain::manifest::ManifestOptions;
use toolgate::domain::model::{
    AccessPolicy, Catalog, ClaimMatcher, Label, Selector, Source, Tool, ToolGroup,
};

const SOURCE_NAMES: [&str; 3] = ["alpha-api", "Beta", "gamma-api"];
const TOOL_NAMES: [&str; 9] = [
    "get_user",
    "list_users",
    "create_user",
    "delete_user",
    "get_invoice",
    "Get_report",
    "search",
    "\u{e9}tape_item",
    "\u{212a}elvin_x",
];
const METHODS: [Option<&str>; 5] = [Some("GET"), Some("POST"), Some("get"), Some(""), None];
const PATHS: [Option<&str>; 5] = [
    Some("/users"),
    Some("/users/{id}/x"),
    Some("/invoices"),
    Some("/x/users"),
    None,
];
const TAGS: [&str; 3] = ["read", "write", "Read"];
const LABELS: [&str; 2] = ["l1", "l2"];
const PATTERNS: [&str; 20] = [
    "*",
    "*-api",
    "alpha*",
    "get_*",
    "*_user?",
    "[gl]*",
    "[!g]*",
    "{get,list}_*",
    "?et_*",
    "regex:(get|list)_.*",
    "regex:beta",
    "/users*",
    // Once failed open: `""` selected everything, `**` was a globstar, `?` one byte, and
    // case folding was not only ASCII.
    "",
    "**",
    "/**/users",
    "/users/**/x",
    "?tape_*",
    "?elvin_*",
    "k*",
    "[!a]tape*",
];
const STATES: [&str; 3] = ["research", "x", "*"];

fn pick<T: Clone + std::fmt::Debug + 'static>(items: &'static [T]) -> impl Strategy<Value = T> {
    prop::sample::select(items)
}

fn tool_strategy(sources: usize) -> impl Strategy<Value = Tool> {
    (
        0..sources.max(1),
        pick(&TOOL_NAMES),
        pick(&METHODS),
        pick(&PATHS),
        prop::sample::subsequence(TAGS.to_vec(), 0..=2),
        prop::sample::subsequence(LABELS.to_vec(), 0..=2),
        prop::bool::weighted(0.8),
        prop::bool::weighted(0.15),
        prop::option::weighted(0.4, prop::sample::subsequence(STATES.to_vec(), 0..=2)),
    )
        .prop_map(
            |(source, name, method, path, tags, labels, enabled, deprecated, states)| {
                let mut tool: Tool = serde_json::from_value(json!({
                    "source_id": format!("s{source}"), "operation_id": "op", "name": name,
                }))
                .expect("tool");
                tool.method = method.map(str::to_owned);
                tool.path = path.map(str::to_owned);
                tool.tags = tags.into_iter().map(str::to_owned).collect();
                tool.label_ids = labels.into_iter().map(str::to_owned).collect();
                tool.enabled = enabled;
                tool.deprecated = deprecated;
                tool.available_in_states =
                    states.map(|s| s.into_iter().map(str::to_owned).collect());
                tool
            },
        )
}

fn selector_strategy() -> impl Strategy<Value = Selector> {
    (
        prop::option::weighted(0.25, pick(&PATTERNS)),
        prop::option::weighted(0.35, pick(&PATTERNS)),
        prop::option::weighted(0.15, pick(&PATTERNS)),
        prop::option::weighted(
            0.2,
            prop_oneof![Just("GET"), Just("post"), Just(""), Just("{GET,POST}")],
        ),
        prop::option::weighted(0.25, pick(&TAGS)),
        prop::option::weighted(0.25, pick(&TAGS)),
        prop::option::weighted(0.2, pick(&LABELS)),
    )
        .prop_map(
            |(source, name, path, method, required, excluded, labels)| Selector {
                source_pattern: source.unwrap_or("*").to_owned(),
                name_pattern: name.unwrap_or("*").to_owned(),
                path_pattern: path.map(str::to_owned),
                method_pattern: method.map(str::to_owned),
                required_tags: required.into_iter().map(str::to_owned).collect(),
                excluded_tags: excluded.into_iter().map(str::to_owned).collect(),
                required_label_ids: labels.into_iter().map(str::to_owned).collect(),
            },
        )
}

/// Tool ids are `s{source}:op{index}`; `ghost` never exists.
fn tool_ref(tools: usize) -> impl Strategy<Value = String> {
    (0..tools + 1).prop_map(move |i| {
        if i == tools {
            "ghost".to_owned()
        } else {
            format!("op{i}")
        }
    })
}

fn group_strategy(tools: usize) -> impl Strategy<Value = ToolGroup> {
    (
        prop::collection::vec(selector_strategy(), 0..=2),
        prop::collection::vec(tool_ref(tools), 0..=3),
        prop::collection::vec(tool_ref(tools), 0..=1),
        prop::bool::weighted(0.85),
    )
        .prop_map(|(selectors, explicit, excluded, active)| ToolGroup {
            id: String::new(),
            name: String::new(),
            description: String::new(),
            active,
            selectors,
            explicit_tool_ids: explicit,
            excluded_tool_ids: excluded,
            created_at: None,
            updated_at: None,
            created_by: None,
            updated_by: None,
        })
}

fn matcher_strategy() -> impl Strategy<Value = ClaimMatcher> {
    let paths = pick(&[
        "sub",
        "sub",
        "sub",
        "roles",
        "depth",
        "tenant",
        "flags",
        "nested.team",
        "/nested/team",
        "roles.0",
        "missing",
        "nothing",
        "sid",
        "jti",
        "iat",
        // Delegation depth (`act` nests once per delegation): policies that grant or deny on
        // it must never widen a delegated token (tests/it/delegation_model.rs).
        "act",
        "act.act",
        "act.sub",
    ]);
    let scalar = prop_oneof![
        Just(json!("stolen")),
        Just(json!("+2")),
        Just(json!("02")),
        Just(json!(".5")),
        Just(json!("admin")),
        Just(json!("acme")),
        Just(json!("1")),
        Just(json!("red")),
        Just(json!("true")),
        Just(json!(0)),
        Just(json!(1)),
        Just(json!(2)),
        Just(json!(true)),
        Just(json!(1.5)),
    ];
    let list = prop_oneof![
        Just(json!(["admin", "x"])),
        Just(json!([1, 2])),
        Just(json!("acme, beta")),
        Just(json!("red,1")),
        Just(json!([true, "staff"])),
    ];
    let regex = prop_oneof![
        Just(json!("a.*")),
        Just(json!("[0-9]+")),
        Just(json!("red|blue")),
        Just(json!("(admin|staff)"))
    ];
    let number = prop_oneof![
        Just(json!(0)),
        Just(json!(1)),
        Just(json!("1.5")),
        Just(json!(2))
    ];
    let op_value = prop_oneof![
        3 => (pick(&["exists", "exists", "not_exists"]), Just(Value::Null)),
        2 => (
            pick(&["equals", "not_equals", "contains", "not_contains"]),
            scalar
        ),
        1 => (pick(&["in", "not_in"]), list),
        1 => (Just("matches"), regex),
        1 => (pick(&["gt", "gte", "lt", "lte"]), number),
    ];
    let any = (paths, op_value).prop_map(|(path, (operator, value))| ClaimMatcher {
        json_path: path.to_owned(),
        operator: operator.to_owned(),
        value,
    });
    // Every agent has a `sub`: a policy on it matches, so that manifests are often non-empty.
    let everyone = Just(ClaimMatcher {
        json_path: "sub".to_owned(),
        operator: "exists".to_owned(),
        value: Value::Null,
    });
    prop_oneof![3 => any, 1 => everyone]
}

fn policy_strategy(groups: usize) -> impl Strategy<Value = AccessPolicy> {
    let group_ref = (0..groups + 1).prop_map(move |i| {
        if i == groups {
            "ghost".to_owned()
        } else {
            format!("g{i}")
        }
    });
    (
        prop::collection::vec(matcher_strategy(), 1..=2),
        prop::collection::vec(group_ref.clone(), 1..=2),
        prop::collection::vec(group_ref, 0..=1),
        -1i64..=2,
        prop::bool::weighted(0.9),
    )
        .prop_map(
            |(claim_matchers, allowed, denied, priority, active)| AccessPolicy {
                id: String::new(),
                name: String::new(),
                description: String::new(),
                priority,
                active,
                claim_matchers,
                allowed_group_ids: allowed,
                denied_group_ids: denied,
                created_at: None,
                updated_at: None,
                created_by: None,
                updated_by: None,
            },
        )
}

pub fn catalog_strategy() -> impl Strategy<Value = Catalog> {
    (1usize..=3, 1usize..=9, 1usize..=4)
        .prop_flat_map(|(sources, tools, groups)| {
            (
                prop::collection::vec(prop::bool::weighted(0.85), sources),
                prop::collection::vec(tool_strategy(sources + 1), tools),
                prop::collection::vec(group_strategy(tools), groups),
                prop::collection::vec(policy_strategy(groups), 1..=4),
            )
        })
        .prop_map(|(source_enabled, mut tools, mut groups, mut policies)| {
            let sources = source_enabled
                .iter()
                .enumerate()
                .map(|(i, &enabled)| Source {
                    id: format!("s{i}"),
                    name: SOURCE_NAMES[i].to_owned(),
                    source_type: "manual".to_owned(),
                    description: String::new(),
                    enabled,
                    config: Map::new(),
                    created_at: None,
                    updated_at: None,
                    created_by: None,
                    updated_by: None,
                })
                .collect();
            // Tool ids are unique; the last source index may not exist (a dangling source).
            for (i, tool) in tools.iter_mut().enumerate() {
                tool.operation_id = format!("op{i}");
                tool.id = format!("op{i}");
            }
            for (i, group) in groups.iter_mut().enumerate() {
                group.id = format!("g{i}");
                group.name = ["reads", "writers", "all", "misc"][i % 4].to_owned();
            }
            for (i, policy) in policies.iter_mut().enumerate() {
                policy.id = format!("p{i}");
                policy.name = policy.id.clone();
            }
            let labels = LABELS
                .iter()
                .map(|id| Label {
                    id: (*id).to_owned(),
                    name: (*id).to_owned(),
                    description: String::new(),
                    color: None,
                    created_at: None,
                    updated_at: None,
                    created_by: None,
                    updated_by: None,
                })
                .collect();
            Catalog {
                sources,
                tools,
                labels,
                groups,
                policies,
                revisions: Vec::new(),
            }
        })
}

pub fn claims_strategy() -> impl Strategy<Value = Map<String, Value>> {
    (
        prop::option::of(prop_oneof![
            Just(json!(["admin", "staff"])),
            Just(json!(["dev"])),
            Just(json!([])),
            Just(json!("admin")),
            Just(Value::Null),
        ]),
        prop::option::of(prop_oneof![
            Just(json!(0)),
            Just(json!(1)),
            Just(json!(2)),
            Just(json!("1")),
            Just(json!(1.5)),
            Just(json!("+2")),
            Just(json!("02")),
            Just(json!("2."))
        ]),
        prop::option::of(prop_oneof![
            Just(json!("acme")),
            Just(json!("ACME")),
            Just(json!("beta,acme"))
        ]),
        prop::option::of(prop_oneof![
            Just(json!(true)),
            Just(json!(false)),
            Just(json!("true"))
        ]),
        prop::option::of(prop_oneof![
            Just(json!({"team": "red"})),
            Just(json!({"team": "blue"})),
            Just(json!({"team": 1}))
        ]),
    )
        .prop_map(|(roles, depth, tenant, flags, nested)| {
            let mut claims = Map::new();
            claims.insert("sub".into(), json!("agent"));
            for (key, value) in [
                ("roles", roles),
                ("depth", depth),
                ("tenant", tenant),
                ("flags", flags),
                ("nested", nested),
            ] {
                if let Some(value) = value {
                    claims.insert(key.into(), value);
                }
            }
            claims.insert("nothing".into(), Value::Null);
            claims
        })
}

/// Claims that differ from each other only in "volatile" claims, which a key that drops them
/// would conflate.
pub fn claims_family_strategy() -> impl Strategy<Value = Vec<Map<String, Value>>> {
    let volatile = (
        prop::option::of(prop_oneof![Just(json!("new")), Just(json!("stolen"))]),
        prop::option::of(prop_oneof![Just(json!("j1")), Just(json!("stolen"))]),
        prop::option::of(prop_oneof![Just(json!(1)), Just(json!(2))]),
    );
    (claims_strategy(), prop::collection::vec(volatile, 1..=3)).prop_map(|(base, variants)| {
        variants
            .into_iter()
            .map(|(sid, jti, iat)| {
                let mut claims = base.clone();
                for (key, value) in [("sid", sid), ("jti", jti), ("iat", iat)] {
                    if let Some(value) = value {
                        claims.insert(key.into(), value);
                    }
                }
                claims
            })
            .collect()
    })
}

pub fn options_strategy() -> impl Strategy<Value = ManifestOptions> {
    let groups = prop::option::weighted(
        0.2,
        prop::sample::subsequence(vec!["g0", "g1", "reads", "all", "*", "nope"], 0..=2),
    );
    let state = prop::option::weighted(0.2, pick(&["research", "x", "other"]));
    let tools = prop::option::weighted(
        0.2,
        prop::sample::subsequence(
            vec![
                "get_user",
                "search",
                "get_*",
                "*",
                "nope",
                "Get_report",
                "[lc]*",
            ],
            0..=2,
        ),
    );
    // Mostly every field; sometimes a few (`fields=`), which narrows entries, never the list.
    let fields = prop::option::weighted(
        0.2,
        prop::collection::vec(
            prop::sample::select(
                Field::ALL
                    .iter()
                    .map(|field| field.as_str())
                    .collect::<Vec<_>>(),
            ),
            0..4,
        ),
    )
    .prop_map(|names| match names {
        Some(names) => Fields::parse(names).expect("every name is a field"),
        None => Fields::ALL,
    });
    (prop::bool::weighted(0.3), groups, state, tools, fields).prop_map(
        |(include_disabled, groups, state, tools, fields)| ManifestOptions {
            include_disabled,
            groups: groups.map(|g| g.into_iter().map(str::to_owned).collect()),
            state: state.map(str::to_owned),
            tools: tools.map(|t| t.into_iter().map(str::to_owned).collect()),
            fields,
            pinned: None,
        },
    )
}
