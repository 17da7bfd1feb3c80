//! Write-only values in a source's config: credentials an admin gives for an upstream (the
//! values under `config.headers`, such as an `Authorization`, and any value whose key names a
//! secret, at any depth). The store keeps them and the importers send them; every read shows
//! [`MASK`] instead (docs/api.md, "Secrets").
//!
//! Reading and writing back must round-trip, or an admin who edits one field of a source (or
//! the whole catalog document) would replace its credentials with the mask. So a write that
//! holds the mask where a secret goes keeps the value stored at the same place; a mask with no
//! stored value behind it is an error naming the field, never a literal `"***"` credential.

use serde_json::{Map, Value};

use super::field_error::{ErrorKind, FieldError};
use super::model::Source;

/// What reads show in place of a secret, and what writes send to keep one.
pub const MASK: &str = "***";

/// Key names that hold secrets, compared without case, `-` or `_`, at the end of the key:
/// `token` also covers `access_token` and `X-Auth-Token`, `apikey` covers `api_key` and
/// `x-api-key`. Hiding one value too many costs a round trip through the mask; showing one
/// too few leaks a credential.
const SECRET_WORDS: [&str; 8] = [
    "token",
    "secret",
    "password",
    "passwd",
    "apikey",
    "authorization",
    "credentials",
    "privatekey",
];

/// Whether a config key, wherever it is, names a secret.
pub fn is_secret_key(key: &str) -> bool {
    let squashed: String = key
        .chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    SECRET_WORDS.iter().any(|word| squashed.ends_with(word))
}

/// `source` as an admin may read it: every secret shown as [`MASK`].
pub fn redacted(source: &Source) -> Source {
    let mut source = source.clone();
    mask_config(&mut source.config);
    source
}

/// Masks the secrets of a config in place.
pub fn mask_config(config: &mut Map<String, Value>) {
    for (key, value) in config.iter_mut() {
        if key == "headers" || is_secret_key(key) {
            mask_headers_or_value(value, key == "headers");
        } else {
            mask_nested(value);
        }
    }
}

/// Masks the config of a source serialised as JSON (an audit record's before or after).
pub fn mask_source_json(source: &mut Value) {
    if let Some(Value::Object(config)) = source.get_mut("config") {
        mask_config(config);
    }
}

/// `config.headers`: every header's value; anything else under that key (not an object of
/// headers) as a whole.
fn mask_headers_or_value(value: &mut Value, is_headers: bool) {
    match value {
        Value::Object(headers) if is_headers => headers.values_mut().for_each(mask),
        other => mask(other),
    }
}

fn mask_nested(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if is_secret_key(key) {
                    mask(value);
                } else {
                    mask_nested(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask_nested),
        _ => {}
    }
}

/// A null hides nothing and stays null, so that it reads back as what it is.
fn mask(value: &mut Value) {
    if !value.is_null() {
        *value = Value::String(MASK.to_owned());
    }
}

/// Puts back the stored value wherever `source` holds [`MASK`] in a secret's place (`stored`:
/// the source as stored, `None` for a new one). Each mask with no stored value at the same
/// place is an error, its field relative to the source (`config.headers.Authorization`).
///
/// A stored secret never follows its source to a new destination: when the write changes
/// where a secret is sent (the source's type, `config.url`, `config.base_url`, the servers of
/// an inline `config.spec`; `config.auth.token_endpoint` for the secrets under `config.auth`),
/// a mask there is an error too, and the admin gives the secret again. Otherwise whoever may
/// edit a source could have its credentials sent to a host of their choosing.
pub fn keep_stored(source: &mut Source, stored: Option<&Source>) -> Vec<FieldError> {
    let moved = stored.and_then(|stored| moved_upstream(source, stored));
    let token_endpoint = |source: &Source| {
        source
            .config
            .get("auth")
            .and_then(|auth| auth.get("token_endpoint"))
            .cloned()
    };
    let token_moved = stored
        .filter(|stored| token_endpoint(source) != token_endpoint(stored))
        .map(|_| "config.auth.token_endpoint");
    let stored = stored.map(|s| &s.config);
    let mut errors = Vec::new();
    for (key, value) in source.config.iter_mut() {
        let old = stored.and_then(|config| config.get(key));
        let path = format!("config.{key}");
        let at = Keep {
            // The client secret goes to the token endpoint only.
            moved: if key == "auth" { token_moved } else { moved },
        };
        match value {
            Value::Object(headers) if key == "headers" => {
                for (name, value) in headers.iter_mut() {
                    let old = old.and_then(|old| old.get(name));
                    at.restore(value, old, format!("{path}.{name}"), &mut errors);
                }
            }
            value if key == "headers" || is_secret_key(key) => {
                at.restore(value, old, path, &mut errors);
            }
            value => at.restore_nested(value, old, path, &mut errors),
        }
    }
    errors
}

/// The first field of `source` that sends its secrets somewhere else than `stored`'s did.
fn moved_upstream(source: &Source, stored: &Source) -> Option<&'static str> {
    if source.source_type != stored.source_type {
        return Some("type");
    }
    for (key, field) in [("url", "config.url"), ("base_url", "config.base_url")] {
        if source.config.get(key) != stored.config.get(key) {
            return Some(field);
        }
    }
    (servers(source) != servers(stored)).then_some("config.spec (its servers)")
}

/// The `servers` of `source`'s inline document ([`servers_of`]).
fn servers(source: &Source) -> Vec<&Value> {
    let mut found = Vec::new();
    if let Some(spec) = source.config.get("spec") {
        servers_of(spec, &mut found, 0);
    }
    found
}

/// The `servers` of an inline OpenAPI document, at any level (document, path, operation); a
/// document given as text is compared whole (it is not parsed here).
fn servers_of<'v>(spec: &'v Value, found: &mut Vec<&'v Value>, depth: usize) {
    match spec {
        Value::Object(members) if depth < 4 => {
            for (key, value) in members {
                if key == "servers" {
                    found.push(value);
                } else if depth == 0 && key != "paths" {
                    continue;
                } else {
                    servers_of(value, found, depth + 1);
                }
            }
        }
        Value::Object(_) => {}
        other if depth == 0 => found.push(other),
        _ => {}
    }
}

/// Where a mask is put back: `moved` names what sends the secret elsewhere now, if anything.
struct Keep {
    moved: Option<&'static str>,
}

impl Keep {
    fn restore_nested(
        &self,
        value: &mut Value,
        stored: Option<&Value>,
        path: String,
        errors: &mut Vec<FieldError>,
    ) {
        match value {
            Value::Object(map) => {
                for (key, value) in map.iter_mut() {
                    let old = stored.and_then(|old| old.get(key));
                    let path = format!("{path}.{key}");
                    if is_secret_key(key) {
                        self.restore(value, old, path, errors);
                    } else {
                        self.restore_nested(value, old, path, errors);
                    }
                }
            }
            Value::Array(items) => {
                for (index, value) in items.iter_mut().enumerate() {
                    let old = stored.and_then(|old| old.get(index));
                    self.restore_nested(value, old, format!("{path}[{index}]"), errors);
                }
            }
            _ => {}
        }
    }

    fn restore(
        &self,
        value: &mut Value,
        stored: Option<&Value>,
        path: String,
        errors: &mut Vec<FieldError>,
    ) {
        if value.as_str() != Some(MASK) {
            return;
        }
        match (stored.filter(|old| !old.is_null()), self.moved) {
            (Some(_), Some(moved)) => errors.push(FieldError {
                field: path,
                message: format!(
                    "is \"{MASK}\", which keeps the stored secret, but this write changes {moved}: a stored secret is never sent to a new destination; give the value again"
                ),
                kind: ErrorKind::Invalid,
            }),
            (Some(old), None) => *value = old.clone(),
            (None, _) => errors.push(mask_error(path)),
        }
    }
}

/// Every place where `source` holds [`MASK`] in a secret's place, as the errors
/// [`keep_stored`] gives with nothing stored: what validation reports for a catalog given
/// whole (a seed, `toolgate check`, an import), where no stored value stands behind a mask. A
/// mask there would otherwise be sent upstream as the credential itself. Reads, never copies:
/// an inline document may be megabytes.
pub fn unresolved_masks(source: &Source) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (key, value) in &source.config {
        match value {
            Value::Object(headers) if key == "headers" => {
                for (name, value) in headers {
                    check_mask(value, || format!("config.headers.{name}"), &mut errors);
                }
            }
            value if key == "headers" || is_secret_key(key) => {
                check_mask(value, || format!("config.{key}"), &mut errors);
            }
            value => masks_nested(value, &mut vec![Step::Key(key)], &mut errors),
        }
    }
    errors
}

/// One step of a field path, formatted only when there is an error to report.
enum Step<'v> {
    Key(&'v str),
    Index(usize),
}

fn field_path(steps: &[Step<'_>]) -> String {
    let mut path = "config".to_owned();
    for step in steps {
        match step {
            Step::Key(key) => {
                path.push('.');
                path.push_str(key);
            }
            Step::Index(index) => path.push_str(&format!("[{index}]")),
        }
    }
    path
}

fn masks_nested<'v>(value: &'v Value, steps: &mut Vec<Step<'v>>, errors: &mut Vec<FieldError>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                steps.push(Step::Key(key));
                if is_secret_key(key) {
                    check_mask(value, || field_path(steps), errors);
                } else {
                    masks_nested(value, steps, errors);
                }
                steps.pop();
            }
        }
        Value::Array(items) => {
            for (index, value) in items.iter().enumerate() {
                steps.push(Step::Index(index));
                masks_nested(value, steps, errors);
                steps.pop();
            }
        }
        _ => {}
    }
}

fn check_mask(value: &Value, path: impl FnOnce() -> String, errors: &mut Vec<FieldError>) {
    if value.as_str() == Some(MASK) {
        errors.push(mask_error(path()));
    }
}

fn mask_error(field: String) -> FieldError {
    FieldError {
        field,
        message: format!(
            "is \"{MASK}\", which keeps a stored secret, but none is stored here; give the value itself"
        ),
        kind: ErrorKind::Invalid,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn source(config: Value) -> Source {
        serde_json::from_value(json!({"id": "s", "name": "s", "type": "manual", "config": config}))
            .expect("a source")
    }

    #[test]
    fn secret_keys_are_recognised_whatever_their_spelling() {
        for key in [
            "token",
            "Token",
            "access_token",
            "X-Auth-Token",
            "secret",
            "client_secret",
            "PASSWORD",
            "api_key",
            "apiKey",
            "x-api-key",
            "Authorization",
            "private_key",
        ] {
            assert!(is_secret_key(key), "{key}");
        }
        for key in [
            "url",
            "tokens",
            "token_url",
            "secret_name",
            "spec",
            "headers",
        ] {
            assert!(!is_secret_key(key), "{key}");
        }
    }

    #[test]
    fn reads_mask_header_values_and_secret_keys_at_any_depth() {
        let stored = source(json!({
            "url": "https://x.example/o.json",
            "headers": {"Authorization": "Bearer a", "X-Tenant": "t"},
            "nested": {"Password": "p", "list": [{"api_key": "k"}], "empty": null, "n": 1},
            "token": {"value": "v"}
        }));
        assert_eq!(
            Value::Object(redacted(&stored).config),
            json!({
                "url": "https://x.example/o.json",
                "headers": {"Authorization": MASK, "X-Tenant": MASK},
                "nested": {"Password": MASK, "list": [{"api_key": MASK}], "empty": null, "n": 1},
                "token": MASK
            })
        );
        let mut headers_as_text = source(json!({"headers": "Authorization: x"}));
        headers_as_text = redacted(&headers_as_text);
        assert_eq!(
            Value::Object(headers_as_text.config),
            json!({"headers": MASK})
        );
    }

    #[test]
    fn writing_the_mask_back_keeps_what_is_stored() {
        let stored = source(json!({
            "headers": {"Authorization": "Bearer a", "X-Tenant": "t"},
            "nested": {"list": [{"api_key": "k"}]},
            "token": {"value": "v"}
        }));
        let mut written = redacted(&stored);
        written.config.insert("plain".to_owned(), json!(MASK));
        assert!(keep_stored(&mut written, Some(&stored)).is_empty());
        let mut expected = stored.config.clone();
        // A mask where no secret goes is text like any other.
        expected.insert("plain".to_owned(), json!(MASK));
        assert_eq!(written.config, expected);
    }

    #[test]
    fn a_stored_secret_never_follows_a_new_destination() {
        let stored = serde_json::from_value::<Source>(json!({"id": "s", "name": "s", "type": "openapi",
            "config": {"url": "https://api.example/openapi.json",
                "headers": {"Authorization": "Bearer a"},
                "auth": {"type": "client_credentials", "token_endpoint": "https://idp.example/token",
                         "client_id": "gw", "client_secret": "s3"}}}))
        .expect("a source");
        let masked = redacted(&stored);
        let with = |change: &dyn Fn(&mut Source)| {
            let mut written = masked.clone();
            change(&mut written);
            let errors: Vec<(String, String)> = keep_stored(&mut written, Some(&stored))
                .into_iter()
                .map(|e| (e.field, e.message))
                .collect();
            (written, errors)
        };
        // Nothing moved: both secrets are kept.
        let (kept, errors) = with(&|_| {});
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(kept.config, stored.config);
        // The document moved: the header is not kept, the token endpoint's secret is.
        let (_, errors) = with(&|s| {
            s.config
                .insert("url".into(), json!("https://evil.example/openapi.json"));
        });
        assert_eq!(
            errors.iter().map(|e| e.0.as_str()).collect::<Vec<_>>(),
            ["config.headers.Authorization"]
        );
        assert!(errors[0].1.contains("config.url"), "{errors:?}");
        // The token endpoint moved: its client secret is not kept, the header is.
        let (_, errors) = with(&|s| {
            s.config["auth"]["token_endpoint"] = json!("https://evil.example/token");
        });
        assert_eq!(
            errors.iter().map(|e| e.0.as_str()).collect::<Vec<_>>(),
            ["config.auth.client_secret"]
        );
        // Calls go to another server (base_url, the type): nothing is kept.
        for change in [
            &(|s: &mut Source| {
                s.config
                    .insert("base_url".into(), json!("https://evil.example"));
            }) as &dyn Fn(&mut Source),
            &|s: &mut Source| s.source_type = "mcp".into(),
        ] {
            let (_, errors) = with(change);
            assert!(
                errors.iter().any(|e| e.0 == "config.headers.Authorization"),
                "{errors:?}"
            );
        }
        // The servers of an inline document, at any level.
        let inline = |servers: Value| {
            serde_json::from_value::<Source>(json!({"id": "s", "name": "s", "type": "openapi",
                "config": {"spec": {"openapi": "3.0.0", "servers": [{"url": "https://api.example"}],
                    "paths": {"/a": {"get": {"servers": servers}}}},
                    "headers": {"Authorization": "Bearer a"}}}))
            .expect("a source")
        };
        let stored = inline(json!([{"url": "https://api.example"}]));
        let mut moved = redacted(&inline(json!([{"url": "https://evil.example"}])));
        assert_eq!(keep_stored(&mut moved, Some(&stored)).len(), 1);
        let mut same = redacted(&stored);
        assert!(keep_stored(&mut same, Some(&stored)).is_empty());
    }

    #[test]
    fn a_mask_with_nothing_stored_behind_it_names_its_field() {
        let stored = source(json!({"headers": {"Authorization": "Bearer a"}}));
        let mut written = source(json!({
            "headers": {"Authorization": MASK, "X-New": MASK},
            "nested": {"list": [{"Token": MASK}]}
        }));
        let fields: Vec<String> = keep_stored(&mut written, Some(&stored))
            .into_iter()
            .map(|e| e.field)
            .collect();
        assert_eq!(
            fields,
            ["config.headers.X-New", "config.nested.list[0].Token"]
        );
        let mut new = source(json!({"secret": MASK}));
        let fields: Vec<String> = keep_stored(&mut new, None)
            .into_iter()
            .map(|e| e.field)
            .collect();
        assert_eq!(fields, ["config.secret"]);
    }
}
