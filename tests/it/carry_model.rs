//! Property test: what the caches carry from one snapshot to the next after a write
//! (`domain::continuity`) is exactly what rendering at the new revision gives.
//!
//! Over random catalogs, claims and options, one random edit of every kind an admin or a
//! refresh makes (a tool enabled, described, deprecated, renamed, moved between states, added or
//! removed; a source switched off; a policy or group changed; nothing changed at all): every
//! carried access decision equals the one evaluated at the new revision, every carried rendered
//! manifest has the very bytes and etag of a fresh render, and the manifest service, carried
//! across the write, serves those bytes. A carried manifest that lists a tool the write took
//! away would be a wrong grant, so the test also counts that both outcomes happen: manifests
//! carried, and manifests the edit touched refused.

use crate::support::random_catalog;

use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};
use random_catalog::{catalog_strategy, claims_family_strategy, options_strategy};
use serde_json::{Map, Value};
use toolgate::cache::RenderedManifest;
use toolgate::domain::manifest::ManifestOptions;
use toolgate::domain::model::Catalog;
use toolgate::domain::snapshot::Snapshot;
use toolgate::domain::workers::OnThisThread;
use toolgate::service::Manifests;
use toolgate::service::access::AccessCache;
use toolgate::service::catalog::CarryOver;
use toolgate::telemetry::Metrics;

/// The edits a write can make, each applied to the item at some index (modulo the count).
#[derive(Debug, Clone, Copy)]
enum Edit {
    ToggleEnabled,
    Describe,
    ToggleDeprecated,
    Rename,
    States,
    ToggleSource,
    PolicyPriority,
    GroupActive,
    AddTool,
    RemoveTool,
    Nothing,
}

fn edit_strategy() -> impl Strategy<Value = (Edit, usize)> {
    let edit = prop_oneof![
        4 => Just(Edit::ToggleEnabled),
        4 => Just(Edit::Describe),
        2 => Just(Edit::ToggleDeprecated),
        2 => Just(Edit::Rename),
        2 => Just(Edit::States),
        1 => Just(Edit::ToggleSource),
        1 => Just(Edit::PolicyPriority),
        1 => Just(Edit::GroupActive),
        1 => Just(Edit::AddTool),
        1 => Just(Edit::RemoveTool),
        1 => Just(Edit::Nothing),
    ];
    (edit, any::<usize>())
}

fn edited(catalog: &Catalog, (edit, at): (Edit, usize)) -> Catalog {
    let mut catalog = catalog.clone();
    let tools = catalog.tools.len().max(1);
    let tool = catalog.tools.get_mut(at % tools);
    match (edit, tool) {
        (Edit::ToggleEnabled, Some(tool)) => tool.enabled = !tool.enabled,
        (Edit::Describe, Some(tool)) => tool.description.push_str(" (edited)"),
        (Edit::ToggleDeprecated, Some(tool)) => tool.deprecated = !tool.deprecated,
        (Edit::Rename, Some(tool)) => tool.name.push_str("_v2"),
        (Edit::States, Some(tool)) => {
            tool.available_in_states = match tool.available_in_states {
                Some(_) => None,
                None => Some(vec!["research".to_owned()]),
            }
        }
        (Edit::AddTool, Some(tool)) => {
            let mut added = tool.clone();
            added.id.push_str("-copy");
            added.name.push_str("_copy");
            catalog.tools.push(added);
        }
        (Edit::RemoveTool, Some(_)) => {
            catalog.tools.remove(at % tools);
        }
        (Edit::ToggleSource, _) if !catalog.sources.is_empty() => {
            let count = catalog.sources.len();
            let source = &mut catalog.sources[at % count];
            source.enabled = !source.enabled;
        }
        (Edit::PolicyPriority, _) if !catalog.policies.is_empty() => {
            let count = catalog.policies.len();
            catalog.policies[at % count].priority += 1;
        }
        (Edit::GroupActive, _) if !catalog.groups.is_empty() => {
            let count = catalog.groups.len();
            let group = &mut catalog.groups[at % count];
            group.active = !group.active;
        }
        _ => {}
    }
    catalog
}

#[derive(Default)]
struct Tally {
    carried: usize,
    refused: usize,
    served_carried: u64,
}

type Requests = Vec<(Vec<Map<String, Value>>, ManifestOptions)>;

fn manifests() -> Manifests {
    let metrics = Arc::new(Metrics::new(None).expect("metrics"));
    let access = Arc::new(AccessCache::new(64 << 20));
    Manifests::new(access, 64 << 20, None, &[], 16, metrics)
}

fn check_case(
    catalog: &Catalog,
    edit: (Edit, usize),
    requests: &Requests,
    tally: &mut Tally,
) -> Result<(), TestCaseError> {
    let Ok(old) = Snapshot::compile(catalog.clone(), 1) else {
        return Ok(());
    };
    let Ok(new) = Snapshot::compile_after(edited(catalog, edit), 2, &OnThisThread, Some(&old))
    else {
        return Ok(());
    };
    let service = manifests();
    for (family, options) in requests {
        for claims in family {
            service.resolve_local(&old, claims, options.clone());
        }
    }
    let Some(continuity) = new.continuity_from(&old) else {
        return Ok(());
    };
    service.carry(&continuity);
    let hits_before = service.rendered_stats().hits;
    for (family, options) in requests {
        for claims in family {
            let matched = continuity.matched(&old.matched(claims)).expect("from old");
            prop_assert_eq!(&matched, &new.matched(claims), "{:?}", edit);
            let fresh = RenderedManifest::of(&new.manifest(claims, options));
            match RenderedManifest::of(&old.manifest(claims, options)).carried(&continuity) {
                Some(carried) => {
                    tally.carried += 1;
                    prop_assert_eq!(carried.to_vec(), fresh.to_vec(), "{:?}", edit);
                    prop_assert_eq!(&carried.etag, &fresh.etag);
                    prop_assert_eq!(carried.revision, 2);
                }
                None => tally.refused += 1,
            }
            let served = service.resolve_local(&new, claims, options.clone());
            prop_assert_eq!(served.to_vec(), fresh.to_vec(), "{:?}", edit);
        }
    }
    tally.served_carried += service.rendered_stats().hits - hits_before;
    Ok(())
}

#[test]
fn carried_decisions_and_manifests_are_what_the_new_revision_renders() {
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 3_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let strategy = (
        catalog_strategy(),
        edit_strategy(),
        prop::collection::vec((claims_family_strategy(), options_strategy()), 1..=3),
    );
    let tally = std::cell::RefCell::new(Tally::default());
    let result = runner.run(&strategy, |(catalog, edit, requests)| {
        check_case(&catalog, edit, &requests, &mut tally.borrow_mut())
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
    let tally = tally.into_inner();
    println!(
        "{} manifests carried, {} refused, {} served from what was carried",
        tally.carried, tally.refused, tally.served_carried
    );
    // Both outcomes must be common, or the test says little about the rule between them.
    assert!(
        tally.carried * 5 >= tally.carried + tally.refused,
        "too few carried"
    );
    assert!(
        tally.refused * 20 >= tally.carried + tally.refused,
        "too few refused"
    );
    assert!(
        tally.served_carried > 0,
        "the service never served a carried manifest"
    );
}
