//! Entities and commits for the contract: every optional field set where a kind has one, so that
//! a round trip proves the backend keeps them, and fixed timestamps with nanoseconds, so that it
//! proves timestamps survive to the last digit.

use chrono::{DateTime, Utc};
use serde_json::json;
use toolgate::domain::definition::Stored;
use toolgate::domain::findings::{Finding, Rule, Severity};
use toolgate::domain::imported::ImportedTool;
use toolgate::domain::model::{
    AccessPolicy, Catalog, ClaimMatcher, Drift, Imported, Label, Selector, Source, Tool, ToolGroup,
};
use toolgate::domain::revision::{Revision, RevisionKind, RevisionStatus};
use toolgate::store::{AuditRecord, Change, Commit, Entity, EntityKind, Subject};

/// `2026-01-01T00:00:00Z` plus `seconds` and a few nanoseconds.
pub fn at(seconds: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_767_225_600 + seconds, 123_456_789).expect("a valid timestamp")
}

pub fn source(id: &str) -> Source {
    Source {
        id: id.to_owned(),
        name: format!("{id}-api"),
        source_type: "openapi".to_owned(),
        description: "the billing API".to_owned(),
        enabled: false,
        config: json!({"spec_url": "https://example.test/openapi.json", "timeout_ms": 1500})
            .as_object()
            .cloned()
            .expect("an object"),
        created_at: Some(at(1)),
        updated_at: Some(at(2)),
        created_by: Some("alice".to_owned()),
        updated_by: Some("bob".to_owned()),
    }
}

pub fn tool(id: &str) -> Tool {
    Tool {
        id: id.to_owned(),
        source_id: "billing".to_owned(),
        operation_id: id.to_owned(),
        name: format!("{id} tool"),
        title: Some("Refund a payment".to_owned()),
        description: "refunds a payment".to_owned(),
        method: Some("POST".to_owned()),
        path: Some("/payments/{id}/refund".to_owned()),
        tags: vec!["payments".to_owned(), "write".to_owned()],
        label_ids: vec!["pii".to_owned()],
        input_schema: json!({"type": "object", "properties": {"amount": {"type": "number"}}})
            .into(),
        output_schema: Some(json!({"type": "object"}).into()),
        enabled: false,
        deprecated: true,
        available_in_states: Some(vec!["checkout".to_owned()]),
        next_state: Some("done".to_owned()),
        version: Some("2.1".to_owned()),
        disabled_reason: Some("under review".to_owned()),
        service_config: Default::default(),
        arguments: Vec::new(),
        imported: Some(Imported {
            content_hash: "c0ffee".to_owned(),
            name: format!("{id} tool"),
            description: "refunds a payment".to_owned(),
            definition_hash: Some("ab".repeat(32)),
            definition: Some(
                Stored::of(&json!({"tool": {"name": id, "annotations": {"readOnlyHint": false}}}))
                    .0,
            ),
            drift: Some(Drift {
                upstream_hash: Some("cd".repeat(32)),
                rejected: true,
            }),
        }),
        definition_hash: Some("ab".repeat(32)),
        created_at: Some(at(3)),
        updated_at: Some(at(4)),
        created_by: Some("alice".to_owned()),
        updated_by: Some("bob".to_owned()),
    }
}

pub fn label(id: &str) -> Label {
    Label {
        id: id.to_owned(),
        name: format!("label {id}"),
        description: "personal data".to_owned(),
        color: Some("#ff0000".to_owned()),
        created_at: Some(at(5)),
        updated_at: Some(at(6)),
        created_by: Some("alice".to_owned()),
        updated_by: Some("bob".to_owned()),
    }
}

/// A label with every optional field absent.
pub fn bare_label(id: &str) -> Label {
    Label {
        id: id.to_owned(),
        name: id.to_owned(),
        description: String::new(),
        color: None,
        created_at: None,
        updated_at: None,
        created_by: None,
        updated_by: None,
    }
}

pub fn group(id: &str) -> ToolGroup {
    ToolGroup {
        id: id.to_owned(),
        name: format!("group {id}"),
        description: "everything about payments".to_owned(),
        active: false,
        selectors: vec![Selector {
            source_pattern: "billing".to_owned(),
            name_pattern: "re*".to_owned(),
            path_pattern: Some("/payments/**".to_owned()),
            method_pattern: Some("POST".to_owned()),
            required_tags: vec!["payments".to_owned()],
            excluded_tags: vec!["internal".to_owned()],
            required_label_ids: vec!["pii".to_owned()],
        }],
        explicit_tool_ids: vec!["billing:list".to_owned()],
        excluded_tool_ids: vec!["billing:refund".to_owned()],
        created_at: Some(at(7)),
        updated_at: Some(at(8)),
        created_by: Some("alice".to_owned()),
        updated_by: Some("bob".to_owned()),
    }
}

pub fn policy(id: &str) -> AccessPolicy {
    AccessPolicy {
        id: id.to_owned(),
        name: format!("policy {id}"),
        description: "support staff".to_owned(),
        priority: -7,
        active: false,
        claim_matchers: vec![
            ClaimMatcher {
                json_path: "realm_access.roles".to_owned(),
                operator: "contains".to_owned(),
                value: json!("support"),
            },
            ClaimMatcher {
                json_path: "sub".to_owned(),
                operator: "exists".to_owned(),
                value: serde_json::Value::Null,
            },
        ],
        allowed_group_ids: vec!["g1".to_owned()],
        denied_group_ids: vec!["g2".to_owned()],
        created_at: Some(at(9)),
        updated_at: Some(at(10)),
        created_by: Some("alice".to_owned()),
        updated_by: Some("bob".to_owned()),
    }
}

/// One fully populated entity of each kind, all with the same id.
pub fn one_of_each(id: &str) -> Catalog {
    Catalog {
        sources: vec![source(id)],
        tools: vec![tool(id)],
        labels: vec![label(id)],
        groups: vec![group(id)],
        policies: vec![policy(id)],
        revisions: vec![revision(id)],
    }
}

/// A decided revision with every optional field set.
pub fn revision(id: &str) -> Revision {
    Revision {
        id: id.to_owned(),
        tool_id: id.to_owned(),
        source_id: "billing".to_owned(),
        kind: RevisionKind::Renamed,
        previous_tool_id: Some(format!("{id}-old")),
        previous_hash: Some("ab".repeat(32)),
        hash: Some("cd".repeat(32)),
        diff: json!([{"op": "replace", "path": "/tool/name", "value": id}]).into(),
        findings: vec![Finding {
            rule: Rule::HiddenUnicode,
            severity: Severity::High,
            path: "/tool/description".to_owned(),
            excerpt: "refunds U+E0041".to_owned(),
        }],
        detected_at: at(5),
        status: RevisionStatus::Approved,
        decided_by: Some("carol".to_owned()),
        decided_at: Some(at(6)),
        reason: Some("same tool".to_owned()),
        acknowledged: vec!["hidden-unicode".to_owned()],
        definition: Some(json!({"tool": {"name": id}}).into()),
        proposed: Some(ImportedTool {
            operation_id: id.to_owned(),
            name: id.to_owned(),
            title: Some("Refund".to_owned()),
            description: "refunds".to_owned(),
            method: "MCP".to_owned(),
            path: format!("mcp://billing/{id}"),
            tags: vec!["destructive".to_owned()],
            input_schema: json!({"type": "object"}).into(),
            output_schema: Some(json!({"type": "object"}).into()),
            deprecated: true,
            definition: Default::default(),
            schemas_apart: false,
        }),
    }
}

/// The catalog's entities as puts, collection by collection.
pub fn puts(catalog: &Catalog) -> Vec<Change> {
    let entities = (catalog.sources.iter().cloned().map(Entity::Source))
        .chain(catalog.tools.iter().cloned().map(Entity::Tool))
        .chain(catalog.labels.iter().cloned().map(Entity::Label))
        .chain(catalog.groups.iter().cloned().map(Entity::Group))
        .chain(catalog.policies.iter().cloned().map(Entity::Policy))
        .chain(catalog.revisions.iter().cloned().map(Entity::Revision));
    entities.map(Change::Put).collect()
}

/// An audit record as the catalog service writes it (the store fills `seq` and `revision`).
pub fn record(actor: &str, entity: impl Into<Subject>, id: &str, seconds: i64) -> AuditRecord {
    AuditRecord {
        seq: 0,
        revision: 0,
        at: at(seconds),
        actor: actor.to_owned(),
        action: "update".to_owned(),
        entity: entity.into(),
        id: id.to_owned(),
        before: Some(json!({"name": "old"})),
        after: Some(json!({"name": "new"})),
        request_id: Some(format!("req-{seconds}")),
    }
}

/// A commit of `changes` at `expected_revision` with no audit records.
pub fn commit(expected_revision: u64, changes: Vec<Change>) -> Commit {
    Commit {
        expected_revision,
        changes,
        audit: Vec::new(),
    }
}

/// A commit that puts one label and records it.
pub fn put_label(expected_revision: u64, id: &str, actor: &str) -> Commit {
    Commit {
        expected_revision,
        changes: vec![Change::Put(Entity::Label(label(id)))],
        audit: vec![record(actor, EntityKind::Labels, id, 0)],
    }
}
