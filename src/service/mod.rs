//! The application layer between the transports and the domain: the write commands, the
//! current snapshot, the manifests every transport serves, decisions about single tools, and
//! the background work (periodic refreshes, following other instances).
//!
//! Every access rule is here, once: who is asking ([`Caller`]), what they may read
//! ([`read`]: admin-only options, whose claims a decision evaluates, the admin routes) and
//! how fast ([`limits`]). Transports map the typed refusals to their wire and decide nothing.

pub mod access;
mod caller;
pub mod catalog;
pub mod commands;
pub mod decisions;
pub mod delegation;
mod diff;
pub mod entity;
pub mod follow;
pub mod impact;
pub mod limits;
pub mod manifests;
pub mod mcp;
pub mod periodic;
mod precondition;
mod published;
pub mod read;
pub mod refresh_log;
pub mod revisions;
pub mod runs;
pub mod seen;
pub mod threads;

pub use caller::Caller;
pub use catalog::{Actor, AuditAction, AuditNote, CatalogService, Focus, Mutation, WriteError};
pub use commands::{CommandError, Commands, Edit, RefreshTrigger, Written};
pub use decisions::Decisions;
pub use entity::{CatalogEntity, ListFilter};
pub use follow::follow;
pub use manifests::Manifests;
pub use mcp::McpTools;
pub use precondition::Precondition;
pub use read::{ReadRequest, Refusal};
pub use refresh_log::{RefreshLog, RefreshStatus};
pub use threads::Threads;
