//! Property: for random sequences of upstream changes, refreshes and admin decisions, what
//! agents are served is always a definition that was approved (by the admin who created the
//! source, by an admin's decision, or by a refresh under `warn`); a call goes upstream only
//! while the upstream's definition is the approved one; and approving everything after each
//! refresh under `hold` ends where `warn` (with its renames approved) ends.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use chrono::Utc;
use proptest::prelude::*;
use serde_json::json;
use toolgate::domain::definition;
use toolgate::domain::imported::ImportedTool;
use toolgate::domain::model::Catalog;
use toolgate::domain::revision::RevisionStatus;
use toolgate::domain::source_config::{Pinning, withheld};
use toolgate::domain::stamp::Stamp;
use toolgate::ingest::Import;
use toolgate::ingest::decide::{self, Decision};
use toolgate::ingest::refresh::{self, Approval};

/// The upstream: for each of a few tool names, the version of its definition it serves (absent:
/// not served). A version picks the description and the schema.
type Upstream = BTreeMap<u8, u8>;

#[derive(Debug, Clone)]
enum Step {
    /// The upstream serves tool `name` at `version` (0: stops serving it).
    Upstream {
        name: u8,
        version: u8,
    },
    Refresh,
    /// Approve (or reject) the `index`-th pending revision, if any.
    Decide {
        index: usize,
        approve: bool,
    },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0u8..5, 0u8..4).prop_map(|(name, version)| Step::Upstream { name, version }),
        2 => Just(Step::Refresh),
        2 => (0usize..4, any::<bool>()).prop_map(|(index, approve)| Step::Decide { index, approve }),
    ]
}

fn stamp() -> Stamp {
    Stamp {
        at: Utc::now(),
        by: "admin".to_owned(),
    }
}

/// Tool `name` at `version`, as an importer gives it. Versions share words so that some edits
/// are near enough to pair a rename.
fn upstream_tool(name: u8, version: u8) -> ImportedTool {
    let id = format!("t{name}");
    let description =
        format!("Reads the records of kind {name} and returns them version {version}");
    let mut properties = serde_json::Map::new();
    properties.insert("query".to_owned(), json!({"type": "string"}));
    if version.is_multiple_of(2) {
        properties.insert("limit".to_owned(), json!({"type": "integer"}));
    }
    let input_schema = json!({"type": "object", "properties": properties});
    ImportedTool {
        operation_id: id.clone(),
        name: id.clone(),
        title: None,
        description: description.clone(),
        method: "MCP".to_owned(),
        path: format!("mcp://s/{id}"),
        tags: Vec::new(),
        input_schema: Arc::new(input_schema.clone()),
        output_schema: None,
        deprecated: false,
        definition: Arc::new(json!({"tool": {"name": id, "description": description,
                                             "inputSchema": input_schema}})),
        schemas_apart: false,
    }
}

fn import(upstream: &Upstream) -> Import {
    Import {
        tools: upstream
            .iter()
            .map(|(&name, &version)| upstream_tool(name, version))
            .collect(),
        issues: Vec::new(),
    }
}

fn catalog(pinning: Pinning) -> Catalog {
    serde_json::from_value(json!({"sources": [{"id": "s", "name": "s", "type": "mcp",
        "config": {"url": "http://127.0.0.1:9/mcp", "pinning": pinning.as_str()}}]}))
    .expect("a catalog")
}

/// What agents see: each visible tool's id, description and schema.
fn served(catalog: &Catalog) -> BTreeMap<String, (String, String)> {
    let source = &catalog.sources[0];
    catalog
        .tools
        .iter()
        .filter(|t| t.enabled && !t.deprecated && !withheld(t, source))
        .map(|t| {
            (
                t.id.clone(),
                (t.description.clone(), t.input_schema.to_string()),
            )
        })
        .collect()
}

/// Checks the invariants after a step: every served tool's fields are those of a definition in
/// `approved`, and a tool without drift is one whose upstream, as the last refresh saw it, is
/// the approved definition.
fn check(catalog: &Catalog, upstream: &Upstream, approved: &HashSet<(String, String)>) {
    for tool in &catalog.tools {
        let imported = tool.imported.as_ref().expect("imported");
        let hash = imported.definition_hash.clone().expect("an approved hash");
        let definition = imported
            .definition
            .as_ref()
            .expect("the approved definition")
            .value();
        assert_eq!(definition::hash(&definition), hash);
        assert!(
            approved.contains(&(tool.id.clone(), hash.clone())),
            "{} is served with a definition nobody approved",
            tool.id
        );
        assert_eq!(
            definition["tool"]["description"], tool.description,
            "{}: the served description is the approved one",
            tool.id
        );
        let name: u8 = tool.id["s:t".len()..].parse().expect("a tool number");
        if imported.drift.is_none() && !tool.deprecated {
            let now = upstream
                .get(&name)
                .map(|&v| definition::hash(&upstream_tool(name, v).definition));
            assert_eq!(
                now,
                Some(hash),
                "{}: calls go only to the approved definition",
                tool.id
            );
        }
    }
}

/// Records what `catalog`'s approved revisions approved.
fn record_approved(catalog: &Catalog, approved: &mut HashSet<(String, String)>) {
    for revision in &catalog.revisions {
        if revision.status == RevisionStatus::Approved
            && let Some(hash) = &revision.hash
        {
            approved.insert((revision.tool_id.clone(), hash.clone()));
        }
    }
}

fn pending_ids(catalog: &Catalog) -> Vec<String> {
    let mut ids: Vec<(chrono::DateTime<Utc>, String)> = catalog
        .revisions
        .iter()
        .filter(|r| r.is_pending())
        .map(|r| (r.detected_at, r.id.clone()))
        .collect();
    ids.sort();
    ids.into_iter().map(|(_, id)| id).collect()
}

/// Runs `steps` under `pinning` from a source created with `initial`, checking the invariants
/// after each step; `approve_all`: every pending revision is approved after each refresh.
fn run(pinning: Pinning, initial: &Upstream, steps: &[Step], approve_all: bool) -> Catalog {
    let mut catalog = catalog(pinning);
    let mut upstream = initial.clone();
    let mut seen = initial.clone();
    refresh::apply(
        &mut catalog,
        "s",
        &import(&upstream),
        &stamp(),
        Approval::Admin,
    )
    .expect("created");
    let mut approved: HashSet<(String, String)> = HashSet::new();
    for t in &catalog.tools {
        let hash = t.imported.as_ref().and_then(|i| i.definition_hash.clone());
        approved.insert((t.id.clone(), hash.expect("approved on creation")));
    }
    for step in steps {
        match step {
            Step::Upstream { name, version: 0 } => {
                upstream.remove(name);
            }
            Step::Upstream { name, version } => {
                upstream.insert(*name, *version);
            }
            Step::Refresh => {
                seen = upstream.clone();
                refresh::apply(
                    &mut catalog,
                    "s",
                    &import(&upstream),
                    &stamp(),
                    Approval::Refresh(pinning),
                )
                .expect("applied");
                record_approved(&catalog, &mut approved);
                if approve_all {
                    for id in pending_ids(&catalog) {
                        let approve = Decision::Approve {
                            acknowledge: Vec::new(),
                        };
                        let decided = decide::decide(&mut catalog, &id, &approve, None, &stamp())
                            .expect("approved");
                        approved.extend(decided.hash.map(|h| (decided.tool_id.clone(), h)));
                    }
                }
            }
            Step::Decide { index, approve } if !approve_all => {
                let Some(id) = pending_ids(&catalog).get(*index).cloned() else {
                    continue;
                };
                let decision = if *approve {
                    Decision::Approve {
                        acknowledge: Vec::new(),
                    }
                } else {
                    Decision::Reject
                };
                if let Ok(decided) = decide::decide(&mut catalog, &id, &decision, None, &stamp())
                    && decided.status == RevisionStatus::Approved
                {
                    approved.extend(decided.hash.map(|h| (decided.tool_id.clone(), h)));
                }
            }
            Step::Decide { .. } => {}
        }
        check(&catalog, &seen, &approved);
    }
    catalog
}

fn initial() -> impl Strategy<Value = Upstream> {
    proptest::collection::btree_map(0u8..5, 1u8..4, 1..4)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn agents_are_only_ever_served_approved_definitions(
        initial in initial(),
        steps in proptest::collection::vec(step(), 1..30),
        pinning in prop_oneof![Just(Pinning::Hold), Just(Pinning::Hide), Just(Pinning::Warn)],
    ) {
        run(pinning, &initial, &steps, false);
    }

    #[test]
    fn approving_everything_under_hold_ends_where_warn_ends(
        initial in initial(),
        steps in proptest::collection::vec(step(), 1..30),
    ) {
        let held = run(Pinning::Hold, &initial, &steps, true);
        let warned = run(Pinning::Warn, &initial, &steps, true);
        prop_assert_eq!(served(&held), served(&warned));
    }
}
