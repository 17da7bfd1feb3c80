//! Property test: the compiled engine agrees with a deliberately naive reference model of
//! SEMANTICS.md sections 2–6, over random catalogs, claims and request options.
//!
//! The model below is written from the spec text alone: loops over every tool, group and
//! policy, its own tiny glob matcher, `serde_json`'s own JSON Pointer, no bitsets, no caches, no
//! interning. Generators draw from small vocabularies so that matches, ties, dangling references
//! and absent claims are all common.

use std::collections::BTreeSet;

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolgate::domain::manifest::ManifestOptions;
use toolgate::domain::model::{
    AccessPolicy, Catalog, ClaimMatcher, Label, Selector, Source, Tool, ToolGroup,
};
use toolgate::domain::snapshot::Snapshot;

// ---------------------------------------------------------------------------------------------
// The reference model
// ---------------------------------------------------------------------------------------------

/// Naive glob: `*`, `?`, `[..]`, `[!..]`, `{a,b}`; whole string; optional ASCII case folding.
fn glob_match(pattern: &str, text: &str, fold: bool) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = if fold {
        (
            pattern.to_lowercase().chars().collect(),
            text.to_lowercase().chars().collect(),
        )
    } else {
        (pattern.chars().collect(), text.chars().collect())
    };
    glob_at(&p, &t)
}

fn glob_at(p: &[char], t: &[char]) -> bool {
    match p.first() {
        None => t.is_empty(),
        Some('*') => (0..=t.len()).any(|skip| glob_at(&p[1..], &t[skip..])),
        Some('?') => !t.is_empty() && glob_at(&p[1..], &t[1..]),
        Some('[') => {
            let close = p
                .iter()
                .position(|&c| c == ']')
                .expect("generated classes are closed");
            let (negated, set) = match p[1] {
                '!' => (true, &p[2..close]),
                _ => (false, &p[1..close]),
            };
            !t.is_empty() && (set.contains(&t[0]) != negated) && glob_at(&p[close + 1..], &t[1..])
        }
        Some('{') => {
            let close = p
                .iter()
                .position(|&c| c == '}')
                .expect("generated braces are closed");
            let inner: String = p[1..close].iter().collect();
            inner.split(',').any(|alternative| {
                let mut candidate: Vec<char> = alternative.chars().collect();
                candidate.extend_from_slice(&p[close + 1..]);
                glob_at(&candidate, t)
            })
        }
        Some(&c) => t.first() == Some(&c) && glob_at(&p[1..], &t[1..]),
    }
}

fn selector_pattern_matches(pattern: &str, value: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    match pattern.strip_prefix("regex:") {
        Some(expr) => regex::Regex::new(&format!("(?i)^(?:{expr})$"))
            .expect("valid")
            .is_match(value),
        None => glob_match(pattern, value, true),
    }
}

fn resolve(claims: &Map<String, Value>, path: &str) -> Option<Value> {
    let root = Value::Object(claims.clone());
    let found = if path.starts_with('/') {
        root.pointer(path).cloned()
    } else {
        let mut current = root;
        for segment in path.split('.') {
            current = match current {
                Value::Object(mut object) => object.remove(segment)?,
                Value::Array(items) => {
                    let leading_zero = segment.len() > 1 && segment.starts_with('0');
                    let index: usize = segment.parse().ok().filter(|_| !leading_zero)?;
                    items.get(index)?.clone()
                }
                _ => return None,
            };
        }
        Some(current)
    };
    found.filter(|value| !value.is_null())
}

fn number_of(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse::<f64>().ok().filter(|f| f.is_finite()),
        _ => None,
    }
}

fn scalar_eq(claim: &Value, value: &Value) -> bool {
    match (claim, value) {
        (Value::String(c), Value::String(v)) => c == v,
        (Value::Number(_), Value::Number(_)) | (Value::Number(_), Value::String(_)) => {
            matches!((number_of(claim), number_of(value)), (Some(a), Some(b)) if a == b)
        }
        (Value::Bool(c), Value::Bool(v)) => c == v,
        (Value::Bool(c), Value::String(v)) => (v == "true" && *c) || (v == "false" && !*c),
        _ => false,
    }
}

fn elements(claim: &Value) -> Vec<Value> {
    match claim {
        Value::Array(items) => items.clone(),
        other => vec![other.clone()],
    }
}

fn matcher_holds(claims: &Map<String, Value>, m: &ClaimMatcher) -> bool {
    let claim = resolve(claims, &m.json_path);
    let Some(claim) = claim else {
        return m.operator == "not_exists";
    };
    let items = || -> Vec<Value> {
        match &m.value {
            Value::Array(items) => items.clone(),
            Value::String(text) => text.split(',').map(|s| json!(s.trim())).collect(),
            _ => unreachable!(),
        }
    };
    let equals = || elements(&claim).iter().any(|e| scalar_eq(e, &m.value));
    let contains = || match (&claim, &m.value) {
        (Value::Array(items), v) => items.iter().any(|e| scalar_eq(e, v)),
        (Value::String(c), Value::String(v)) => c.contains(v.as_str()),
        _ => false,
    };
    let within = || {
        elements(&claim)
            .iter()
            .any(|e| items().iter().any(|item| scalar_eq(e, item)))
    };
    let compare = |ok: fn(f64, f64) -> bool| matches!((number_of(&claim), number_of(&m.value)), (Some(c), Some(v)) if ok(c, v));
    match m.operator.as_str() {
        "exists" => true,
        "not_exists" => false,
        "equals" => equals(),
        "not_equals" => !equals(),
        "contains" => contains(),
        "not_contains" => !contains(),
        "in" => within(),
        "not_in" => !within(),
        "matches" => {
            let re = regex::Regex::new(&format!("^(?:{})$", m.value.as_str().expect("string")))
                .expect("valid");
            elements(&claim).iter().any(|e| match e {
                Value::String(s) => re.is_match(s),
                Value::Number(n) => re.is_match(&n.to_string()),
                Value::Bool(b) => re.is_match(&b.to_string()),
                _ => false,
            })
        }
        "gt" => compare(|c, v| c > v),
        "gte" => compare(|c, v| c >= v),
        "lt" => compare(|c, v| c < v),
        "lte" => compare(|c, v| c <= v),
        other => panic!("generator produced operator {other}"),
    }
}

fn selector_matches(catalog: &Catalog, s: &Selector, tool: &Tool) -> bool {
    let source_name = catalog
        .sources
        .iter()
        .find(|source| source.id == tool.source_id)
        .map_or("", |source| source.name.as_str());
    let optional = |pattern: &Option<String>, value: &Option<String>| match pattern.as_deref() {
        None | Some("") => true,
        Some(p) => selector_pattern_matches(p, value.as_deref().unwrap_or("")),
    };
    selector_pattern_matches(&s.source_pattern, source_name)
        && selector_pattern_matches(&s.name_pattern, &tool.name)
        && optional(&s.path_pattern, &tool.path)
        && optional(&s.method_pattern, &tool.method)
        && s.required_tags.iter().all(|t| tool.tags.contains(t))
        && !s.excluded_tags.iter().any(|t| tool.tags.contains(t))
        && s.required_label_ids
            .iter()
            .all(|l| tool.label_ids.contains(l))
}

fn members(catalog: &Catalog, group_id: &str) -> BTreeSet<String> {
    let Some(group) = catalog.groups.iter().find(|g| g.id == group_id) else {
        return BTreeSet::new();
    };
    if !group.active {
        return BTreeSet::new();
    }
    let mut out = BTreeSet::new();
    if !group.selectors.is_empty() {
        for tool in &catalog.tools {
            if group
                .selectors
                .iter()
                .all(|s| selector_matches(catalog, s, tool))
            {
                out.insert(tool.id.clone());
            }
        }
    }
    for id in &group.explicit_tool_ids {
        if catalog.tools.iter().any(|t| &t.id == id) {
            out.insert(id.clone());
        }
    }
    for id in &group.excluded_tool_ids {
        out.remove(id);
    }
    out
}

#[derive(Debug, PartialEq)]
struct Outcome {
    entries: Vec<(String, Vec<String>)>,
    warnings: Vec<String>,
}

fn reference(catalog: &Catalog, claims: &Map<String, Value>, options: &ManifestOptions) -> Outcome {
    let matching: Vec<&AccessPolicy> = catalog
        .policies
        .iter()
        .filter(|p| p.active && p.claim_matchers.iter().all(|m| matcher_holds(claims, m)))
        .collect();
    let granted_groups: BTreeSet<String> = matching
        .iter()
        .flat_map(|p| p.allowed_group_ids.iter())
        .filter(|id| catalog.groups.iter().any(|g| &g.id == *id))
        .cloned()
        .collect();
    let mut granted: Vec<&Tool> = Vec::new();
    for tool in &catalog.tools {
        let covering: Vec<(i64, bool)> = matching
            .iter()
            .filter_map(|p| {
                let allows = p
                    .allowed_group_ids
                    .iter()
                    .any(|g| members(catalog, g).contains(&tool.id));
                let denies = p
                    .denied_group_ids
                    .iter()
                    .any(|g| members(catalog, g).contains(&tool.id));
                (allows || denies).then_some((p.priority, denies))
            })
            .collect();
        let Some(top) = covering.iter().map(|(priority, _)| *priority).max() else {
            continue;
        };
        if !covering
            .iter()
            .any(|&(priority, denies)| priority == top && denies)
        {
            granted.push(tool);
        }
    }
    let visible = |tool: &Tool| {
        tool.enabled
            && !tool.deprecated
            && catalog
                .sources
                .iter()
                .any(|s| s.id == tool.source_id && s.enabled)
    };
    let candidates: Vec<&Tool> = granted
        .into_iter()
        .filter(|t| options.include_disabled || visible(t))
        .collect();
    let mut warnings = Vec::new();
    if let Some(names) = &options.tools {
        for name in names {
            let plain = !name.contains(['*', '?', '[', ']', '{', '}', '\\']);
            if plain && !candidates.iter().any(|t| &t.name == name) {
                warnings.push(format!(
                    "tools: '{name}' matches no tool available to this agent"
                ));
            }
        }
    }
    let mut kept: Vec<&Tool> = candidates
        .into_iter()
        .filter(|tool| match &options.groups {
            None => true,
            Some(wanted) if wanted.iter().any(|w| w == "*") => true,
            Some(wanted) => catalog.groups.iter().any(|g| {
                granted_groups.contains(&g.id)
                    && (wanted.contains(&g.id) || wanted.contains(&g.name))
                    && members(catalog, &g.id).contains(&tool.id)
            }),
        })
        .filter(|tool| match (&options.state, &tool.available_in_states) {
            (None, _) | (Some(_), None) => true,
            (Some(state), Some(states)) => states.iter().any(|s| s == state || s == "*"),
        })
        .filter(|tool| match &options.tools {
            None => true,
            Some(globs) => globs
                .iter()
                .any(|g| g == "*" || glob_match(g, &tool.name, false)),
        })
        .collect();
    kept.sort_by(|a, b| a.id.cmp(&b.id));
    let entries = kept
        .into_iter()
        .map(|tool| {
            let groups = granted_groups
                .iter()
                .filter(|g| members(catalog, g).contains(&tool.id))
                .cloned()
                .collect();
            (tool.id.clone(), groups)
        })
        .collect();
    Outcome { entries, warnings }
}

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

const SOURCE_NAMES: [&str; 3] = ["alpha-api", "Beta", "gamma-api"];
const TOOL_NAMES: [&str; 7] = [
    "get_user",
    "list_users",
    "create_user",
    "delete_user",
    "get_invoice",
    "Get_report",
    "search",
];
const METHODS: [Option<&str>; 5] = [Some("GET"), Some("POST"), Some("get"), Some(""), None];
const PATHS: [Option<&str>; 4] = [
    Some("/users"),
    Some("/users/{id}/x"),
    Some("/invoices"),
    None,
];
const TAGS: [&str; 3] = ["read", "write", "Read"];
const LABELS: [&str; 2] = ["l1", "l2"];
const PATTERNS: [&str; 12] = [
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
        prop::option::weighted(0.4, pick(&PATTERNS)),
        prop::option::weighted(0.5, pick(&PATTERNS)),
        prop::option::weighted(0.2, pick(&PATTERNS)),
        prop::option::weighted(
            0.3,
            prop_oneof![Just("GET"), Just("post"), Just(""), Just("{GET,POST}")],
        ),
        prop::sample::subsequence(TAGS.to_vec(), 0..=1),
        prop::sample::subsequence(TAGS.to_vec(), 0..=1),
        prop::sample::subsequence(LABELS.to_vec(), 0..=1),
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
        prop::collection::vec(tool_ref(tools), 0..=2),
        prop::collection::vec(tool_ref(tools), 0..=2),
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
        "roles",
        "depth",
        "tenant",
        "flags",
        "nested.team",
        "/nested/team",
        "roles.0",
        "missing",
        "nothing",
    ]);
    let scalar = prop_oneof![
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
        (
            pick(&["equals", "not_equals", "contains", "not_contains"]),
            scalar
        ),
        (pick(&["in", "not_in"]), list),
        (Just("matches"), regex),
        (pick(&["gt", "gte", "lt", "lte"]), number),
        (pick(&["exists", "not_exists"]), Just(Value::Null)),
    ];
    (paths, op_value).prop_map(|(path, (operator, value))| ClaimMatcher {
        json_path: path.to_owned(),
        operator: operator.to_owned(),
        value,
    })
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
        prop::collection::vec(group_ref.clone(), 0..=2),
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

fn catalog_strategy() -> impl Strategy<Value = Catalog> {
    (1usize..=3, 0usize..=9, 0usize..=4)
        .prop_flat_map(|(sources, tools, groups)| {
            (
                prop::collection::vec(prop::bool::weighted(0.85), sources),
                prop::collection::vec(tool_strategy(sources + 1), tools),
                prop::collection::vec(group_strategy(tools), groups),
                prop::collection::vec(policy_strategy(groups), 0..=4),
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
            }
        })
}

fn claims_strategy() -> impl Strategy<Value = Map<String, Value>> {
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
            Just(json!(1.5))
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

fn options_strategy() -> impl Strategy<Value = ManifestOptions> {
    let groups = prop::option::weighted(
        0.3,
        prop::sample::subsequence(vec!["g0", "g1", "reads", "all", "*", "nope"], 0..=2),
    );
    let state = prop::option::weighted(0.3, pick(&["research", "x", "other"]));
    let tools = prop::option::weighted(
        0.3,
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
    (prop::bool::weighted(0.3), groups, state, tools).prop_map(
        |(include_disabled, groups, state, tools)| ManifestOptions {
            include_disabled,
            groups: groups.map(|g| g.into_iter().map(str::to_owned).collect()),
            state: state.map(str::to_owned),
            tools: tools.map(|t| t.into_iter().map(str::to_owned).collect()),
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn compiled_engine_agrees_with_the_reference_model(
        catalog in catalog_strategy(),
        requests in prop::collection::vec((claims_strategy(), options_strategy()), 1..=3),
    ) {
        let snapshot = Snapshot::compile(catalog.clone(), 1).expect("generated catalogs compile");
        for (claims, options) in &requests {
            let manifest = snapshot.manifest(claims, options);
            let engine = Outcome {
                entries: manifest
                    .tool_ids()
                    .map(|id| {
                        let groups = manifest.groups_of(id).expect("listed").into_iter().map(str::to_owned).collect();
                        (id.to_owned(), groups)
                    })
                    .collect(),
                warnings: manifest.warnings().to_vec(),
            };
            prop_assert_eq!(engine, reference(&catalog, claims, options), "claims {:?} options {:?}", claims, options);
            // The decision shared between instances rebuilds the very same manifest.
            let (_, access) = snapshot.manifest_with_access(claims, options);
            let rebuilt = snapshot.manifest_for_access(&access, options).expect("same revision");
            prop_assert_eq!(rebuilt.to_json(), manifest.to_json());
        }
    }
}

#[test]
fn reference_glob_matcher_sanity() {
    assert!(glob_match("{get,list}_*", "list_users", false));
    assert!(glob_match("[!g]*", "list", false));
    assert!(!glob_match("[!g]*", "get", false));
    assert!(glob_match("?et_*", "Get_report", false));
    assert!(glob_match("GET_*", "get_x", true));
    assert!(!glob_match("GET_*", "get_x", false));
}
