//! The OpenAPI schemas of the read model and of explanations, derived here at the HTTP edge so
//! that the domain depends on no schema crate (it stays plain data and pure functions).
//!
//! Each type mirrors one domain type field for field, under the domain type's name (`Tool`,
//! `Selector`…), with the same serde attributes, so the same fields are required. The mirrors
//! are never built; `tests::every_mirror_has_exactly_the_fields_of_its_model` fails when a
//! domain type gains, loses or renames a field that its mirror does not.

#![allow(dead_code)] // the mirrors are only ever read by the schema derive

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::domain::model::SOURCE_TYPES;
use crate::domain::operator::Operator;

/// A text field that takes one of `values`. The model keeps such fields as plain text (an
/// unknown value is a 422 with a field path), so the choice is documented here rather than by a
/// Rust enum.
pub(super) fn text_choice<'v>(
    values: impl IntoIterator<Item = &'v str>,
) -> utoipa::openapi::schema::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(values))
        .build()
}

fn source_type_schema() -> utoipa::openapi::schema::Object {
    text_choice(SOURCE_TYPES)
}

fn operator_schema() -> utoipa::openapi::schema::Object {
    text_choice(Operator::ALL.iter().map(|(name, _)| *name))
}

fn decision_schema() -> utoipa::openapi::schema::Object {
    text_choice(crate::domain::explain::DECISIONS)
}

fn hidden_because_schema() -> utoipa::openapi::schema::Object {
    text_choice(crate::domain::explain::HIDDEN_BECAUSE)
}

/// Where tools come from. `type` is text, so an unknown type is a 422 with a field path.
#[derive(Serialize, ToSchema)]
#[schema(as = Source)]
pub struct SourceSchema {
    #[serde(default)]
    id: String,
    name: String,
    #[serde(rename = "type")]
    #[schema(schema_with = source_type_schema)]
    source_type: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    description: String,
    #[serde(default)]
    #[schema(default = true)]
    enabled: bool,
    /// Type-specific settings (a spec URL, an MCP endpoint, a tool-service descriptor…).
    /// Write-only values (every value under `headers`, and any key naming a secret such as
    /// `token`, `password` or `api_key`, at any depth) read as `"***"`; writing `"***"` back
    /// keeps the stored value.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    config: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    updated_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    updated_by: Option<String>,
}

/// One operation an agent may call. `id` defaults to `"{source_id}:{operation_id}"`.
#[derive(Serialize, ToSchema)]
#[schema(as = Tool)]
pub struct ToolSchema {
    #[serde(default)]
    id: String,
    source_id: String,
    operation_id: String,
    name: String,
    /// A human-readable name (an OpenAPI `summary`, an MCP `title`); MCP clients show it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    title: Option<String>,
    #[serde(default)]
    description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    method: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    label_ids: Vec<String>,
    /// A JSON Schema object; `{"type": "object", "properties": {}}` when absent.
    #[serde(default)]
    #[schema(value_type = Object)]
    input_schema: Value,
    /// A JSON Schema object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    output_schema: Option<Value>,
    #[serde(default)]
    #[schema(default = true)]
    enabled: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    deprecated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    available_in_states: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    next_state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    /// Why an admin disabled the tool, if one said so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    disabled_reason: Option<String>,
    /// For tools of a `tool-service` source: the values of the service's config parameters.
    /// Passed to the service, never shown to agents.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    #[schema(value_type = Object)]
    service_config: Map<String, Value>,
    /// For tools of a `tool-service` source: the arguments the LLM supplies; they define the
    /// tool's `input_schema`, every one required.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    arguments: Vec<ToolArgumentSchema>,
    /// What the last import of the tool's source set (absent for tools written by hand).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    imported: Option<ImportedSchema>,
    /// SHA-256 (hex) of the RFC 8785 canonical JSON of the approved upstream definition, for
    /// imported tools. Set by the server; ignored in request bodies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    definition_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    updated_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    updated_by: Option<String>,
}

/// One argument of a tool-service tool (seed 001, tier 2): all three fields are required.
#[derive(Serialize, ToSchema)]
#[schema(as = ToolArgument)]
pub struct ToolArgumentSchema {
    name: String,
    /// A JSON Schema type: `string`, `number`, `integer`, `boolean`, `object` or `array`.
    #[serde(rename = "type")]
    arg_type: String,
    description: String,
}

/// The importer-owned state of an imported tool: a hash of everything the importer sets, and
/// the name and description it last set (an admin's override differs from these).
#[derive(Serialize, ToSchema)]
#[schema(as = Imported)]
pub struct ImportedSchema {
    content_hash: String,
    name: String,
    #[serde(default)]
    description: String,
    /// The approved definition's hash (SHA-256 of its RFC 8785 canonical JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    definition_hash: Option<String>,
    /// The approved definition: the upstream's tool object and server instructions (`mcp`),
    /// or the operation (`openapi`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    definition: Option<Value>,
    /// How the upstream differs from the approved definition as of the last refresh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    drift: Option<DriftSchema>,
}

/// How an upstream's definition of a tool differs from the approved one.
#[derive(Serialize, ToSchema)]
#[schema(as = Drift)]
pub struct DriftSchema {
    /// The hash of what the upstream defines now; absent when it no longer defines the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    upstream_hash: Option<String>,
    /// An admin rejected it: the approved definition stays served.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    rejected: bool,
}

/// A revision of an imported tool: what the upstream changed, and what an admin decided.
#[derive(Serialize, ToSchema)]
#[schema(as = Revision)]
pub struct RevisionSchema {
    id: String,
    /// The tool (for `renamed`, under its new name).
    tool_id: String,
    source_id: String,
    kind: RevisionKindSchema,
    /// For `renamed`: the tool under its old name.
    #[serde(skip_serializing_if = "Option::is_none")]
    previous_tool_id: Option<String>,
    /// The approved definition's hash when the revision was detected.
    #[serde(skip_serializing_if = "Option::is_none")]
    previous_hash: Option<String>,
    /// The upstream definition's hash (absent for `removed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    hash: Option<String>,
    /// RFC 6902 JSON Patch from the approved definition to the upstream's.
    #[schema(value_type = Vec<Object>)]
    diff: Value,
    findings: Vec<FindingSchema>,
    detected_at: DateTime<Utc>,
    status: RevisionStatusSchema,
    #[serde(skip_serializing_if = "Option::is_none")]
    decided_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    decided_at: Option<DateTime<Utc>>,
    /// Why the admin decided so.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// The `high` rule ids the approving admin acknowledged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    acknowledged: Vec<String>,
    /// The upstream's definition (absent for `removed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    definition: Option<Value>,
    /// The catalog fields the definition maps to, applied on approval.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    proposed: Option<Value>,
}

/// What happened upstream.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = RevisionKind)]
pub enum RevisionKindSchema {
    New,
    Changed,
    Removed,
    Renamed,
}

/// Where a revision stands.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = RevisionStatus)]
pub enum RevisionStatusSchema {
    Pending,
    Approved,
    Rejected,
}

/// A deterministic finding on a definition.
#[derive(Serialize, ToSchema)]
#[schema(as = Finding)]
pub struct FindingSchema {
    /// `hidden-unicode`, `model-directed`, `cross-tool-reference`, `secret-path`,
    /// `foreign-url`, `credential-parameter`, `annotation-contradiction`.
    rule: String,
    /// `high` (quarantines a new tool; approving needs it acknowledged) or `medium`.
    severity: String,
    /// JSON Pointer into the definition.
    path: String,
    /// The text around what the rule found (hidden characters as `U+XXXX`).
    excerpt: String,
}

/// A free-form marker admins attach to tools; selectors can require labels.
#[derive(Serialize, ToSchema)]
#[schema(as = Label)]
pub struct LabelSchema {
    #[serde(default)]
    id: String,
    name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    color: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    updated_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    updated_by: Option<String>,
}

/// One set of criteria; a tool matches when it meets every criterion.
#[derive(Serialize, ToSchema)]
#[schema(as = Selector)]
pub struct SelectorSchema {
    #[serde(default)]
    #[schema(default = "*")]
    source_pattern: String,
    #[serde(default)]
    #[schema(default = "*")]
    name_pattern: String,
    /// Absent or `""`: the criterion is not applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path_pattern: Option<String>,
    /// Absent or `""`: the criterion is not applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    method_pattern: Option<String>,
    #[serde(default)]
    required_tags: Vec<String>,
    #[serde(default)]
    excluded_tags: Vec<String>,
    #[serde(default)]
    required_label_ids: Vec<String>,
}

/// A named set of tools: selectors ANDed, then explicit additions, then exclusions.
#[derive(Serialize, ToSchema)]
#[schema(as = ToolGroup)]
pub struct ToolGroupSchema {
    #[serde(default)]
    id: String,
    name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    description: String,
    #[serde(default)]
    #[schema(default = true)]
    active: bool,
    #[serde(default)]
    selectors: Vec<SelectorSchema>,
    #[serde(default)]
    explicit_tool_ids: Vec<String>,
    #[serde(default)]
    excluded_tool_ids: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    updated_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    updated_by: Option<String>,
}

/// One test on the agent's claims. `operator` is text, so an unknown one is a 422 with a field
/// path.
#[derive(Serialize, ToSchema)]
#[schema(as = ClaimMatcher)]
pub struct ClaimMatcherSchema {
    json_path: String,
    #[schema(schema_with = operator_schema)]
    operator: String,
    /// Unused by `exists` / `not_exists`.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    value: Value,
}

/// Grants and denies groups to agents whose claims meet all matchers.
#[derive(Serialize, ToSchema)]
#[schema(as = AccessPolicy)]
pub struct AccessPolicySchema {
    #[serde(default)]
    id: String,
    name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    description: String,
    /// Higher first. Among the matching policies that cover a tool, the highest priority decides.
    #[serde(default)]
    priority: i64,
    #[serde(default)]
    #[schema(default = true)]
    active: bool,
    claim_matchers: Vec<ClaimMatcherSchema>,
    #[serde(default)]
    allowed_group_ids: Vec<String>,
    #[serde(default)]
    denied_group_ids: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    updated_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    updated_by: Option<String>,
}

/// The whole read model as one document (`GET`/`PUT /admin/catalog`, seed files).
#[derive(Serialize, ToSchema)]
#[schema(as = Catalog)]
pub struct CatalogSchema {
    #[serde(default)]
    sources: Vec<SourceSchema>,
    #[serde(default)]
    tools: Vec<ToolSchema>,
    #[serde(default)]
    labels: Vec<LabelSchema>,
    #[serde(default)]
    groups: Vec<ToolGroupSchema>,
    #[serde(default)]
    policies: Vec<AccessPolicySchema>,
}

/// The whole story for one set of claims.
#[derive(Serialize, ToSchema)]
#[schema(as = Explanation)]
pub struct ExplanationSchema {
    /// Every policy of the catalog, in evaluation order (priority, highest first); inactive
    /// policies last.
    policies: Vec<PolicyExplanationSchema>,
    /// The groups named by matching policies, by id.
    groups: Vec<GroupExplanationSchema>,
    /// Every tool a matching policy covers, by id (within the delegation chain, if any).
    tools: Vec<ToolExplanationSchema>,
    /// For delegated claims: the chain and what it took away.
    #[serde(skip_serializing_if = "Option::is_none")]
    delegation: Option<DelegationExplanationSchema>,
    /// For claims acting in a run (a run token's `explain=true`, View as a run): what the run
    /// rules took away.
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<RunExplanationSchema>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = RunExplanation)]
pub struct RunExplanationSchema {
    /// The run the claims act in.
    #[serde(skip_serializing_if = "Option::is_none")]
    run_id: Option<String>,
    /// The state the tools were taken in (null: every state).
    state: Option<String>,
    /// Granted now, but not when the run started (reason `run_pinned`).
    run_pinned: Vec<String>,
    /// Pinned, but not available in `state` (reason `run_state`).
    run_state: Vec<String>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = DelegationExplanation)]
pub struct DelegationExplanationSchema {
    /// Nested `act` levels of the claims.
    depth: usize,
    /// The scope of each delegation along the chain, oldest first (`tool:<id>`, `group:<id>`).
    scopes: Vec<Vec<String>>,
    /// Tools the claims' own policies grant that the chain does not keep.
    removed: Vec<String>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = PolicyExplanation)]
pub struct PolicyExplanationSchema {
    policy_id: String,
    name: String,
    priority: i64,
    active: bool,
    matched: bool,
    /// The first matcher that did not hold (only for active policies that did not match).
    #[serde(skip_serializing_if = "Option::is_none")]
    failed_matcher: Option<FailedMatcherSchema>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = FailedMatcher)]
pub struct FailedMatcherSchema {
    /// Position in `claim_matchers`.
    index: usize,
    json_path: String,
    #[schema(schema_with = operator_schema)]
    operator: String,
    /// Whether the claim was present at all (absent claims fail every operator but
    /// `not_exists`).
    claim_present: bool,
}

#[derive(Serialize, ToSchema)]
#[schema(as = GroupExplanation)]
pub struct GroupExplanationSchema {
    group_id: String,
    name: String,
    active: bool,
    /// Matching policies that allow this group.
    allowed_by: Vec<String>,
    /// Matching policies that deny this group.
    denied_by: Vec<String>,
    members: Vec<GroupMemberSchema>,
    /// Tools that selectors or explicit ids would have added but an exclusion removed.
    excluded: Vec<String>,
}

/// One member of a group and what brought it in.
#[derive(Serialize, ToSchema)]
#[schema(as = GroupMember)]
pub struct GroupMemberSchema {
    tool_id: String,
    name: String,
    /// `selectors[i]` for each selector it matched (all of them: selectors AND), and
    /// `explicit` when listed in `explicit_tool_ids`.
    via: Vec<String>,
}

/// One group a tool is a member of and what brought it in.
#[derive(Serialize, ToSchema)]
#[schema(as = ToolMembership)]
pub struct ToolMembershipSchema {
    group_id: String,
    name: String,
    /// `selectors[i]` for each selector the tool matched (all of them: selectors AND), and
    /// `explicit` when listed in `explicit_tool_ids`.
    via: Vec<String>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = ToolExplanation)]
pub struct ToolExplanationSchema {
    tool_id: String,
    /// `granted` or `denied`.
    #[schema(schema_with = decision_schema)]
    decision: String,
    /// The priority of the level that decided.
    priority: i64,
    /// The policy that decided.
    deciding_policy: String,
    /// The groups through which matching policies cover the tool, by id.
    groups: Vec<String>,
    /// Visible to agents: enabled, not deprecated, source present and enabled.
    visible: bool,
    /// Why it is not visible, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = hidden_because_schema)]
    hidden_because: Option<String>,
    /// Whether it is in the manifest computed with the request's options.
    in_manifest: bool,
}

#[cfg(test)]
mod tests;
