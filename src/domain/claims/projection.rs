//! Claims reduced to what some paths read: what the gateway may remember of an identity (for
//! the impact of a change on the identities it served) without keeping whole tokens.
//!
//! Invariant: for every path in `paths`, [`ClaimPath::resolve`] gives the same value on the
//! projection as on the original claims, and the projection holds nothing else that any path
//! could read beyond what those values contain.

use serde_json::{Map, Value};

use super::{ClaimPath, Claims};

/// The claims `paths` read, nested as the paths are (array positions become object keys,
/// which resolve alike).
pub fn project(claims: &Claims, paths: &[ClaimPath]) -> Claims {
    let mut projection = Map::new();
    for path in paths {
        if let Some(value) = path.resolve(claims) {
            insert(&mut projection, path.segments(), value);
        }
    }
    projection
}

fn insert(target: &mut Map<String, Value>, segments: &[String], value: &Value) {
    let Some((first, rest)) = segments.split_first() else {
        return;
    };
    if rest.is_empty() {
        target.insert(first.clone(), value.clone());
        return;
    }
    let slot = target
        .entry(first.clone())
        .or_insert_with(|| Value::Object(Map::new()));
    // Anything but an object here is the whole value a shorter path put: this one's included.
    if let Value::Object(object) = slot {
        insert(object, rest, value);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    use crate::domain::claims::claims_of as claims;

    fn paths(texts: &[&str]) -> Vec<ClaimPath> {
        texts
            .iter()
            .map(|t| ClaimPath::parse(t).expect("a valid path"))
            .collect()
    }

    #[test]
    fn only_what_the_paths_read_is_kept_and_resolves_alike() {
        let original = claims(json!({
            "sub": "agent-7", "email": "a@example.com",
            "org": {"region": "eu", "secret": "x"},
            "roles": ["staff", "admin"], "depth": null
        }));
        let read = paths(&["org.region", "roles.1", "roles", "depth", "missing.deep"]);
        let projected = project(&original, &read);
        assert_eq!(
            Value::Object(projected.clone()),
            json!({"org": {"region": "eu"}, "roles": ["staff", "admin"]})
        );
        for path in &read {
            assert_eq!(
                path.resolve(&projected),
                path.resolve(&original),
                "{path:?}"
            );
        }
    }

    #[test]
    fn an_array_position_alone_becomes_a_key_that_resolves_alike() {
        let original = claims(json!({"roles": ["staff", "admin"]}));
        let read = paths(&["roles.1"]);
        let projected = project(&original, &read);
        assert_eq!(
            Value::Object(projected.clone()),
            json!({"roles": {"1": "admin"}})
        );
        assert_eq!(read[0].resolve(&projected), Some(&json!("admin")));
    }
}
