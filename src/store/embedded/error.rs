//! How redb's failures become [`StoreError`]s. Bytes redb cannot make sense of (a damaged file,
//! a table written with other types) are `Corrupt`; everything else (I/O, locks, a poisoned
//! transaction) is `Unavailable`. Every message says what the store was doing when it failed.

use crate::store::StoreError;

/// Turns any redb error into a [`StoreError`], naming the operation that failed.
pub(super) trait During<T> {
    /// `doing` completes "the store failed while …", e.g. `"loading the catalog"`.
    fn during(self, doing: &str) -> Result<T, StoreError>;
}

impl<T, E: Into<redb::Error>> During<T> for Result<T, E> {
    fn during(self, doing: &str) -> Result<T, StoreError> {
        self.map_err(|error| from_redb(doing, error.into()))
    }
}

/// Maps one redb error met while `doing` something.
pub(super) fn from_redb(doing: &str, error: redb::Error) -> StoreError {
    let message = format!("{doing}: {error}");
    match error {
        redb::Error::Corrupted(_)
        | redb::Error::TableTypeMismatch { .. }
        | redb::Error::TypeDefinitionChanged { .. }
        | redb::Error::TableIsMultimap(_) => StoreError::Corrupt(message),
        _ => StoreError::Unavailable(message),
    }
}
