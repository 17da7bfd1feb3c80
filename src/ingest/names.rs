//! Tool names that every LLM function-calling API accepts: `^[a-zA-Z0-9_-]{1,64}$`.
//!
//! Upstream identifiers are anything (`repos/get`, `calendar.acl.get`, `find pet by id`, a
//! 77-character Kubernetes operation): the identifier stays the tool's `operation_id` (and so
//! its id), and its `name` is derived from it, deterministically and by itself alone:
//! - each run of other characters becomes one `_` (none at either end);
//! - a name longer than 64 is cut to 55 and given `_` and 8 hex digits of the BLAKE3 of the
//!   identifier, so two long names that share a prefix stay apart.
//!
//! Two identifiers of one source can still meet (`a.b` and `a/b`). Then an identifier that is
//! already a safe name keeps it, and the others get the hash suffix: the result depends only on
//! the identifiers involved, never on the order of the document.

use std::collections::{HashMap, HashSet};

use super::ImportedTool;

/// The longest name LLM function-calling APIs accept.
pub const MAX_NAME_LEN: usize = 64;
/// What is kept of a name that gets a hash suffix (`_` and 8 hex digits follow).
const PREFIX_LEN: usize = MAX_NAME_LEN - 9;

/// Whether `name` is usable as an LLM function name as it is.
pub fn is_safe(name: &str) -> bool {
    (1..=MAX_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The safe name of one identifier, before collisions are looked at.
pub fn safe_name(identifier: &str) -> String {
    if is_safe(identifier) {
        return identifier.to_owned();
    }
    let mut name = String::new();
    let mut replaced = false;
    for c in identifier.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            if replaced && !name.is_empty() {
                name.push('_');
            }
            replaced = false;
            name.push(c);
        } else {
            replaced = true;
        }
    }
    if name.is_empty() {
        return hashed("tool", identifier);
    }
    if name.len() > MAX_NAME_LEN {
        return hashed(&name, identifier);
    }
    name
}

/// `prefix` cut to fit, `_`, and 8 hex digits of the identifier's hash.
fn hashed(prefix: &str, identifier: &str) -> String {
    let hash = blake3::hash(identifier.as_bytes()).to_hex();
    let prefix = &prefix[..prefix.len().min(PREFIX_LEN)];
    format!("{prefix}_{}", &hash[..8])
}

/// Gives every tool a safe name, unique among `tools` (ASCII, so slicing by bytes is safe).
pub fn assign(tools: &mut [ImportedTool]) {
    let names: Vec<String> = tools.iter().map(|t| safe_name(&t.operation_id)).collect();
    let mut count: HashMap<&str, usize> = HashMap::new();
    for name in &names {
        *count.entry(name).or_default() += 1;
    }
    let mut final_names: Vec<String> = Vec::with_capacity(tools.len());
    for (tool, name) in tools.iter().zip(&names) {
        let collides = count[name.as_str()] > 1;
        final_names.push(if collides && tool.operation_id != *name {
            hashed(name, &tool.operation_id)
        } else {
            name.clone()
        });
    }
    // A hashed name can only meet another by a hash collision or an upstream that uses such a
    // name literally: number those in order rather than give two tools one name.
    let mut used: HashSet<String> = HashSet::new();
    for (tool, mut name) in tools.iter_mut().zip(final_names) {
        let base = name.clone();
        let mut n = 2;
        while used.contains(&name) {
            let suffix = format!("_{n}");
            name = format!(
                "{}{suffix}",
                &base[..base.len().min(MAX_NAME_LEN - suffix.len())]
            );
            n += 1;
        }
        used.insert(name.clone());
        tool.name = name;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn tool(operation_id: &str) -> ImportedTool {
        ImportedTool {
            operation_id: operation_id.to_owned(),
            name: operation_id.to_owned(),
            title: None,
            description: String::new(),
            method: "GET".to_owned(),
            path: "/".to_owned(),
            tags: Vec::new(),
            input_schema: Arc::new(json!({})),
            output_schema: None,
            deprecated: false,
            definition: Arc::default(),
            schemas_apart: false,
        }
    }

    #[test]
    fn unsafe_identifiers_become_safe_names() {
        let cases = [
            ("listPets", "listPets"),
            ("repos/get", "repos_get"),
            ("calendar.acl.get", "calendar_acl_get"),
            ("find pet by id", "find_pet_by_id"),
            ("/v1/things/{id}/", "v1_things_id"),
            ("get-pets_2", "get-pets_2"),
            ("überprüfen", "berpr_fen"),
        ];
        for (identifier, expected) in cases {
            assert_eq!(safe_name(identifier), expected, "{identifier}");
        }
        let only_symbols = safe_name("///");
        assert!(
            only_symbols.starts_with("tool_") && is_safe(&only_symbols),
            "{only_symbols}"
        );
    }

    #[test]
    fn long_names_are_cut_with_a_hash_that_keeps_them_apart() {
        let a = "readRbacAuthorizationV1NamespacedRoleBindingStatusWithAVeryLongSuffixA";
        let b = "readRbacAuthorizationV1NamespacedRoleBindingStatusWithAVeryLongSuffixB";
        let (name_a, name_b) = (safe_name(a), safe_name(b));
        assert_eq!(name_a.len(), MAX_NAME_LEN);
        assert!(is_safe(&name_a) && is_safe(&name_b));
        assert_ne!(name_a, name_b);
        assert_eq!(name_a, safe_name(a), "deterministic");
    }

    #[test]
    fn collisions_keep_the_exact_name_and_hash_the_others_in_any_order() {
        let mut one = vec![tool("a_b"), tool("a.b"), tool("a/b")];
        let mut other = vec![tool("a/b"), tool("a_b"), tool("a.b")];
        assign(&mut one);
        assign(&mut other);
        let by_id = |tools: &[ImportedTool]| {
            let mut pairs: Vec<(String, String)> = tools
                .iter()
                .map(|t| (t.operation_id.clone(), t.name.clone()))
                .collect();
            pairs.sort();
            pairs
        };
        assert_eq!(by_id(&one), by_id(&other));
        let names: HashSet<&str> = one.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names.len(), 3);
        assert!(names.contains("a_b"));
        assert!(names.iter().all(|name| is_safe(name)));
    }
}
