//! How driver failures become [`StoreError`]s. Every driver error is `Unavailable`: the server
//! is down or unreachable, refused an operation, or a write failed; in each case the operation
//! did not happen (or, on the compare-and-set path, will be rolled forward). Messages say what
//! the store was doing. The driver's messages name hosts and ports, never the URI's password.

use mongodb::error::{Error, ErrorKind, WriteFailure};

use crate::store::StoreError;

/// MongoDB's duplicate-key error, the only error code nx-27017 reports reliably.
const DUPLICATE_KEY: i32 = 11000;

/// Turns a driver error into a [`StoreError`], naming the operation that failed.
pub(super) trait During<T> {
    /// `doing` completes "the store failed while …", e.g. `"reading the revision"`.
    fn during(self, doing: &str) -> Result<T, StoreError>;
}

impl<T> During<T> for Result<T, Error> {
    fn during(self, doing: &str) -> Result<T, StoreError> {
        self.map_err(|error| unavailable(doing, &error))
    }
}

/// The `Unavailable` error for a driver error met while `doing` something.
pub(super) fn unavailable(doing: &str, error: &Error) -> StoreError {
    StoreError::Unavailable(format!("MongoDB failed while {doing}: {error}"))
}

/// Whether `error` is a single write refused for a duplicate `_id` (or unique key).
pub(super) fn is_duplicate_key(error: &Error) -> bool {
    match error.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(write)) => write.code == DUPLICATE_KEY,
        ErrorKind::Command(command) => command.code == DUPLICATE_KEY,
        _ => false,
    }
}

/// For an unordered `insert_many` whose only failures are duplicate keys: the positions of
/// the documents that were refused. `None` for any other error.
pub(super) fn duplicate_positions(error: &Error) -> Option<Vec<usize>> {
    let ErrorKind::InsertMany(failure) = error.kind.as_ref() else {
        return None;
    };
    if failure.write_concern_error.is_some() {
        return None;
    }
    let errors = failure.write_errors.as_ref()?;
    errors
        .iter()
        .map(|e| (e.code == DUPLICATE_KEY).then_some(e.index))
        .collect()
}
