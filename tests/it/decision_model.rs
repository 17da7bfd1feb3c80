//! Property test: the compiled engine agrees with a deliberately naive reference model of
//! docs/semantics.md sections 2–6, over random catalogs, claims and request options.
//!
//! The model below is written from the spec text alone: loops over every tool, group and
//! policy, its own tiny glob matcher, `serde_json`'s own JSON Pointer, no bitsets, no caches, no
//! interning. The generators (`support/random_catalog.rs`) draw from small vocabularies so that
//! matches, ties, dangling references and absent claims are all common, and from the classes of
//! input that once failed open. Requests come in families that differ
//! only in volatile claims, and every answer is also taken through a cache keyed the way the
//! gateway keys it (the claims key), so that a key that is too coarse shows up as one identity
//! served another's manifest.

use crate::support::random_catalog;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};
use random_catalog::{catalog_strategy, claims_family_strategy, options_strategy};
use serde_json::{Map, Value, json};
use toolgate::auth::AdminRule;
use toolgate::cache::CacheKey;
use toolgate::domain::claims::ClaimPath;
use toolgate::domain::manifest::ManifestOptions;
use toolgate::domain::mcp::McpCatalog;
use toolgate::domain::model::{AccessPolicy, Catalog, ClaimMatcher, Selector, Tool};
use toolgate::domain::snapshot::Snapshot;
use toolgate::service::access::AccessCache;
use toolgate::service::{Decisions, Manifests, McpTools};
use toolgate::telemetry::Metrics;
use toolgate::upstream::{CallLimits, Upstream};

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

/// A number, or a string in JSON number syntax with nothing around it (docs/semantics.md section 3).
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

/// What one case of the differential test saw.
#[derive(Default)]
struct Tally {
    requests: usize,
    non_empty: usize,
    cache_hits: usize,
    /// Entries the tiny-budget caches evicted.
    evictions: u64,
}

/// The byte budget of each cache in [`Bounded`]: a few entries at most.
const TINY_BUDGET: usize = 1200;

/// Tools per MCP page in [`Bounded`]: small, so that manifests span pages and cursors.
const MCP_PAGE: usize = 3;

/// The manifest, decision and MCP services with tiny budgets, fresh per case (caches belong to
/// one revision, and every case's catalog is at revision 1).
struct Bounded {
    manifests: Arc<Manifests>,
    decisions: Arc<Decisions>,
    mcp: McpTools,
}

impl Bounded {
    fn new(admin_paths: &[ClaimPath]) -> Bounded {
        thread_local! {
            static METRICS: Arc<Metrics> = Arc::new(Metrics::new(None).expect("metrics"));
            static UPSTREAM: Arc<Upstream> =
                Arc::new(Upstream::new(CallLimits::default()).expect("an HTTP client"));
        }
        let access = Arc::new(AccessCache::new(TINY_BUDGET));
        let manifests = Arc::new(Manifests::new(
            Arc::clone(&access),
            TINY_BUDGET,
            None,
            admin_paths,
            16,
            METRICS.with(Arc::clone),
        ));
        let decisions = Arc::new(Decisions::new(access, TINY_BUDGET));
        Bounded {
            mcp: McpTools::new(
                Arc::clone(&decisions),
                Arc::clone(&manifests),
                UPSTREAM.with(Arc::clone),
                MCP_PAGE,
                TINY_BUDGET,
            ),
            manifests,
            decisions,
        }
    }

    fn evictions(&self) -> u64 {
        self.manifests.rendered_stats().evictions
            + self.manifests.access().stats().evictions
            + self.decisions.evaluation_stats().evictions
            + self.mcp.page_stats().evictions
    }
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
    let bounded = Bounded::new(admin.paths());
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
            // The access decision (which policies matched) decides the very same manifest,
            // also when it travelled between instances by policy ids.
            let matched = snapshot.matched(claims);
            let body = manifest.to_json();
            let decided = snapshot
                .manifest_of(&matched, options)
                .expect("same revision");
            prop_assert_eq!(&decided.to_json(), &body);
            let shared = snapshot
                .matched_of_access(&snapshot.access_of(&matched))
                .expect("same revision");
            prop_assert_eq!(&shared, &matched);
            // Through the manifest and decision services' caches, with budgets so small that
            // entries are evicted all the time: never another decision's answer, never more
            // bytes than the budget.
            let served = bounded
                .manifests
                .resolve_local(&snapshot, claims, options.clone());
            prop_assert_eq!(&served.to_vec()[..], &body[..], "claims {:?}", claims);
            let evaluation = bounded
                .decisions
                .listing(&snapshot, claims, options.clone());
            let listed: Vec<&str> = snapshot.listed_ids(&evaluation, None).collect();
            let ids: Vec<&str> = manifest.tool_ids().collect();
            prop_assert_eq!(listed, ids);
            check_mcp_pages(&snapshot, &bounded.mcp, claims, options)?;
            for stats in [
                bounded.manifests.rendered_stats(),
                bounded.manifests.access().stats(),
                bounded.decisions.evaluation_stats(),
                bounded.mcp.page_stats(),
            ] {
                prop_assert!(stats.bytes <= TINY_BUDGET, "{:?}", stats);
            }
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
    tally.evictions += bounded.evictions();
    Ok(())
}

/// The cursor this server gives out for the page after tool `id` (its wire format, which a
/// client could forge for any id).
fn cursor_after(id: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("after:{id}"))
}

/// Every MCP page of the manifest, walked by the cursors the server gives, twice (the second
/// walk is served from the page cache where the budget kept it), and the page after each
/// catalog tool and after an id no tool has (cursors a client may forge), is byte for byte the
/// page made without any cache from a fresh evaluation.
fn check_mcp_pages(
    snapshot: &Snapshot,
    mcp: &McpTools,
    claims: &Map<String, Value>,
    options: &ManifestOptions,
) -> Result<(), TestCaseError> {
    let uncached = McpCatalog::of(snapshot);
    let evaluation = snapshot.evaluate(claims, options);
    let expected = |after: Option<&str>| uncached.page(snapshot, &evaluation, after, MCP_PAGE);
    for _walk in 0..2 {
        let (mut cursor, mut after) = (None::<String>, None::<String>);
        loop {
            let served = mcp
                .list(snapshot, claims, options.clone(), cursor.as_deref())
                .expect("our own cursor");
            let want = expected(after.as_deref());
            prop_assert_eq!(&served.tools[..], &want.tools[..], "after {:?}", after);
            prop_assert_eq!(served.next_cursor.is_some(), want.next_after.is_some());
            let Some(next) = want.next_after else { break };
            let next_cursor = cursor_after(next);
            prop_assert_eq!(served.next_cursor.as_deref(), Some(next_cursor.as_str()));
            cursor = Some(next_cursor);
            after = Some(next.to_owned());
        }
    }
    let ids = snapshot.catalog().tools.iter().map(|tool| tool.id.as_str());
    for id in ids.chain(["~no such tool"]) {
        let served = mcp
            .list(snapshot, claims, options.clone(), Some(&cursor_after(id)))
            .expect("a well-formed cursor");
        prop_assert_eq!(
            &served.tools[..],
            &expected(Some(id)).tools[..],
            "after {}",
            id
        );
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
        "{} requests, {} non-empty manifests, {} cache hits, {} evictions",
        tally.requests, tally.non_empty, tally.cache_hits, tally.evictions
    );
    assert!(
        tally.non_empty * 10 >= tally.requests,
        "only {} of {} manifests are non-empty",
        tally.non_empty,
        tally.requests
    );
    assert!(
        tally.evictions * 10 >= tally.requests as u64,
        "only {} evictions in {} requests: the byte bounds were hardly exercised",
        tally.evictions,
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
