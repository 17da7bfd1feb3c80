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
    StoreError::Unavailable(format!("MongoDB failed while {doing}: {}", describe(error)))
}

/// What went wrong, in words an operator acts on: the driver's `Display` of an error is
/// `Kind: …, labels: {…}, source: …, server response: …`, with Rust debug dumps of write
/// failures and, for an unreachable server, the whole topology.
pub(super) fn describe(error: &Error) -> String {
    match error.kind.as_ref() {
        ErrorKind::ServerSelection { message, .. } => server_selection(message),
        ErrorKind::Write(WriteFailure::WriteError(write)) => {
            format!(
                "the server refused the write: {} (code {})",
                write.message, write.code
            )
        }
        ErrorKind::Write(WriteFailure::WriteConcernError(concern)) => format!(
            "the write concern was not met: {} (code {})",
            concern.message, concern.code
        ),
        ErrorKind::InsertMany(failure) => {
            let first = failure
                .write_errors
                .as_ref()
                .and_then(|errors| errors.first());
            match (first, &failure.write_concern_error) {
                (Some(write), _) => format!(
                    "the server refused an insert: {} (code {})",
                    write.message, write.code
                ),
                (None, Some(concern)) => format!(
                    "the write concern was not met: {} (code {})",
                    concern.message, concern.code
                ),
                (None, None) => "an insert failed".to_owned(),
            }
        }
        ErrorKind::Command(command) if command.code_name.is_empty() => format!(
            "the server refused the command: {} (code {})",
            command.message, command.code
        ),
        ErrorKind::Command(command) => format!(
            "the server refused the command: {} ({}, code {})",
            command.message, command.code_name, command.code
        ),
        other => other.to_string(),
    }
}

/// `Server selection timeout: No available servers. Topology: { …, Servers: [ { Address:
/// h:p, Type: Unknown, Error: Kind: I/O error: Connection refused (os error 111), labels: {} }
/// ] }` as `no MongoDB server answered in time (h:p: I/O error: Connection refused (os error
/// 111))`.
fn server_selection(message: &str) -> String {
    static SERVER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"Address: ([^,]+), Type: [^,]+(?:, [^{}]*?Error: (?:Kind: )?(.*?), labels)?",
        )
        .expect("a valid pattern")
    });
    let servers: Vec<String> = SERVER
        .captures_iter(message)
        .map(|found| match found.get(2) {
            Some(error) => format!("{}: {}", &found[1], error.as_str()),
            None => format!("{}: not usable for this operation", &found[1]),
        })
        .collect();
    let what = if message.contains("No available servers") {
        "no MongoDB server answered within the server selection timeout"
    } else {
        "no MongoDB server suitable for this operation was found within the server selection timeout (is the replica set's primary elected?)"
    };
    if servers.is_empty() {
        what.to_owned()
    } else {
        format!("{what} ({})", servers.join("; "))
    }
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

    /// A real unreachable server (a closed port), as an operator meets it.
    #[tokio::test]
    async fn driver_errors_read_as_sentences_not_debug_dumps() {
        let client = mongodb::Client::with_uri_str(
            "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300&connectTimeoutMS=300",
        )
        .await
        .expect("a client");
        let selection = client
            .list_database_names()
            .await
            .expect_err("nothing listens on port 1");
        let text = describe(&selection);
        assert!(
            text.starts_with(
                "no MongoDB server answered within the server selection timeout (127.0.0.1:1: "
            ) && text.contains("Connection refused"),
            "{text}"
        );
        let refused = command_error(13, "not authorized on toolgate to execute command");
        assert_eq!(
            describe(&refused),
            "the server refused the command: not authorized on toolgate to execute command \
             (code 13)"
        );
        for error in [selection, refused] {
            let text = describe(&error);
            assert!(
                !text.contains("labels") && !text.contains("Kind:"),
                "{text}"
            );
        }
    }
}
