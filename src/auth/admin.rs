//! The admin rule: which verified tokens may use `/admin/...` and `include_disabled`.
//!
//! It is a list of claim matchers (the same shape and semantics as policy matchers), any one of
//! which makes the token an admin. The default is `roles equals admin` or
//! `realm_access.roles equals admin` (docs/api.md, Authentication): an exact string or an exact
//! array element. Never `contains`, which on a string claim is a substring test and made
//! `"non-admin"`, `"badminton-club"` and `"superadministrator"` admins.

use serde_json::json;

use crate::domain::claims::{ClaimPath, Claims, CompiledMatcher};
use crate::domain::model::ClaimMatcher;

/// Compiled admin rule; cheap to evaluate on every admin request.
#[derive(Debug, Clone)]
pub struct AdminRule {
    matchers: Vec<(ClaimPath, CompiledMatcher)>,
    /// The distinct paths the matchers read, sorted: part of every claims key
    /// ([`crate::domain::fingerprint`]).
    paths: Vec<ClaimPath>,
}

/// A configured admin rule that does not compile: which matcher, which of its fields, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("admin_rule[{index}].{field}: {message}")]
pub struct AdminRuleError {
    pub index: usize,
    pub field: String,
    pub message: String,
}

impl AdminRule {
    /// The matchers used when none are configured.
    pub fn default_matchers() -> Vec<ClaimMatcher> {
        ["roles", "realm_access.roles"]
            .into_iter()
            .map(|path| ClaimMatcher {
                json_path: path.to_owned(),
                operator: "equals".to_owned(),
                value: json!("admin"),
            })
            .collect()
    }

    /// Compiles the matchers; the error names the position and field of the first bad one.
    pub fn new(matchers: &[ClaimMatcher]) -> Result<AdminRule, AdminRuleError> {
        let matchers = matchers
            .iter()
            .enumerate()
            .map(|(index, matcher)| {
                let path =
                    ClaimPath::parse(&matcher.json_path).map_err(|error| AdminRuleError {
                        index,
                        field: "json_path".to_owned(),
                        message: error.to_string(),
                    })?;
                let compiled =
                    CompiledMatcher::compile(matcher).map_err(|error| AdminRuleError {
                        index,
                        field: error.field.to_owned(),
                        message: error.message,
                    })?;
                Ok((path, compiled))
            })
            .collect::<Result<Vec<_>, AdminRuleError>>()?;
        let mut paths: Vec<ClaimPath> = matchers.iter().map(|(path, _)| path.clone()).collect();
        paths.sort_unstable();
        paths.dedup();
        Ok(AdminRule { matchers, paths })
    }

    /// The distinct claim paths the rule reads, sorted.
    pub fn paths(&self) -> &[ClaimPath] {
        &self.paths
    }

    /// Whether `claims` pass the rule. Delegated claims and claims acting in a run never do:
    /// delegation and runs only narrow, and the admin routes are not tools a scope could keep.
    pub fn is_admin(&self, claims: &Claims) -> bool {
        if claims.contains_key(crate::domain::claims::DELEGATION_CLAIM)
            || claims.contains_key(crate::domain::run::RUN_CLAIM)
        {
            return false;
        }
        self.matchers
            .iter()
            .any(|(path, matcher)| matcher.matches(path.resolve(claims)))
    }
}

impl Default for AdminRule {
    fn default() -> Self {
        AdminRule::new(&AdminRule::default_matchers()).expect("the default admin rule is valid")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::domain::claims::claims_of as claims;

    #[test]
    fn default_rule_accepts_exactly_admin_in_roles_or_realm_roles() {
        let rule = AdminRule::default();
        for (claims_value, admin) in [
            (json!({"roles": ["admin"]}), true),
            (json!({"roles": "admin"}), true),
            (json!({"realm_access": {"roles": ["x", "admin"]}}), true),
            (json!({"realm_access": {"roles": "admin"}}), true),
            (json!({"roles": ["administrator"]}), false),
            // Substrings of a string claim: the holes of a `contains` default.
            (json!({"roles": "non-admin"}), false),
            (json!({"roles": "badminton-club"}), false),
            (json!({"roles": "admins"}), false),
            (
                json!({"realm_access": {"roles": "superadministrator"}}),
                false,
            ),
            (json!({"roles": ["Admin"]}), false),
            (json!({"roles": [["admin"]]}), false),
            (json!({"role": "admin"}), false),
            (json!({"realm_access.roles": ["admin"]}), false),
            (json!({}), false),
        ] {
            assert_eq!(
                rule.is_admin(&claims(claims_value.clone())),
                admin,
                "{claims_value}"
            );
        }
        assert_eq!(rule.paths().len(), 2);
    }

    #[test]
    fn configured_rules_are_validated() {
        let bad = [ClaimMatcher {
            json_path: "groups".into(),
            operator: "eq".into(),
            value: json!("admins"),
        }];
        let error = AdminRule::new(&bad).expect_err("unknown operator");
        assert_eq!((error.index, error.field.as_str()), (0, "operator"));
        assert!(
            error
                .to_string()
                .starts_with("admin_rule[0].operator: unknown operator 'eq'"),
            "{error}"
        );
    }
}
