//! Schemas of the response bodies that handlers write without a Rust type of their own: the
//! manifest (rendered as bytes by [`crate::domain::manifest::Manifest::write_json`]) and the
//! small `json!` bodies of the admin and ops endpoints.
//!
//! These types exist only for the OpenAPI document and are never built. What keeps them honest
//! is the tests: `manifest_schemas_match_the_rendered_bytes` below, and `tests/it/openapi.rs`, which
//! checks real responses of a running gateway against the served document.

#![allow(dead_code)]

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::model::{ExplanationSchema, GroupMemberSchema};
use crate::store::AuditRecord;

/// The tools an agent may call (`GET /agents/tools`, and `POST /admin/preview`).
#[derive(Serialize, ToSchema)]
pub(super) struct Manifest {
    /// The tools, by ascending `tool_id`.
    data: Vec<ManifestEntry>,
    count: usize,
    /// The catalog revision the manifest was computed from.
    revision: u64,
    /// The strong entity tag of the manifest, quotes included; also the `ETag` header. It does
    /// not change with unrelated catalog changes.
    #[schema(example = "\"9f2c0b1d4e5a69788796a5b4c3d2e1f0\"")]
    etag: String,
    /// Options that named unknown groups and the like.
    warnings: Vec<String>,
    /// Why each tool is or is not there: only with `explain=true`, and always in preview.
    #[serde(skip_serializing_if = "Option::is_none")]
    explanation: Option<ExplanationSchema>,
}

/// One tool of a manifest: what an agent needs to call it.
#[derive(Serialize, ToSchema)]
pub(super) struct ManifestEntry {
    #[schema(example = "billing:list_invoices")]
    tool_id: String,
    name: String,
    /// Only when the tool has a title (MCP clients show it in place of the name).
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<String>,
    description: String,
    /// A JSON Schema object.
    #[schema(value_type = Object)]
    input_schema: Value,
    /// A JSON Schema object.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    output_schema: Option<Value>,
    source_id: String,
    /// The tool's path in its source (`""` when it has none).
    source_path: String,
    /// The HTTP method (`""` when it has none).
    method: String,
    tags: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    available_in_states: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_state: Option<String>,
    /// The granted groups that contain the tool, by ascending id.
    groups: Vec<String>,
    /// Only with `include_disabled=true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    enabled: Option<bool>,
    /// Only with `include_disabled=true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    deprecated: Option<bool>,
}

/// `GET /admin/groups/{id}/tools`: a group's resolved members.
#[derive(Serialize, ToSchema)]
pub(super) struct GroupMembers {
    group_id: String,
    data: Vec<GroupMemberSchema>,
    count: usize,
    revision: u64,
}

/// `GET /admin/tools/{id}/groups`: the groups a tool is a member of.
#[derive(Serialize, ToSchema)]
pub(super) struct ToolGroups {
    tool_id: String,
    data: Vec<super::model::ToolMembershipSchema>,
    count: usize,
    revision: u64,
}

/// `GET /admin/live`: the streams by manifest and the last notifications.
#[derive(Serialize, ToSchema)]
pub(super) struct Live {
    revision: u64,
    /// Open `GET /agents/tools/stream` streams.
    sse: usize,
    /// Open MCP notification streams.
    mcp: usize,
    /// Open MCP sessions (with or without a notification stream).
    mcp_sessions: usize,
    /// Most streams first.
    manifests: Vec<LiveManifest>,
    /// Newest first, at most 20.
    notifications: Vec<LiveNotification>,
}

/// The streams that see one manifest.
#[derive(Serialize, ToSchema)]
pub(super) struct LiveManifest {
    /// The claims the policies read.
    claims: serde_json::Map<String, Value>,
    include_disabled: bool,
    tools: usize,
    revision: u64,
    sse: usize,
    mcp: usize,
    /// Distinct subjects among the streams.
    identities: usize,
}

/// One revision fanned out to the streams.
#[derive(Serialize, ToSchema)]
pub(super) struct LiveNotification {
    revision: u64,
    /// RFC 3339.
    at: String,
    /// Manifests that changed.
    manifests: usize,
    /// Streams sent an event.
    streams: usize,
}

/// `GET /admin/claim-sets`: the claim sets served recently.
#[derive(Serialize, ToSchema)]
pub(super) struct ClaimSets {
    data: Vec<SeenClaimSet>,
    count: usize,
    revision: u64,
}

/// One claim set served recently.
#[derive(Serialize, ToSchema)]
pub(super) struct SeenClaimSet {
    /// The claims the policies read, as this instance remembers them.
    claims: serde_json::Map<String, Value>,
    /// RFC 3339.
    last_seen: String,
}

/// `PUT /admin/catalog`: the revision the replacement produced and what the catalog now holds.
#[derive(Serialize, ToSchema)]
pub(super) struct CatalogReplaced {
    revision: u64,
    counts: CatalogCounts,
}

/// How many entities of each kind a catalog holds.
#[derive(Serialize, ToSchema)]
pub(super) struct CatalogCounts {
    sources: usize,
    tools: usize,
    labels: usize,
    groups: usize,
    policies: usize,
}

/// One page of the change log, oldest first.
#[derive(Serialize, ToSchema)]
pub(super) struct AuditPage {
    data: Vec<AuditRecord>,
    count: usize,
    /// Pass as `cursor` to get the next page; `null` on the last page.
    next_cursor: Option<String>,
}

/// One page of revisions of imported tools, pending first.
#[derive(Serialize, ToSchema)]
pub(super) struct RevisionPage {
    data: Vec<super::model::RevisionSchema>,
    count: usize,
    /// Pass as `cursor` to get the next page; `null` on the last page.
    next_cursor: Option<String>,
}

/// `GET /healthz`.
#[derive(Serialize, ToSchema)]
pub(super) struct Health {
    #[schema(example = "ok")]
    status: String,
}

/// `GET /readyz` when every backing store answers.
#[derive(Serialize, ToSchema)]
pub(super) struct Readiness {
    #[schema(example = "ready")]
    status: String,
    /// The catalog revision being served.
    revision: u64,
    checks: ReadinessChecks,
}

/// The state of each backing store.
#[derive(Serialize, ToSchema)]
pub(super) struct ReadinessChecks {
    #[schema(example = "ok")]
    store: String,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::{Value, json};
    use utoipa::PartialSchema;
    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::Schema;

    use super::*;
    use crate::domain::claims::Claims;
    use crate::domain::manifest::ManifestOptions;
    use crate::domain::model::Catalog;
    use crate::domain::snapshot::Snapshot;

    /// The property names and the required names of an object schema.
    fn properties_of(schema: RefOr<Schema>) -> (BTreeSet<String>, BTreeSet<String>) {
        let RefOr::T(Schema::Object(object)) = schema else {
            panic!("an object schema")
        };
        (
            object.properties.keys().cloned().collect(),
            object.required.iter().cloned().collect(),
        )
    }

    fn keys(value: &Value) -> BTreeSet<String> {
        value
            .as_object()
            .expect("an object")
            .keys()
            .cloned()
            .collect()
    }

    /// Every key rendered is declared, and every required key is rendered.
    fn assert_fits(what: &str, schema: RefOr<Schema>, value: &Value) {
        let (declared, required) = properties_of(schema);
        let present = keys(value);
        assert!(
            present.is_subset(&declared),
            "{what}: undeclared keys {:?}",
            present.difference(&declared).collect::<Vec<_>>()
        );
        assert!(
            required.is_subset(&present),
            "{what}: required keys missing {:?}",
            required.difference(&present).collect::<Vec<_>>()
        );
    }

    #[test]
    fn manifest_schemas_match_the_rendered_bytes() {
        let catalog: Catalog = serde_json::from_value(json!({
            "sources": [{"id": "s", "name": "s", "type": "manual"}],
            "tools": [
                {"source_id": "s", "operation_id": "full", "name": "full", "method": "GET",
                 "path": "/full", "tags": ["t"], "output_schema": {"type": "object"},
                 "version": "1", "available_in_states": ["a"], "next_state": "b"},
                {"source_id": "s", "operation_id": "bare", "name": "bare", "enabled": false}
            ],
            "groups": [{"id": "g", "name": "g", "selectors": [{}]}],
            "policies": [{"id": "p", "name": "p", "claim_matchers": [], "allowed_group_ids": ["g"]}]
        }))
        .expect("a valid catalog document");
        let snapshot = Snapshot::compile(catalog, 1).expect("compiles");
        let claims = Claims::new();
        for include_disabled in [false, true] {
            let options = ManifestOptions {
                include_disabled,
                ..ManifestOptions::default()
            };
            let manifest = snapshot.manifest(&claims, &options);
            let body: Value = serde_json::from_slice(&manifest.to_json()).expect("JSON");
            assert_fits("manifest", Manifest::schema(), &body);
            let entries = body["data"].as_array().expect("data");
            assert!(!entries.is_empty());
            for entry in entries {
                assert_fits("manifest entry", ManifestEntry::schema(), entry);
            }
            let explained = snapshot.explain(&claims, &options);
            let body = crate::app::with_explanation(&explained.manifest, &explained.explanation);
            let body: Value = serde_json::from_slice(&body).expect("JSON");
            assert_fits("explained manifest", Manifest::schema(), &body);
        }
    }
}
