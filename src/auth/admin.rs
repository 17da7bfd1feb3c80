//! The admin rule: which verified tokens may use `/admin/...` and `include_disabled`.
//!
//! It is a list of claim matchers (the same shape and semantics as policy matchers), any one of
//! which makes the token an admin. The default is `roles contains admin` or
//! `realm_access.roles contains admin` (API.md, Authentication).

use serde_json::json;

use crate::domain::claims::{ClaimPath, Claims, CompiledMatcher};
use crate::domain::model::ClaimMatcher;

/// Compiled admin rule; cheap to evaluate on every admin request.
#[derive(Debug, Clone)]
pub struct AdminRule {
    matchers: Vec<(ClaimPath, CompiledMatcher)>,
}

impl AdminRule {
    /// The matchers used when none are configured.
    pub fn default_matchers() -> Vec<ClaimMatcher> {
        ["roles", "realm_access.roles"]
            .into_iter()
            .map(|path| ClaimMatcher {
                json_path: path.to_owned(),
                operator: "contains".to_owned(),
                value: json!("admin"),
            })
            .collect()
    }

    /// Compiles the matchers; the error names the position and field of the first bad one.
    pub fn new(matchers: &[ClaimMatcher]) -> Result<AdminRule, String> {
        let matchers = matchers
            .iter()
            .enumerate()
            .map(|(i, matcher)| {
                let path = ClaimPath::parse(&matcher.json_path)
                    .map_err(|message| format!("admin_rule[{i}].json_path: {message}"))?;
                let compiled = CompiledMatcher::compile(matcher).map_err(|error| {
                    format!("admin_rule[{i}].{}: {}", error.field, error.message)
                })?;
                Ok((path, compiled))
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(AdminRule { matchers })
    }

    pub fn is_admin(&self, claims: &Claims) -> bool {
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

    fn claims(value: serde_json::Value) -> Claims {
        value.as_object().expect("object").clone()
    }

    #[test]
    fn default_rule_accepts_roles_or_realm_roles() {
        let rule = AdminRule::default();
        assert!(rule.is_admin(&claims(json!({"roles": ["admin"]}))));
        assert!(rule.is_admin(&claims(json!({"realm_access": {"roles": ["x", "admin"]}}))));
        assert!(!rule.is_admin(&claims(json!({"roles": ["administrator"]}))));
        assert!(!rule.is_admin(&claims(json!({"role": "admin"}))));
        assert!(!rule.is_admin(&claims(json!({}))));
    }

    #[test]
    fn configured_rules_are_validated() {
        let bad = [ClaimMatcher {
            json_path: "groups".into(),
            operator: "eq".into(),
            value: json!("admins"),
        }];
        let error = AdminRule::new(&bad).expect_err("unknown operator");
        assert!(
            error.starts_with("admin_rule[0].operator: unknown operator 'eq'"),
            "{error}"
        );
    }
}
