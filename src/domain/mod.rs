//! The decision core. Pure: no I/O, no clocks, no async runtime. It answers one question —
//! which tools may an agent with these claims see — exactly as `docs/semantics.md` defines it.
//!
//! Flow: a [`model::Catalog`] is [`validate::validate`]d, then compiled once per revision into a
//! [`snapshot::Snapshot`]; [`snapshot::Snapshot::manifest`] answers each request, and
//! [`snapshot::Snapshot::evaluate`] each decision about single tools ([`verdict`]).
//!
//! Glossary, in the order a request meets them:
//! - **Matched** ([`access::Matched`]): the policies whose matchers all hold for some claims,
//!   at one revision. Depends on the claims only through the claims key
//!   ([`fingerprint::Fingerprint`]), so it is cached per key.
//! - **Decision** (`decide::Decision`): what the matched policies grant and deny, group by
//!   group and tool by tool, at their priorities (docs/semantics.md sections 3–4).
//! - **Decided** ([`access::Decided`]): a `Matched` under request options; everything a
//!   manifest or an evaluation is a function of, and the key of their caches and of the
//!   stream fan-out.
//! - **Evaluation** ([`verdict::Evaluation`]): the tools the manifest of a `Decided` lists, as
//!   a bitset over the snapshot's tools, with the decision behind them; what single-tool
//!   decisions and MCP listings read.
//! - **Verdict** ([`verdict::Verdict`]): why one tool is or is not in an evaluation (granted,
//!   denied, not granted, hidden, narrowed, unknown), for admins.

pub mod access;
mod carry;
pub mod claims;
mod compile_error;
pub mod continuity;
mod decide;
pub mod definition;
pub mod delegation;
pub mod digest;
pub mod entry;
mod entry_arena;
pub mod explain;
pub mod field_error;
pub mod findings;
pub mod fingerprint;
mod glob;
pub mod impact;
pub mod imported;
pub mod manifest;
pub mod manifest_diff;
pub mod mcp;
mod memberships;
pub mod model;
pub mod operator;
pub mod pattern;
mod reach;
pub mod revision;
pub mod run;
pub mod secrets;
mod selection;
pub mod snapshot;
pub mod source_config;
pub mod stamp;
mod tool_index;
pub mod validate;
pub mod verdict;
pub mod why_not;
pub mod workers;
