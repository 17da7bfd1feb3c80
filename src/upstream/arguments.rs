//! A call's arguments checked against the tool's input schema before anything is sent.
//!
//! Input schemas come from upstream documents and servers, so they are not trusted to be
//! harmless: a `$ref` to anything outside the schema itself (`https://…`, `file:…`) is never
//! fetched — the validator is built offline, and such a schema refuses every call (fail closed)
//! rather than validate less than it says. Messages name the offending value by its JSON
//! pointer and describe it without repeating it (the value is the agent's input, which may be
//! sensitive and may end up in logs).
//!
//! Compiling a schema costs far more than checking one call, and a tool's schema is one shared
//! `Arc` for as long as the catalog holds it, so [`ValidatorCache`] keeps the last
//! [`CACHED_VALIDATORS`] compiled validators by that `Arc` (holding a clone of it, so that a
//! freed schema's address cannot be mistaken for another's).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// How many compiled validators one [`ValidatorCache`] keeps.
pub const CACHED_VALIDATORS: usize = 512;

/// Why a call's arguments were refused: the JSON pointer of the offending value (`""` for the
/// arguments object itself) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{pointer}: {message}")]
pub struct ArgumentError {
    /// JSON pointer of the offending value (`""` for the root), e.g. `/limit`.
    pub pointer: String,
    pub message: String,
}

/// Checks `arguments` against `schema` (JSON Schema; the draft its `$schema` names, else
/// 2020-12), reporting the first error. A schema that cannot be compiled, a remote `$ref`
/// included, refuses the call with pointer `""`.
pub fn check_arguments(schema: &Value, arguments: &Value) -> Result<(), ArgumentError> {
    let validator = compile(schema)?;
    first_error(&validator, arguments)
}

fn compile(schema: &Value) -> Result<jsonschema::Validator, ArgumentError> {
    jsonschema::options()
        .offline()
        .build(schema)
        .map_err(|error| ArgumentError {
            pointer: String::new(),
            message: format!(
                "the tool's input schema cannot be used, so no call is made: {}",
                error.masked()
            ),
        })
}

fn first_error(validator: &jsonschema::Validator, arguments: &Value) -> Result<(), ArgumentError> {
    match validator.validate(arguments) {
        Ok(()) => Ok(()),
        Err(error) => Err(ArgumentError {
            pointer: error.instance_path().as_str().to_owned(),
            message: error.masked().to_string(),
        }),
    }
}

/// Compiled validators by schema, bounded (see the module's documentation).
#[derive(Default)]
pub struct ValidatorCache {
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    /// By the schema's address; the `Arc` kept in the entry keeps that address taken.
    by_schema: HashMap<usize, Entry>,
    /// Incremented on every use: the entry used longest ago is evicted first.
    clock: u64,
}

struct Entry {
    schema: Arc<Value>,
    validator: Arc<Result<jsonschema::Validator, ArgumentError>>,
    used: u64,
}

impl ValidatorCache {
    /// [`check_arguments`], with the compiled validator of `schema` kept for the next call.
    pub fn check(&self, schema: &Arc<Value>, arguments: &Value) -> Result<(), ArgumentError> {
        let validator = self.validator(schema);
        match validator.as_ref() {
            Ok(validator) => first_error(validator, arguments),
            Err(error) => Err(error.clone()),
        }
    }

    fn validator(&self, schema: &Arc<Value>) -> Arc<Result<jsonschema::Validator, ArgumentError>> {
        let key = Arc::as_ptr(schema) as usize;
        {
            let mut entries = self.lock();
            entries.clock += 1;
            let now = entries.clock;
            if let Some(entry) = entries.by_schema.get_mut(&key)
                && Arc::ptr_eq(&entry.schema, schema)
            {
                entry.used = now;
                return Arc::clone(&entry.validator);
            }
        }
        // Compiled outside the lock: two first calls of one schema may both compile it.
        let validator = Arc::new(compile(schema));
        let mut entries = self.lock();
        if entries.by_schema.len() >= CACHED_VALIDATORS
            && let Some(oldest) = entries
                .by_schema
                .iter()
                .min_by_key(|(_, entry)| entry.used)
                .map(|(key, _)| *key)
        {
            entries.by_schema.remove(&oldest);
        }
        let used = entries.clock;
        entries.by_schema.insert(
            key,
            Entry {
                schema: Arc::clone(schema),
                validator: Arc::clone(&validator),
                used,
            },
        );
        validator
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // A panic while holding the lock leaves only a cache behind: keep using it.
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many validators are kept.
    pub fn len(&self) -> usize {
        self.lock().by_schema.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "limit": {"type": "integer", "minimum": 1},
                "filter": {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}}
            },
            "required": ["limit"],
            "additionalProperties": false
        })
    }

    #[test]
    fn the_first_error_names_the_offending_value_by_pointer() {
        let cases = [
            (json!({"limit": 5}), None),
            (json!({"limit": 5, "filter": {"tags": ["a"]}}), None),
            (json!({"limit": "five"}), Some("/limit")),
            (json!({"limit": 0}), Some("/limit")),
            (
                json!({"limit": 1, "filter": {"tags": ["a", 7]}}),
                Some("/filter/tags/1"),
            ),
            (json!({}), Some("")),
            (json!({"limit": 1, "extra": true}), Some("")),
            (json!([1]), Some("")),
        ];
        for (arguments, expected) in cases {
            let outcome = check_arguments(&schema(), &arguments);
            assert_eq!(
                outcome.as_ref().err().map(|e| e.pointer.as_str()),
                expected,
                "{arguments}: {outcome:?}"
            );
        }
    }

    #[test]
    fn messages_say_what_is_wrong_without_repeating_the_value() {
        let error =
            check_arguments(&schema(), &json!({"limit": "secret-value"})).expect_err("refused");
        assert!(error.message.contains("integer"), "{error}");
        assert!(!error.to_string().contains("secret-value"), "{error}");
        let error = check_arguments(&schema(), &json!({})).expect_err("refused");
        assert!(
            error.message.contains("limit"),
            "the missing property is named: {error}"
        );
    }

    #[test]
    fn a_remote_ref_is_never_fetched_and_refuses_the_call() {
        for reference in [
            "https://127.0.0.1:9/schema.json",
            "http://169.254.169.254/latest/meta-data",
            "file:///etc/passwd",
        ] {
            let schema = json!({"type": "object", "properties": {"a": {"$ref": reference}}});
            let error = check_arguments(&schema, &json!({"a": 1})).expect_err("refused");
            assert_eq!(error.pointer, "");
            assert!(error.message.contains("cannot be used"), "{error}");
        }
    }

    #[test]
    fn local_refs_and_defs_work() {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/small"}},
            "$defs": {"small": {"type": "integer", "maximum": 3}}
        });
        assert!(check_arguments(&schema, &json!({"a": 2})).is_ok());
        assert_eq!(
            check_arguments(&schema, &json!({"a": 4}))
                .expect_err("too big")
                .pointer,
            "/a"
        );
    }

    #[test]
    fn the_cache_keeps_one_validator_per_shared_schema_and_is_bounded() {
        let cache = ValidatorCache::default();
        let shared = Arc::new(schema());
        assert!(cache.check(&shared, &json!({"limit": 2})).is_ok());
        assert!(
            cache
                .check(&Arc::clone(&shared), &json!({"limit": "x"}))
                .is_err()
        );
        assert_eq!(cache.len(), 1);
        let equal_but_not_shared = Arc::new(schema());
        assert!(
            cache
                .check(&equal_but_not_shared, &json!({"limit": 2}))
                .is_ok()
        );
        assert_eq!(cache.len(), 2);
        let broken = Arc::new(json!({"$ref": "https://example.com/s.json"}));
        assert!(cache.check(&broken, &json!({})).is_err());
        assert!(
            cache.check(&broken, &json!({})).is_err(),
            "a refusal is kept too"
        );
        for n in 0..CACHED_VALIDATORS + 10 {
            let schema = Arc::new(json!({"maximum": n}));
            assert!(cache.check(&schema, &json!(n)).is_ok());
        }
        assert_eq!(cache.len(), CACHED_VALIDATORS);
    }
}
