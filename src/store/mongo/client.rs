//! Connecting: the client options, the liveness check and the choice of commit path.

use std::time::Duration;

use mongodb::bson::{Bson, Document, doc};
use mongodb::error::ErrorKind;
use mongodb::options::ClientOptions;
use mongodb::{Client, Database};

use super::CommitPath;
use super::documents::{META, META_ID};
use super::error::{During, unavailable};
use crate::store::StoreError;

/// Server selection and connection time out after this long unless the URI sets
/// `serverSelectionTimeoutMS` / `connectTimeoutMS`. The driver's 30 s default would hold an
/// admin write (and `/readyz`) for half a minute when MongoDB is down; two seconds is long
/// enough for a healthy server and short enough to answer 503 promptly.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// The error code of a server that refuses transactions (a standalone `mongod`: "Transaction
/// numbers are only allowed on a replica set member or mongos").
const ILLEGAL_OPERATION: i32 = 20;

/// A client for `uri`. Parsing does not connect; the first operation does.
pub(super) async fn connect(uri: &str) -> Result<Client, StoreError> {
    let mut options = ClientOptions::parse(uri).await.map_err(|error| {
        // The driver's parse errors describe the problem without echoing the string, so they
        // are safe to show; the URI itself is not.
        StoreError::Unavailable(format!(
            "the MongoDB URI (TOOLGATE_MONGODB_URI) is not valid: {}",
            super::error::describe(&error)
        ))
    })?;
    options
        .server_selection_timeout
        .get_or_insert(DEFAULT_TIMEOUT);
    options.connect_timeout.get_or_insert(DEFAULT_TIMEOUT);
    options
        .app_name
        .get_or_insert_with(|| "toolgate".to_owned());
    Client::with_options(options).map_err(|error| {
        StoreError::Unavailable(format!(
            "cannot create a MongoDB client: {}",
            super::error::describe(&error)
        ))
    })
}

/// Whether the server answers.
pub(super) async fn ping(db: &Database) -> Result<(), StoreError> {
    db.run_command(doc! {"ping": 1})
        .await
        .during("answering a ping")
        .map(drop)
}

/// Runs a write in a transaction to learn whether the deployment takes transactions. Asking
/// the server beats guessing from its topology: a standalone `mongod` refuses them, a replica
/// set accepts them, and a compatible server may do either whatever it says it is. The write
/// matches nothing (revisions are never negative): it only has to be a write, since some
/// servers (nx-27017) open a transaction on its first write.
pub(super) async fn probe_transactions(
    client: &Client,
    db: &Database,
) -> Result<CommitPath, StoreError> {
    let doing = "checking whether the server takes transactions";
    let mut session = client.start_session().await.during(doing)?;
    if let Err(error) = session.start_transaction().await {
        return refused_or_unavailable(doing, &error);
    }
    let write = db
        .collection::<Document>(META)
        .update_one(
            doc! {"_id": META_ID, "revision": {"$lt": 0}},
            doc! {"$set": {"pending": Bson::Null}},
        )
        .session(&mut session)
        .await;
    if let Err(error) = write {
        let _ = session.abort_transaction().await;
        return refused_or_unavailable(doing, &error);
    }
    // The transaction changed nothing: committing it is as good as aborting, and safe on
    // servers whose aborts reach beyond their session.
    match session.commit_transaction().await {
        Ok(()) => Ok(CommitPath::Transaction),
        Err(error) => refused_or_unavailable(doing, &error),
    }
}

/// A refusal of transactions means compare-and-set; anything else is a real failure.
fn refused_or_unavailable(
    doing: &str,
    error: &mongodb::error::Error,
) -> Result<CommitPath, StoreError> {
    let refused = match error.kind.as_ref() {
        ErrorKind::Transaction { .. } => true,
        ErrorKind::Command(command) => command.code == ILLEGAL_OPERATION,
        _ => false,
    };
    if refused {
        tracing::info!(
            "the MongoDB server does not take transactions: commits use compare-and-set"
        );
        Ok(CommitPath::CompareAndSet)
    } else {
        Err(unavailable(doing, error))
    }
}
