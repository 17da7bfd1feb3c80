//! Format selection and error locations for catalog files.

use std::path::PathBuf;

use super::*;

const YAML: &str = "\
sources:
  - id: billing
    name: Billing API
    type: openapi
tools:
  - source_id: billing
    operation_id: refund
    name: refund_payment
    tags: [payments]
";

const JSON: &str = r#"{
  "sources": [{"id": "billing", "name": "Billing API", "type": "openapi"}],
  "tools": [{"source_id": "billing", "operation_id": "refund", "name": "refund_payment"}]
}"#;

fn file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write");
    (dir, path)
}

#[test]
fn reads_yaml_and_json_by_extension() {
    for (name, text) in [
        ("c.yaml", YAML),
        ("c.yml", YAML),
        ("c.json", JSON),
        ("C.JSON", JSON),
    ] {
        let (_dir, path) = file(name, text);
        let catalog = parse_catalog_file(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(catalog.sources[0].id, "billing", "{name}");
        assert_eq!(catalog.tools[0].operation_id, "refund", "{name}");
    }
}

#[test]
fn other_extensions_are_tried_as_json_then_yaml() {
    for text in [JSON, YAML] {
        let (_dir, path) = file("catalog.txt", text);
        let catalog = parse_catalog_file(&path).expect("either syntax works");
        assert_eq!(catalog.tools.len(), 1);
    }
}

#[test]
fn yaml_errors_carry_the_field_path_line_and_column() {
    let (_dir, path) = file(
        "c.yaml",
        "tools:\n  - source_id: billing\n    operation_id: refund\n    nmae: x\n",
    );
    let error = parse_catalog_file(&path).expect_err("unknown field");
    let CatalogFileError::Syntax {
        format,
        field,
        line,
        message,
        ..
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(*format, CatalogFormat::Yaml);
    assert_eq!(field.as_deref(), Some("tools[0].nmae"), "{error}");
    assert_eq!(*line, Some(4), "{error}");
    assert!(message.contains("unknown field `nmae`"), "{message}");
    let text = error.to_string();
    assert!(
        text.starts_with(&format!("{}:4:", path.display())),
        "{text}"
    );
    assert!(text.contains("tools[0].nmae: "), "{text}");
}

#[test]
fn a_key_indented_unlike_its_siblings_is_pointed_at() {
    for (text, indent) in [
        ("sources:\n  - id: s\n    name: s\n   type: manual\n", 3),
        ("sources:\n  - id: s\n    name: s\n  type: manual\n", 2),
        (
            "sources:\n  - id: s\n    name: s\n\n    # a comment\n   type: manual\n",
            3,
        ),
    ] {
        let (_dir, path) = file("c.yaml", text);
        let message = parse_catalog_file(&path)
            .expect_err("type is not part of the entry")
            .to_string();
        assert!(message.contains("missing field `type`"), "{message}");
        let line = text
            .lines()
            .position(|l| l.trim() == "type: manual")
            .expect("line")
            + 1;
        assert!(
            message.contains(&format!(
                "line {line} has `type` indented by {indent} spaces where this entry's keys are \
                 indented by 4"
            )),
            "{message}"
        );
    }
    // A field that is really missing gets no hint, nor does one in the next entry.
    let (_dir, path) = file(
        "c.yaml",
        "sources:\n  - id: s\n    name: s\n  - id: t\n    name: t\n    type: manual\n",
    );
    let message = parse_catalog_file(&path).expect_err("missing").to_string();
    assert!(message.contains("missing field `type`"), "{message}");
    assert!(!message.contains("indented"), "{message}");
}

#[test]
fn json_errors_carry_the_field_path_line_and_column() {
    let (_dir, path) = file("c.json", "{\"tools\": [\n  {\"source_id\": 7}\n]}");
    let error = parse_catalog_file(&path).expect_err("wrong type");
    let CatalogFileError::Syntax {
        format,
        field,
        line,
        column,
        ..
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(*format, CatalogFormat::Json);
    assert_eq!(field.as_deref(), Some("tools[0].source_id"), "{error}");
    assert_eq!((*line, column.is_some()), (Some(2), true), "{error}");
}

#[test]
fn trailing_garbage_after_json_is_an_error() {
    let (_dir, path) = file("c.json", "{} {}");
    assert!(matches!(
        parse_catalog_file(&path),
        Err(CatalogFileError::Syntax { .. })
    ));
}

#[test]
fn json_looking_files_report_the_json_error() {
    let (_dir, path) = file("catalog", "{\"tools\": [}");
    let error = parse_catalog_file(&path).expect_err("broken");
    assert!(
        matches!(
            error,
            CatalogFileError::Syntax {
                format: CatalogFormat::Json,
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn a_missing_file_is_a_read_error() {
    let error = parse_catalog_file(Path::new("/nonexistent/catalog.yaml")).expect_err("missing");
    assert!(matches!(error, CatalogFileError::Read { .. }));
    assert!(error.to_string().contains("/nonexistent/catalog.yaml"));
}
