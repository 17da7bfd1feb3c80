//! Every shape error of a catalog document, not only the first: a document that is valid JSON
//! or YAML but not a catalog is read again entry by entry, so that `toolgate check` lists the
//! wrong field of every entry at once instead of one per run.

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::CatalogFormat;
use crate::domain::model::{AccessPolicy, Catalog, Label, Source, Tool, ToolGroup};

/// A field path (`tools[3].method`; `None` for the document) and what is wrong there.
pub type ShapeError = (Option<String>, String);

/// The shape errors of `document`, each entry of each collection read on its own, then the
/// document around them (unknown top-level keys, a collection that is not a list). Empty when
/// the document is a catalog. Each entry is read as the file was (`format`): YAML reads `1` as
/// the string a `name` needs, JSON does not.
pub(super) fn shape_errors(document: &Value, format: CatalogFormat) -> Vec<ShapeError> {
    let one =
        |value: &Value, at: Option<&str>, read: fn(&str, CatalogFormat) -> Option<ShapeError>| {
            let text = match format {
                CatalogFormat::Json => value.to_string(),
                CatalogFormat::Yaml => serde_norway::to_string(value).unwrap_or_default(),
            };
            read(&text, format).map(|(inner, message)| (under(at, inner), message))
        };
    let Some(object) = document.as_object() else {
        return one(document, None, first::<Catalog>).into_iter().collect();
    };
    let mut errors = Vec::new();
    let mut outline = object.clone();
    for (key, value) in object {
        let Value::Array(entries) = value else {
            continue;
        };
        for (index, entry) in entries.iter().enumerate() {
            let at = format!("{key}[{index}]");
            let read: fn(&str, CatalogFormat) -> Option<ShapeError> = match key.as_str() {
                "sources" => first::<Source>,
                "tools" => first::<Tool>,
                "labels" => first::<Label>,
                "groups" => first::<ToolGroup>,
                "policies" => first::<AccessPolicy>,
                _ => continue,
            };
            errors.extend(one(entry, Some(&at), read));
        }
        outline.insert(key.clone(), Value::Array(Vec::new()));
    }
    errors.extend(one(&Value::Object(outline), None, first::<Catalog>));
    errors
}

/// `inner` (a path inside an entry, `None` for the entry itself) under the entry's path `at`.
fn under(at: Option<&str>, inner: Option<String>) -> Option<String> {
    match (at, inner) {
        (None, inner) => inner,
        (Some(at), None) => Some(at.to_owned()),
        (Some(at), Some(inner)) => Some(format!("{at}.{inner}")),
    }
}

/// The first shape error of `text` read as `T` in `format`: its path inside `text` and what
/// is wrong. Read from text, as the file is: a `Value` cannot give a raw definition
/// (`imported.definition`) its text.
fn first<T: DeserializeOwned>(text: &str, format: CatalogFormat) -> Option<ShapeError> {
    let (path, message) = match format {
        CatalogFormat::Json => {
            let mut deserializer = serde_json::Deserializer::from_str(text);
            let error = serde_path_to_error::deserialize::<_, T>(&mut deserializer).err()?;
            (error.path().to_string(), error.into_inner().to_string())
        }
        CatalogFormat::Yaml => {
            let deserializer = serde_norway::Deserializer::from_str(text);
            let error = serde_path_to_error::deserialize::<_, T>(deserializer).err()?;
            (error.path().to_string(), error.into_inner().to_string())
        }
    };
    // The line and column are those of the entry's text, not the file's; serde_norway also
    // puts the path in front, which is given apart.
    let message = match message.rfind(" at line ") {
        Some(end) => message[..end].to_owned(),
        None => message,
    };
    let message = match message.strip_prefix(&format!("{path}: ")) {
        Some(rest) => rest.to_owned(),
        None => message,
    };
    Some(((path != ".").then_some(path), message))
}
