//! A problem at one place in the catalog, with its field path: what validation, the secrets'
//! round trip and every other check of an admin's input report, and the HTTP layer maps to
//! 422 or 409. Its own file so that the checks can share it without depending on each other.

/// What kind of problem a [`FieldError`] is; the HTTP layer maps `Conflict` to 409 and
/// everything else to 422.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The content is wrong in itself or refers to something that does not exist.
    Invalid,
    /// The content clashes with another entity (same id, same group name).
    Conflict,
}

/// One problem at one place in the catalog.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FieldError {
    pub field: String,
    pub message: String,
    #[serde(skip)]
    pub kind: ErrorKind,
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}
