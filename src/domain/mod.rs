//! The decision core. Pure: no I/O, no clocks, no async runtime. It answers one question —
//! which tools may an agent with these claims see — exactly as `spec/SEMANTICS.md` defines it.
//!
//! Flow: a [`model::Catalog`] is [`validate::validate`]d, then compiled once per revision into a
//! [`snapshot::Snapshot`]; [`snapshot::Snapshot::manifest`] answers each request, and
//! [`snapshot::Snapshot::evaluate`] each decision about single tools ([`verdict`]).

pub mod access;
pub mod claims;
mod compile_error;
mod decide;
pub mod entry;
pub mod explain;
pub mod field_error;
pub mod fingerprint;
mod glob;
pub mod impact;
pub mod manifest;
pub mod manifest_diff;
pub mod mcp;
pub mod model;
pub mod operator;
pub mod pattern;
pub mod secrets;
mod selection;
pub mod snapshot;
pub mod source_config;
pub mod stamp;
mod tool_index;
pub mod validate;
pub mod verdict;
pub mod workers;
