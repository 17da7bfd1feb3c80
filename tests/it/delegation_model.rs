//! Delegation only narrows (docs/semantics.md section 6, step 4), as a property over random
//! catalogs (whose policies also grant and deny on `act`, the delegation depth), claims and
//! chains of delegations: at every level, the child's manifest is within its parent's and
//! within its scope (`tool:<id>`, or `group:<id>` of a group granted to the parent); the
//! decision path (an evaluation), the cached path (the decision by matched policies) and the
//! explanation agree with it; so do the services every transport serves from (manifests,
//! decisions, MCP pages and calls), through caches shared by every level of the chain (a key
//! that forgot the chain would hand a child its parent's answer); and a policy change that
//! takes a tool from the root takes it from every descendant in the same snapshot.

use crate::support;

use std::collections::BTreeSet;
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};
use serde_json::{Map, Value, json};
use support::random_catalog::{catalog_strategy, claims_strategy};
use toolgate::domain::delegation::{ACT, CLAIM};
use toolgate::domain::manifest::ManifestOptions;
use toolgate::domain::mcp::McpCatalog;
use toolgate::domain::model::{AccessPolicy, Catalog, ToolGroup};
use toolgate::domain::snapshot::Snapshot;
use toolgate::service::access::AccessCache;
use toolgate::service::{Decisions, Manifests, McpTools};
use toolgate::telemetry::Metrics;
use toolgate::upstream::{CallLimits, Upstream};

/// The services of one gateway at one revision, their caches shared by every claim set.
struct Services {
    manifests: Arc<Manifests>,
    decisions: Arc<Decisions>,
    mcp: McpTools,
}

impl Services {
    fn new() -> Services {
        thread_local! {
            static METRICS: Arc<Metrics> = Arc::new(Metrics::new(None).expect("metrics"));
            static UPSTREAM: Arc<Upstream> =
                Arc::new(Upstream::new(CallLimits::default()).expect("an HTTP client"));
        }
        let access = Arc::new(AccessCache::new(1 << 20));
        let manifests = Arc::new(Manifests::new(
            Arc::clone(&access),
            1 << 20,
            None,
            &[],
            16,
            METRICS.with(Arc::clone),
        ));
        let decisions = Arc::new(Decisions::new(access, 1 << 20));
        let mcp = McpTools::new(
            Arc::clone(&decisions),
            Arc::clone(&manifests),
            UPSTREAM.with(Arc::clone),
            1000,
            1 << 20,
        );
        Services {
            manifests,
            decisions,
            mcp,
        }
    }
}

/// One scope item to draw: mostly what the root holds (so that children often hold
/// something), else anything of the catalog's vocabulary or ids that name nothing.
#[derive(Debug, Clone)]
enum Draw {
    HeldTool(usize),
    HeldGroup(usize),
    Item(String),
}

fn scope_strategy() -> impl Strategy<Value = Vec<Draw>> {
    let item = prop_oneof![
        4 => any::<usize>().prop_map(Draw::HeldTool),
        2 => any::<usize>().prop_map(Draw::HeldGroup),
        2 => (0..9usize).prop_map(|i| Draw::Item(format!("tool:op{i}"))),
        1 => (0..4usize).prop_map(|i| Draw::Item(format!("group:g{i}"))),
        1 => Just(Draw::Item("tool:ghost".to_owned())),
        1 => Just(Draw::Item("group:ghost".to_owned())),
    ];
    prop::collection::vec(item, 1..=4)
}

/// The scope items `draws` name, given what the root holds.
fn scope_of(draws: &[Draw], held: &[(String, Vec<String>)]) -> Vec<String> {
    let groups: Vec<&String> = held.iter().flat_map(|(_, groups)| groups).collect();
    draws
        .iter()
        .map(|draw| match draw {
            Draw::HeldTool(i) if !held.is_empty() => format!("tool:{}", held[i % held.len()].0),
            Draw::HeldGroup(i) if !groups.is_empty() => {
                format!("group:{}", groups[i % groups.len()])
            }
            Draw::Item(item) => item.clone(),
            _ => "tool:ghost".to_owned(),
        })
        .collect()
}

/// The claims of each level of a chain made from `root` with `scopes`: `C_0` is the root,
/// `C_k` nests `act` k times and carries the first k scopes.
fn chain_claims(root: &Map<String, Value>, scopes: &[Vec<String>]) -> Vec<Map<String, Value>> {
    let mut levels = vec![root.clone()];
    for k in 1..=scopes.len() {
        let mut claims = root.clone();
        let mut act = root.get(ACT).cloned();
        for level in 0..k {
            let mut next = json!({"sub": format!("agent-{level}")});
            if let Some(inner) = act {
                next[ACT] = inner;
            }
            act = Some(next);
        }
        claims.insert(ACT.to_owned(), act.expect("one level at least"));
        claims.insert(CLAIM.to_owned(), json!({"scopes": &scopes[..k]}));
        levels.push(claims);
    }
    levels
}

/// What the services serve `claims` agrees with the domain's manifest `ids`: the rendered
/// manifest, the decision listing, and which tools `tools/call` may call.
fn served_alike(
    snapshot: &Snapshot,
    services: &Services,
    claims: &Map<String, Value>,
    ids: &[&str],
) -> Result<(), TestCaseError> {
    let options = ManifestOptions::default();
    let expected = snapshot.manifest(claims, &options).to_json();
    let served = services
        .manifests
        .resolve_local(snapshot, claims, options.clone());
    prop_assert_eq!(
        &served.to_vec()[..],
        &expected[..],
        "rendered for {:?}",
        claims
    );
    let evaluation = services
        .decisions
        .listing(snapshot, claims, options.clone());
    let decided: Vec<&str> = snapshot.listed_ids(&evaluation, None).collect();
    prop_assert_eq!(&decided[..], ids);
    let catalog = McpCatalog::of(snapshot);
    for tool in &snapshot.catalog().tools {
        let Some(name) = catalog.name(snapshot, &tool.id) else {
            continue;
        };
        let callable = services
            .mcp
            .callable(snapshot, claims, &options, name)
            .is_some();
        prop_assert_eq!(
            callable,
            ids.contains(&tool.id.as_str()),
            "tools/call of {}",
            name
        );
    }
    Ok(())
}

/// Tool ids with the granted groups each is listed with.
fn listing(snapshot: &Snapshot, claims: &Map<String, Value>) -> Vec<(String, Vec<String>)> {
    let manifest = snapshot.manifest(claims, &ManifestOptions::default());
    manifest
        .tool_ids()
        .map(|id| {
            let groups = manifest.groups_of(id).expect("listed");
            (
                id.to_owned(),
                groups.into_iter().map(str::to_owned).collect(),
            )
        })
        .collect()
}

#[derive(Default)]
struct Tally {
    chains: usize,
    non_empty_children: usize,
    non_empty_parents: usize,
    narrowed: usize,
    withdrawn: usize,
}

fn check(
    catalog: &Catalog,
    root: &Map<String, Value>,
    draws: &[Vec<Vec<Draw>>],
    tally: &mut Tally,
) -> Result<(), TestCaseError> {
    let snapshot = Snapshot::compile(catalog.clone(), 1).expect("generated catalogs compile");
    let services = Services::new();
    let held = listing(&snapshot, root);
    let root_ids: Vec<&str> = held.iter().map(|(id, _)| id.as_str()).collect();
    served_alike(&snapshot, &services, root, &root_ids)?;
    let chains: Vec<Vec<Vec<String>>> = draws
        .iter()
        .map(|chain| chain.iter().map(|scope| scope_of(scope, &held)).collect())
        .collect();
    for scopes in &chains {
        let levels = chain_claims(root, scopes);
        let mut parent = listing(&snapshot, &levels[0]);
        for (k, claims) in levels.iter().enumerate().skip(1) {
            tally.chains += 1;
            let child = listing(&snapshot, claims);
            let scope = &scopes[k - 1];
            for (id, _) in &child {
                let held = parent.iter().find(|(parent_id, _)| parent_id == id);
                prop_assert!(
                    held.is_some(),
                    "level {k}: {id} is not its parent's ({parent:?})"
                );
                let (_, parent_groups) = held.expect("checked");
                let kept = scope.contains(&format!("tool:{id}"))
                    || parent_groups
                        .iter()
                        .any(|group| scope.contains(&format!("group:{group}")));
                prop_assert!(kept, "level {k}: {id} is outside the scope {scope:?}");
            }
            tally.non_empty_children += usize::from(!child.is_empty());
            tally.non_empty_parents += usize::from(!parent.is_empty());
            tally.narrowed += usize::from(child.len() < parent.len());
            // Decided, cached and explained alike.
            let ids: Vec<&str> = child.iter().map(|(id, _)| id.as_str()).collect();
            let evaluation = snapshot.evaluate(claims, &ManifestOptions::default());
            let decided: Vec<&str> = snapshot.listed_ids(&evaluation, None).collect();
            prop_assert_eq!(&decided, &ids);
            let matched = snapshot.matched(claims);
            prop_assert!(matched.is_delegated());
            let by_matched = snapshot
                .manifest_of(&matched, &ManifestOptions::default())
                .expect("same revision");
            prop_assert_eq!(by_matched.tool_ids().collect::<Vec<_>>(), ids.clone());
            let explained = snapshot.explain(claims, &ManifestOptions::default());
            prop_assert_eq!(
                explained.manifest.tool_ids().collect::<Vec<_>>(),
                ids.clone()
            );
            prop_assert!(explained.explanation.delegation.is_some());
            served_alike(&snapshot, &services, claims, &ids)?;
            // A shared form would lose the restriction: there is none.
            prop_assert!(
                snapshot
                    .matched_of_access(&snapshot.access_of(&matched))
                    .is_none()
            );
            parent = child;
        }
    }
    withdrawn_everywhere(catalog, root, &chains, tally)
}

/// A deny for the root's first tool, at a priority above every other: no level keeps it.
fn withdrawn_everywhere(
    catalog: &Catalog,
    root: &Map<String, Value>,
    chains: &[Vec<Vec<String>>],
    tally: &mut Tally,
) -> Result<(), TestCaseError> {
    let before = Snapshot::compile(catalog.clone(), 1).expect("compiles");
    let Some((taken, _)) = listing(&before, root).into_iter().next() else {
        return Ok(());
    };
    let mut changed = catalog.clone();
    let mut group: ToolGroup = serde_json::from_value(json!({
        "id": "withdrawn", "name": "withdrawn", "explicit_tool_ids": [taken]
    }))
    .expect("a group");
    group.selectors.clear();
    changed.groups.push(group);
    let policy: AccessPolicy = serde_json::from_value(json!({
        "id": "withdraw", "name": "withdraw", "priority": 100,
        "claim_matchers": [{"json_path": "sub", "operator": "exists"}],
        "denied_group_ids": ["withdrawn"]
    }))
    .expect("a policy");
    changed.policies.push(policy);
    let after = Snapshot::compile(changed, 2).expect("compiles");
    for scopes in chains {
        for claims in chain_claims(root, scopes) {
            let ids: BTreeSet<String> = listing(&after, &claims)
                .into_iter()
                .map(|(id, _)| id)
                .collect();
            prop_assert!(!ids.contains(&taken), "{taken} is still held at {claims:?}");
        }
    }
    tally.withdrawn += 1;
    Ok(())
}

#[test]
fn a_child_never_holds_more_than_its_parent_within_its_scope() {
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 4_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let chain = prop::collection::vec(scope_strategy(), 1..=3);
    let strategy = (
        catalog_strategy(),
        claims_strategy(),
        prop::option::weighted(0.2, Just(json!({"sub": "idp-exchange"}))),
        prop::collection::vec(chain, 2..=3),
    );
    let tally = std::cell::RefCell::new(Tally::default());
    let result = runner.run(&strategy, |(mut catalog, mut root, idp_act, chains)| {
        // Some roots already carry an `act` of their own (an identity provider's exchange).
        if let Some(act) = idp_act {
            root.insert(ACT.to_owned(), act);
        }
        // Most roots hold something: a lowest-priority grant of the first group to everyone.
        let everyone: AccessPolicy = serde_json::from_value(json!({
            "id": "everyone", "name": "everyone", "priority": -5,
            "claim_matchers": [{"json_path": "sub", "operator": "exists"}],
            "allowed_group_ids": ["g0"]
        }))
        .expect("a policy");
        catalog.policies.push(everyone);
        check(&catalog, &root, &chains, &mut tally.borrow_mut())
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
    let tally = tally.into_inner();
    println!(
        "{} delegations checked, {} children hold tools, {} of {} parents holding tools \
         narrowed, {} withdrawals",
        tally.chains,
        tally.non_empty_children,
        tally.narrowed,
        tally.non_empty_parents,
        tally.withdrawn
    );
    assert!(tally.chains >= 10_000, "only {} delegations", tally.chains);
    assert!(
        tally.non_empty_children * 10 >= tally.chains,
        "only {} of {} children hold anything: the property would hold vacuously",
        tally.non_empty_children,
        tally.chains
    );
    assert!(
        tally.narrowed * 5 >= tally.non_empty_parents,
        "scopes narrowed only {} of {} parents holding tools",
        tally.narrowed,
        tally.non_empty_parents
    );
    assert!(
        tally.withdrawn * 10 >= 4_000,
        "too few roots held a tool to withdraw"
    );
}
