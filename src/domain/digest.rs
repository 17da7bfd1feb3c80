//! A digest of the access policies: what a decision shared between instances must have been
//! made against besides the revision number, which a store restored from a backup repeats.

use super::model::AccessPolicy;

/// BLAKE3 of the policies' JSON, the first 16 bytes in hex (32 characters).
pub fn of_policies(policies: &[AccessPolicy]) -> String {
    let json = serde_json::to_vec(policies).unwrap_or_default();
    blake3::hash(&json).as_bytes()[..16]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_that_differ_in_anything_have_other_digests() {
        let policy = |value: &str| -> AccessPolicy {
            serde_json::from_value(serde_json::json!({"id": "p", "name": "p",
                "claim_matchers": [{"json_path": "roles", "operator": "contains", "value": value}],
                "allowed_group_ids": ["g"]}))
            .expect("a policy")
        };
        let reader = of_policies(&[policy("reader")]);
        assert_eq!(reader.len(), 32);
        assert_eq!(reader, of_policies(&[policy("reader")]));
        assert_ne!(reader, of_policies(&[policy("staff")]));
        assert_ne!(reader, of_policies(&[]));
    }
}
