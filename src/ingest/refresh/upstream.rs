//! What an upstream's tool becomes in the catalog: a new tool, the fields a changed one takes,
//! the import record of an approved definition, and names and descriptions cut to size.

use std::sync::Arc;

use crate::domain::definition::Canonical;
use crate::domain::imported::ImportedTool;
use crate::domain::model::{Imported, Tool};
use crate::domain::stamp::Stamp;
use crate::domain::validate::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS};

/// The import record of a definition just approved.
pub(crate) fn record_of(upstream: &ImportedTool, canonical: &mut Canonical) -> Imported {
    let (definition, hash) = canonical.stored(upstream);
    Imported {
        content_hash: upstream.content_hash(),
        name: upstream.name.clone(),
        description: upstream.description.clone(),
        definition_hash: Some(hash),
        definition: Some(definition),
        drift: None,
    }
}

/// Brings a changed tool's imported fields in line with `upstream`, whose `record` it keeps; a
/// `name` or `description` an admin changed since the last import stays the admin's.
pub(crate) fn take_upstream(tool: &mut Tool, upstream: &ImportedTool, record: Imported) {
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

/// Upstream names and descriptions cut to what the catalog accepts.
pub(super) fn bounded(tool: &ImportedTool) -> ImportedTool {
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

/// A tool made from `upstream`, its definition approved.
pub(crate) fn new_tool(
    id: &str,
    source_id: &str,
    upstream: &ImportedTool,
    stamp: &Stamp,
    canonical: &mut Canonical,
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
        imported: Some(record_of(upstream, canonical)),
        definition_hash: None,
        created_at: Some(stamp.at),
        updated_at: Some(stamp.at),
        created_by: Some(stamp.by.clone()),
        updated_by: Some(stamp.by.clone()),
    }
}
