//! How driver failures become [`StoreError`]s. Every driver error is `Unavailable`: the server
//! is down or unreachable, refused an operation, or a write failed; in each case the operation
//! did not happen (or, on the compare-and-set path, will be rolled forward). Messages say what
//! the store was doing. The driver's messages name hosts and ports, never the URI's password.

use mongodb::error::{Error, ErrorKind, TRANSIENT_TRANSACTION_ERROR, WriteFailure};

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

/// Whether `error` ended a transaction that may succeed if tried again (nothing of it was
/// applied): the driver's `TransientTransactionError` label (a write conflict, a primary
/// stepping down), or nx-27017's `no such savepoint`, which that server answers without a
/// code or label when concurrent transactions lose their SQLite savepoint.
pub(super) fn is_transient(error: &Error) -> bool {
    error.contains_label(TRANSIENT_TRANSACTION_ERROR)
        || error.to_string().contains("no such savepoint")
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

#[cfg(test)]
mod tests {
    use mongodb::bson::doc;
    use mongodb::error::CommandError;

    use super::*;

    fn command_error(code: i32, message: &str) -> Error {
        let command: CommandError =
            mongodb::bson::deserialize_from_document(doc! {"code": code, "errmsg": message})
                .expect("a command error");
        Error::from(ErrorKind::Command(command))
    }

    #[test]
    fn a_lost_savepoint_is_transient_and_a_duplicate_key_is_not() {
        assert!(is_transient(&command_error(0, "no such savepoint: sp_3")));
        assert!(!is_transient(&command_error(
            DUPLICATE_KEY,
            "E11000 duplicate key"
        )));
        assert!(!is_transient(&command_error(13, "unauthorized")));
    }
}
