//! Listing a collection: one page in id order after a cursor, narrowed by the collection's
//! declared filters (an undeclared one is refused, never ignored).

use super::CatalogEntity;
use crate::domain::model::Catalog;

/// One page of a collection: `limit` entities in id order after `cursor`, that pass every
/// `filters` pair.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub limit: usize,
    pub cursor: Option<String>,
    pub filters: Vec<(String, String)>,
}

/// A page of entities and the cursor of the next one (`None` on the last page).
pub struct Page<'c, E> {
    pub items: Vec<&'c E>,
    pub next_cursor: Option<String>,
}

/// The longest filter value, in characters: enough for any id, name or search text, and a
/// bound on what one value costs per entity listed.
pub const MAX_FILTER_CHARS: usize = 256;

/// A filter the collection does not have (the message lists the ones it has), or one whose
/// value is longer than [`MAX_FILTER_CHARS`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    #[error("unknown filter '{key}' for {collection}; expected limit, cursor, {known}")]
    Unknown {
        key: String,
        collection: &'static str,
        known: String,
    },
    #[error("filter '{key}' is {chars} characters long; at most {MAX_FILTER_CHARS} are accepted")]
    TooLong { key: String, chars: usize },
}

/// The page `query` asks for of `E`'s collection in `catalog`.
pub fn page<'c, E: CatalogEntity>(
    catalog: &'c Catalog,
    query: &ListQuery,
) -> Result<Page<'c, E>, FilterError> {
    if let Some((key, value)) = query
        .filters
        .iter()
        .find(|(_, value)| value.chars().nth(MAX_FILTER_CHARS).is_some())
    {
        return Err(FilterError::TooLong {
            key: key.clone(),
            chars: value.chars().count(),
        });
    }
    if let Some((key, _)) = query
        .filters
        .iter()
        .find(|(key, _)| !E::FILTERS.iter().any(|f| f.name == key))
    {
        return Err(FilterError::Unknown {
            key: key.clone(),
            collection: E::KIND.as_str(),
            known: E::FILTERS
                .iter()
                .map(|f| f.name)
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let mut all: Vec<&E> = E::all(catalog).iter().collect();
    all.sort_by(|a, b| a.id().cmp(b.id()));
    let mut items = Vec::new();
    for item in all {
        if query
            .cursor
            .as_deref()
            .is_some_and(|after| item.id() <= after)
        {
            continue;
        }
        let keep = query
            .filters
            .iter()
            .all(|(key, value)| item.filter(key, value) == Some(true));
        if keep {
            items.push(item);
        }
        if items.len() > query.limit {
            break;
        }
    }
    let mut next_cursor = None;
    if items.len() > query.limit {
        items.truncate(query.limit);
        next_cursor = items.last().map(|last| last.id().to_owned());
    }
    Ok(Page { items, next_cursor })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::model::{AccessPolicy, Label, Source, Tool, ToolGroup};
    use crate::store::EntityKind;

    fn catalog() -> Catalog {
        serde_json::from_value(json!({
            "sources": [
                {"id": "s1", "name": "crm", "type": "manual"},
                {"id": "s2", "name": "erp", "type": "openapi", "enabled": false}
            ],
            "tools": [
                {"id": "t1", "source_id": "s1", "operation_id": "a", "name": "a", "method": "GET",
                 "tags": ["read-only"], "label_ids": ["l1"], "description": "Reads Customers"},
                {"id": "t2", "source_id": "s2", "operation_id": "b", "name": "b", "method": "POST",
                 "enabled": false, "deprecated": true, "description": "Écrit une facture"}
            ],
            "labels": [{"id": "l1", "name": "pii"}, {"id": "l2", "name": "finance"}],
            "groups": [{"id": "g1", "name": "read"}, {"id": "g2", "name": "write", "active": false}],
            "policies": [
                {"id": "p1", "name": "p1", "claim_matchers": [], "allowed_group_ids": ["g1"]},
                {"id": "p2", "name": "p2", "claim_matchers": [], "denied_group_ids": ["g2"],
                 "active": false}
            ]
        }))
        .expect("a valid catalog document")
    }

    /// The ids a filter keeps, through the same page function the admin API lists with.
    fn kept<E: CatalogEntity>(key: &str, value: &str) -> Vec<String> {
        let query = ListQuery {
            limit: 100,
            cursor: None,
            filters: vec![(key.to_owned(), value.to_owned())],
        };
        let catalog = catalog();
        page::<E>(&catalog, &query)
            .expect("a declared filter")
            .items
            .iter()
            .map(|e| e.id().to_owned())
            .collect()
    }

    /// Each declared filter (error messages, OpenAPI) keeps exactly the entities it names, and
    /// every declared filter is in this table.
    #[test]
    fn every_declared_filter_keeps_exactly_what_it_names() {
        type Check = fn(&str, &str) -> Vec<String>;
        let table: &[(EntityKind, &str, &str, &[&str], Check)] = &[
            (
                EntityKind::Sources,
                "type",
                "openapi",
                &["s2"],
                kept::<Source>,
            ),
            (
                EntityKind::Sources,
                "enabled",
                "true",
                &["s1"],
                kept::<Source>,
            ),
            (
                EntityKind::Sources,
                "enabled",
                "false",
                &["s2"],
                kept::<Source>,
            ),
            (EntityKind::Sources, "name", "crm", &["s1"], kept::<Source>),
            (EntityKind::Tools, "source_id", "s2", &["t2"], kept::<Tool>),
            (EntityKind::Tools, "enabled", "false", &["t2"], kept::<Tool>),
            (EntityKind::Tools, "q", "CUSTOMER", &["t1"], kept::<Tool>),
            (EntityKind::Tools, "q", "T2", &["t2"], kept::<Tool>),
            (EntityKind::Tools, "q", "écrit", &["t2"], kept::<Tool>),
            (EntityKind::Tools, "q", "nowhere", &[], kept::<Tool>),
            (
                EntityKind::Tools,
                "deprecated",
                "true",
                &["t2"],
                kept::<Tool>,
            ),
            (
                EntityKind::Tools,
                "deprecated",
                "false",
                &["t1"],
                kept::<Tool>,
            ),
            (EntityKind::Tools, "tag", "read-only", &["t1"], kept::<Tool>),
            (EntityKind::Tools, "label_id", "l1", &["t1"], kept::<Tool>),
            (EntityKind::Tools, "method", "POST", &["t2"], kept::<Tool>),
            (EntityKind::Tools, "name", "a", &["t1"], kept::<Tool>),
            (
                EntityKind::Labels,
                "name",
                "finance",
                &["l2"],
                kept::<Label>,
            ),
            (
                EntityKind::Groups,
                "active",
                "false",
                &["g2"],
                kept::<ToolGroup>,
            ),
            (
                EntityKind::Groups,
                "name",
                "read",
                &["g1"],
                kept::<ToolGroup>,
            ),
            (
                EntityKind::Policies,
                "active",
                "true",
                &["p1"],
                kept::<AccessPolicy>,
            ),
            (
                EntityKind::Policies,
                "group_id",
                "g2",
                &["p2"],
                kept::<AccessPolicy>,
            ),
        ];
        for (kind, key, value, expected, check) in table {
            assert_eq!(
                check(key, value),
                *expected,
                "{}?{key}={value}",
                kind.as_str()
            );
        }
        let declared = [
            (EntityKind::Sources, Source::FILTERS),
            (EntityKind::Tools, Tool::FILTERS),
            (EntityKind::Labels, Label::FILTERS),
            (EntityKind::Groups, ToolGroup::FILTERS),
            (EntityKind::Policies, AccessPolicy::FILTERS),
        ];
        for (kind, filters) in declared {
            for filter in filters {
                assert!(
                    table
                        .iter()
                        .any(|(k, key, ..)| *k == kind && *key == filter.name),
                    "{} filter '{}' is declared but not checked",
                    kind.as_str(),
                    filter.name
                );
            }
        }
    }

    #[test]
    fn unknown_filters_are_refused_with_the_known_ones() {
        let query = ListQuery {
            limit: 10,
            cursor: None,
            filters: vec![("colour".to_owned(), "red".to_owned())],
        };
        let error = page::<Label>(&catalog(), &query)
            .err()
            .expect("an unknown filter");
        assert_eq!(
            error.to_string(),
            "unknown filter 'colour' for labels; expected limit, cursor, name"
        );
    }

    #[test]
    fn pages_follow_the_cursor_to_the_end() {
        let catalog = catalog();
        let mut query = ListQuery {
            limit: 1,
            cursor: None,
            filters: Vec::new(),
        };
        let mut seen = Vec::new();
        loop {
            let page = page::<Tool>(&catalog, &query).expect("no filters");
            seen.extend(page.items.iter().map(|t| t.id.clone()));
            match page.next_cursor {
                Some(cursor) => query.cursor = Some(cursor),
                None => break,
            }
        }
        assert_eq!(seen, ["t1", "t2"]);
    }

    #[test]
    fn the_text_search_is_linear_and_its_text_bounded() {
        // 3,000 tools with the longest descriptions, searched for a text that almost matches
        // everywhere: each window was compared in full (1.45 s of CPU, optimised).
        let mut catalog = catalog();
        let long = "a".repeat(crate::domain::validate::MAX_DESCRIPTION_CHARS);
        catalog.tools = (0..3_000)
            .map(|n| {
                serde_json::from_value(json!({"id": format!("t{n:04}"), "source_id": "s1",
                    "operation_id": "x", "name": "x", "description": long}))
                .expect("a tool")
            })
            .collect();
        let needle = format!("{}b", "a".repeat(MAX_FILTER_CHARS - 1));
        let query = ListQuery {
            limit: 10,
            cursor: None,
            filters: vec![("q".to_owned(), needle)],
        };
        let started = std::time::Instant::now();
        let listed = page::<Tool>(&catalog, &query).expect("a bounded text");
        let took = started.elapsed();
        assert!(listed.items.is_empty());
        eprintln!("3,000 tools of 4,096 characters, a 256-character text: {took:?}");
        assert!(took < std::time::Duration::from_secs(3), "took {took:?}");
        // Found where it is, whatever the case.
        let query = ListQuery {
            limit: 10,
            cursor: None,
            filters: vec![("q".to_owned(), "AAAB".to_owned())],
        };
        assert!(
            page::<Tool>(&catalog, &query)
                .expect("found")
                .items
                .is_empty()
        );
        let query = ListQuery {
            limit: 10,
            cursor: None,
            filters: vec![("q".to_owned(), "T0042".to_owned())],
        };
        let found: Vec<&str> = page::<Tool>(&catalog, &query)
            .expect("found")
            .items
            .iter()
            .map(|t| t.id.as_str())
            .collect();
        assert_eq!(found, ["t0042"]);
        // One character more is refused, saying the bound.
        let query = ListQuery {
            limit: 10,
            cursor: None,
            filters: vec![("q".to_owned(), "a".repeat(MAX_FILTER_CHARS + 1))],
        };
        let error = page::<Tool>(&catalog, &query).err().expect("too long");
        assert_eq!(
            error.to_string(),
            format!(
                "filter 'q' is {} characters long; at most {MAX_FILTER_CHARS} are accepted",
                MAX_FILTER_CHARS + 1
            )
        );
    }
}
