//! Live manifests: every open stream (`GET /agents/tools/stream`, and the MCP notification
//! streams) and the fan-out of catalog changes to them.
//!
//! [`hub::StreamHub`] groups open streams by (claims key, options) and turns each new revision
//! into at most one encoded event per group; [`outbox::Outbox`] is one stream's queue, bounded
//! in bytes, and [`budget::StreamBudget`] bounds them all together; [`connection::Connection`] is one open stream (first event, shared events, pings,
//! resync after lagging, token expiry); [`watch::Watch`] is one MCP client told only *that* its
//! manifest changed; [`frame`] writes SSE bytes; [`open`] is how every transport opens a stream.

pub mod budget;
pub mod connection;
pub mod frame;
pub mod hub;
pub mod open;
pub mod outbox;
pub mod watch;

pub use budget::StreamBudget;
pub use connection::{Connection, Expiry, Opening, Render};
pub use hub::{HubLimits, StreamClass, StreamHub, SubscribeError, Subscription};
pub use open::{OpenError, Opened, open};
pub use watch::{Notice, Watch};
