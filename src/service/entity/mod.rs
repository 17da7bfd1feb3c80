//! What the entity commands ([`super::commands`]) and listings need to know about each entity
//! kind: where it lives in the catalog, its id, its list filters, what a new version imports,
//! and what deleting it does to the entities that refer to it.
//!
//! Deletion rules keep the catalog valid without ever widening access: removing a tool (or a
//! source with its tools) removes the ids pointing at it, as docs/api.md says; removing a label drops
//! it from tools, but a label that a selector requires, or a group that a policy names, cannot
//! be removed (409): silently dropping those references would widen a group or lift a deny.

use std::borrow::Cow;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::WriteError;
use crate::domain::model::{AccessPolicy, Catalog, Label, Source, Tool, ToolGroup};
use crate::domain::stamp::Stamped;
use crate::domain::validate::{ErrorKind, FieldError};
use crate::domain::{secrets, source_config};
use crate::ingest::refresh::Prepared;
use crate::ingest::{self, Import, IngestError};
use crate::store::EntityKind;

mod page;
mod tool_body;

pub use page::{FilterError, ListQuery, MAX_FILTER_CHARS, Page, page};
use tool_body::{explicit_schema_with_arguments, tool_from_descriptor};

/// One list filter of a collection, `GET /admin/<collection>?<name>=<value>`.
#[derive(Debug, Clone, Copy)]
pub struct ListFilter {
    pub name: &'static str,
    /// Takes `true` or `false` rather than free text.
    pub is_flag: bool,
    pub description: &'static str,
}

const fn text(name: &'static str, description: &'static str) -> ListFilter {
    ListFilter {
        name,
        is_flag: false,
        description,
    }
}

const fn flag_filter(name: &'static str, description: &'static str) -> ListFilter {
    ListFilter {
        name,
        is_flag: true,
        description,
    }
}

pub trait CatalogEntity:
    Serialize + DeserializeOwned + Stamped + Clone + PartialEq + Send + Sync + 'static
{
    const KIND: EntityKind;

    fn id(&self) -> &str;
    fn set_id(&mut self, id: String);
    fn all(catalog: &Catalog) -> &Vec<Self>;
    fn all_mut(catalog: &mut Catalog) -> &mut Vec<Self>;

    /// The id an entity gets when it is created without one.
    fn generated_id(&self) -> String {
        uuid::Uuid::new_v4().to_string()
    }

    /// Whether the entity passes the list filter `key=value`; `None` for an unknown key.
    fn filter(&self, key: &str, value: &str) -> Option<bool>;

    /// The list filters [`CatalogEntity::filter`] knows: for the error message on an unknown
    /// one and for the OpenAPI document.
    const FILTERS: &'static [ListFilter];

    /// Tool definitions to import in the same write that creates the entity: a new `openapi`
    /// or `mcp` source is fetched before it is stored, so that it arrives with its tools in one
    /// revision. `None`: nothing to import (another kind, or a config that validation will
    /// reject with field paths).
    fn import_on_create(
        &self,
    ) -> impl std::future::Future<Output = Result<Option<Import>, IngestError>> + Send {
        std::future::ready(Ok(None))
    }

    /// Tool definitions to import in the same write that replaces or patches the entity from
    /// `before`: a source whose document (`config.spec` or `config.url`) changed is
    /// fetched and checked as on a create, so that an edit that `POST` would refuse is refused
    /// too, and the tools follow the new document in the same revision.
    fn import_on_update(
        &self,
        _before: &Self,
    ) -> impl std::future::Future<Output = Result<Option<Import>, IngestError>> + Send {
        std::future::ready(Ok(None))
    }

    /// What an import of this entity can work out before the write takes the catalog's lock
    /// (`catalog`: the current snapshot's): nothing, but for a source.
    fn prepare_import(&self, _catalog: &Catalog, _import: &Import) -> Prepared {
        Prepared::default()
    }

    /// Rewrites a create body written in another accepted shape into the entity's own, and
    /// refuses one whose fields contradict each other; leaves any other body alone (its errors
    /// are reported as they are).
    fn prepare_body(_body: &mut serde_json::Value) -> Result<(), Vec<FieldError>> {
        Ok(())
    }

    /// Fixes up or refuses references before the entity `id` is removed.
    fn before_delete(_catalog: &mut Catalog, _id: &str) -> Result<(), WriteError> {
        Ok(())
    }

    /// The entity as an admin may read it: write-only values (a source's credentials) hidden.
    fn redacted(&self) -> Cow<'_, Self> {
        Cow::Borrowed(self)
    }

    /// Puts the stored values back where a write holds the mask of a write-only value
    /// (`stored`: the entity as stored, `None` when it is new); each mask with nothing stored
    /// behind it is an error naming its field.
    fn keep_stored_secrets(&mut self, _stored: Option<&Self>) -> Vec<FieldError> {
        Vec::new()
    }
}

macro_rules! ids {
    () => {
        fn id(&self) -> &str {
            &self.id
        }
        fn set_id(&mut self, id: String) {
            self.id = id;
        }
    };
}

fn flag(actual: bool, value: &str) -> bool {
    value == if actual { "true" } else { "false" }
}

impl CatalogEntity for Source {
    const KIND: EntityKind = EntityKind::Sources;
    const FILTERS: &'static [ListFilter] = &[
        text("type", "Only sources of this type."),
        flag_filter(
            "enabled",
            "Only enabled (`true`) or disabled (`false`) sources.",
        ),
        text("name", "Only the source with this name."),
    ];
    ids!();

    /// What a read or a create answer adds (`refresh`, `import`) is the server's: a body
    /// written back with it is read without it, like the other server-set fields.
    fn prepare_body(body: &mut serde_json::Value) -> Result<(), Vec<FieldError>> {
        if let serde_json::Value::Object(fields) = body {
            fields.remove("refresh");
            fields.remove("import");
        }
        Ok(())
    }
    fn all(catalog: &Catalog) -> &Vec<Self> {
        &catalog.sources
    }
    fn all_mut(catalog: &mut Catalog) -> &mut Vec<Self> {
        &mut catalog.sources
    }
    fn filter(&self, key: &str, value: &str) -> Option<bool> {
        match key {
            "type" => Some(self.source_type == value),
            "enabled" => Some(flag(self.enabled, value)),
            "name" => Some(self.name == value),
            _ => None,
        }
    }
    fn redacted(&self) -> Cow<'_, Self> {
        Cow::Owned(secrets::redacted(self))
    }
    fn keep_stored_secrets(&mut self, stored: Option<&Self>) -> Vec<FieldError> {
        secrets::keep_stored(self, stored)
    }
    fn prepare_import(&self, catalog: &Catalog, import: &Import) -> Prepared {
        Prepared::of(catalog, self, import)
    }
    async fn import_on_create(&self) -> Result<Option<Import>, IngestError> {
        if !self.enabled || source_config::import_config(self).is_err() {
            return Ok(None);
        }
        ingest::fetch(self).await.map(Some)
    }
    async fn import_on_update(&self, before: &Self) -> Result<Option<Import>, IngestError> {
        let document = |source: &Source| ["spec", "url"].map(|key| source.config.get(key).cloned());
        if document(self) == document(before) && self.source_type == before.source_type {
            return Ok(None);
        }
        self.import_on_create().await
    }

    /// A source takes its tools with it, and the ids pointing at them.
    fn before_delete(catalog: &mut Catalog, id: &str) -> Result<(), WriteError> {
        let doomed: Vec<String> = catalog
            .tools
            .iter()
            .filter(|tool| tool.source_id == id)
            .map(|tool| tool.id.clone())
            .collect();
        for tool in doomed {
            Tool::before_delete(catalog, &tool)?;
            catalog.tools.retain(|t| t.id != tool);
        }
        Ok(())
    }
}

impl CatalogEntity for Tool {
    const KIND: EntityKind = EntityKind::Tools;
    const FILTERS: &'static [ListFilter] = &[
        text("source_id", "Only tools of this source."),
        flag_filter(
            "enabled",
            "Only enabled (`true`) or disabled (`false`) tools.",
        ),
        flag_filter(
            "deprecated",
            "Only deprecated (`true`) or current (`false`) tools.",
        ),
        text("tag", "Only tools carrying this tag."),
        text("label_id", "Only tools carrying this label."),
        text("method", "Only tools with this HTTP method."),
        text("name", "Only tools with this name."),
        text(
            "q",
            "Only tools whose id, name or description contains this text (ignoring case).",
        ),
    ];
    ids!();

    fn all(catalog: &Catalog) -> &Vec<Self> {
        &catalog.tools
    }
    fn all_mut(catalog: &mut Catalog) -> &mut Vec<Self> {
        &mut catalog.tools
    }
    fn prepare_body(body: &mut serde_json::Value) -> Result<(), Vec<FieldError>> {
        tool_from_descriptor(body);
        explicit_schema_with_arguments(body)
    }
    fn generated_id(&self) -> String {
        Tool::default_id(&self.source_id, &self.operation_id)
    }
    fn filter(&self, key: &str, value: &str) -> Option<bool> {
        match key {
            "source_id" => Some(self.source_id == value),
            "enabled" => Some(flag(self.enabled, value)),
            "deprecated" => Some(flag(self.deprecated, value)),
            "tag" => Some(self.tags.iter().any(|t| t == value)),
            "label_id" => Some(self.label_ids.iter().any(|l| l == value)),
            "method" => Some(self.method.as_deref() == Some(value)),
            "name" => Some(self.name == value),
            "q" => Some(mentions(self, value)),
            _ => None,
        }
    }
    /// Ids pointing at a removed tool are removed in the same revision (narrowing only).
    fn before_delete(catalog: &mut Catalog, id: &str) -> Result<(), WriteError> {
        for group in &mut catalog.groups {
            group.explicit_tool_ids.retain(|t| t != id);
            group.excluded_tool_ids.retain(|t| t != id);
        }
        Ok(())
    }
}

impl CatalogEntity for Label {
    const KIND: EntityKind = EntityKind::Labels;
    const FILTERS: &'static [ListFilter] = &[text("name", "Only the label with this name.")];
    ids!();

    fn all(catalog: &Catalog) -> &Vec<Self> {
        &catalog.labels
    }
    fn all_mut(catalog: &mut Catalog) -> &mut Vec<Self> {
        &mut catalog.labels
    }
    fn filter(&self, key: &str, value: &str) -> Option<bool> {
        match key {
            "name" => Some(self.name == value),
            _ => None,
        }
    }
    fn before_delete(catalog: &mut Catalog, id: &str) -> Result<(), WriteError> {
        let mut in_use = Vec::new();
        for (g, group) in catalog.groups.iter().enumerate() {
            for (s, selector) in group.selectors.iter().enumerate() {
                for (l, label) in selector.required_label_ids.iter().enumerate() {
                    if label == id {
                        in_use.push(reference(
                            format!("groups[{g}].selectors[{s}].required_label_ids[{l}]"),
                            "label",
                            id,
                            &group.id,
                        ));
                    }
                }
            }
        }
        if !in_use.is_empty() {
            return Err(WriteError::Conflict {
                reason: format!("label '{id}' is required by group selectors; change them first"),
                in_the_way: in_use,
            });
        }
        for tool in &mut catalog.tools {
            tool.label_ids.retain(|l| l != id);
        }
        Ok(())
    }
}

impl CatalogEntity for ToolGroup {
    const KIND: EntityKind = EntityKind::Groups;
    const FILTERS: &'static [ListFilter] = &[
        flag_filter(
            "active",
            "Only active (`true`) or inactive (`false`) groups.",
        ),
        text("name", "Only the group with this name."),
    ];
    ids!();

    fn all(catalog: &Catalog) -> &Vec<Self> {
        &catalog.groups
    }
    fn all_mut(catalog: &mut Catalog) -> &mut Vec<Self> {
        &mut catalog.groups
    }
    fn filter(&self, key: &str, value: &str) -> Option<bool> {
        match key {
            "active" => Some(flag(self.active, value)),
            "name" => Some(self.name == value),
            _ => None,
        }
    }
    fn before_delete(catalog: &mut Catalog, id: &str) -> Result<(), WriteError> {
        let mut in_use = Vec::new();
        for (p, policy) in catalog.policies.iter().enumerate() {
            for (list, ids) in [
                ("allowed_group_ids", &policy.allowed_group_ids),
                ("denied_group_ids", &policy.denied_group_ids),
            ] {
                for (i, group) in ids.iter().enumerate() {
                    if group == id {
                        in_use.push(reference(
                            format!("policies[{p}].{list}[{i}]"),
                            "group",
                            id,
                            &policy.id,
                        ));
                    }
                }
            }
        }
        if in_use.is_empty() {
            Ok(())
        } else {
            Err(WriteError::Conflict {
                reason: format!("group '{id}' is named by access policies; change them first"),
                in_the_way: in_use,
            })
        }
    }
}

impl CatalogEntity for AccessPolicy {
    const KIND: EntityKind = EntityKind::Policies;
    const FILTERS: &'static [ListFilter] = &[
        flag_filter(
            "active",
            "Only active (`true`) or inactive (`false`) policies.",
        ),
        text("group_id", "Only policies that allow or deny this group."),
    ];
    ids!();

    fn all(catalog: &Catalog) -> &Vec<Self> {
        &catalog.policies
    }
    fn all_mut(catalog: &mut Catalog) -> &mut Vec<Self> {
        &mut catalog.policies
    }
    fn filter(&self, key: &str, value: &str) -> Option<bool> {
        match key {
            "active" => Some(flag(self.active, value)),
            "group_id" => Some(
                self.allowed_group_ids
                    .iter()
                    .chain(&self.denied_group_ids)
                    .any(|g| g == value),
            ),
            _ => None,
        }
    }
}

fn reference(field: String, noun: &str, id: &str, owner: &str) -> FieldError {
    FieldError {
        field,
        message: format!("refers to {noun} '{id}' (in '{owner}')"),
        kind: ErrorKind::Conflict,
    }
}

/// Whether `text` occurs in the tool's id, name or description, ignoring case (Unicode lower
/// case on both sides; an empty text occurs everywhere). Linear in the tool's texts: `text` is
/// at most [`MAX_FILTER_CHARS`] long (the listing refuses longer values), and each field is
/// searched once.
fn mentions(tool: &Tool, text: &str) -> bool {
    let needle = text.to_lowercase();
    if needle.is_empty() {
        return true;
    }
    // ASCII text, the common case, without lowering a copy of every field: one automaton.
    let ascii = needle.is_ascii().then(|| {
        aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build([needle.as_str()])
    });
    [&tool.id, &tool.name, &tool.description]
        .into_iter()
        .any(|field| match &ascii {
            Some(Ok(automaton)) if field.is_ascii() => automaton.is_match(field.as_str()),
            _ => field.to_lowercase().contains(&needle),
        })
}
