use std::sync::Arc;

use chrono::Utc;
use serde_json::json;

use super::*;

pub(super) fn upstream(op: &str, description: &str) -> ImportedTool {
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
        definition: Arc::default(),
        schemas_apart: false,
    }
}

/// `tool` with a definition made of its fields, as an importer would give it.
pub(super) fn defined(mut tool: ImportedTool) -> ImportedTool {
    let mut definition = serde_json::to_value(&tool).expect("a tool serialises");
    // As with the importers, the upstream's deprecation is not part of the definition.
    definition.as_object_mut().map(|d| d.remove("deprecated"));
    tool.definition = Arc::new(definition);
    tool
}

/// An import of `tools` with nothing skipped.
pub(super) fn import(tools: &[ImportedTool]) -> Import {
    Import {
        tools: tools.iter().cloned().map(defined).collect(),
        issues: Vec::new(),
    }
}

pub(super) fn stamp() -> Stamp {
    Stamp {
        at: Utc::now(),
        by: "admin".to_owned(),
    }
}

pub(super) fn catalog() -> Catalog {
    serde_json::from_value(json!({"sources": [{"id": "s", "name": "s", "type": "openapi"}]}))
        .expect("catalog")
}

pub(super) const WARN: Approval = Approval::Refresh(Pinning::Warn);

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
        WARN,
    )
    .unwrap();
    assert_eq!(counts(&s), [2, 0, 0, 0, 0]);
    let s = apply(&mut c, "s", &import(&[upstream("a", "A2")]), &stamp(), WARN).unwrap();
    assert_eq!(counts(&s), [0, 1, 1, 0, 0]);
    assert!(c.tools.iter().find(|t| t.id == "s:b").unwrap().deprecated);
    let s = apply(
        &mut c,
        "s",
        &import(&[upstream("a", "A2"), upstream("b", "B")]),
        &stamp(),
        WARN,
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
        WARN,
    )
    .unwrap();
    assert!(!s.changed());
}

#[test]
fn the_title_follows_the_upstream() {
    let mut c = catalog();
    apply(&mut c, "s", &import(&[upstream("a", "A")]), &stamp(), WARN).unwrap();
    assert_eq!(c.tools[0].title.as_deref(), Some("a title"));
    let retitled = ImportedTool {
        title: Some("Another".into()),
        ..upstream("a", "A")
    };
    let s = apply(&mut c, "s", &import(&[retitled]), &stamp(), WARN).unwrap();
    assert_eq!(s.updated, 1);
    assert_eq!(c.tools[0].title.as_deref(), Some("Another"));
    let untitled = ImportedTool {
        title: None,
        ..upstream("a", "A")
    };
    apply(&mut c, "s", &import(&[untitled]), &stamp(), WARN).unwrap();
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
        WARN,
    )
    .unwrap();
    assert_eq!(counts(&s), [1, 0, 1, 0, 0]);
    assert!(c.tools[0].deprecated);
    let s = apply(
        &mut c,
        "s",
        &import(std::slice::from_ref(&deprecated)),
        &stamp(),
        WARN,
    )
    .unwrap();
    assert_eq!(counts(&s), [0, 0, 0, 0, 1]);
    let s = apply(&mut c, "s", &import(&[upstream("a", "A")]), &stamp(), WARN).unwrap();
    assert_eq!(counts(&s), [0, 0, 0, 1, 0]);
    assert!(!c.tools[0].deprecated);
    let s = apply(&mut c, "s", &import(&[deprecated]), &stamp(), WARN).unwrap();
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
    let s = apply(&mut c, "s", &import, &stamp(), WARN).unwrap();
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
        WARN,
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
        WARN,
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
    let s = apply(&mut c, "s", &import(&[upstream("a", "A")]), &stamp(), WARN).unwrap();
    assert_eq!(counts(&s), [1, 0, 0, 0, 0]);
    assert!(
        !c.tools
            .iter()
            .find(|t| t.id == "s:manual")
            .unwrap()
            .deprecated
    );
}
