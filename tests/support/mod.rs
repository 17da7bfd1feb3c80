//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod conformance;
pub mod gateway;
pub mod jwks_server;
pub mod keys;
pub mod logged;
pub mod mcp_driver;
pub mod mongo;
pub mod process;
pub mod random_catalog;
pub mod redis;
pub mod scrape;
pub mod source_text;
pub mod sse;
pub mod upstream;
