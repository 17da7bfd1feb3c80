//! Claim rules in settings (the admin rule, the executor rule): lists of claim matchers, each
//! checked the way policy matchers are, so that a bad rule stops the start with its place.

use super::ConfigError;
use crate::domain::claims::{ClaimPath, CompiledMatcher};
use crate::domain::model::ClaimMatcher;

/// Checks every matcher of an admin rule the way policy matchers are checked; `setting` names
/// the list (`auth.admin_rule in toolgate.toml`, `TOOLGATE_ADMIN_RULE`) and `suffix` is
/// appended after the element's field path.
pub(super) fn admin_rule(
    key: &str,
    suffix: &str,
    matchers: Vec<ClaimMatcher>,
) -> Result<Vec<ClaimMatcher>, ConfigError> {
    if matchers.is_empty() {
        return Err(ConfigError::invalid(
            format!("{key}{suffix}"),
            "the admin rule needs at least one claim matcher (an empty rule would make no \
             token admin); remove the key to use the default (roles equals admin, or \
             realm_access.roles equals admin)",
        ));
    }
    for (i, matcher) in matchers.iter().enumerate() {
        if let Err(message) = ClaimPath::parse(&matcher.json_path) {
            return Err(ConfigError::invalid(
                format!("{key}[{i}].json_path{suffix}"),
                message.to_string(),
            ));
        }
        if let Err(error) = CompiledMatcher::compile(matcher) {
            return Err(ConfigError::invalid(
                format!("{key}[{i}].{}{suffix}", error.field),
                error.message,
            ));
        }
    }
    Ok(matchers)
}
