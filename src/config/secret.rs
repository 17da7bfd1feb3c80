//! A string that must never reach a log line.

use std::fmt;

/// A secret value (HMAC secret, or a database URL that may carry a password).
///
/// `Debug` prints `[redacted]` and there is no `Display`, so a secret can only leave through an
/// explicit [`Secret::expose`] call — easy to find in review.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the one place that needs it (a verifier, a client constructor).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}
