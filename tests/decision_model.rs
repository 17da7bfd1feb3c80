//! Property test: the compiled engine agrees with a deliberately naive reference model of
//! SEMANTICS.md sections 2–6, over random catalogs, claims and request options.
//!
//! The model below is written from the spec text alone: loops over every tool, group and
//! policy, its own tiny glob matcher, `serde_json`'s own JSON Pointer, no bitsets, no caches, no
//! interning. Generators draw from small vocabularies so that matches, ties, dangling references
//! and absent claims are all common, and from the classes of input that once failed open:
//! policies on "volatile" claims (`sid`, `jti`, `iat`), `""` and `**` patterns, `?` before a
//! multi-byte character, numbers written `+2` or `02`. Requests come in families that differ
//! only in volatile claims, and every answer is also taken through a cache keyed the way the
//! gateway keys it (the claims key), so that a key that is too coarse shows up as one identity
//! served another's manifest.

use std::collections::{BTreeSet, HashMap};

use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};
use serde_json::{Map, Value, json};
use toolgate::auth::AdminRule;
use toolgate::cache::CacheKey;
use toolgate::domain::manifest::ManifestOptions;
use toolgate::domain::model::{
    AccessPolicy, Catalog, ClaimMatcher, Label, Selector, Source, Tool, ToolGroup,
};
use toolgate::domain::snapshot::Snapshot;

// ---------------------------------------------------------------------------------------------
// The reference model
// ---------------------------------------------------------------------------------------------

/// Naive glob: `*`, `?` (one character), `[..]`, `[!..]`, `{a,b}`; whole string; optional
/// ASCII case folding. `**` is simply two `*`.
fn glob_match(pattern: &str, text: &str, fold: bool) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = if fold {
        (
            pattern.to_ascii_lowercase().chars().collect(),
            text.to_ascii_lowercase().chars().collect(),
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

/// A number, or a string in JSON number syntax with nothing around it (SEMANTICS.md section 3).
fn number_of(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) if s.trim() == s => serde_json::from_str::<f64>(s).ok(),
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
    let source = catalog
        .sources
        .iter()
        .find(|source| source.id == tool.source_id);
    // A tool whose source does not exist has no source name: only `*` matches it.
    let source_matches = match source {
        Some(source) => selector_pattern_matches(&s.source_pattern, &source.name),
        None => s.source_pattern == "*",
    };
    let optional = |pattern: &Option<String>, value: &Option<String>| match pattern.as_deref() {
        None | Some("") => true,
        Some(p) => selector_pattern_matches(p, value.as_deref().unwrap_or("")),
    };
    source_matches
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

fn catalog_strategy() -> impl Strategy<Value = Catalog> {
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
fn claims_family_strategy() -> impl Strategy<Value = Vec<Map<String, Value>>> {
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

fn options_strategy() -> impl Strategy<Value = ManifestOptions> {
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
    (prop::bool::weighted(0.3), groups, state, tools).prop_map(
        |(include_disabled, groups, state, tools)| ManifestOptions {
            include_disabled,
            groups: groups.map(|g| g.into_iter().map(str::to_owned).collect()),
            state: state.map(str::to_owned),
            tools: tools.map(|t| t.into_iter().map(str::to_owned).collect()),
        },
    )
}

/// What one case of the differential test saw.
#[derive(Default)]
struct Tally {
    requests: usize,
    non_empty: usize,
    cache_hits: usize,
}

/// One case: every request against the reference, directly and through a cache keyed by the
/// claims key; `Err` describes the first disagreement.
fn check_case(
    catalog: &Catalog,
    families: &[(Vec<Map<String, Value>>, ManifestOptions)],
    tally: &mut Tally,
) -> Result<(), TestCaseError> {
    let snapshot = Snapshot::compile(catalog.clone(), 1).expect("generated catalogs compile");
    let admin = AdminRule::default();
    let mut cache: HashMap<CacheKey, (Vec<u8>, Map<String, Value>)> = HashMap::new();
    for (family, options) in families {
        for claims in family {
            let manifest = snapshot.manifest(claims, options);
            let engine = Outcome {
                entries: manifest
                    .tool_ids()
                    .map(|id| {
                        let groups = manifest
                            .groups_of(id)
                            .expect("listed")
                            .into_iter()
                            .map(str::to_owned)
                            .collect();
                        (id.to_owned(), groups)
                    })
                    .collect(),
                warnings: manifest.warnings().to_vec(),
            };
            tally.requests += 1;
            tally.non_empty += usize::from(!engine.entries.is_empty());
            prop_assert_eq!(
                &engine,
                &reference(catalog, claims, options),
                "claims {:?} options {:?}",
                claims,
                options
            );
            // The decision shared between instances rebuilds the very same manifest.
            let (_, access) = snapshot.manifest_with_access(claims, options);
            let rebuilt = snapshot
                .manifest_for_access(&access, options)
                .expect("same revision");
            let body = manifest.to_json();
            prop_assert_eq!(&rebuilt.to_json(), &body);
            // A cache keyed by the claims key never hands one identity another's answer.
            let key = CacheKey::new(&snapshot, admin.paths(), claims, options.clone());
            match cache.get(&key) {
                Some((cached, first)) => {
                    tally.cache_hits += 1;
                    prop_assert_eq!(
                        cached,
                        &body,
                        "claims {:?} got the cached manifest of {:?}",
                        claims,
                        first
                    );
                }
                None => {
                    cache.insert(key, (body, claims.clone()));
                }
            }
        }
    }
    Ok(())
}

#[test]
fn compiled_engine_agrees_with_the_reference_model() {
    let cases = 10_000;
    let mut runner = TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let strategy = (
        catalog_strategy(),
        prop::collection::vec((claims_family_strategy(), options_strategy()), 1..=3),
    );
    let tally = std::cell::RefCell::new(Tally::default());
    let result = runner.run(&strategy, |(catalog, families)| {
        check_case(&catalog, &families, &mut tally.borrow_mut())
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
    // Agreement means something only if the cases are not mostly empty manifests, and the
    // cache check only if identities really share keys.
    let tally = tally.into_inner();
    println!(
        "{} requests, {} non-empty manifests, {} cache hits",
        tally.requests, tally.non_empty, tally.cache_hits
    );
    assert!(
        tally.non_empty * 10 >= tally.requests,
        "only {} of {} manifests are non-empty",
        tally.non_empty,
        tally.requests
    );
    assert!(
        tally.cache_hits * 10 >= tally.requests,
        "only {} cache hits in {} requests",
        tally.cache_hits,
        tally.requests
    );
}

#[test]
fn reference_glob_matcher_sanity() {
    assert!(glob_match("{get,list}_*", "list_users", false));
    assert!(glob_match("[!g]*", "list", false));
    assert!(!glob_match("[!g]*", "get", false));
    assert!(glob_match("?et_*", "Get_report", false));
    assert!(glob_match("GET_*", "get_x", true));
    assert!(!glob_match("GET_*", "get_x", false));
    assert!(!glob_match("/**/users", "/users", false));
    assert!(glob_match("?tape_*", "\u{e9}tape_item", false));
    assert!(!glob_match("k*", "\u{212a}elvin_x", true));
    assert!(!glob_match("", "search", false));
}
