//! `toolgate check FILE`: the same parsing and validation the server applies to a catalog,
//! without starting it.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use crate::catalog_file::{CatalogFileError, all_shape_errors, parse_catalog_file};
use crate::domain::model::Catalog;
use crate::domain::validate::validate;

/// Checks the catalog at `path`. Writes each problem as `field: message` (a parse error as
/// `file:line:column: field: message`) and returns exit code 1, or writes a one-line summary
/// and returns 0. Only an unreadable file is an `Err`.
pub fn run_check(path: &Path, out: &mut impl Write) -> anyhow::Result<ExitCode> {
    let mut catalog = match parse_catalog_file(path) {
        Ok(catalog) => catalog,
        Err(error @ CatalogFileError::Syntax { .. }) => {
            writeln!(out, "{error}")?;
            write_other_shape_errors(path, &error, out)?;
            return Ok(ExitCode::FAILURE);
        }
        Err(error @ CatalogFileError::Read { .. }) => return Err(error.into()),
    };
    catalog.normalize();
    let errors = validate(&catalog);
    if errors.is_empty() {
        let empty = catalog.sources.is_empty()
            && catalog.tools.is_empty()
            && catalog.labels.is_empty()
            && catalog.groups.is_empty()
            && catalog.policies.is_empty();
        if empty {
            // Valid, but almost certainly not what was meant (a wrong file, a YAML document
            // whose top-level keys are misspelt or indented away).
            writeln!(
                out,
                "{}: valid, but empty: it defines no sources, tools, labels, groups or \
                 policies (expected top-level keys: sources, tools, labels, groups, policies)",
                path.display()
            )?;
        } else {
            writeln!(
                out,
                "{}: valid catalog with {}",
                path.display(),
                summary(&catalog)
            )?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    for error in &errors {
        writeln!(out, "{error}")?;
    }
    Ok(ExitCode::FAILURE)
}

/// After the first error (which has the line and column), the wrong field of every other
/// entry, so that one run lists them all; nothing more for a file that is not well-formed.
fn write_other_shape_errors(
    path: &Path,
    first: &CatalogFileError,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let CatalogFileError::Syntax { field: first, .. } = first else {
        return Ok(());
    };
    for (field, message) in all_shape_errors(path) {
        if field == *first {
            continue;
        }
        match field {
            Some(field) => writeln!(out, "{}: {field}: {message}", path.display())?,
            None => writeln!(out, "{}: {message}", path.display())?,
        }
    }
    Ok(())
}

/// `2 sources, 5 tools, 1 label, 2 groups, 3 policies`.
fn summary(catalog: &Catalog) -> String {
    let count =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    [
        count(catalog.sources.len(), "source", "sources"),
        count(catalog.tools.len(), "tool", "tools"),
        count(catalog.labels.len(), "label", "labels"),
        count(catalog.groups.len(), "group", "groups"),
        count(catalog.policies.len(), "policy", "policies"),
    ]
    .join(", ")
}
