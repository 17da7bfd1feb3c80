//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod browser;
pub mod conformance;
pub mod console_http;
pub mod gateway;
pub mod jwks_server;
pub mod keys;
pub mod logged;
pub mod mcp_driver;
pub mod mcp_rpc;
pub mod mongo;
pub mod process;
pub mod random_catalog;
pub mod redis;
pub mod redis_topologies;
pub mod scrape;
pub mod source_text;
pub mod sse;
pub mod token_endpoint;
pub mod upstream;

/// The current unix time in seconds (for `exp`, `iat`, `nbf` claims).
pub fn unix_now() -> i64 {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970");
    i64::try_from(since_epoch.as_secs()).expect("sane clock")
}
