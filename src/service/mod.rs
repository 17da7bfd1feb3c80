//! The application layer between the HTTP adapter and the domain: catalog writes and the
//! current snapshot, manifests, and decisions about single tools.

pub mod catalog;
pub mod decisions;
mod diff;
pub mod follow;
pub mod ingest;
pub mod manifests;
pub mod periodic;
mod precondition;
pub mod refresh_log;
pub mod threads;

pub use catalog::{Actor, AuditNote, CatalogService, Focus, Mutation, WriteError};
pub use decisions::Decisions;
pub use follow::follow;
pub use ingest::{RefreshError, refresh_source};
pub use manifests::Manifests;
pub use precondition::Precondition;
pub use refresh_log::{RefreshLog, RefreshStatus};
pub use threads::Threads;
