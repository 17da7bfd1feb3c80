//! The application layer between the HTTP adapter and the domain: catalog writes and the
//! current snapshot.

pub mod catalog;
mod diff;
pub mod ingest;
pub mod periodic;
mod precondition;
pub mod refresh_log;

pub use catalog::{Actor, AuditNote, CatalogService, Focus, Mutation, WriteError};
pub use ingest::{RefreshError, refresh_source};
pub use precondition::Precondition;
pub use refresh_log::{RefreshLog, RefreshStatus};
