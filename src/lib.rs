//! toolgate: a tool-access gateway for AI agents.
//!
//! Data flows one way: token → claims → decision → bytes.
#![forbid(unsafe_code)]

/// JWT verification (HMAC secret and JWKS keys) and dev-token minting.
pub mod auth;
/// In-process cache of rendered manifests.
pub mod cache;
/// The pure decision core: entities, validation, compiled snapshots, manifests.
pub mod domain;
/// The HTTP adapter: routes, extractors, problem-JSON errors.
pub mod http;
/// Assembles and runs the gateway.
pub mod server;
/// Catalog writes and the current compiled snapshot (the application layer).
pub mod service;
/// The catalog store port and its adapters (embedded on-disk store, MongoDB).
pub mod store;
