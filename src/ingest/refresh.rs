//! Applies one import to the catalog: the pure half of a refresh.
//!
//! Tools are matched by id (`{source_id}:{operation_id}`) and compared by content hash
//! ([`ImportedTool::content_hash`]):
//! - new upstream → created, enabled;
//! - changed upstream → updated (method, path, tags, schemas, and `name`/`description` unless
//!   an admin overrode them);
//! - gone upstream, or marked deprecated upstream → marked `deprecated` (hidden from agents,
//!   still referable by groups);
//! - back upstream (and not deprecated there) → `deprecated` cleared (restored).
//!
//! Operations the importer skipped or cut are counted and listed in the summary: a skipped
//! operation's tool, if an earlier import made one, is deprecated like a gone one.
//!
//! Admin-set fields are never touched: `enabled`, `label_ids`, states, version, and a `name` or
//! `description` that differs from [`Imported`]'s record of what the import last set. Tools of
//! the source without such a record were written by hand and are left alone, except that one
//! whose id an import now produces is adopted (its name and description are kept).

use std::collections::HashSet;
use std::sync::Arc;

use serde::Serialize;

use super::{Import, ImportIssue, ImportedTool, IssueOutcome};
use crate::domain::model::{Catalog, Imported, Tool};
use crate::domain::stamp::Stamp;
use crate::domain::validate::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS};

/// What a refresh did: the body of `POST /admin/sources/{id}/refresh` and the `after` of its
/// audit record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct RefreshSummary {
    pub source_id: String,
    /// How many tools the upstream defines now.
    pub imported: usize,
    pub created: usize,
    pub updated: usize,
    pub deprecated: usize,
    pub restored: usize,
    pub unchanged: usize,
    /// Operations the upstream defines that were not imported (`issues` says why).
    pub skipped: usize,
    /// Operations imported with less than the upstream defines (`issues` says what).
    pub cut: usize,
    /// Per operation, what was skipped or cut and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<ImportIssue>,
}

impl RefreshSummary {
    /// A summary of applying `import` to `source_id` before any tool is compared: what the
    /// upstream defines, and what the importer skipped or cut.
    fn of_import(source_id: &str, import: &Import) -> RefreshSummary {
        let count = |outcome| {
            import
                .issues
                .iter()
                .filter(|issue| issue.outcome == outcome)
                .count()
        };
        RefreshSummary {
            source_id: source_id.to_owned(),
            imported: import.tools.len(),
            skipped: count(IssueOutcome::Skipped),
            cut: count(IssueOutcome::Cut),
            issues: import.issues.clone(),
            ..RefreshSummary::default()
        }
    }

    /// Whether the refresh changes the catalog.
    pub fn changed(&self) -> bool {
        self.created + self.updated + self.deprecated + self.restored > 0
    }
}

/// An import that cannot be applied: nothing of it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    #[error("the import defines tool '{id}', but that id belongs to a tool of source '{owner}'")]
    IdTaken { id: String, owner: String },
}

/// Brings the tools of `source_id` in `catalog` in line with `imported`.
///
/// Fails when an imported id is taken by a tool of another source; the catalog may then be
/// half-changed, so callers apply imports to a copy (a catalog write's).
pub fn apply(
    catalog: &mut Catalog,
    source_id: &str,
    import: &Import,
    stamp: &Stamp,
) -> Result<RefreshSummary, ApplyError> {
    let imported = &import.tools;
    let mut summary = RefreshSummary::of_import(source_id, import);
    let mut present = HashSet::new();
    for upstream in imported {
        let upstream = bounded(upstream);
        let id = Tool::default_id(source_id, &upstream.operation_id);
        present.insert(id.clone());
        let hash = upstream.content_hash();
        let record = Imported {
            content_hash: hash.clone(),
            name: upstream.name.clone(),
            description: upstream.description.clone(),
        };
        let Some(tool) = catalog.tools.iter_mut().find(|t| t.id == id) else {
            catalog
                .tools
                .push(new_tool(&id, source_id, &upstream, record, stamp));
            summary.created += 1;
            if upstream.deprecated {
                summary.deprecated += 1;
            }
            continue;
        };
        if tool.source_id != source_id {
            return Err(ApplyError::IdTaken {
                id,
                owner: tool.source_id.clone(),
            });
        }
        let restored = tool.deprecated && !upstream.deprecated;
        let deprecated = !tool.deprecated && upstream.deprecated;
        let changed = tool.imported.as_ref().map(|i| &i.content_hash) != Some(&hash);
        if !restored && !deprecated && !changed {
            summary.unchanged += 1;
            continue;
        }
        if changed {
            take_upstream(tool, &upstream, record);
        }
        tool.deprecated = upstream.deprecated;
        stamp.touched(tool);
        if restored {
            summary.restored += 1;
        } else if deprecated {
            summary.deprecated += 1;
        } else {
            summary.updated += 1;
        }
    }
    summary.deprecated += deprecate_gone(catalog, source_id, &present, stamp);
    Ok(summary)
}

/// Brings a changed tool's imported fields in line with `upstream`, whose `record` it keeps; a
/// `name` or `description` an admin changed since the last import stays the admin's.
fn take_upstream(tool: &mut Tool, upstream: &ImportedTool, record: Imported) {
    let (overridden_name, overridden_description) = match &tool.imported {
        Some(previous) => (
            tool.name != previous.name,
            tool.description != previous.description,
        ),
        // Adopting a hand-written tool: what the admin wrote stays.
        None => (true, true),
    };
    if !overridden_name {
        tool.name = upstream.name.clone();
    }
    if !overridden_description {
        tool.description = upstream.description.clone();
    }
    tool.title = upstream.title.clone();
    tool.method = Some(upstream.method.clone());
    tool.path = Some(upstream.path.clone());
    tool.tags = upstream.tags.clone();
    tool.input_schema = Arc::clone(&upstream.input_schema);
    tool.output_schema = upstream.output_schema.clone();
    tool.imported = Some(record);
}

/// Marks deprecated the imported tools of `source_id` that the import no longer defines (not
/// in `present`) and are not deprecated already; how many it marked. Hand-written tools (no
/// import record) are left alone.
fn deprecate_gone(
    catalog: &mut Catalog,
    source_id: &str,
    present: &HashSet<String>,
    stamp: &Stamp,
) -> usize {
    let mut deprecated = 0;
    for tool in &mut catalog.tools {
        if tool.source_id == source_id
            && tool.imported.is_some()
            && !tool.deprecated
            && !present.contains(&tool.id)
        {
            tool.deprecated = true;
            stamp.touched(tool);
            deprecated += 1;
        }
    }
    deprecated
}

/// Upstream names and descriptions cut to what the catalog accepts.
fn bounded(tool: &ImportedTool) -> ImportedTool {
    let cut = |text: &str, max: usize| text.chars().take(max).collect::<String>();
    ImportedTool {
        name: cut(&tool.name, MAX_NAME_CHARS),
        title: tool
            .title
            .as_deref()
            .map(|title| cut(title, MAX_NAME_CHARS)),
        description: cut(&tool.description, MAX_DESCRIPTION_CHARS),
        ..tool.clone()
    }
}

fn new_tool(
    id: &str,
    source_id: &str,
    upstream: &ImportedTool,
    record: Imported,
    stamp: &Stamp,
) -> Tool {
    Tool {
        id: id.to_owned(),
        source_id: source_id.to_owned(),
        operation_id: upstream.operation_id.clone(),
        name: upstream.name.clone(),
        title: upstream.title.clone(),
        description: upstream.description.clone(),
        method: Some(upstream.method.clone()),
        path: Some(upstream.path.clone()),
        tags: upstream.tags.clone(),
        label_ids: Vec::new(),
        input_schema: Arc::clone(&upstream.input_schema),
        output_schema: upstream.output_schema.clone(),
        enabled: true,
        deprecated: upstream.deprecated,
        available_in_states: None,
        next_state: None,
        version: None,
        disabled_reason: None,
        service_config: Default::default(),
        arguments: Vec::new(),
        imported: Some(record),
        created_at: Some(stamp.at),
        updated_at: Some(stamp.at),
        created_by: Some(stamp.by.clone()),
        updated_by: Some(stamp.by.clone()),
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use serde_json::json;

    use super::*;

    fn upstream(op: &str, description: &str) -> ImportedTool {
        ImportedTool {
            operation_id: op.to_owned(),
            name: op.to_owned(),
            title: Some(format!("{op} title")),
            description: description.to_owned(),
            method: "GET".to_owned(),
            path: format!("/{op}"),
            tags: vec![],
            input_schema: Arc::new(json!({"type": "object", "properties": {}})),
            output_schema: None,
            deprecated: false,
        }
    }

    /// An import of `tools` with nothing skipped.
    fn import(tools: &[ImportedTool]) -> Import {
        Import {
            tools: tools.to_vec(),
            issues: Vec::new(),
        }
    }

    fn stamp() -> Stamp {
        Stamp {
            at: Utc::now(),
            by: "admin".to_owned(),
        }
    }

    fn catalog() -> Catalog {
        serde_json::from_value(json!({"sources": [{"id": "s", "name": "s", "type": "openapi"}]}))
            .expect("catalog")
    }

    fn counts(s: &RefreshSummary) -> [usize; 5] {
        [s.created, s.updated, s.deprecated, s.restored, s.unchanged]
    }

    #[test]
    fn create_update_deprecate_restore() {
        let mut c = catalog();
        let s = apply(
            &mut c,
            "s",
            &import(&[upstream("a", "A"), upstream("b", "B")]),
            &stamp(),
        )
        .unwrap();
        assert_eq!(counts(&s), [2, 0, 0, 0, 0]);
        let s = apply(&mut c, "s", &import(&[upstream("a", "A2")]), &stamp()).unwrap();
        assert_eq!(counts(&s), [0, 1, 1, 0, 0]);
        assert!(c.tools.iter().find(|t| t.id == "s:b").unwrap().deprecated);
        let s = apply(
            &mut c,
            "s",
            &import(&[upstream("a", "A2"), upstream("b", "B")]),
            &stamp(),
        )
        .unwrap();
        assert_eq!(counts(&s), [0, 0, 0, 1, 1]);
        assert!(s.changed(), "restoring a deprecated tool is a change");
        assert!(
            !c.tools.iter().find(|t| t.id == "s:b").unwrap().deprecated,
            "the restored tool is no longer deprecated"
        );
        let s = apply(
            &mut c,
            "s",
            &import(&[upstream("a", "A2"), upstream("b", "B")]),
            &stamp(),
        )
        .unwrap();
        assert!(!s.changed());
    }

    #[test]
    fn the_title_follows_the_upstream() {
        let mut c = catalog();
        apply(&mut c, "s", &import(&[upstream("a", "A")]), &stamp()).unwrap();
        assert_eq!(c.tools[0].title.as_deref(), Some("a title"));
        let retitled = ImportedTool {
            title: Some("Another".into()),
            ..upstream("a", "A")
        };
        let s = apply(&mut c, "s", &import(&[retitled]), &stamp()).unwrap();
        assert_eq!(s.updated, 1);
        assert_eq!(c.tools[0].title.as_deref(), Some("Another"));
        let untitled = ImportedTool {
            title: None,
            ..upstream("a", "A")
        };
        apply(&mut c, "s", &import(&[untitled]), &stamp()).unwrap();
        assert_eq!(c.tools[0].title, None);
    }

    #[test]
    fn deprecated_upstream_is_imported_deprecated_and_follows_the_flag() {
        let mut c = catalog();
        let deprecated = ImportedTool {
            deprecated: true,
            ..upstream("a", "A")
        };
        let s = apply(
            &mut c,
            "s",
            &import(std::slice::from_ref(&deprecated)),
            &stamp(),
        )
        .unwrap();
        assert_eq!(counts(&s), [1, 0, 1, 0, 0]);
        assert!(c.tools[0].deprecated);
        let s = apply(
            &mut c,
            "s",
            &import(std::slice::from_ref(&deprecated)),
            &stamp(),
        )
        .unwrap();
        assert_eq!(counts(&s), [0, 0, 0, 0, 1]);
        let s = apply(&mut c, "s", &import(&[upstream("a", "A")]), &stamp()).unwrap();
        assert_eq!(counts(&s), [0, 0, 0, 1, 0]);
        assert!(!c.tools[0].deprecated);
        let s = apply(&mut c, "s", &import(&[deprecated]), &stamp()).unwrap();
        assert_eq!(counts(&s), [0, 0, 1, 0, 0]);
        assert!(c.tools[0].deprecated);
    }

    #[test]
    fn skips_and_cuts_are_counted_and_listed() {
        let mut c = catalog();
        let issue = |outcome| ImportIssue {
            operation: "GET /x".to_owned(),
            operation_id: None,
            outcome,
            reason: "why".to_owned(),
        };
        let import = Import {
            tools: vec![upstream("a", "A")],
            issues: vec![issue(IssueOutcome::Skipped), issue(IssueOutcome::Cut)],
        };
        let s = apply(&mut c, "s", &import, &stamp()).unwrap();
        assert_eq!((s.skipped, s.cut, s.issues.len()), (1, 1, 2));
    }

    #[test]
    fn admin_overrides_and_flags_survive() {
        let mut c = catalog();
        apply(
            &mut c,
            "s",
            &import(&[upstream("a", "A"), upstream("b", "B")]),
            &stamp(),
        )
        .unwrap();
        for tool in &mut c.tools {
            tool.enabled = false;
            tool.label_ids = vec!["l".into()];
            if tool.id == "s:a" {
                tool.name = "Admin name".into();
            }
        }
        apply(
            &mut c,
            "s",
            &import(&[upstream("a", "A new"), upstream("b", "B new")]),
            &stamp(),
        )
        .unwrap();
        let a = c.tools.iter().find(|t| t.id == "s:a").unwrap();
        assert_eq!(
            (a.name.as_str(), a.description.as_str()),
            ("Admin name", "A new")
        );
        assert!(!a.enabled);
        assert_eq!(a.label_ids, ["l"]);
        let b = c.tools.iter().find(|t| t.id == "s:b").unwrap();
        assert_eq!(b.description, "B new");
    }

    #[test]
    fn hand_written_tools_are_left_alone() {
        let mut c = catalog();
        c.tools.push(
            serde_json::from_value(
                json!({"source_id": "s", "operation_id": "manual", "name": "m", "id": "s:manual"}),
            )
            .unwrap(),
        );
        let s = apply(&mut c, "s", &import(&[upstream("a", "A")]), &stamp()).unwrap();
        assert_eq!(counts(&s), [1, 0, 0, 0, 0]);
        assert!(
            !c.tools
                .iter()
                .find(|t| t.id == "s:manual")
                .unwrap()
                .deprecated
        );
    }
}
