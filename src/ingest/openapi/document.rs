//! OpenAPI document text (JSON or YAML) → JSON value.
//!
//! YAML is read as JSON would read the same data, straight into [`serde_json::Value`]:
//! - an integer beyond 64 bits is a float (OpenAI's `minimum: -9223372036854776000`), where a
//!   YAML value type would refuse the whole document;
//! - merge keys (`<<: *base`, or a list of them) are honoured: the merged mappings' entries are
//!   added unless the mapping sets them itself (YAML 1.1 merge semantics, which documents written
//!   with anchors rely on), rather than staying a literal `<<` key;
//! - keys that are not text (`200:`) become text, and tags (`!foo`) are ignored.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::ingest::IngestError;

/// Parses JSON or YAML text into a JSON value.
pub fn parse_document(text: &str) -> Result<Value, IngestError> {
    if text.trim_start().starts_with('{') {
        return serde_json::from_str(text).map_err(|error| {
            IngestError::Definition(format!("the OpenAPI document is not valid JSON: {error}"))
        });
    }
    JsonFromYaml
        .deserialize(serde_norway::Deserializer::from_str(text))
        .map_err(|error| {
            IngestError::Definition(format!(
                "the OpenAPI document is neither JSON nor valid YAML: {error}"
            ))
        })
}

/// Builds a JSON value from whatever a deserializer holds.
struct JsonFromYaml;

impl<'de> DeserializeSeed<'de> for JsonFromYaml {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// A float for an integer that does not fit 64 bits (what a JSON parser does).
fn wide(value: f64) -> Value {
    Number::from_f64(value).map_or(Value::Null, Value::Number)
}

impl<'de> Visitor<'de> for JsonFromYaml {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("YAML data")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_i128<E>(self, v: i128) -> Result<Value, E> {
        Ok(i64::try_from(v).map_or_else(|_| wide(v as f64), Value::from))
    }
    fn visit_u128<E>(self, v: u128) -> Result<Value, E> {
        Ok(u64::try_from(v).map_or_else(|_| wide(v as f64), Value::from))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(wide(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(JsonFromYaml)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        let mut merged: Vec<Map<String, Value>> = Vec::new();
        while let Some(key) = map.next_key_seed(JsonFromYaml)? {
            let value = map.next_value_seed(JsonFromYaml)?;
            let key = match key {
                Value::String(key) => key,
                other => other.to_string(),
            };
            if key != "<<" {
                object.insert(key, value);
                continue;
            }
            match value {
                Value::Object(base) => merged.push(base),
                Value::Array(bases) => {
                    for base in bases {
                        let Value::Object(base) = base else {
                            return Err(de::Error::custom(
                                "a merge key (<<) lists something that is not a mapping",
                            ));
                        };
                        merged.push(base);
                    }
                }
                _ => {
                    return Err(de::Error::custom(
                        "a merge key (<<) must name a mapping or a list of mappings",
                    ));
                }
            }
        }
        // Earlier mappings in a merge list win over later ones; the mapping's own keys over all.
        for base in merged {
            for (key, value) in base {
                object.entry(key).or_insert(value);
            }
        }
        Ok(Value::Object(object))
    }

    /// A tagged value (`!Tag value`): the tag is dropped, the value kept.
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Value, A::Error> {
        let (_tag, variant) = data.variant_seed(TagName)?;
        de::VariantAccess::newtype_variant_seed(variant, JsonFromYaml)
    }
}

/// Reads a tag name and throws it away.
struct TagName;

impl<'de> DeserializeSeed<'de> for TagName {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer
            .deserialize_identifier(de::IgnoredAny)
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn yaml(text: &str) -> Value {
        parse_document(text).expect("parses")
    }

    #[test]
    fn integers_beyond_64_bits_are_floats_as_in_json() {
        let document =
            yaml("minimum: -9223372036854776000\nmaximum: 18446744073709551616\nsmall: -3\n");
        assert_eq!(document["minimum"], json!(-9.223372036854776e18));
        assert_eq!(document["maximum"], json!(1.8446744073709552e19));
        assert_eq!(document["small"], json!(-3));
        let json_document = parse_document("{\"minimum\": -9223372036854776000}").expect("parses");
        assert_eq!(json_document["minimum"], document["minimum"]);
    }

    #[test]
    fn merge_keys_are_honoured() {
        let document = yaml(
            "base: &base {type: string, maxLength: 5}\nextra: &extra {format: email, maxLength: 9}\n\
             one: {<<: *base, maxLength: 3}\nmany: {<<: [*base, *extra]}\n",
        );
        assert_eq!(document["one"], json!({"type": "string", "maxLength": 3}));
        assert_eq!(
            document["many"],
            json!({"type": "string", "maxLength": 5, "format": "email"})
        );
    }

    #[test]
    fn keys_that_are_not_text_become_text_and_tags_are_dropped() {
        let document = yaml("responses:\n  200: {description: ok}\nvalue: !custom 5\n");
        assert_eq!(document["responses"]["200"]["description"], json!("ok"));
        assert_eq!(document["value"], json!(5));
    }

    #[test]
    fn a_bad_merge_is_an_error_not_a_panic() {
        let error = parse_document("a: {<<: 5}\n").expect_err("refused");
        assert!(error.to_string().contains("merge key"), "{error}");
    }
}
