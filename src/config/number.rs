//! Numbers given as settings: text read as a whole number, and counts that must be at least 1.

use super::ConfigError;

/// A count or a number of seconds that must be at least 1.
pub(super) fn at_least_one(setting: &str, value: u64) -> Result<u64, ConfigError> {
    if value == 0 {
        return Err(ConfigError::invalid(setting, "must be at least 1, found 0"));
    }
    Ok(value)
}

/// A non-negative integer given as text (environment variables).
pub(super) fn integer(setting: &str, text: &str) -> Result<u64, ConfigError> {
    text.trim().parse().map_err(|_| {
        ConfigError::invalid(
            setting,
            format!("'{text}' is not a whole number; expected e.g. 30"),
        )
    })
}
