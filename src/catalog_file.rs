//! Reading a catalog document (the `PUT /admin/catalog` shape) from a JSON or YAML file, for
//! `toolgate check` and the start-up seed.
//!
//! Errors point at the spot: the file, line and column, and the field path inside the document
//! (`tools[3].source_id`), so a typo in a 2,000-line seed file is found in seconds.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::domain::model::Catalog;

mod entries;

pub use entries::ShapeError;

/// The syntax a catalog file is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogFormat {
    /// `.json`
    Json,
    /// `.yaml` / `.yml` (YAML 1.2 via `serde_norway`).
    Yaml,
}

impl fmt::Display for CatalogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Json => "JSON",
            Self::Yaml => "YAML",
        })
    }
}

/// Why a catalog file could not be read as a [`Catalog`].
#[derive(Debug, thiserror::Error)]
pub enum CatalogFileError {
    /// The file could not be read. (The cause is the error's `source`, which error reports
    /// print after this message: it is not repeated here.)
    #[error("cannot read the catalog file {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The file is not a valid catalog document in `format`.
    #[error("{}: {}", Self::place(path, *line, *column), Self::what(*format, field, message))]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The syntax it was read as.
        format: CatalogFormat,
        /// Where in the document (`tools[0].name`); `None` at the top level.
        field: Option<String>,
        /// 1-based line, when the parser knows it.
        line: Option<usize>,
        /// 1-based column, when the parser knows it.
        column: Option<usize>,
        /// The parser's message (e.g. ``missing field `name` ``).
        message: String,
    },
}

impl CatalogFileError {
    fn place(path: &Path, line: Option<usize>, column: Option<usize>) -> String {
        match (line, column) {
            (Some(line), Some(column)) => format!("{}:{line}:{column}", path.display()),
            (Some(line), None) => format!("{}:{line}", path.display()),
            _ => path.display().to_string(),
        }
    }

    fn what(format: CatalogFormat, field: &Option<String>, message: &str) -> String {
        match field {
            Some(field) => format!("{field}: {message} (invalid {format} catalog)"),
            None => format!("{message} (invalid {format} catalog)"),
        }
    }
}

/// Reads `path` as a catalog: `.json` as JSON, `.yaml`/`.yml` as YAML, anything else as JSON
/// and then as YAML. The catalog is returned as written: call [`Catalog::normalize`] and
/// [`crate::domain::validate::validate`] next.
pub fn parse_catalog_file(path: &Path) -> Result<Catalog, CatalogFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| CatalogFileError::Read {
        path: path.to_owned(),
        source,
    })?;
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("json") => parse_json(path, &text),
        Some("yaml" | "yml") => parse_yaml(path, &text),
        _ => parse_json(path, &text).or_else(|json_error| {
            // YAML reads most JSON too; report the JSON error for what looks like JSON.
            parse_yaml(path, &text).map_err(|yaml_error| {
                if text.trim_start().starts_with('{') {
                    json_error
                } else {
                    yaml_error
                }
            })
        }),
    }
}

/// Every shape error of the catalog file at `path` ([`entries::shape_errors`]): when the file
/// is well-formed JSON or YAML but not a catalog, the wrong field of each entry, not only the
/// first that [`parse_catalog_file`] reports. Empty when the file cannot be read, is not
/// well-formed, or is a catalog.
pub fn all_shape_errors(path: &Path) -> Vec<ShapeError> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let json = || serde_json::from_str::<serde_json::Value>(&text).ok();
    let yaml = || serde_norway::from_str::<serde_json::Value>(&text).ok();
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let document = match extension.as_deref() {
        Some("json") => json().map(|d| (d, CatalogFormat::Json)),
        Some("yaml" | "yml") => yaml().map(|d| (d, CatalogFormat::Yaml)),
        _ => json()
            .map(|d| (d, CatalogFormat::Json))
            .or_else(|| yaml().map(|d| (d, CatalogFormat::Yaml))),
    };
    document
        .map(|(document, format)| entries::shape_errors(&document, format))
        .unwrap_or_default()
}

/// Parses `text` as a JSON catalog; `path` only names the file in errors.
pub fn parse_json(path: &Path, text: &str) -> Result<Catalog, CatalogFileError> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let catalog: Catalog =
        serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
            let field = field_path(error.path());
            let inner = error.into_inner();
            syntax(
                path,
                CatalogFormat::Json,
                field,
                Some(inner.line()).filter(|&l| l > 0),
                Some(inner.column()).filter(|&c| c > 0),
                json_message(&inner),
            )
        })?;
    deserializer.end().map_err(|inner| {
        syntax(
            path,
            CatalogFormat::Json,
            None,
            Some(inner.line()),
            Some(inner.column()),
            json_message(&inner),
        )
    })?;
    Ok(catalog)
}

/// Parses `text` as a YAML catalog (one document); `path` only names the file in errors.
pub fn parse_yaml(path: &Path, text: &str) -> Result<Catalog, CatalogFileError> {
    let deserializer = serde_norway::Deserializer::from_str(text);
    serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let field = field_path(error.path());
        let inner = error.into_inner();
        let location = inner.location();
        // serde_norway appends " at line L column C" itself; we print the place up front.
        let message = inner.to_string();
        let message = match message.find(" at line ") {
            Some(at) if location.is_some() => message[..at].to_owned(),
            _ => message,
        };
        // It also prefixes the enclosing path ("tools[0]: unknown field"); ours is more exact.
        let message = match (&field, message.split_once(": ")) {
            (Some(field), Some((prefix, rest))) if field.starts_with(prefix) => rest.to_owned(),
            _ => message,
        };
        let message = match &location {
            Some(at) => with_indentation_hint(text, at.line(), at.column(), message),
            None => message,
        };
        syntax(
            path,
            CatalogFormat::Yaml,
            field,
            location.as_ref().map(|l| l.line()),
            location.as_ref().map(|l| l.column()),
            message,
        )
    })
}

/// A YAML entry that lacks a field is often one whose field is there but indented differently
/// from its siblings: YAML then reads it as outside the entry, and the parser can only report
/// the entry as incomplete, at the entry's first line. When the missing key appears among the
/// entry's lines at another indentation, say so, with its line.
///
/// `line` and `column` (1-based) are where the entry's mapping starts: its keys are indented by
/// `column - 1` spaces; the entry ends at the next item of its list or at a line indented less
/// than the list's dash.
fn with_indentation_hint(text: &str, line: usize, column: usize, message: String) -> String {
    let Some(key) = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'))
    else {
        return message;
    };
    let keys_at = column.saturating_sub(1);
    let dash_at = keys_at.saturating_sub(2);
    let found = text
        .lines()
        .enumerate()
        .skip(line)
        .map(|(number, content)| {
            let trimmed = content.trim_start_matches(' ');
            (number + 1, content.len() - trimmed.len(), trimmed)
        })
        .filter(|(_, _, trimmed)| !trimmed.is_empty() && !trimmed.starts_with('#'))
        .take_while(|&(_, indent, trimmed)| {
            indent >= dash_at && !(indent == dash_at && trimmed.starts_with("- "))
        })
        .find(|&(_, indent, trimmed)| {
            indent != keys_at
                && trimmed
                    .strip_prefix(key)
                    .is_some_and(|rest| rest.trim_start().starts_with(':'))
        });
    match found {
        Some((number, indent, _)) => format!(
            "{message}; line {number} has `{key}` indented by {indent} spaces where this entry's \
             keys are indented by {keys_at}, so YAML does not read it as part of the entry"
        ),
        None => message,
    }
}

/// serde_json's message without its trailing " at line L column C".
fn json_message(error: &serde_json::Error) -> String {
    let message = error.to_string();
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message,
    }
}

/// The path as `tools[0].name`; `None` for the document itself.
fn field_path(path: &serde_path_to_error::Path) -> Option<String> {
    let text = path.to_string();
    (text != ".").then_some(text)
}

fn syntax(
    path: &Path,
    format: CatalogFormat,
    field: Option<String>,
    line: Option<usize>,
    column: Option<usize>,
    message: String,
) -> CatalogFileError {
    CatalogFileError::Syntax {
        path: path.to_owned(),
        format,
        field,
        line,
        column,
        message,
    }
}

#[cfg(test)]
mod tests;
