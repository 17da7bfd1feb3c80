//! Why a catalog could not be compiled, with the field path of what failed.

/// Why a catalog could not be compiled. A catalog that passed
/// [`validate`](super::validate::validate) always compiles.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct CompileError {
    pub field: String,
    pub message: String,
}

impl CompileError {
    /// The error with `field` relative to `parent` (`name_pattern` within
    /// `groups[3].selectors[0]`). Paths are built only when something fails, so that a large
    /// catalog compiles without formatting thousands of them.
    pub(super) fn within(self, parent: std::fmt::Arguments<'_>) -> CompileError {
        CompileError {
            field: format!("{parent}.{}", self.field),
            message: self.message,
        }
    }
}
